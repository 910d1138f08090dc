#!/usr/bin/env bash
# Builds syncstore-devserver and runs its pytest suite (simple-salesforce fidelity, faults, fuzz).
#   scripts/devserver-test.sh [pytest args...]
# Env: SCRATCH (default .build-devserver), SKIP_BUILD=1, SKIP_PIP=1, FUZZ_ITERATIONS (default 3000).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH="${SCRATCH:-.build-devserver}"
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    swift build --scratch-path "$SCRATCH" --product syncstore-devserver
fi
# Python tools live in .venv (PEP 668: Debian's python3 refuses pip outside a virtual environment).
[ -x .venv/bin/python ] || python3 -m venv .venv
if [[ "${SKIP_PIP:-0}" != 1 ]]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r Tests/devserver/requirements.txt
fi
export SYNCSTORE_DEVSERVER="${SYNCSTORE_DEVSERVER:-$SCRATCH/debug/syncstore-devserver}"
exec .venv/bin/python -m pytest -q Tests/devserver "$@"
