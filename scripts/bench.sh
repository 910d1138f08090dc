#!/usr/bin/env bash
# Store benchmark (not part of the tests): engine vs plain SQLite + jansson, same run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target bench-store -j2
./build/bench-store "${TMPDIR:-/tmp}/syncstore-bench" "${1:-100000}"
