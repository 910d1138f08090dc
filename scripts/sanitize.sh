#!/usr/bin/env bash
# Sanitizer suites (docs/fuzzing.md):
#   bash scripts/sanitize.sh asan [--ci]   the library and the Swift tests built with AddressSanitizer
#                                          (+ UBSan on the C code); the Swift tests, CTest's C tests
#                                          and examples, the Python and the Node suites run on them
#   bash scripts/sanitize.sh tsan [--ci]   ThreadSanitizer: the Swift concurrency and sync tests, and
#                                          CTest's C tests (threads, sync, close during a sync)
# Python and Node are not instrumented: the sanitizer runtime is preloaded into them (the Python
# package tests that check the installed wheel are left to the ordinary run).
# --ci runs the slice scripts/test.sh runs (no Swift test build, whose instrumented debug build of
# the dev server's dependencies alone takes longer than the rest of CI): CTest's C tests, the
# Python and the Node suites against the ASan+UBSan library, and CTest's C tests against the TSan one.
# Build trees: build-asan/, build-tsan/ (CMake, the library; the SwiftPM builds, library and tests, in its swiftpm/).
# The only suppression is the documented TSan false positive (scripts/tsan.supp).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
ci=0
[ "${2:-}" = --ci ] && ci=1
case "$kind" in asan|tsan) ;; *) sed -n 2,14p "$0"; exit 2 ;; esac

toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
runtime_dir=$(ls -d "$toolchain"/lib/clang/*/lib/linux | head -1)
devserver="$PWD/.build/debug/syncstore-devserver"
[ -x "$devserver" ] || swift build --product syncstore-devserver
export SWIFT_BACKTRACE=enable=no
# The C tests match c_*; the examples *_example_runs. The install and export checks test the
# release artifact itself, not its behaviour, and are left to the ordinary run.
ctest_filter='^c_|_example_runs$'

if [ "$kind" = asan ]; then
    # swiftc has no UBSan on Linux (Swift traps on overflow and out-of-bounds itself): UBSan
    # instruments the C code (the page codec); the ASan runtime carries its handlers.
    flags=(--sanitize=address -Xcc -fsanitize=undefined)
    cflags="-fsanitize=address,undefined -fno-omit-frame-pointer"
    ldflags=""
    preload="$runtime_dir/libclang_rt.asan-x86_64.so"
    # Leaks: the Swift runtime's and CPython's own allocations that live until exit would flood the report.
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
    flags=(--sanitize=thread)
    cflags="-fsanitize=thread"
    # This TSan runtime intercepts libdispatch: a host linked with it links libdispatch too.
    swiftlib="$toolchain/lib/swift/linux"
    ldflags="-L$swiftlib -Wl,-rpath,$swiftlib -Wl,--no-as-needed -ldispatch -lBlocksRuntime"
    # Reports do not stop the host (its cleanup, e.g. stopping its dev server, still runs); a host
    # that had any exits with 66, which fails its test.
    export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp:halt_on_error=0:exitcode=66:second_deadlock_stack=1"
fi

echo "== $kind: libsyncstore ($kind build in build-$kind/)"
# The C hosts (tests, examples) are compiled with the toolchain's clang and the same sanitizer,
# so they carry its runtime, which the library's sanitizer calls resolve against.
cmake -S . -B "build-$kind" -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_DEVSERVER="$devserver" -DSYNCSTORE_CLI=OFF \
    -DCMAKE_C_COMPILER="$toolchain/bin/clang" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
    "-DSYNCSTORE_SWIFT_BUILD_FLAGS=$(IFS=';'; echo "${flags[*]}")" >/dev/null
cmake --build "build-$kind" -j2
lib="$PWD/build-$kind/lib/libsyncstore.so.1"

echo "== $kind: CTest (C tests and examples, instrumented hosts)"
(cd "build-$kind" && ctest --output-on-failure -R "$ctest_filter")

if [ "$kind" = asan ]; then
    echo "== asan: Python tests"
    [ -x .venv/bin/python ] || scripts/setup.sh --dev
    LD_PRELOAD="$preload" PYTHONMALLOC=malloc SYNCSTORE_LIB="$lib" SYNCSTORE_DEVSERVER="$devserver" \
        SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli" PYTHONPATH="$PWD/bindings/python" \
        .venv/bin/python -m pytest -q -p no:cacheprovider bindings/python/tests --ignore=bindings/python/tests/test_package.py
    echo "== asan: Node tests"
    [ -f bindings/node/build/syncstore.node ] || SYNCSTORE_LIB="$lib" bash scripts/build-node.sh
    LD_PRELOAD="$preload" SYNCSTORE_LIB="$lib" SYNCSTORE_DEVSERVER="$devserver" node --test bindings/node/test/
fi

[ "$ci" = 1 ] && exit 0

echo "== $kind: Swift tests (instrumented debug build in build-$kind/swiftpm/)"
swift build --build-tests --scratch-path "build-$kind/swiftpm" "${flags[@]}"
bundle="build-$kind/swiftpm/debug/SyncStorePackageTests.xctest"
if [ "$kind" = asan ]; then
    "$bundle"
else
    # The concurrency and sync suites; a suite name that matched nothing would pass silently.
    for suite in ConcurrencyTests SharedFileTests SyncRunTests SyncFaultTests GhostTests; do
        "$bundle" "SyncStoreCoreTests.$suite" 2>&1 | tee "build-tsan/$suite.log"
        grep -q "Executed [1-9]" "build-tsan/$suite.log" || { echo "no test ran in $suite"; exit 1; }
    done
fi
