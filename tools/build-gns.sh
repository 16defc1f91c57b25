#!/usr/bin/env bash
# Builds Valve's GameNetworkingSockets (GNS) from a source tree, for `thinwire bench`'s GNS peer.
#
#   tools/build-gns.sh SRC_DIR [BUILD_DIR]
#
# SRC_DIR: a checkout of the public ValveSoftware/GameNetworkingSockets (the bench was written
# against commit e707b3a). BUILD_DIR defaults to GNS_DIR/build (GNS_DIR below). Needs Debian's
# cmake, ninja-build (else make), g++, libssl-dev, libprotobuf-dev and protobuf-compiler:
#   apt-get install cmake ninja-build g++ libssl-dev libprotobuf-dev protobuf-compiler
# It configures a Release build of the shared library with OpenSSL's crypto, without ICE/WebRTC
# (no P2P: the bench connects by IP), then copies libGameNetworkingSockets.so to
#   GNS_DIR = ${XDG_CACHE_HOME:-$HOME/.cache}/thinwire/gns
# (with a file COMMIT naming the source commit), the default place thinwire-gns loads it from
# at run time. THINWIRE_GNS_LIB=/path/to/libGameNetworkingSockets.so overrides that place.
# Nothing in the workspace links GNS: without the library the bench shows GNS as not built.
set -euo pipefail

src="${1:?usage: tools/build-gns.sh SRC_DIR [BUILD_DIR]}"
src="$(cd "$src" && pwd)"
[ -f "$src/CMakeLists.txt" ] && [ -d "$src/include/steam" ] || {
    echo "build-gns.sh: $src is not a GameNetworkingSockets source tree" >&2
    exit 2
}
gns_dir="${XDG_CACHE_HOME:-$HOME/.cache}/thinwire/gns"
build="${2:-$gns_dir/build}"
mkdir -p "$build" "$gns_dir"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$src" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DENABLE_ICE=OFF -DBUILD_STATIC_LIB=OFF
cmake --build "$build" --target GameNetworkingSockets -j "$(nproc 2>/dev/null || echo 2)"

lib="$(find "$build" -name libGameNetworkingSockets.so -print -quit)"
[ -n "$lib" ] || { echo "build-gns.sh: no libGameNetworkingSockets.so under $build" >&2; exit 1; }
cp -L "$lib" "$gns_dir/libGameNetworkingSockets.so"
commit="unknown (not a git tree)"
if git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
    commit="$(git -C "$src" rev-parse HEAD)"
fi
echo "$commit" > "$gns_dir/COMMIT"
echo "built:     $lib"
echo "installed: $gns_dir/libGameNetworkingSockets.so (thinwire-gns loads it from here;"
echo "           or set THINWIRE_GNS_LIB=$lib)"
echo "commit:    $commit"
