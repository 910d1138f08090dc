#!/usr/bin/env bash
# The library must run on a machine without a Swift toolchain: no Swift runtime, Foundation or ICU.
set -euo pipefail
deps=$(ldd "$1")
echo "$deps"
if echo "$deps" | grep -qiE 'swift|Foundation|icu|dispatch|not found'; then
    echo "libsyncstore depends on the Swift runtime, Foundation or ICU"; exit 1
fi
