#!/usr/bin/env bash
# Store benchmark (not part of the tests): engine vs plain SQLite + jansson, same run.
#   scripts/bench.sh [entries] [bench-store options]   (see the top of bench/store_bench.c)
#   e.g. scripts/bench.sh 100000 --key 'secret'       the engine's store encrypted
#        scripts/bench.sh 100000 --encryption         plaintext vs encrypted engine stores
# SYNCSTORE_BUILD_LOCK=FILE: the build runs under flock FILE (machines shared by several builds).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
lock=()
[ -z "${SYNCSTORE_BUILD_LOCK:-}" ] || lock=(flock "$SYNCSTORE_BUILD_LOCK")
"${lock[@]}" cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
"${lock[@]}" cmake --build build --target bench-store -j2
./build/bench-store "${TMPDIR:-/tmp}/syncstore-bench" "${@:-100000}"
