#!/usr/bin/env bash
# An independent check of `thinwire bench`'s comparison with ENet (issue 29 asks for one):
# tools/xcheck.c drives thinwire through its C API (the static libthinwire_ffi, as a C game
# links it) and ENet through its own, with none of the bench's code. Each repetition runs every
# case for both stacks, the order alternating between repetitions, then the round trips (both
# stacks connected, measured in turns of 100 ms); the table gives each stack's range over the
# repetitions and thinwire's ratio to ENet in each. The code is apart from the bench's, the method
# the bench's (the same bursts, refusals and turns): it checks the bench's figures, not its method.
#
#   tools/xcheck.sh [REPS] [SECONDS]     (defaults 3 and 2; needs gcc, libenet-dev, cargo)
#
# Through the C API every sent message is copied (as the bench's adapter copies it too) and every
# received one arrives in an allocation of its own that the caller frees (the bench's Rust `Host`
# hands out slices of the datagram instead): what a C or C# game pays.
set -euo pipefail
usage() { echo "usage: tools/xcheck.sh [REPS] [SECONDS]   (REPS a whole number from 1, SECONDS 0.1-60)" >&2; exit 2; }
[ $# -le 2 ] || usage
reps=${1:-3}
secs=${2:-2}
[[ $reps =~ ^[1-9][0-9]*$ ]] || usage
[[ $secs =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v s="$secs" 'BEGIN { exit !(s >= 0.1 && s <= 60) }' || usage
cd "$(dirname "$0")/.."
cargo build --release -q -p thinwire-ffi
bin=$(mktemp -d)/xcheck
trap 'rm -rf "$(dirname "$bin")"' EXIT
gcc -O2 -Wall -Wextra -o "$bin" tools/xcheck.c -I crates/thinwire-ffi/include \
    target/release/libthinwire_ffi.a -lenet -lpthread -ldl -lm
out=$(dirname "$bin")/runs
: >"$out"
cases=("24 reliable 1" "200 reliable 1" "24 unreliable 1" "200 unreliable 1"
    "24 reliable 100" "200 reliable 100" "24 unreliable 100" "200 unreliable 100")
for rep in $(seq 1 "$reps"); do
    order=(thinwire enet)
    [ $((rep % 2)) -eq 0 ] && order=(enet thinwire)
    for c in "${cases[@]}"; do
        read -r size class clients <<<"$c"
        for s in "${order[@]}"; do
            line=$("$bin" rate "$s" "$size" "$class" "$clients" "$secs") ||
                { echo "xcheck.sh: $s, $class $size B, $clients client(s) failed" >&2; exit 1; }
            read -r r scpu ccpu <<<"$line"
            echo "rate|$class $size B, $clients client(s)|$s|$rep|$r|$scpu|$ccpu" >>"$out"
        done
    done
    for class in reliable unreliable; do
        lines=$("$bin" rtt "$class" "$secs") ||
            { echo "xcheck.sh: round trips, $class, failed" >&2; exit 1; }
        while read -r s p50 p99 n lost; do
            echo "rtt|round trip p50, $class 24 B|$s|$rep|$p50|$p99 $n $lost|" >>"$out"
        done <<<"$lines"
    done
    echo "repetition $rep of $reps done" >&2
done
echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with changes)')"
awk -F'|' '
    # the extra figures of every case of `kind`, repetition by repetition, under `title`
    function rows(kind, title,    i, k, r, line) {
      print ""; print title
      for (i = 1; i <= n; i++) {
        split(order[i], k, "|")
        if (k[1] != kind) continue
        line = ""
        for (r = 1; r <= reps; r++) line = line extra(order[i], r)
        printf "%-40s %s\n", k[2], line
      }
    }
    # one repetition of a case: CPU per message rounded (rates), p99, count and lost (round trips)
    function extra(key, r,    t, e) {
      if (key !~ /^rate/) return aux[key, "thinwire", r] " / " aux[key, "enet", r] ";  "
      split(aux[key, "thinwire", r], t, " "); split(aux[key, "enet", r], e, " ")
      return sprintf("%.0f, %.0f / %.0f, %.0f;  ", t[1], t[2], e[1], e[2])
    }
    { key = $1 "|" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
      v[key, $3, $4] = $5; aux[key, $3, $4] = $6 " " $7
      if (!((key, $3) in lo) || $5 < lo[key, $3]) lo[key, $3] = $5
      if (!((key, $3) in hi) || $5 > hi[key, $3]) hi[key, $3] = $5
      if ($4 > reps) reps = $4 }
    END {
      printf "%-40s %-24s %-24s %s\n", "case", "thinwire", "ENet", "thinwire/ENet per repetition"
      for (i = 1; i <= n; i++) {
        key = order[i]; split(key, k, "|")
        scale = (k[1] == "rate") ? 1e6 : 1; unit = (k[1] == "rate") ? " M msg/s" : " us"
        ratios = ""
        for (r = 1; r <= reps; r++)
          ratios = ratios ((v[key, "enet", r] > 0) ? sprintf("%.2f ", v[key, "thinwire", r] / v[key, "enet", r]) : "- ")
        printf "%-40s %-24s %-24s %s\n", k[2],
          sprintf("%.2f-%.2f%s", lo[key, "thinwire"] / scale, hi[key, "thinwire"] / scale, unit),
          sprintf("%.2f-%.2f%s", lo[key, "enet"] / scale, hi[key, "enet"] / scale, unit), ratios
      }
      rows("rate", "CPU per message in ns, thinwire (server, client) / ENet (server, client), each repetition:")
      rows("rtt", "Round trips: thinwire (p99 us, counted, lost) / ENet (the same), each repetition:")
    }' "$out"
