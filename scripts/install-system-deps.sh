#!/usr/bin/env bash
# System (Debian) packages olmorl needs at run time. Idempotent: installs only what is missing.
#   bubblewrap  - the default sandbox for model-written code (olmorl.sandbox, backend "bwrap")
#   python3     - Debian's interpreter, run inside the sandbox (only /usr is visible there)
#   python3-*   - the packages sandboxed Python programs may import (docs/sandbox.md: "Sandbox packages")
#   toolchains  - the sandbox's other languages (docs/sandbox.md: "Sandbox languages"): gcc/g++ (C, C++),
#                 openjdk-17-jdk-headless (Java), nodejs (JavaScript), golang-go (Go), rustc (Rust)
#
# Environment:
#   OLMORL_SANDBOX_TOOLCHAINS  0 = skip the language toolchains (Python and bash programs only)
set -euo pipefail

PACKAGES=(bubblewrap python3
          python3-numpy python3-pytest python3-sortedcontainers python3-sympy)
if [ "${OLMORL_SANDBOX_TOOLCHAINS:-1}" != 0 ]; then
    PACKAGES+=(gcc g++ libc6-dev openjdk-17-jdk-headless nodejs golang-go rustc)
fi

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
