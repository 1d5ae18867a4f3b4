#!/usr/bin/env bash
# Make a Docker engine answer on this machine, or exit non-zero saying why.
#
# Idempotent: does nothing when `docker info` already works. Otherwise installs Debian's
# docker.io (apt) if dockerd is missing and starts dockerd in the background.
#
# The engine is started without touching the host's packet filtering: --iptables=false and
# --ip-forward=false leave iptables rules and net.ipv4.ip_forward as they were. Published ports
# (`-p 127.0.0.1::8000`) still work through docker's userland proxy; builds that need the
# network use `docker build --network host` (scripts/build-image.sh does).
#
# Environment:
#   OLMORL_DOCKERD_LOG      dockerd log file (default /var/log/olmorl-dockerd.log)
#   OLMORL_DOCKERD_WAIT_S   seconds to wait for the engine to answer (default 60)
set -euo pipefail

log_file="${OLMORL_DOCKERD_LOG:-/var/log/olmorl-dockerd.log}"
wait_s="${OLMORL_DOCKERD_WAIT_S:-60}"

say() { echo "docker-engine: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@";
    elif command -v sudo >/dev/null 2>&1; then sudo -n "$@";
    else die "need root (or passwordless sudo) to run: $*"; fi
}

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

# gVisor's runsc (Debian package) registered as a runtime, for the sandbox's paranoid mode
# (OLMORL_SANDBOX_DOCKER_RUNTIME=runsc). Merged into daemon.json; a running dockerd reloads it on SIGHUP.
register_runsc() {
    if ! command -v runsc >/dev/null 2>&1; then
        say "installing Debian's runsc (gVisor)"
        DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends runsc \
            >/dev/null 2>&1 || { say "runsc not installable; the gVisor runtime stays unavailable"; return 0; }
    fi
    as_root mkdir -p /etc/docker
    as_root python3 - "$(command -v runsc)" <<'PY'
import json, os, sys
path = "/etc/docker/daemon.json"
config = json.load(open(path)) if os.path.exists(path) else {}
config.setdefault("runtimes", {})["runsc"] = {"path": sys.argv[1], "runtimeArgs": ["--platform=ptrace", "--network=none"]}
json.dump(config, open(path, "w"))
PY
}

runsc_registered() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

if engine_answers; then
    if ! runsc_registered; then
        register_runsc
        command -v runsc >/dev/null 2>&1 && as_root pkill -HUP -x dockerd && sleep 1
    fi
    say "engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
    exit 0
fi


if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 \
        || die "no dockerd and no apt-get to install Debian's docker.io; install a Docker engine by hand"
    say "installing Debian's docker.io with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt_opts=(-o DPkg::Lock::Timeout=300 -y --no-install-recommends)
    # Try the local package lists first; refresh them only when that fails.
    if ! as_root apt-get install "${apt_opts[@]}" docker.io >/dev/null 2>&1; then
        as_root apt-get -o DPkg::Lock::Timeout=300 update -qq \
            || die "apt-get update failed; cannot install docker.io"
        as_root apt-get install "${apt_opts[@]}" docker.io \
            || die "apt-get install docker.io failed"
    fi
    command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is not on PATH"
fi

register_runsc

# An engine may be installed but not running (no systemd here): start one ourselves.
if ! pgrep -x dockerd >/dev/null 2>&1; then
    say "starting dockerd (log: $log_file)"
    as_root mkdir -p "$(dirname "$log_file")"
    # setsid: the daemon outlives this script and the shell that ran it.
    as_root setsid dockerd \
        --host unix:///var/run/docker.sock \
        --iptables=false --ip-forward=false \
        >>"$log_file" 2>&1 </dev/null &
else
    say "dockerd is running but not answering yet; waiting for it"
fi

deadline=$((SECONDS + wait_s))
until engine_answers; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        say "dockerd did not answer within ${wait_s}s; last lines of $log_file:"
        tail -n 8 "$log_file" >&2 2>/dev/null || true
        die "no Docker engine (see $log_file)"
    fi
    if ! pgrep -x dockerd >/dev/null 2>&1; then
        say "dockerd exited; last lines of $log_file:"
        tail -n 8 "$log_file" >&2 2>/dev/null || true
        die "dockerd could not start (see $log_file)"
    fi
    sleep 0.5
done
say "engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
