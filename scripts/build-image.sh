#!/usr/bin/env bash
# Build the olmorl-rewards image on a machine that cannot reach an image registry:
# start a Docker engine if needed, build the local base image (once), fill the wheelhouse
# (once per dependency set), then `docker build`.
#
#   scripts/build-image.sh [extra docker build args...]
#
# Why a wheelhouse: this network intercepts TLS with a CA that only the host trusts, so pip
# inside the build cannot verify PyPI. The host's pip downloads/builds the wheels into
# docker/wheels/ (git-ignored) and the Dockerfile installs from there with --no-index.
#
# Environment:
#   OLMORL_IMAGE        tag to build (default olmorl-rewards)
#   OLMORL_BASE_IMAGE   base image (default olmorl-base:bookworm, built by build-base-image.sh);
#                       set it to e.g. python:3.11-slim where a registry is reachable
#   OLMORL_WHEELHOUSE   0 = leave docker/wheels/ alone and let pip in the build use PyPI
#   OLMORL_IMAGE_VARIANT  full = also build $OLMORL_IMAGE:full, the server plus every sandbox language
#                       toolchain and Python package (docker/Dockerfile.full); default lean: only the image
#
#   scripts/build-image.sh --sandbox-full   builds only olmorl-sandbox:full (docker/Dockerfile.full on the
#                       base image): the image for the docker sandbox backend with every language
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
image="${OLMORL_IMAGE:-olmorl-rewards}"
base="${OLMORL_BASE_IMAGE:-olmorl-base:bookworm}"
wheels="$repo/docker/wheels"

say() { echo "build-image: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

"$here/docker-engine.sh"
# One build at a time on this machine (several test runs may start together): they share the
# base image, the wheelhouse and the tag.
exec 9>"${TMPDIR:-/tmp}/olmorl-build-image.lock"
flock 9
if [ "$base" = olmorl-base:bookworm ]; then
    OLMORL_BASE_IMAGE="$base" "$here/build-base-image.sh"
fi

full_variant() {  # full_variant BASE TAG [RUN_USER]: docker/Dockerfile.full on BASE
    local started=$SECONDS
    DOCKER_BUILDKIT=0 docker build --network host -f "$repo/docker/Dockerfile.full" \
        --build-arg BASE="$1" --build-arg RUN_USER="${3:-10001}" -t "$2" "$repo"
    say "built $2 on $1 in $((SECONDS - started))s"
}
if [ "${1:-}" = --sandbox-full ]; then
    full_variant "$base" olmorl-sandbox:full 65534
    exit 0
fi

if [ "${OLMORL_WHEELHOUSE:-1}" != 0 ]; then
    python=${PYTHON:-python3}
    "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
        || die "the wheelhouse must be built with Python 3.11 (the image's); set PYTHON=python3.11"
    # Same requirement list as the Dockerfile computes, plus the package's build backend, resolved under
    # the same constraints.txt; its hash is part of the list, so a new pin refills the wheelhouse.
    wanted="$("$python" -c 'import hashlib, sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))["project"]
reqs = p["dependencies"] + p["optional-dependencies"]["server"] + ["setuptools>=69", "wheel"]
print("\n".join(r for r in reqs if not r.startswith("olmorl")))
print("# constraints.txt sha256 " + hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest())' \
        "$repo/pyproject.toml" "$repo/constraints.txt")"
    if [ "$wanted" != "$(cat "$wheels/requirements.txt" 2>/dev/null)" ]; then
        started=$SECONDS
        say "filling $wheels with the host's pip"
        find "$wheels" -name '*.whl' -delete
        printf '%s\n' "$wanted" >"$wheels/requirements.in"
        "$python" -m pip wheel --quiet --wheel-dir "$wheels" -c "$repo/constraints.txt" -r "$wheels/requirements.in" \
            || die "pip wheel failed"
        mv "$wheels/requirements.in" "$wheels/requirements.txt"
        say "wheelhouse: $(ls "$wheels"/*.whl | wc -l) wheels, $(du -sh "$wheels" | cut -f1), $((SECONDS - started))s"
    fi
fi

started=$SECONDS
# Legacy builder: the engine is Debian's 20.10 and no buildx plugin is installed.
# --network host: anything in the build that does reach out goes the way this host does.
# The legacy builder leaves each earlier stage behind as an untagged image; building the stages
# first under tags of their own (<image>-build, <image>-wheel) keeps them named and keeps them as
# the cache of the next build. --force-rm: a failed step leaves no stopped container behind either.
for stage in build wheel ""; do
    DOCKER_BUILDKIT=0 docker build --quiet --force-rm --network host --build-arg BASE_IMAGE="$base" \
        ${stage:+--target "$stage"} -t "$image${stage:+-$stage}" "$@" "$repo" >/dev/null \
        || die "docker build${stage:+ of stage $stage} failed"
done
say "built $image on $base in $((SECONDS - started))s: $(docker image inspect --format '{{.Size}}' "$image" \
    | awk '{printf "%.0f MB", $1 / 1e6}')"
if [ "${OLMORL_IMAGE_VARIANT:-lean}" = full ]; then
    full_variant "$image" "${image%%:*}:full"
fi
