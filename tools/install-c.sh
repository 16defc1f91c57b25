#!/usr/bin/env bash
# Installs thinwire's C library: the header, the shared library under its SONAME with the
# usual symlinks, the static library, a pkg-config file and a CMake package.
#
#   tools/install-c.sh [--lib-dir DIR] [PREFIX]        PREFIX defaults to /usr/local
#
# Without --lib-dir it builds the library with the `c-release` profile (no debug info, LTO)
# first; with it, it installs libthinwire_ffi.{so,a} from DIR (e.g. target/release). Both
# libraries are installed without debug info (strip --strip-debug): the Rust standard
# library brings its own even into a build without any.
# DESTDIR is honoured: files go to $DESTDIR$PREFIX, and the pkg-config and CMake files name
# $PREFIX. docs/C-API.md describes the layout and how programs find the library at run time.
set -euo pipefail

lib_dir=""
if [ "${1:-}" = "--lib-dir" ]; then
    lib_dir="${2:?--lib-dir needs a directory}"
    shift 2
fi
prefix="${1:-/usr/local}"
case "$prefix" in
    /*) ;;
    *) echo "install-c.sh: PREFIX must be an absolute path, not $prefix" >&2; exit 2 ;;
esac
prefix="${prefix%/}"
root="$(cd "$(dirname "$0")/.." && pwd)"
ffi="$root/crates/thinwire-ffi"

if [ -z "$lib_dir" ]; then
    (cd "$root" && cargo build --profile c-release -p thinwire-ffi --lib)
    target_dir="$(cd "$root" && cargo metadata --no-deps --format-version 1 |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
    lib_dir="$target_dir/c-release"
fi
for f in libthinwire_ffi.so libthinwire_ffi.a; do
    [ -f "$lib_dir/$f" ] || { echo "install-c.sh: no $f in $lib_dir" >&2; exit 1; }
done

# The version is the crate's own or the workspace's it inherits, read without cargo (which a
# `sudo` run may not find); the SONAME is the one build.rs gave the shared library.
package_version() { sed -n "/^\[$1\]/,/^\[/ s/^version = \"\(.*\)\"\$/\1/p" "$2"; }
version="$(package_version package "$ffi/Cargo.toml")"
[ -n "$version" ] || version="$(package_version workspace.package "$root/Cargo.toml")"
soname="$(readelf -d "$lib_dir/libthinwire_ffi.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
case "$soname" in
    libthinwire.so.*) ;;
    *) echo "install-c.sh: $lib_dir/libthinwire_ffi.so has no thinwire SONAME ($soname)" >&2; exit 1 ;;
esac
abi="${soname#libthinwire.so.}"
case "$(readelf -h "$lib_dir/libthinwire_ffi.so" | sed -n 's/.*Class: *//p')" in
    ELF32) pointer_bytes=4 ;;
    *) pointer_bytes=8 ;;
esac

dest="${DESTDIR:-}$prefix"
fill() {
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@SONAME@|$soname|g" \
        -e "s|@ABI@|$abi|g" -e "s|@POINTER_BYTES@|$pointer_bytes|g" "$1" > "$2"
    chmod 644 "$2"
}
install -d "$dest/include" "$dest/lib/pkgconfig" "$dest/lib/cmake/thinwire"
install -m 644 "$ffi/include/thinwire.h" "$dest/include/thinwire.h"
install -m 755 "$lib_dir/libthinwire_ffi.so" "$dest/lib/libthinwire.so.$version"
strip --strip-debug "$dest/lib/libthinwire.so.$version"
ln -sfn "libthinwire.so.$version" "$dest/lib/$soname"
ln -sfn "$soname" "$dest/lib/libthinwire.so"
install -m 644 "$lib_dir/libthinwire_ffi.a" "$dest/lib/libthinwire.a"
strip --strip-debug "$dest/lib/libthinwire.a"
fill "$ffi/thinwire.pc.in" "$dest/lib/pkgconfig/thinwire.pc"
fill "$ffi/cmake/thinwireConfig.cmake.in" "$dest/lib/cmake/thinwire/thinwireConfig.cmake"
fill "$ffi/cmake/thinwireConfigVersion.cmake.in" "$dest/lib/cmake/thinwire/thinwireConfigVersion.cmake"

cat <<MSG
Installed thinwire $version ($soname) under $dest.
Build:  cc game.c \$(pkg-config --cflags --libs thinwire)    or, in CMake,
        find_package(thinwire) and target_link_libraries(game thinwire::thinwire)
MSG
if [ "$prefix" != /usr/local ] && [ "$prefix" != /usr ]; then
    echo "        (with PKG_CONFIG_PATH=$prefix/lib/pkgconfig, or CMAKE_PREFIX_PATH=$prefix)"
fi
cat <<MSG
Run:    the dynamic linker must find $soname in $prefix/lib: run \`ldconfig\` once as root
        (/usr/local/lib is searched on most Linux systems), or link with
        -Wl,-rpath,$prefix/lib, or set LD_LIBRARY_PATH=$prefix/lib;
        or link $prefix/lib/libthinwire.a statically (-lpthread -ldl -lm).
MSG
