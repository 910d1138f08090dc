#!/usr/bin/env bash
# The functions the header declares and the global symbols the library exports must be the same set.
set -euo pipefail
header=$1 lib=$2
declared=$(grep -oE '\bsyncstore_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ && $2 != "A" {print $3}' | sed 's/@.*//' | sort -u)
if [ "$declared" != "$exported" ]; then
    echo "declared but not exported:"; comm -23 <(echo "$declared") <(echo "$exported")
    echo "exported but not declared:"; comm -13 <(echo "$declared") <(echo "$exported")
    exit 1
fi
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
abi=$(awk '$1 == "#define" && $2 == "SYNCSTORE_ABI_VERSION" {print $3}' "$header")
[ "$soname" = "libsyncstore.so.$abi" ] || { echo "soname '$soname', the header's SYNCSTORE_ABI_VERSION says libsyncstore.so.$abi"; exit 1; }
echo "OK: $(echo "$declared" | wc -l) functions, soname $soname"
