#!/usr/bin/env bash
# Builds the C library with cargo, compiles the C# binding's test and samples (and the Unity
# example of docs/UNITY.md) with mcs, and runs them under mono: the test
# (tests/ThinwireTests.cs), the chat sample (a server and a client), and the C# echo client
# against the Rust echo server. Exits non-zero on any failure; every
# step is bounded in time. Needs cargo, cc, mcs and mono (Debian: mono-runtime mono-mcs).
#
# The library: DllImport("thinwire") loads libthinwire.so, so the cargo-built
# libthinwire_ffi.so is copied under that name into the build directory (as a Unity project
# holds it in Assets/Plugins/), which LD_LIBRARY_PATH names. No .dll.config dllmap: Unity
# ignores those.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
HERE="$ROOT/bindings/csharp"

# The Rust echo server: an example of crate thinwire that prints "echo server on ADDR" and
# "server key: HEX" and echoes every message on its channel.
ECHO_SERVER=echo_server
case "$ECHO_SERVER" in
    echo) ECHO_ARGS=(--serve 127.0.0.1:0) ;;
    *) ECHO_ARGS=(--listen 127.0.0.1:0) ;;
esac

BUILD="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$BUILD"
}
trap cleanup EXIT

# Waits (at most 20 s) until FILE has LINES lines.
wait_lines() {
    for _ in $(seq 200); do
        [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    echo "run-tests: no $2 lines in $1:" >&2
    cat "$1" >&2
    return 1
}

# THINWIRE_PREBUILT=1 (CI, after `cargo test --workspace --release`, whose ffi tests build the
# library and which builds every example) uses those builds instead of building both again with
# other feature sets (about 1.5 minutes on 2 cores); a missing one is still built.
if [ -n "${THINWIRE_PREBUILT:-}" ] && [ -f "$TARGET/release/libthinwire_ffi.so" ] &&
    [ -x "$TARGET/release/examples/$ECHO_SERVER" ]; then
    echo "== prebuilt: $TARGET/release/libthinwire_ffi.so, examples/$ECHO_SERVER"
else
    echo "== cargo build (thinwire-ffi, the $ECHO_SERVER example)"
    timeout 1800 cargo build --release -p thinwire-ffi --lib
    timeout 1800 cargo build --release -p thinwire --example "$ECHO_SERVER"
fi
cp "$TARGET/release/libthinwire_ffi.so" "$BUILD/libthinwire.so"
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== mcs $(mcs --version | sed 's/.*version //')"
cc -std=c11 -Wall -Wextra -Werror -I crates/thinwire-ffi/include "$HERE/tests/layout.c" -o "$BUILD/layout"
"$BUILD/layout" >"$BUILD/layout.txt"
BINDING=("$HERE/Thinwire.Native.cs" "$HERE/Thinwire.cs")
# The binding alone, with every public item documented (-doc makes a missing comment a warning).
mcs -langversion:6 -warnaserror+ -nologo -target:library -doc:"$BUILD/Thinwire.xml" -out:"$BUILD/Thinwire.dll" "${BINDING[@]}"
for program in tests/ThinwireTests samples/Chat samples/EchoClient; do
    mcs -langversion:6 -warnaserror+ -nologo -out:"$BUILD/$(basename "$program").exe" "${BINDING[@]}" "$HERE/$program.cs"
done
# The MonoBehaviour of docs/UNITY.md compiles (against stubs of the UnityEngine types it uses).
sed -n '/^## A minimal MonoBehaviour/,/^## /p' docs/UNITY.md | sed -n '/^```csharp/,/^```$/p' | sed '1d;$d' >"$BUILD/UnityExample.cs"
grep -q 'class ThinwireClient : MonoBehaviour' "$BUILD/UnityExample.cs"
mcs -langversion:6 -warnaserror+ -nologo -target:library -out:"$BUILD/UnityExample.dll" "${BINDING[@]}" \
    "$BUILD/UnityExample.cs" "$HERE/tests/UnityEngineStub.cs"

echo "== ThinwireTests"
timeout 60 mono "$BUILD/ThinwireTests.exe" "$BUILD/layout.txt" crates/thinwire-ffi/include/thinwire.h

echo "== Chat (server and client)"
timeout 60 mono "$BUILD/Chat.exe" server 127.0.0.1:0 --until-empty >"$BUILD/chat-server.out" &
PIDS+=($!)
CHAT_SERVER=$!
wait_lines "$BUILD/chat-server.out" 2
port=$(sed -n 's/^chat server on //p' "$BUILD/chat-server.out")
key=$(sed -n 's/^server key: //p' "$BUILD/chat-server.out")
printf 'hello\nfrom C#\n' | timeout 30 mono "$BUILD/Chat.exe" client "127.0.0.1:$port" "$key" | tee "$BUILD/chat-client.out"
grep -q '\] hello$' "$BUILD/chat-client.out"
grep -q '\] from C#$' "$BUILD/chat-client.out"
wait "$CHAT_SERVER"

echo "== EchoClient against the Rust $ECHO_SERVER server"
"$TARGET/release/examples/$ECHO_SERVER" "${ECHO_ARGS[@]}" >"$BUILD/echo-server.out" &
PIDS+=($!)
wait_lines "$BUILD/echo-server.out" 2
address=$(sed -n 's/^echo server on //p' "$BUILD/echo-server.out")
key=$(sed -n 's/^server key: //p' "$BUILD/echo-server.out")
timeout 30 mono "$BUILD/EchoClient.exe" "$address" "$key" 200

echo "== C# binding: all passed"
