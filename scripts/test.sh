#!/usr/bin/env bash
# The test suites, by stage (every suite runs against real store files and a real dev server
# process on 127.0.0.1; docs in README.md, "What is here"):
#
#   bash scripts/test.sh [STAGE...]        the stages in the order given; none: all (what CI runs)
#   bash scripts/test.sh STAGE [ARGS...]   one stage, ARGS passed to its runner (below)
#
#   swift    the Swift tests of the core and sync (Tests/SyncStoreCoreTests; swift build --build-tests
#            in .build/). ARGS: swift test's, e.g. --filter SyncRunTests
#   c        CTest (Tests/c, build/): the header, the release .so, sync against the dev server, the
#            install tree with pkg-config and find_package, the examples. ARGS: ctest's, e.g. -R sync
#   python   the syncstore package installed into .venv (mypy --strict, bindings/python/tests), the
#            dev server with simple-salesforce (Tests/devserver), syncstore-cli (Tests/cli), the store
#            inspector in headless Chromium (Tests/inspector; screenshots in build/inspector-screenshots).
#            ARGS: pytest's, replacing the suites, e.g. Tests/devserver -k faults
#   node     the N-API addon and its Cordova / promise faces (bindings/node/test). ARGS: node --test's
#   artifacts the release artifacts' slice: the wheel, the npm tarball and the C packages without
#            the CLI (scripts/release.sh --without-cli: versions, sizes), the wheel and the tarball
#            installed offline into a fresh venv and an empty app, each running a store
#            (scripts/test-release.sh --slice; the full run in pristine roots is `release`, below)
#   chaos    the chaos suite (Tests/chaos), its short run. ARGS: pytest's; --long first: the long run
#            (below)
#   readme   the README's first hour: its marked blocks, verbatim, on a fresh clone of HEAD (Tests/readme;
#            the Datasync and two-phase blocks with this checkout's debug CLI); every fence closed,
#            every json block parsed. Env: SYNCSTORE_FIRST_HOUR=all also the blocks that compile the CLI
#   fuzz     the fuzz targets' slice: every seed and regression input replayed, then a short run of
#            each target (FUZZ_CI_SECONDS, default 5; docs/fuzzing.md)
#   sanitize the sanitizer slices: CTest, Python and Node on the ASan+UBSan library, CTest on the
#            TSan library (scripts/sanitize.sh --ci; docs/fuzzing.md)
#   all      every stage above, in this order
#   release  not in all (11 minutes on a fresh clone, most of it the release builds and debootstrap): the
#            release artifacts (scripts/release.sh) installed into pristine Debian 12 roots, each
#            running its example (scripts/test-release.sh; needs root). ARGS: python, node, c
#
# A stage builds what it needs (the debug dev server and CLI in .build/, the release library in
# build/, the package in .venv) unless an earlier stage of the same run did.
#
# The long chaos run: bash scripts/test.sh chaos --long [pytest args]. By default 2000 SIGKILLs of a
# crash host (CHAOS_KILLS), 1000 more on an encrypted store (CHAOS_ENC_KILLS), 1000 SIGKILLs during
# key changes (CHAOS_REKEY_KILLS), 1000 fault rounds with 3 clients (CHAOS_ROUNDS, CHAOS_CLIENTS),
# 100 in-flight edit trials (CHAOS_INFLIGHT_TRIALS), 300 callback runs (CHAOS_CALLBACK_RUNS), and
# 200 kills and 200 fault rounds each for Datasync and two-phase (CHAOS_DS_*, CHAOS_TP_*),
# CHAOS_RUNS times (default 1), each with a fresh random seed unless CHAOS_SEED is set; every run
# prints its seed and counts and writes them to build/chaos/summary-<seed>.json. Stops at the first
# failing run (rerun it with CHAOS_SEED=<seed>). Tests/chaos/README.md has every knob.
#
# Env: SYNCSTORE_CLI=ON also builds the installable release syncstore-cli in the c stage and runs
# its install check (about 13 minutes on 2 cores; Tests/cli tests the debug build).
set -euo pipefail
cd "$(dirname "$0")/.."

all_stages=(swift c python node artifacts chaos readme fuzz sanitize)
stages=()
while [ $# -gt 0 ]; do
    case " ${all_stages[*]} all release " in *" $1 "*) ;; *) break ;; esac
    if [ "$1" = all ]; then stages+=("${all_stages[@]}"); else stages+=("$1"); fi
    shift
