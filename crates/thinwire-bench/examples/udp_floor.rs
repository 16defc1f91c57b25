//! The kernel's floor under the round trips of `thinwire bench`: bare UDP on loopback, with no
//! protocol at all (`thinwire_bench::floor`). What a transport adds to a round trip is what it
//! measures above this.
//!
//! ```text
//! cargo run --release -p thinwire-bench --example udp_floor -- [REPS]
//! ```
//!
//! Two threads echo one 57-byte datagram (the size of thinwire's encrypted datagram carrying
//! one 24-byte message) back and forth, 3 s after 0.3 s of warm-up, as the bench's round trips
//! do: the client sends, then reads until the answer comes, waiting in `poll` whenever its
//! socket is empty; the echo thread waits in `poll`, then reads and answers until its socket is
//! empty. It prints the p50 and p99 with the two threads free to run on either core (as the
//! bench's round trips run), then with both pinned to one core, `REPS` times (3 by default).

use thinwire_bench::floor::udp_round_trip;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    println!(
        "kernel {}",
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    for rep in 1..=reps {
        for (one_core, how) in [
            (false, "threads on any core"),
            (true, "both threads on one core"),
        ] {
            match udp_round_trip(one_core) {
                Ok(s) => println!(
                    "[{rep}/{reps}] round trip, {how}: p50 {:.1} µs, p99 {:.1} µs",
                    s.p50_us, s.p99_us
                ),
                Err(e) => println!("[{rep}/{reps}] round trip, {how}: {e}"),
            }
        }
    }
}
