#!/usr/bin/env bash
# The cost of encryption at rest (not part of the tests): the engine against itself, plaintext
# stores vs encrypted stores, paired in one run (alternating rounds; best and median), with
# encrypted/plaintext ratios for
#   upsert throughput and exact query by indexed Id   (scripts/bench.sh --encryption)
#   store open: plaintext, raw key, passphrase at kdfIter 256000 and 4000 (ms)
#   sync down N records over HTTPS and HTTP           (scripts/bench-sync.sh --encryption)
# then one table of the "ENC|" lines of both.
#
#   scripts/bench-encryption.sh [--records N] [--rounds R] [--queries Q] [--key K]
#                               [--kdf-iter N] [--no-http]
#   defaults: 100000 records, 3 rounds, 20000 queries a pass, a passphrase at kdfIter 256000
#   (--key "x'<64 hex>'" for a raw key).
# Both use the CMake build directory BENCH_BUILD_DIR (default build, as scripts/bench.sh) and the
# release devserver in .build/release; SYNCSTORE_BUILD_LOCK=FILE runs the builds under flock FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
records=100000 rounds=3 queries=20000
key=() http=()
while [ $# -gt 0 ]; do
    case "$1" in
        --records) records=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --key|--kdf-iter) key+=("$1" "$2"); shift 2 ;;
        --no-http) http=(--no-http); shift ;;
        *) echo "bench-encryption: unknown option $1" >&2; exit 2 ;;
    esac
done
export BENCH_BUILD_DIR=${BENCH_BUILD_DIR:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
tree="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources include || echo ', with uncommitted changes in Sources/include')"
start="$(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== encryption benchmark: tree $tree, $(nproc) CPUs, $start"

scripts/bench.sh "$records" --encryption --rounds "$rounds" --queries "$queries" "${key[@]}" | tee -a "$log"
scripts/bench-sync.sh --encryption --records "$records" --rounds "$rounds" "${key[@]}" "${http[@]}" | tee -a "$log"

echo
echo "==== encryption at rest: encrypted / plaintext, one run (tree $tree) ===="
echo "started $start; ended $(date -u '+%H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
grep '^ENC|' "$log" | sed 's/^ENC| //'
grep -E '^  load average' "$log" || true
