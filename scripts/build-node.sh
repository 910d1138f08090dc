#!/usr/bin/env bash
# Builds the Node-API addon bindings/node/build/syncstore.node with cc (Node's own node_api.h,
# no npm). The addon loads libsyncstore at run time (SYNCSTORE_LIB, else build/lib), so only
# the header is needed here.
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
