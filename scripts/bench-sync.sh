#!/usr/bin/env bash
# Sync benchmarks (not part of the tests): sync down N Contacts with the engine vs a C
# baseline (curl + jansson + SQLite by hand) and a Python baseline (simple-salesforce query_all +
# sqlite3), peak RSS at 1M records, and sync up batched vs per-record with injected latency.
# Builds what it needs: the release libsyncstore (CMake, build/), the release devserver
# (SwiftPM, .build/release/) and a venv with bench/requirements.txt (build/bench-venv).
#
#   scripts/bench-sync.sh [bench-sync options]
#   e.g. scripts/bench-sync.sh --records 100000 --rounds 3 --rss-records 1000000 \
#            --up-records 10000 --single-records 1000 --latency 20
# The storage limit (SQLite alone in the engine's layout) and a static page server run
# by default at --records; the 1M figures are behind flags, all of them in one run with
#   scripts/bench-sync.sh --rounds 3 --limit-records 1000000 --limit-rounds 3 --scale-records 1000000 \
#       --up-records 100000 --single-records 1000 --stall-records 1000000 --stall-up-records 100000
# Every option is passed to bench-sync (see the top of bench/sync_bench.c); with --encryption
# (plaintext vs encrypted engine stores only) no Python baseline is set up.
# BENCH_BUILD_DIR: the CMake build directory (default build, as scripts/bench.sh). SYNCSTORE_BUILD_LOCK=FILE:
# the builds run under flock FILE (machines shared by several builds).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${BENCH_JOBS:-2}
build=${BENCH_BUILD_DIR:-build}
lock=()
[ -z "${SYNCSTORE_BUILD_LOCK:-}" ] || lock=(flock "$SYNCSTORE_BUILD_LOCK")
encryption=0
for arg in "$@"; do [ "$arg" != --encryption ] || encryption=1; done

echo "== release devserver (swift build -c release --product syncstore-devserver: .build/release/)"
"${lock[@]}" swift build -c release --product syncstore-devserver -j "$jobs" 2>&1 | tail -n 1

echo "== release libsyncstore and the benchmark programs (CMake, $build/)"
"${lock[@]}" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DSYNCSTORE_BENCH_DEVSERVER="$PWD/.build/release/syncstore-devserver" >/dev/null
"${lock[@]}" cmake --build "$build" --target bench-sync -j "$jobs" 2>&1 | tail -n 1

if [ "$encryption" = 1 ]; then
    echo "== bench-sync --encryption (tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources include || echo ', with uncommitted changes in Sources/include'))"
    exec "./$build/bench-sync" --python none --work "${TMPDIR:-/tmp}/syncstore-bench-sync" "$@"
fi

echo "== Python baseline venv (bench/requirements.txt)"
venv="$build/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
        $SUDO apt-get install -y -qq python3-venv >/dev/null && python3 -m venv "$venv"; }
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r bench/requirements.txt
"$venv/bin/python" -c 'import importlib.metadata as m, sys; print("simple-salesforce", m.version("simple-salesforce"), "requests", m.version("requests"), "python", sys.version.split()[0])'

echo "== bench-sync (tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources include || echo ', with uncommitted changes in Sources/include'))"
"./$build/bench-sync" --python "$venv/bin/python" --work "${TMPDIR:-/tmp}/syncstore-bench-sync" "$@"
