#!/usr/bin/env bash
# Issue 26 section 3 on a lent machine's idle CPU cores (16; the GPU is not used): the multi-turn throughput
# benchmark where the trainer's engine thread, its multi-turn loop and the reward server each have a core, not
# 2 shared ones. One command from the repo root, carrying the wheels and bubblewrap:
#   bash scripts/multiturn-leg.sh        # run(..., carry=[".whl", ".legbin"])
# .legbin/ (not committed) holds /usr/bin/bwrap and the libraries it needs that a bare machine may lack
# (libselinux, libpcre2-8, libcap): `bash scripts/multiturn-leg.sh --pack` fills it here.
# Sandbox: bubblewrap when a python session opens and runs a tool call under it within 60 s, else the
# rlimits-only `process` backend (no isolation; the output says which). Then, within MULTITURN_LEG_DEADLINE_S
# (300), the benchmark with pools of 0 and 64 warm interpreters, 3 repeats each. Writes $OUT/multiturn.md and
# $OUT/log.txt. MULTITURN_LEG_ARGS: more benchmark flags (e.g. "--groups 4 --sft-steps 30" to try it anywhere).
set -uo pipefail

if [ "${1:-}" = "--pack" ]; then
    mkdir -p .legbin && cp /usr/bin/bwrap .legbin/bwrap.bin
    for lib in libselinux.so.1 libpcre2-8.so.0 libcap.so.2; do cp -L "/lib/x86_64-linux-gnu/$lib" .legbin/; done
    printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d" exec "$d/bwrap.bin" "$@"\n' > .legbin/bwrap
    chmod +x .legbin/bwrap
    grep -qx '/.legbin/' .git/info/exclude || echo '/.legbin/' >> .git/info/exclude
    exit 0
fi

# shellcheck source=scripts/leg-common.sh
source "$(dirname "$0")/leg-common.sh"
leg_log /tmp/multiturn-leg-out
deadline=${MULTITURN_LEG_DEADLINE_S:-300}
install_carried_wheels || leg_finish 2
if ! bwrap --version >/dev/null 2>&1 && [ -x .legbin/bwrap ]; then
    export PATH="$PWD/.legbin:$PATH"
fi
echo "== $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); bwrap: $(bwrap --version 2>&1 | head -1)"

probe_sessions() {  # a python session opens, runs a tool call and verifies on a local reward server
    timeout -k 5 60 python3 - <<'PY'
import httpx
from olmorl.rewards.service._local import LocalRewardServer

server = LocalRewardServer().start()
try:
    opened = httpx.post(server.url + "/v1/sessions", json={"env": "python", "task": {
        "verifier": "math", "ground_truth": "6"}}, timeout=30).json()
    sid = opened["session_id"]
    out = httpx.post(f"{server.url}/v1/sessions/{sid}/tool", json={"name": "python", "arguments": {
        "code": "print(2*3)"}}, timeout=30).json()
    print("probe tool call:", out)
    assert out["status"] == "ok" and out["output"].strip() == "6", out
finally:
    server.stop()
PY
}
if probe_sessions; then
    echo "== sandbox: bubblewrap (auto)"
else
    echo "== sandbox: bubblewrap did not run a session here; the rlimits-only process backend (no isolation)"
    export OLMORL_SANDBOX_BACKEND=process OLMORL_SANDBOX_ALLOW_INSECURE=1
    probe_sessions || { echo "no session ran under either backend"; leg_finish 1; }
fi

# shellcheck disable=SC2206  # MULTITURN_LEG_ARGS is a list of flags (e.g. --groups 4 to try it anywhere)
bench=(benchmarks/trainer_multiturn_throughput.py --warm-interpreters 0,64 --repeats 3 ${MULTITURN_LEG_ARGS:-})
rc=0
echo "== the benchmark (${SECONDS} s spent)"
timeout -k 5 $((deadline - SECONDS - 10)) python3 "${bench[@]}" 2>&1 | grep -v "it/s\]" | tee "$OUT/multiturn.md"
[ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
echo "multiturn-leg: ${SECONDS} s in all, exit status $rc"
leg_finish $rc
