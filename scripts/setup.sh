#!/usr/bin/env bash
# Installs what building and testing SyncStore needs on Debian (run as root, or with sudo).
# The Swift 6.3 toolchain must already be on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libsqlite3-dev libjansson-dev libcurl4-openssl-dev cmake pkg-config python3-pip openssl)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "swift is not on the PATH: install the Swift 6.3 toolchain"; exit 1; }
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt -r Tests/devserver/requirements.txt 2>&1 | grep -v 'Running pip as' || true
