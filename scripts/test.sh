#!/usr/bin/env bash
# Every test suite: Swift (core and sync), C (CTest: the header, the release .so, sync against a
# real dev server process, the install tree with pkg-config and find_package, the examples),
# Python (the syncstore package installed into .venv, mypy --strict, its pytest suite, the dev
# server with simple-salesforce, syncstore-cli, the chaos suite), Node (the N-API addon and its
# Cordova / promise faces), the README's first hour on a fresh clone, the fuzz targets' slice and
# the sanitizer slices (docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev

echo "== Swift tests"
swift build --build-tests    # also builds .build/debug/syncstore-devserver, used by every sync suite
swift test --skip-build

echo "== C tests (CTest)"
# SYNCSTORE_CLI=ON (the default) adds the installable release syncstore-cli: about 13 minutes on
# 2 cores, so the suite leaves it out (Tests/cli tests the debug build); SYNCSTORE_CLI=ON here
# builds it and runs its install check.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver" \
    -DSYNCSTORE_CLI="${SYNCSTORE_CLI:-OFF}" >/dev/null
cmake --build build -j2
(cd build && ctest --output-on-failure)

echo "== Python package (pip install ./bindings/python into .venv, with build/lib/libsyncstore.so.1 inside)"
PIP_ROOT_USER_ACTION=ignore .venv/bin/python -m pip install -q --disable-pip-version-check ./bindings/python
.venv/bin/python -m mypy --strict bindings/python/syncstore bindings/python/examples

echo "== Python tests"
# The installed package is tested: no SYNCSTORE_LIB, and no source directory on sys.path.
env -u SYNCSTORE_LIB SYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver" \
    SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli" \
    .venv/bin/python -m pytest -q bindings/python/tests Tests/devserver Tests/cli Tests/chaos

echo "== Store inspector (syncstore-cli inspect in headless Chromium; screenshots in build/inspector-screenshots)"
SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli" .venv/bin/python -m pytest -q Tests/inspector

echo "== Node tests"
bash scripts/build-node.sh
SYNCSTORE_LIB="$PWD/build/lib/libsyncstore.so.1" SYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver" \
    node --test bindings/node/test/

echo "== README first hour (its marked blocks, verbatim, on a fresh clone of HEAD; Tests/readme)"
.venv/bin/python -m pytest -q -s Tests/readme

echo "== Fuzz targets (slice: every seed and regression input replayed, then a short run of each target)"
FUZZ_CI_SECONDS=${FUZZ_CI_SECONDS:-5} bash scripts/fuzz.sh --ci

echo "== Sanitizers (slice: CTest, Python and Node on the ASan+UBSan library; CTest on the TSan library)"
bash scripts/sanitize.sh asan --ci
bash scripts/sanitize.sh tsan --ci
