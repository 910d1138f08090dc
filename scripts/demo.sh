#!/usr/bin/env bash
# The main job: build syncstore-cli (only what it needs) and run its demo of offline sync end to
# end against the local dev server it starts itself. Extra arguments go to the demo
# (e.g. --records 50000 --keep).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --product syncstore-cli
.build/debug/syncstore-cli demo "$@"
