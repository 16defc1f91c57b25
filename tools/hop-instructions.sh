#!/usr/bin/env bash
# Instructions the core spends per round trip of one small message (benches/hop.rs), counted
# by callgrind: deterministic where wall-clock time is not, so two commits can be compared on
# a noisy machine. Two runs of different lengths; their difference over the extra round trips
# cancels the handshake and start-up.
#
#   tools/hop-instructions.sh [reliable|unreliable]    (needs valgrind)
set -euo pipefail
kind=${1:-reliable}
cd "$(dirname "$0")/.."
cargo bench -p thinwire-proto --bench hop --no-run -q 2>/dev/null
bin=$(cargo bench -p thinwire-proto --bench hop --no-run 2>&1 | sed -n 's/.*Executable.*(\(.*\))/\1/p' | tail -1)
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$kind" "$1" 2>&1 |
        sed -n 's/.*Collected : //p'
}
short=$(count 10000)
long=$(count 30000)
echo "hop/$kind: $(((long - short) / 20000)) instructions per round trip"
