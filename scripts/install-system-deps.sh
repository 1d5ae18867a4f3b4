#!/usr/bin/env bash
# System (Debian) packages olmorl needs at run time. Idempotent: installs only what is missing.
#   bubblewrap  - the default sandbox for model-written code (olmorl.sandbox, backend "bwrap")
#   python3     - Debian's interpreter, run inside the sandbox (only /usr is visible there)
set -euo pipefail

PACKAGES=(bubblewrap python3)

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
