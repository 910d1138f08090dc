#!/usr/bin/env bash
# Builds the Node-API addon bindings/node/build/syncstore.node with cc (Node's own node_api.h,
# no npm), and the library it loads at run time: unless $SYNCSTORE_LIB names one, the addon loads
# the library in the repository's build/lib, so that is built (or brought up to date) with
# CMake, a SwiftPM release build: `require('<repo>/bindings/node')` then works on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "node is not on the PATH (Node 20 or later is needed)"; exit 1; }
prefix="$(dirname "$(dirname "$(command -v node)")")"
include=""
for dir in "$prefix/include/node" /usr/include/node /usr/local/include/node; do
    [ -f "$dir/node_api.h" ] && { include="$dir"; break; }
done
[ -n "$include" ] || { echo "node_api.h not found (install Node's headers, e.g. Debian's libnode-dev)"; exit 1; }
mkdir -p bindings/node/build
${CC:-cc} -std=c11 -O2 -fPIC -shared -Wall -Wextra -D_GNU_SOURCE -fvisibility=hidden \
    -DNAPI_VERSION=8 -DNODE_GYP_MODULE_NAME=syncstore \
    -I include -I "$include" bindings/node/src/*.c \
    -o bindings/node/build/syncstore.node.tmp -ldl -pthread
mv bindings/node/build/syncstore.node.tmp bindings/node/build/syncstore.node
echo "built bindings/node/build/syncstore.node"

if [ -n "${SYNCSTORE_LIB:-}" ]; then
    [ -f "$SYNCSTORE_LIB" ] || { echo "SYNCSTORE_LIB=$SYNCSTORE_LIB does not exist: unset it, or build the library (cmake --build build)"; exit 1; }
    echo "the addon will load \$SYNCSTORE_LIB ($SYNCSTORE_LIB)"
    exit 0
fi
[ -f build/lib/libsyncstore.so ] ||
    echo "building the library in build/lib, which the addon loads (CMake, a SwiftPM release build: several minutes the first time)"
[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target syncstore_swift -j2   # nothing to do when it is up to date
echo "the addon will load $(readlink -f build/lib/libsyncstore.so)"
