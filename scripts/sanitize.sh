#!/usr/bin/env bash
# Sanitizer suites (docs/fuzzing.md):
#   bash scripts/sanitize.sh asan [--ci]   the library and the Swift tests built with AddressSanitizer +
#                                          UndefinedBehaviorSanitizer; the Swift tests, CTest's C tests
#                                          and examples, the Python and the Node suites run on them
#   bash scripts/sanitize.sh tsan [--ci]   ThreadSanitizer: the Swift concurrency and sync tests, and
#                                          CTest's C tests (threads, sync, close during a sync)
# --ci runs the slice scripts/test.sh runs (no Swift test build, whose instrumented debug build of
# the dev server's dependencies alone takes longer than the rest of CI): CTest's C tests, the
# Python and the Node suites against the ASan+UBSan library, and CTest's C tests against the TSan one.
# Build trees: build-asan/, build-tsan/ (CMake, the library), .build-asan/, .build-tsan/ (SwiftPM tests).
# The only suppression is the documented TSan false positive (scripts/tsan.supp).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
ci=0
[ "${2:-}" = --ci ] && ci=1
case "$kind" in asan|tsan) ;; *) sed -n 2,12p "$0"; exit 2 ;; esac

toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
runtime_dir=$(ls -d "$toolchain"/lib/clang/*/lib/linux | head -1)
devserver="$PWD/.build/debug/syncstore-devserver"
[ -x "$devserver" ] || swift build --product syncstore-devserver
export SWIFT_BACKTRACE=enable=no
# The C tests match c_*; the examples *_example_runs. The install and export checks test the
# release artifact itself, not its behaviour, and are left to the ordinary run.
ctest_filter='^c_|_example_runs$'

if [ "$kind" = asan ]; then
    flags=(--sanitize=address --sanitize=undefined)
    preload="$runtime_dir/libclang_rt.asan-x86_64.so"
    # Leaks: the Swift runtime's and CPython's own allocations that live until exit would flood the report.
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
    flags=(--sanitize=thread)
    # The toolchain's TSan runtime has libdispatch interceptors and needs libdispatch loaded with it.
    preload="$runtime_dir/libclang_rt.tsan-x86_64.so:$toolchain/lib/swift/linux/libdispatch.so"
    export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
fi

echo "== $kind: libsyncstore ($kind build in build-$kind/)"
cmake -S . -B "build-$kind" -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_DEVSERVER="$devserver" \
    "-DSYNCSTORE_SWIFT_BUILD_FLAGS=$(IFS=';'; echo "${flags[*]}")" >/dev/null
cmake --build "build-$kind" -j2
lib="$PWD/build-$kind/lib/libsyncstore.so.1"

echo "== $kind: CTest (C tests and examples, the runtime preloaded into each host)"
(cd "build-$kind" && LD_PRELOAD="$preload" ctest --output-on-failure -R "$ctest_filter")

if [ "$kind" = asan ]; then
    echo "== asan: Python tests"
    [ -x .venv/bin/python ] || scripts/setup.sh --dev
    LD_PRELOAD="$preload" PYTHONMALLOC=malloc SYNCSTORE_LIB="$lib" SYNCSTORE_DEVSERVER="$devserver" \
        SYNCSTORE_CLI="$PWD/.build/debug/syncstore-cli" PYTHONPATH="$PWD/bindings/python" \
        .venv/bin/python -m pytest -q -p no:cacheprovider bindings/python/tests
    echo "== asan: Node tests"
    [ -f bindings/node/build/syncstore.node ] || bash scripts/build-node.sh
    LD_PRELOAD="$preload" SYNCSTORE_LIB="$lib" SYNCSTORE_DEVSERVER="$devserver" node --test bindings/node/test/
fi

[ "$ci" = 1 ] && exit 0

echo "== $kind: Swift tests (instrumented debug build in .build-$kind/)"
swift build --build-tests --scratch-path ".build-$kind" "${flags[@]}"
bundle=".build-$kind/debug/SyncStorePackageTests.xctest"
if [ "$kind" = asan ]; then
    "$bundle"
else
    for suite in ConcurrencyTests SyncTests SyncFaultTests; do "$bundle" "SyncStoreCoreTests.$suite"; done
fi
