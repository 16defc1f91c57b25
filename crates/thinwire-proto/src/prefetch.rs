//! Prefetch hints: the memory a coming call will read, named ahead of time to a function the
//! runtime gives ([`Prefetcher`]), so that the CPU can fetch it while it works on the call
//! before.
//!
//! An endpoint with thousands of connections holds more state than the CPU's caches: each
//! datagram's connection is then read from memory, a few dozen cache lines, one after the
//! other as the code reaches them. Told a few datagrams ahead which connection comes next,
//! the CPU fetches those lines in parallel and in the background. Hints change nothing but
//! timing: the core stays free of `unsafe` and of any platform code (the runtime's
//! prefetcher issues the CPU's prefetch instruction), and without a prefetcher, or with few
//! connections, they cost a branch.
//!
//! A connection is fetched in [`PREFETCH_STAGES`] stages, each reading only what the stage
//! before brought near: stage 0 its main structure, stage 1 the parts that structure points to
//! (packet numbers and loss recovery, send queues, the AEAD key, the channels, the counters),
//! stage 2 what those point to (the box of packets in flight, the ends of the send queues and
//! windows). A runtime that hands a batch of datagrams over one by one hints the one three
//! ahead at stage 0, two ahead at stage 1 and the next at stage 2
//! ([`Lookahead`](crate::Lookahead)); the endpoint does the same over the connections it
//! writes datagrams for (hinting as each one leaves the queue). The first datagram of a batch
//! and the first two connections to write for get no hint, and the next two only their later
//! stages (which then read memory not fetched ahead): a pipeline pays off over long batches,
//! which is where an endpoint has thousands of connections. Finding a datagram's connection
//! costs a header parse and an id lookup, which [`Lookahead`](crate::Lookahead) makes once
//! per datagram before hinting that connection at each stage.

use std::collections::VecDeque;

/// A function that asks the CPU to bring `len` bytes at an address into its caches (on
/// x86-64, `_mm_prefetch` over each 64-byte line). It must only hint: never read or write
/// the memory, never fault. Given with
/// [`Endpoint::set_prefetcher`](crate::Endpoint::set_prefetcher).
pub type Prefetcher = fn(*const u8, usize);

/// The stages a connection is fetched in (see the [module](self) documentation): a hint at
/// stage `s` reads only what stages below `s` fetched.
pub const PREFETCH_STAGES: u8 = 3;

/// The number of connections from which on `thinwire`'s runtime has its endpoints make hints
/// ([`Endpoint::set_prefetcher`](crate::Endpoint::set_prefetcher)). With fewer, more of their
/// state stays in the caches: in `benches/tick.rs` on the machine of `docs/results/bench.md`'s
/// section "Prefetch hints", hints took 1.10-1.18x the time at 500 connections and were mixed
/// at 1,000 and 2,000 (0.74-1.16x, 0.82-1.01x); they gained in 6 of 8 rounds at 4,000 and in
/// all 6 at 10,000. 2,048 is on the safe side of that.
pub const PREFETCH_FROM_CONNECTIONS: usize = 2048;

/// The start of each 64-byte cache line that the `len` bytes at `p` touch (none when `len` is
/// 0), for a [`Prefetcher`] to hint one by one: address arithmetic only, wrapping rather than
/// overflowing, and no access to the memory.
pub fn cache_lines(p: *const u8, len: usize) -> impl Iterator<Item = *const u8> {
    let skew = p as usize % 64;
    let first = p.wrapping_sub(skew);
    let span = if len == 0 {
        0
    } else {
        skew.saturating_add(len)
    };
    (0..span)
        .step_by(64)
        .map(move |offset| first.wrapping_add(offset))
}

/// A prefetcher, passed down to the parts that know their memory.
#[derive(Clone, Copy)]
pub(crate) struct Hint(pub(crate) Prefetcher);

impl Hint {
    /// The bytes of `v`.
    pub(crate) fn value<T: ?Sized>(self, v: &T) {
        (self.0)(std::ptr::from_ref(v).cast::<u8>(), std::mem::size_of_val(v));
    }

    /// The first and last entries of `d` (where it is popped and pushed).
    pub(crate) fn deque_ends<T>(self, d: &VecDeque<T>) {
        let (a, b) = d.as_slices();
        if let Some(x) = a.first() {
            self.value(x);
        }
        if let Some(x) = b.last().or(a.last()) {
            self.value(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cache_lines;

    fn lines(at: usize, len: usize) -> Vec<usize> {
        cache_lines(std::ptr::without_provenance(at), len)
            .map(|p| p as usize)
            .collect()
    }

    #[test]
    fn every_line_the_bytes_touch_once() {
        assert_eq!(lines(640, 0), Vec::<usize>::new(), "nothing for no bytes");
        assert_eq!(lines(640, 1), [640]);
        assert_eq!(lines(640, 64), [640]);
        assert_eq!(lines(640, 65), [640, 704]);
        assert_eq!(lines(703, 2), [640, 704], "two bytes across a line's end");
        assert_eq!(
            lines(650, 624).len(),
            10,
            "a connection's 624 bytes, unaligned"
        );
        // near the end of the address space the arithmetic wraps instead of overflowing
        assert_eq!(lines(usize::MAX - 10, 5), [usize::MAX - 63]);
    }
}
