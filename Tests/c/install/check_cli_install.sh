#!/usr/bin/env bash
# The installed syncstore-cli: no Swift library among its dependencies, it runs with no toolchain
# on PATH (a clean environment), and its man page and shell completions are installed.
#   check_cli_install.sh PREFIX VERSION
set -euo pipefail
prefix=$1 version=$2
cli="$prefix/bin/syncstore-cli"
test -x "$cli" || { echo "no $cli"; exit 1; }
deps=$(ldd "$cli")
if echo "$deps" | grep -Eq 'not found|libswift|libFoundation|libdispatch|lib_FoundationICU|libBlocksRuntime'; then
    echo "syncstore-cli needs Swift libraries at run time:"; echo "$deps"; exit 1
fi
out=$(env -i PATH=/usr/bin:/bin HOME=/nonexistent "$cli" --version)
test "$out" = "$version" || { echo "--version said '$out', not $version"; exit 1; }
env -i PATH=/usr/bin:/bin "$cli" soup --help | grep -q "register" || { echo "soup --help failed"; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
env -i PATH=/usr/bin:/bin "$cli" soup register --root "$root" contacts '[{"path":"Id","type":"string"}]' >/dev/null
env -i PATH=/usr/bin:/bin "$cli" soup list --root "$root" | grep -q "contacts" || { echo "soup list failed"; exit 1; }
man=$(find "$prefix" -name syncstore-cli.1)
test -n "$man" && grep -q '^\.TH SYNCSTORE-CLI 1' "$man" && grep -q 'soup register' "$man" || { echo "no man page"; exit 1; }
for f in share/bash-completion/completions/syncstore-cli share/zsh/site-functions/_syncstore-cli \
         share/fish/vendor_completions.d/syncstore-cli.fish; do
    grep -q 'syncstore-cli' "$prefix/$f" || { echo "no completion $f"; exit 1; }
done
echo "syncstore-cli $version installed: runs without the toolchain, man page and completions"
