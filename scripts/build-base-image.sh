#!/usr/bin/env bash
# Build a local Debian bookworm + Python 3.11 base image without any image registry.
#
#   debootstrap --variant=minbase  (from the Debian mirror apt already uses here)
#   | tar | docker import          -> olmorl-base:bookworm
#
# Bookworm's python3 is 3.11. The image also carries pip/venv, bubblewrap (the code sandbox
# runs inside the server's container) and tini (PID 1 that reaps orphaned sandbox processes).
# Skips the build when the tag already exists; set OLMORL_BASE_REBUILD=1 to force one.
#
# Environment:
#   OLMORL_BASE_IMAGE      tag to build (default olmorl-base:bookworm)
#   OLMORL_DEBIAN_MIRROR   Debian mirror URL (default: the first bookworm mirror in apt's sources)
#   OLMORL_BASE_REBUILD    1 = rebuild even if the tag exists
set -euo pipefail

tag="${OLMORL_BASE_IMAGE:-olmorl-base:bookworm}"
suite=bookworm
packages=python3,python3-venv,python3-pip,ca-certificates,bubblewrap,tini

say() { echo "build-base-image: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/docker-engine.sh"

if [ "${OLMORL_BASE_REBUILD:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
    say "$tag already exists; not rebuilding (OLMORL_BASE_REBUILD=1 forces it)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"

# The Debian mirror apt uses here: deb822 `URIs:` lines or one-line `deb URL SUITE ...`
# entries, taking the first whose path ends in /debian (not -security, not a third-party repo).
find_mirror() {
    local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources)
    local f
    for f in "${files[@]}"; do
        [ -r "$f" ] || continue
        awk '
            /^[[:space:]]*#/ { next }
            $1 == "URIs:" { for (i = 2; i <= NF; i++) print $i; next }
            $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }
        ' "$f"
    done | grep -E '/debian/?$' | head -n 1
}
mirror="${OLMORL_DEBIAN_MIRROR:-$(find_mirror || true)}"
mirror="${mirror:-http://deb.debian.org/debian}"

if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt_opts=(-o DPkg::Lock::Timeout=300 -y --no-install-recommends)
    if ! apt-get install "${apt_opts[@]}" debootstrap >/dev/null 2>&1; then
        apt-get -o DPkg::Lock::Timeout=300 update -qq || die "apt-get update failed"
        apt-get install "${apt_opts[@]}" debootstrap || die "apt-get install debootstrap failed"
    fi
fi

rootfs="$(mktemp -d /tmp/olmorl-rootfs.XXXXXX)"
cleanup() {
    # An interrupted debootstrap leaves /proc (and maybe /sys) mounted inside the target.
    awk -v root="$rootfs/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r umount -l
    rm -rf --one-file-system "$rootfs" "$rootfs.log"
}
trap cleanup EXIT

say "debootstrap $suite from $mirror (+ $packages)"
started=$SECONDS
# --cache-dir keeps the downloaded .debs, so a rebuild (OLMORL_BASE_REBUILD=1) skips the downloads.
mkdir -p /var/cache/olmorl-debootstrap
debootstrap --variant=minbase --include="$packages" --cache-dir=/var/cache/olmorl-debootstrap \
    "$suite" "$rootfs" "$mirror" \
    >"$rootfs.log" 2>&1 || { tail -n 30 "$rootfs.log" >&2; die "debootstrap failed (log: $rootfs.log)"; }
say "debootstrap took $((SECONDS - started))s"

# Slim the rootfs: package caches and lists are not needed at run time (apt-get update restores them).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
# The target's apt sources point at the same mirror, so `apt-get install` works in builds.
echo "deb $mirror $suite main" >"$rootfs/etc/apt/sources.list"

started=$SECONDS
tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    --message "debootstrap --variant=minbase $suite + $packages" \
    - "$tag" >/dev/null
say "docker import took $((SECONDS - started))s"

docker run --rm --network none "$tag" python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
    || die "$tag has no working Python 3.11"
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
