#!/usr/bin/env bash
# The memory one round trip of the core touches (benches/hop.rs: one 24-byte message from a
# client endpoint to a server endpoint and back, both in one thread): distinct 64-byte lines
# and 4 KiB pages of code and of data, counted by valgrind's lackey. A thread that wakes up on
# a core whose caches and TLB others have used since pays for each line and page it touches
# again; this counts them, where tools/hop-instructions.sh counts the instructions.
#
#   tools/hop-footprint.sh [reliable|unreliable] [thinwire|enet]   (needs valgrind, python3)
#
# With `enet` it counts the same for ENet (tools/enet_hop.c, built with the system's cc and
# libenet: Debian's libenet-dev): its two hosts in one thread over loopback, whose system
# calls valgrind sees from user space only. ENet's hosts wait on the clock, so its figures
# can move by a few instructions and a line or two from run to run; thinwire's do not.
#
# Two runs without tracing give the instructions per round trip (their difference over the
# extra round trips, as in hop-instructions.sh); a traced run then counts what a window of
# exactly that many instructions touches, ending 40 round trips before the traced run's end,
# so it covers one whole round trip whatever its phase: both ends' sends and receipts. The
# lines on the call stack are counted with the data and also apart. The window includes the
# benchmark's own loop (a few lines) and the C library's functions the path calls.
set -euo pipefail
kind=${1:-reliable}
stack=${2:-thinwire}
case "$kind" in reliable | unreliable) ;; *) echo "kind: reliable or unreliable, not $kind" >&2; exit 2 ;; esac
case "$stack" in thinwire | enet) ;; *) echo "stack: thinwire or enet, not $stack" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$stack" = enet ]; then
    cc -O2 -o "$work/enet_hop" tools/enet_hop.c -lenet
    cmd() { program=("$work/enet_hop" "$1" "$kind"); }
else
    cargo bench -p thinwire-proto --bench hop --no-run -q
    bin=$(cargo bench -p thinwire-proto --bench hop --no-run 2>&1 | sed -n 's/.*Executable.*(\(.*\))/\1/p' | tail -1)
    [ -x "$bin" ] || { echo "no hop benchmark binary found" >&2; exit 1; }
    cmd() { program=("$bin" "$kind" "$1" 1); }
fi
# valgrind exits with its program's status: a failed run stops the script, with its output
total() {
    cmd "$1"
    local out n
    if ! out=$(valgrind --tool=lackey "${program[@]}" 2>&1 >/dev/null); then
        printf '%s failed:\n%s\n' "${program[*]}" "$out" >&2
        exit 1
    fi
    n=$(sed -n 's/.*guest instrs: *//p' <<<"$out" | tr -d ,)
    [ -n "$n" ] || { echo "valgrind did not count ${program[*]}" >&2; exit 1; }
    echo "$n"
}
short=100
long=200
a=$(total $short)
b=$(total $long)
per_trip=$(((b - a) / (long - short)))
cmd $long
valgrind --tool=lackey --trace-mem=yes --log-file="$work/trace" "${program[@]}" >/dev/null ||
    { echo "${program[*]} failed under tracing (its output: $work/trace)" >&2; exit 1; }
python3 - "$work/trace" "$per_trip" "$stack/$kind" <<'EOF'
import sys
trace, width, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(trace) as f:
    executed = sum(1 for line in f if line.startswith("I"))
# the window ends 40 round trips before the traced run's own end (past the teardown)
start = executed - 41 * width
count = 0
code, code_pages, data, data_pages, stack = set(), set(), set(), set(), set()
inside = False
with open(trace) as f:
    for line in f:
        if line.startswith("I"):
            count += 1
            if count >= start + width:
                break
            inside = count >= start
            if inside:
                a = int(line[3:].split(",")[0], 16)
                code.add(a >> 6)
                code_pages.add(a >> 12)
        elif inside and line[:2] in (" L", " S", " M"):
            a = int(line[3:].split(",")[0], 16)
            data.add(a >> 6)
            data_pages.add(a >> 12)
            # valgrind puts the client's main stack at the top of its address space
            if a >= 0x1000000000:
                stack.add(a >> 6)
print(f"{what}: {width} instructions per round trip touch {len(code)} lines of code "
      f"({len(code) * 64} B) on {len(code_pages)} pages, and {len(data)} lines of data "
      f"({len(stack)} of them on the call stack) on {len(data_pages)} pages")
EOF
