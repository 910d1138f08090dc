#!/usr/bin/env bash
# Builds and runs Tests/c/install/consumer.c against an installed SyncStore prefix.
#   check_install.sh pkg-config PREFIX WORKDIR CC
#   check_install.sh find_package PREFIX WORKDIR CMAKE
set -euo pipefail
mode=$1 prefix=$2 work=$3 tool=$4
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work" && mkdir -p "$work"
case "$mode" in
pkg-config)
    pcdir=$(dirname "$(find "$prefix" -name syncstore.pc | head -1)")
    export PKG_CONFIG_PATH="$pcdir"
    libdir=$(pkg-config --variable=libdir syncstore)
    # shellcheck disable=SC2046
    "$tool" -std=c99 -Wall -Wextra -Werror "$here/consumer.c" -o "$work/consumer" \
        $(pkg-config --cflags --libs syncstore) -Wl,-rpath,"$libdir"
    ;;
find_package)
    "$tool" -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
    "$tool" --build "$work/build" >/dev/null
    cp "$work/build/consumer" "$work/consumer"
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
# The program must find the installed library (not the build tree's).
ldd "$work/consumer" | grep -F "$prefix" >/dev/null || { ldd "$work/consumer"; echo "not linked to $prefix"; exit 1; }
"$work/consumer" "$work/stores"
