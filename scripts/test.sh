#!/usr/bin/env bash
# Every test suite: Swift (core), C (CTest, against the header and the release .so), Python.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== Swift tests"
swift build --build-tests
swift test --skip-build

echo "== C tests (CTest)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2
(cd build && ctest --output-on-failure)

echo "== Python tests"
SYNCSTORE_LIB="$PWD/build/lib/libsyncstore.so.1" python3 -m pytest -q bindings/python/tests
