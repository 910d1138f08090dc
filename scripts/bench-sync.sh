#!/usr/bin/env bash
# Sync benchmarks of issue 4 (not part of the tests): sync down N Contacts with the engine vs a C
# baseline (curl + jansson + SQLite by hand) and a Python baseline (simple-salesforce query_all +
# sqlite3), peak RSS at 1M records, and sync up batched vs per-record with injected latency.
# Builds what it needs: the release libsyncstore (CMake, build-bench/), the release devserver
# (SwiftPM, .build-bench/) and a venv with bench/requirements.txt (build-bench/venv).
#
#   scripts/bench-sync.sh [bench-sync options]
#   e.g. scripts/bench-sync.sh --records 100000 --rounds 3 --rss-records 1000000 \
#            --up-records 10000 --single-records 1000 --latency 20
# Every option is passed to bench-sync (see the top of bench/sync_bench.c).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${BENCH_JOBS:-2}

echo "== release devserver (swift build -c release --product syncstore-devserver --scratch-path .build-bench)"
swift build -c release --product syncstore-devserver --scratch-path .build-bench -j "$jobs" 2>&1 | tail -n 1

echo "== release libsyncstore and the benchmark programs (CMake, build-bench/)"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release \
      -DSYNCSTORE_BENCH_DEVSERVER="$PWD/.build-bench/release/syncstore-devserver" >/dev/null
cmake --build build-bench --target bench-sync -j "$jobs" 2>&1 | tail -n 1

echo "== Python baseline venv (bench/requirements.txt)"
venv=build-bench/venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
        $SUDO apt-get install -y -qq python3-venv >/dev/null && python3 -m venv "$venv"; }
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r bench/requirements.txt
"$venv/bin/python" -c 'import importlib.metadata as m, sys; print("simple-salesforce", m.version("simple-salesforce"), "requests", m.version("requests"), "python", sys.version.split()[0])'

echo "== bench-sync (tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources include || echo ', with uncommitted changes in Sources/include'))"
./build-bench/bench-sync --python "$venv/bin/python" --work "${TMPDIR:-/tmp}/syncstore-bench-sync" "$@"
