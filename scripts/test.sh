#!/usr/bin/env bash
# Every test suite: Swift (core and sync), C (CTest: the header, the release .so, sync against a
# real dev server process), Python (the ctypes binding, the dev server with simple-salesforce,
# syncstore-cli, the chaos suite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== Swift tests"
swift build --build-tests    # also builds .build/debug/syncstore-devserver, used by every sync suite
swift test --skip-build

echo "== C tests (CTest)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver" >/dev/null
cmake --build build -j2
(cd build && ctest --output-on-failure)

echo "== Python tests"
SYNCSTORE_LIB="$PWD/build/lib/libsyncstore.so.1" SYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver" \
    SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli" \
    python3 -m pytest -q bindings/python/tests Tests/devserver Tests/cli Tests/chaos
