#!/usr/bin/env bash
# Instructions the core spends per round trip of one small message (benches/hop.rs), counted
# by callgrind: deterministic where wall-clock time is not, so two commits can be compared on
# a noisy machine. Two runs of different lengths; their difference over the extra round trips
# cancels the handshake and start-up.
#
#   tools/hop-instructions.sh [reliable|unreliable] [BURST] [path]    (needs valgrind, bash 4.4+)
#
# BURST messages per round trip (default 1): with 32, the costs per message show rather than
# those per datagram, as in a busy sender's flush; the result is also given per message.
# `path` (third, after a BURST: `reliable 1 path`) counts only the calls a host makes between
# a datagram's arrival and its answer's departure (handle_datagram, poll_event, send,
# poll_transmit), leaving out the timer calls (handle_timeout, poll_timeout) that
# `thinwire::Host` makes after its send system call.
set -euo pipefail
kind=${1:-reliable}
burst=${2:-1}
only=()
if [ "${3:-}" = path ]; then
    only=(--collect-atstart=no
        --toggle-collect='*Endpoint::handle_datagram' --toggle-collect='*Endpoint>::send'
        --toggle-collect='*Endpoint::poll_transmit' --toggle-collect='*::poll_event')
fi
cd "$(dirname "$0")/.."
cargo bench -p thinwire-proto --bench hop --no-run -q 2>/dev/null
bin=$(cargo bench -p thinwire-proto --bench hop --no-run 2>&1 | sed -n 's/.*Executable.*(\(.*\))/\1/p' | tail -1)
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "${only[@]}" "$bin" "$kind" "$1" "$burst" 2>&1 |
        sed -n 's/.*Collected : //p'
}
# fewer round trips for bursts: the run's length stays about the same
short=$((10000 / burst + 1))
long=$((3 * short))
a=$(count $short)
b=$(count $long)
per_trip=$(((b - a) / (long - short)))
what="instructions per round trip"
[ ${#only[@]} -gt 0 ] && what="instructions per round trip on the path from arrival to answer"
if [ "$burst" -eq 1 ]; then
    echo "hop/$kind: $per_trip $what"
else
    echo "hop/$kind x$burst: $per_trip $what, $((per_trip / burst)) per message"
fi
