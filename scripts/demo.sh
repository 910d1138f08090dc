#!/usr/bin/env bash
# The main job: build libsyncstore and run the demo against a store under ./demo-stores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target syncstore-example -j2
./build/syncstore-example "${1:-demo-stores}"
