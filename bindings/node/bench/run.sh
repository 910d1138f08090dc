#!/usr/bin/env bash
# Node module vs C directly, same workload: bash bindings/node/bench/run.sh [entries] [queries]
# Uses $SYNCSTORE_LIB (default build/lib/libsyncstore.so); builds the addon and the C side.
set -euo pipefail
cd "$(dirname "$0")/../../.."
lib="${SYNCSTORE_LIB:-$PWD/build/lib/libsyncstore.so}"
[ -f "$lib" ] || { echo "libsyncstore not found at $lib (set SYNCSTORE_LIB)"; exit 1; }
bash scripts/build-node.sh >/dev/null
${CC:-cc} -std=c11 -O2 -I include bindings/node/bench/c_bench.c -o bindings/node/build/c_bench \
    "$lib" -pthread -Wl,-rpath,"$(cd "$(dirname "$lib")" && pwd)"
SYNCSTORE_LIB="$lib" node bindings/node/bench/bench.js "${1:-100000}" "${2:-10000}"
