#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer + AddressSanitizer) of every parser and of the page codec.
# Targets, oracles, figures: docs/fuzzing.md.
#   bash scripts/fuzz.sh [--minutes N] [target...]  long run: N CPU minutes (default 5) per target
#   bash scripts/fuzz.sh --ci                       CI slice: every seed and regression input
#                                                   replayed, then FUZZ_CI_SECONDS (15) per target
#   bash scripts/fuzz.sh --build | --list
# A long run keeps its growing corpus in .build-fuzz/corpus/<target>; a crash or a failed oracle
# leaves the input in .build-fuzz/crashes/<target>/: copy it to Fuzz/regression/<target>/ so CI
# replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.build-fuzz
FUZZ=Fuzz
TOOLCHAIN_BIN=$(dirname "$(readlink -f "$(command -v swift)")")
CLANG="$TOOLCHAIN_BIN/clang"

mode=run minutes=5 targets=()
while (($#)); do
    case "$1" in
        --minutes) minutes=$2; shift 2 ;;
        --ci) mode=ci; shift ;;
        --build) mode=build; shift ;;
        --list) mode=list; shift ;;
        -h|--help) sed -n 2,10p "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done

all_targets() {
    for f in "$FUZZ"/targets/*.swift "$FUZZ"/targets/*.c; do basename "${f%.*}"; done | sort
}
if [ "$mode" = list ]; then all_targets; exit 0; fi
((${#targets[@]})) || mapfile -t targets < <(all_targets)

# True when $1 is missing or older than any of the other files.
stale() {
    local out=$1; shift
    [ -e "$out" ] || return 0
    [ -n "$(find "$@" -newer "$out" -print -quit)" ]
}

build() {
    mkdir -p "$OUT/bin" "$OUT/modules"
    # The cipher has no module map of its own (SwiftPM makes one): one for swiftc here.
    cat > "$OUT/modules/module.modulemap" <<MAP
module CSyncStoreCipher {
    header "$PWD/Sources/CSyncStoreCipher/include/cipher_vfs.h"
    link "crypto"
    export *
}
MAP
    local includes=(-I "$OUT/modules" -I Sources/CSQLite -I Sources/CJansson -I Sources/CCurl -I Sources/CSyncStoreABI)
    # The codec's C files (cipher_vfs.c, the cipher_*.c files it calls, sqlite_setup.c), one object each.
    local cipher_objs=() c
    for c in Sources/CSyncStoreCipher/*.c; do cipher_objs+=("$OUT/$(basename "${c%.c}").o"); done
    if stale "$OUT/cipher_vfs.o" Sources/CSyncStoreCipher "$0"; then
        echo "== fuzz build: page codec"
        for c in Sources/CSyncStoreCipher/*.c; do
            "$CLANG" -c -O2 -g -fsanitize=fuzzer-no-link,address,undefined -I Sources/CSyncStoreCipher/include \
                "$c" -o "$OUT/$(basename "${c%.c}").o"
        done
    fi
    # The core and the support module it imports: each one module (Sources/<name>) compiled once
    # with coverage and ASan; -enable-testing lets the targets reach internal parsers with
    # @testable import (the core takes about a minute). Further arguments: files whose change
    # rebuilds the module.
    swift_module() {
        local name=$1 sources; shift
        stale "$OUT/$name.o" "Sources/$name" "$@" "$0" || return 0
        echo "== fuzz build: $name"
        mapfile -t sources < <(find "Sources/$name" -name '*.swift' | sort)
        swiftc -c -wmo -O -parse-as-library -module-name "$name" -package-name syncstore -enable-testing -sanitize=fuzzer,address \
            -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" "${includes[@]}" \
            "${sources[@]}" -o "$OUT/$name.o"
    }
    swift_module SyncStoreSupport
    swift_module SyncStoreCore "$OUT/SyncStoreSupport.o" include/syncstore.h
    swift_module SyncStoreSync "$OUT/SyncStoreCore.o"
    swift_module SyncStorePlugin "$OUT/SyncStoreSync.o"
    for t in "${targets[@]}"; do
        if [ -f "$FUZZ/targets/$t.swift" ]; then
            stale "$OUT/bin/$t" "$FUZZ/targets/$t.swift" "$FUZZ/Support.swift" "$FUZZ/FakeServer.swift" "$OUT/SyncStoreCore.o" \
                "$OUT/SyncStoreSync.o" "$OUT/SyncStorePlugin.o" "$OUT/SyncStoreSupport.o" || continue
            echo "== fuzz build: $t"
            rm -f "$OUT/bin/$t"  # a failed build must not leave the last binary to run
            swiftc -O -parse-as-library -sanitize=fuzzer,address "${includes[@]}" -module-name "fuzz_$t" -package-name syncstore \
                "$FUZZ/Support.swift" "$FUZZ/FakeServer.swift" "$FUZZ/targets/$t.swift" \
                "$OUT/SyncStoreCore.o" "$OUT/SyncStoreSync.o" "$OUT/SyncStorePlugin.o" "$OUT/SyncStoreSupport.o" "${cipher_objs[@]}" -o "$OUT/bin/$t" 2>&1 | grep -v "Cannot export local symbol" || true
        elif [ -f "$FUZZ/targets/$t.c" ]; then
            stale "$OUT/bin/$t" "$FUZZ/targets/$t.c" "$OUT/cipher_vfs.o" || continue
            echo "== fuzz build: $t"
            rm -f "$OUT/bin/$t"
            "$CLANG" -O1 -g -fsanitize=fuzzer,address,undefined -I Sources/CSyncStoreCipher/include \
                "$FUZZ/targets/$t.c" "${cipher_objs[@]}" -lsqlite3 -lcrypto -o "$OUT/bin/$t" 2>&1 | grep -v "Cannot export local symbol" || true
        else
            echo "no fuzz target '$t' (bash scripts/fuzz.sh --list)" >&2; exit 2
        fi
        [ -x "$OUT/bin/$t" ] || { echo "fuzz build of $t failed" >&2; exit 1; }
    done
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The Swift runtime's own crash handler reads memory ASan then reports: leave crashes to libFuzzer.
export SWIFT_BACKTRACE=enable=no

# libFuzzer flags every run uses: its dictionary, a per-input time limit (a hang is a finding),
# and where a crasher goes.
flags() {
    local t=$1
    mkdir -p "$OUT/crashes/$t"
    echo "-dict=$FUZZ/dict/$t.dict -timeout=25 -rss_limit_mb=4096 -artifact_prefix=$OUT/crashes/$t/ -print_final_stats=1"
}

# "executions, coverage, features, corpus" from the last status line of a libFuzzer log (plain or
# -fork mode).
figures() {
    local last
    last=$(grep -E '^#[0-9]+' "$1" | tail -1)
    sed -nE 's/^#([0-9]+).*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/execs \1  cov \2  ft \3  corpus \4/p' <<<"$last"
}

build
[ "$mode" = build ] && exit 0

if [ "$mode" = ci ]; then
    seconds=${FUZZ_CI_SECONDS:-15}
    failed=()
    for t in "${targets[@]}"; do
        log="$OUT/logs/ci-$t.log"; mkdir -p "$OUT/logs" "$OUT/ci-corpus/$t"
        inputs=("$FUZZ/corpus/$t")
        [ -d "$FUZZ/regression/$t" ] && inputs+=("$FUZZ/regression/$t")
        # Every seed and regression input once (-runs=0 stops after the corpus is read), then a
        # short run that writes new inputs only to the scratch corpus (the first folder).
        # shellcheck disable=SC2046
        if "$OUT/bin/$t" $(flags "$t") -runs=0 "${inputs[@]}" >"$log" 2>&1 \
            && "$OUT/bin/$t" $(flags "$t") -max_total_time="$seconds" "$OUT/ci-corpus/$t" "${inputs[@]}" >>"$log" 2>&1; then
            echo "fuzz $t: ok  $(figures "$log")"
        else
            echo "fuzz $t: FAILED (log: $log, input in $OUT/crashes/$t/)"; tail -40 "$log"; failed+=("$t")
        fi
    done
    ((${#failed[@]} == 0)) || { echo "fuzz targets failed: ${failed[*]}"; exit 1; }
    exit 0
fi

# Long runs, one target after another (each uses one core). -fork=1 runs the fuzzing in a child
# process so a run goes on past a finding: every crasher found is kept, not only the first.
# N minutes are CPU minutes: on a busy machine a run goes on, in chunks of at most 5 minutes
# that resume from the growing corpus, until its processes have used N minutes of CPU.
tick=$(getconf CLK_TCK)
# CPU ticks of this shell's finished children (cutime + cstime in /proc/PID/stat).
children_ticks() { local f; read -ra f < /proc/$$/stat; echo $(( f[15] + f[16] )); }
status=0
for t in "${targets[@]}"; do
    log="$OUT/logs/$t.log"; mkdir -p "$OUT/logs" "$OUT/corpus/$t" "$OUT/crashes/$t"
    : > "$log"
    echo "== fuzz $t for $minutes CPU minutes"
    # Crashes, hangs, OOMs and failed oracles; not libFuzzer's informational slow-unit files (a
    # busy or suspended machine makes those).
    found() { find "$OUT/crashes/$t" -type f ! -name 'slow-unit-*' | wc -l; }
    before=$(found)
    budget=$((minutes * 60 * tick)) used=0 execs=0 chunks=0 started=$SECONDS
    start_ticks=$(children_ticks)
    while ((used < budget)); do
        chunk=$(( (budget - used) / tick )); ((chunk > 300)) && chunk=300; ((chunk < 10)) && chunk=10
        # shellcheck disable=SC2046
        "$OUT/bin/$t" $(flags "$t") -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
            -max_total_time=$chunk "$OUT/corpus/$t" "$FUZZ/corpus/$t" >"$log.chunk" 2>&1 || status=1
        cat "$log.chunk" >> "$log"
        n=$(grep -E '^#[0-9]+' "$log.chunk" | tail -1 | sed -nE 's/^#([0-9]+).*/\1/p')
        execs=$((execs + ${n:-0})) chunks=$((chunks + 1))
        used=$(( $(children_ticks) - start_ticks ))
    done
    rm -f "$log.chunk"
    after=$(found)
    echo "fuzz $t: CPU $((used / tick / 60)) min (wall $(( (SECONDS - started) / 60 )) min, $chunks chunks)  execs $execs  $(figures "$log" | sed 's/^execs [0-9]* *//')  corpus files $(find "$OUT/corpus/$t" -type f | wc -l)  new crashes $((after - before))  (log: $log)"
    ((after == before)) || status=1
done
exit $status
