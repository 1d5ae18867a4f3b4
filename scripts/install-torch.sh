#!/usr/bin/env bash
# Install the torch the `train` extra pins, choosing the build that fits this machine:
#   1. already installed at that version: nothing to do;
#   2. a local wheel that pip's find-links offer (PIP_FIND_LINKS / pip.conf, as on our build machines);
#   3. no NVIDIA GPU (`nvidia-smi -L` lists none): the CPU build from PyTorch's CPU index
#      (https://download.pytorch.org/whl/cpu), not PyPI's default build with several GB of CUDA packages;
#   4. a GPU: PyPI's default (CUDA) build.
# Run it before `pip install '.[train]'`, which then finds torch satisfied (scripts/test does).
#
#   scripts/install-torch.sh [--dry-run]     --dry-run: print the choice and the pip command, install nothing
#
# Environment: PYTHON (default python3), OLMORL_TORCH_INDEX (default the CPU index above).
set -euo pipefail

python="${PYTHON:-python3}"
cpu_index="${OLMORL_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
dry_run=0
[ "${1:-}" = --dry-run ] && dry_run=1

# the pin, read from pyproject.toml so there is one place to change it
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want="$("$python" -c 'import sys, tomllib
reqs = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["train"]
print(next(r for r in reqs if r.replace(" ", "").startswith("torch==")))' "$here/../pyproject.toml")"
version="${want#torch==}"

say() { echo "install-torch: $*" >&2; }
run() {
    say "$1"; shift
    if [ "$dry_run" = 1 ]; then echo "$*"; else "$@"; fi
}

installed="$("$python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)"
if [ "${installed%%+*}" = "$version" ]; then
    say "torch $installed is installed"
    exit 0
fi
if "$python" -m pip install --dry-run --quiet --no-index --no-deps --ignore-installed "$want" >/dev/null 2>&1; then
    run "a local torch $version wheel (pip's find-links)" "$python" -m pip install "$want"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    run "GPU found: PyPI's CUDA build" "$python" -m pip install "$want"
else
    run "no GPU: the CPU build from $cpu_index" "$python" -m pip install "$want" --index-url "$cpu_index"
fi
