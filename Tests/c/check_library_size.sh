#!/usr/bin/env bash
# The library's stripped size stays under a bound (default 8 MiB; what the release packages ship,
# scripts/release.sh). It grows by about 1.4 MB when the engine calls into the _StringProcessing
# module (e.g. String.contains(_ other: String)): that links it and the regex parser in, so
# neither may appear among the library's symbols (the engine uses its own includes(_:)).
# Usage: check_library_size.sh LIBRARY [MAX_BYTES]
set -euo pipefail
lib="$1" max="${2:-$((8 * 1024 * 1024))}"
tmp=$(mktemp) && trap 'rm -f "$tmp"' EXIT
strip -o "$tmp" "$lib"
size=$(stat -c %s "$tmp")
echo "stripped $(basename "$lib"): $size bytes (bound $max)"
linked=$(nm "$lib" | grep -c -E '17_StringProcessing|12_RegexParser' || true)
if [ "$linked" -gt 0 ]; then
    echo "the library links _StringProcessing / _RegexParser ($linked symbols); the engine's callers of it:"
    nm -u "$(dirname "$lib")"/../swiftpm/release/SyncStore{Core,Sync,Plugin,C}.build/*.o 2>/dev/null | grep -E '17_StringProcessing|12_RegexParser' | sort -u || true
    exit 1
fi
[ "$size" -lt "$max" ] || { echo "over the bound"; exit 1; }