done
[ ${#stages[@]} -gt 0 ] || { [ $# -eq 0 ] || { sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 2; }; stages=("${all_stages[@]}"); }
args=("$@")
[ ${#args[@]} -eq 0 ] || [ ${#stages[@]} -eq 1 ] || { echo "ARGS go with one stage: scripts/test.sh STAGE [ARGS...]"; exit 2; }

# SYNCSTORE_CLI=ON (above) is CMake's option; below, the variable names the CLI binary for the tests.
cli_option="${SYNCSTORE_CLI:-OFF}"
# The binaries every suite uses, built here: each language's suites read these in one place.
export SYNCSTORE_DEVSERVER="$PWD/.build/debug/syncstore-devserver"
export SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli"
LIB="$PWD/build/lib/libsyncstore.so.1"

done_=" "
once() { case "$done_" in *" $1 "*) return 1 ;; esac; done_+="$1 "; }

need_setup() { once setup || return 0; scripts/setup.sh --dev; }
need_swift() {  # the debug dev server and CLI (the swift stage builds them with the tests)
    once swift-build || return 0
    swift build --product syncstore-devserver
    swift build --product syncstore-cli
}
need_library() {  # build/: the release libsyncstore.so.1, the C tests, the examples
    once library || return 0
    need_swift
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_DEVSERVER="$SYNCSTORE_DEVSERVER" \
        -DSYNCSTORE_CLI="$cli_option" >/dev/null
    cmake --build build -j2
}
need_package() {  # the syncstore package in .venv, with build/lib/libsyncstore.so.1 inside
    once package || return 0
    need_setup; need_library
    echo "== Python package (pip install ./bindings/python into .venv)"
    PIP_ROOT_USER_ACTION=ignore .venv/bin/python -m pip install -q --disable-pip-version-check ./bindings/python
}

stage_swift() {
    need_setup
    once swift-build || true
    swift build --build-tests    # also builds the dev server and the CLI every other suite uses
    swift test --skip-build "$@"
}

stage_c() {
    need_library
    (cd build && ctest --output-on-failure "$@")
}

stage_python() {
    need_package
    .venv/bin/python -m mypy --strict bindings/python/syncstore bindings/python/examples
    # The installed package is tested: no SYNCSTORE_LIB, and no source directory on sys.path.
    if [ $# -gt 0 ]; then
        env -u SYNCSTORE_LIB .venv/bin/python -m pytest -q "$@"
        return
    fi
    env -u SYNCSTORE_LIB .venv/bin/python -m pytest -q bindings/python/tests Tests/devserver Tests/cli
    echo "== Store inspector (syncstore-cli inspect in headless Chromium; screenshots in build/inspector-screenshots)"
    .venv/bin/python -m pytest -q Tests/inspector
}

stage_node() {
    need_setup; need_library
    bash scripts/build-node.sh
    [ $# -gt 0 ] || set -- bindings/node/test/
    SYNCSTORE_LIB="$LIB" node --test "$@"
}

stage_chaos() {
    need_package
    if [ "${1:-}" != --long ]; then
        env -u SYNCSTORE_LIB .venv/bin/python -m pytest -q Tests/chaos "$@"
        return
    fi
    shift
    export CHAOS_KILLS="${CHAOS_KILLS:-2000}" CHAOS_ENC_KILLS="${CHAOS_ENC_KILLS:-1000}"
    export CHAOS_REKEY_KILLS="${CHAOS_REKEY_KILLS:-1000}" CHAOS_ROUNDS="${CHAOS_ROUNDS:-1000}"
    export CHAOS_CLIENTS="${CHAOS_CLIENTS:-3}" CHAOS_INFLIGHT_TRIALS="${CHAOS_INFLIGHT_TRIALS:-100}"
    export CHAOS_CALLBACK_RUNS="${CHAOS_CALLBACK_RUNS:-300}"
    export CHAOS_DS_KILLS="${CHAOS_DS_KILLS:-200}" CHAOS_DS_ROUNDS="${CHAOS_DS_ROUNDS:-200}"
    export CHAOS_TP_KILLS="${CHAOS_TP_KILLS:-200}" CHAOS_TP_ROUNDS="${CHAOS_TP_ROUNDS:-200}"
    mkdir -p build/chaos
    local runs="${CHAOS_RUNS:-1}" fixed_seed="${CHAOS_SEED:-}" run seed
    for ((run = 1; run <= runs; run++)); do
        seed="${fixed_seed:-$(python3 -c 'import random; print(random.SystemRandom().randrange(1, 2**31))')}"
        echo "== chaos run $run/$runs: CHAOS_SEED=$seed kills=$CHAOS_KILLS encrypted=$CHAOS_ENC_KILLS rekey=$CHAOS_REKEY_KILLS rounds=$CHAOS_ROUNDS clients=$CHAOS_CLIENTS"
        CHAOS_SEED="$seed" CHAOS_SUMMARY="build/chaos/summary-$seed.json" \
            .venv/bin/python -m pytest -q -s Tests/chaos "$@" || { echo "chaos run failed: rerun with CHAOS_SEED=$seed"; exit 1; }
    done
}

stage_readme() {
    need_setup
    need_swift    # the debug CLI the Datasync and two-phase blocks run (the quick start builds its own only with =all)
    .venv/bin/python -m pytest -q -s Tests/readme "$@"
}

stage_fuzz() {
    FUZZ_CI_SECONDS=${FUZZ_CI_SECONDS:-5} bash scripts/fuzz.sh --ci "$@"
}

stage_sanitize() {
    need_setup; need_swift
    bash scripts/sanitize.sh asan --ci
    bash scripts/sanitize.sh tsan --ci
}

stage_artifacts() {  # release.sh builds (or finds up to date) the release library in build/ itself
    bash scripts/test-release.sh --slice
}

stage_release() {
    bash scripts/test-release.sh "$@"
}

timings=()
for stage in "${stages[@]}"; do
    echo "== stage $stage"
    start=$SECONDS
    "stage_$stage" ${args[@]+"${args[@]}"}
    timings+=("$stage $((SECONDS - start))s")
done
echo "== passed: ${timings[*]}"
