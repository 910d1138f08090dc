#!/usr/bin/env bash
# Installs what building and testing SyncStore needs on Debian (run as root, or with sudo).
# The Swift 6.3 toolchain must already be on the PATH. With --dev, also what the tests use: Node
# headers and tsc, and the Python tools in .venv at the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the library, the CLI and its demo need.
packages=(libsqlite3-dev libjansson-dev libcurl4-openssl-dev libssl-dev cmake pkg-config openssl)
if [ "${1:-}" = "--dev" ]; then
    # The tests: Python's venv, tsc for the Node typings check, and the Node binding builds
    # against the installed Node's node_api.h (without a Node, Debian's).
    packages+=(python3-venv node-typescript)
    # The inspector's browser tests (Tests/inspector): Debian's Chromium and its chromedriver.
    packages+=(chromium chromium-driver)
    command -v node >/dev/null || packages+=(nodejs libnode-dev)
fi
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "swift is not on the PATH: install the Swift 6.3 toolchain"; exit 1; }
[ "${1:-}" = "--dev" ] || exit 0
# --dev (the tests): Python tools live in .venv (PEP 668: Debian's python3 refuses pip outside a
# virtual environment). A failed install fails the setup.
[ -x .venv/bin/python ] || python3 -m venv .venv
PIP_ROOT_USER_ACTION=ignore .venv/bin/python -m pip install -q --disable-pip-version-check \
    -r requirements-dev.txt -r Tests/devserver/requirements.txt
