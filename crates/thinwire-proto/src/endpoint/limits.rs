//! Limits on handshake work: Connects admitted per second per source (a token bucket; the
//! cookie has proven the source address by then; a Connect whose Noise message 1 fails costs
//! its source [`FAILED_READ_COST`] tokens more), connections held per source and per prefix
//! (`prefix.rs`), and stateless replies per second for the whole endpoint (before a cookie the
//! source may be spoofed, so a per-source budget there would let an attacker use up a
//! victim's). A *source* is one IPv4 address or one IPv6 /64 (a host gets a whole /64, so
//! counting single IPv6 addresses would limit nothing).
//!
//! The buckets sit in a fixed table of [`BUCKETS`] entries indexed by a keyed hash of the
//! source, allocated on the first handshake: memory is a constant 64 KiB however many sources
//! an attacker spoofs, and sources that share an entry (rarely) share its budget.

use std::net::{IpAddr, SocketAddr};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::prefix::PrefixCounts;

/// Entries in the bucket table.
pub(crate) const BUCKETS: usize = 4096;

/// Tokens a Connect whose Noise message 1 did not read (not written to this server's key:
/// random bytes) takes from its source's bucket on top of the one it took on arrival: such a
/// source is served at an eighth of the rate of one whose handshakes succeed, so a flood from
/// few addresses costs the server fewer X25519 operations and leaves more of the global read
/// budget to others.
pub(crate) const FAILED_READ_COST: u64 = 8;

/// A source: an IPv4 address, or the /64 prefix of an IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Source {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl Source {
    pub(crate) fn of(addr: &SocketAddr) -> Self {
        match addr.ip() {
            IpAddr::V4(ip) => Source::V4(ip.octets()),
            IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4.octets()),
                None => {
                    let mut prefix = [0u8; 8];
                    prefix.copy_from_slice(&ip.octets()[..8]);
                    Source::V6(prefix)
                }
            },
        }
    }
}

/// A token bucket, refilled in whole milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bucket {
    /// Tokens left, in thousandths.
    milli: u64,
    /// When it was last refilled, ms since the endpoint's epoch.
    at_ms: u64,
}

/// The per-source handshake budget and connection counts of a server endpoint.
#[derive(Debug)]
pub(crate) struct SourceLimits {
    key: [u8; 32],
    per_second: u64,
    buckets: Vec<Bucket>,
    prefixes: PrefixCounts,
    stateless_per_second: u64,
    stateless: Bucket,
}

impl Bucket {
    /// A bucket holding `tokens` at time 0.
    pub(crate) fn full(tokens: u64) -> Self {
        Self {
            milli: tokens * 1000,
            at_ms: 0,
        }
    }

    /// Refills at `rate` tokens a second up to `burst` tokens (both in units); returns whether
    /// a whole token is there.
    pub(crate) fn refill(&mut self, now_ms: u64, rate: u64, burst: u64) -> bool {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        self.milli = (self.milli + elapsed * rate).min(burst * 1000);
        self.at_ms = now_ms.max(self.at_ms);
        self.milli >= 1000
    }

    /// Refills, then takes one token if there is one.
    pub(crate) fn take(&mut self, now_ms: u64, rate: u64, burst: u64) -> bool {
        let ok = self.refill(now_ms, rate, burst);
        if ok {
            self.milli -= 1000;
        }
        ok
    }

    /// Takes `tokens` more, as far as there are any.
    fn drain(&mut self, tokens: u64) {
        self.milli = self.milli.saturating_sub(tokens * 1000);
    }

    /// When the next whole token will be there at `rate` tokens a second, in ms since the
    /// epoch (`at_ms` or earlier when one is there already). `None` at rate 0.
    pub(crate) fn ready_ms(&self, rate: u64) -> Option<u64> {
        if self.milli >= 1000 {
            return Some(self.at_ms);
        }
        let missing = 1000 - self.milli;
        (rate > 0).then(|| self.at_ms + missing.div_ceil(rate))
    }
}

impl SourceLimits {
    /// Limits of `per_second` Connects per source (after a burst of twice that) and
    /// `stateless_per_second` stateless replies (after a burst of one second's worth).
    pub(crate) fn new(key: [u8; 32], per_second: u32, stateless_per_second: u32) -> Self {
        let stateless_per_second = u64::from(stateless_per_second);
        Self {
            key,
            per_second: u64::from(per_second),
            buckets: Vec::new(),
            prefixes: PrefixCounts::default(),
            stateless_per_second,
            stateless: Bucket::full(stateless_per_second),
        }
    }

    /// Takes one stateless reply from the endpoint's budget.
    pub(crate) fn allow_stateless(&mut self, now_ms: u64) -> bool {
        let rate = self.stateless_per_second;
        self.stateless.take(now_ms, rate, rate)
    }

    fn index(&self, source: &Source) -> usize {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("any key length");
        match source {
            Source::V4(b) => m.update(b),
            Source::V6(b) => m.update(b),
        }
        let h = m.finalize().into_bytes();
        let n = u64::from_be_bytes(h[..8].try_into().expect("8 bytes"));
        (n % BUCKETS as u64) as usize
    }

    /// Takes one Connect from the source's budget: `per_second` a second, after a burst of
    /// twice that. Returns whether it may be processed.
    pub(crate) fn allow_handshake(&mut self, source: &Source, now_ms: u64) -> bool {
        let burst = 2 * self.per_second * 1000;
        if self.buckets.is_empty() {
            // every bucket starts full
            self.buckets = vec![Bucket::full(burst); BUCKETS];
        }
        let i = self.index(source);
        let rate = self.per_second;
        self.buckets[i].take(now_ms, rate, 2 * rate)
    }

    /// A Connect from `source` failed its Noise message 1: it costs the source
    /// [`FAILED_READ_COST`] more tokens.
    pub(crate) fn penalise(&mut self, source: &Source) {
        let i = self.index(source);
        if let Some(b) = self.buckets.get_mut(i) {
            b.drain(FAILED_READ_COST);
        }
    }

    /// The connections held per prefix.
    pub(crate) fn prefixes(&self) -> &PrefixCounts {
        &self.prefixes
    }

    /// A connection admitted from `from`: counted for its prefix (its source's count is the
    /// memory ledger's, `budget.rs`, which holds one entry per source already).
    pub(crate) fn add_connection(&mut self, from: &SocketAddr) {
        self.prefixes.add(from);
    }

    /// The connection admitted from `from` is gone.
    pub(crate) fn remove_connection(&mut self, from: &SocketAddr) {
        self.prefixes.remove(from);
    }

    /// Bytes the limits hold (tests of the memory bounds).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>() + self.prefixes.held_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::budget::MemoryLedger;
    use crate::endpoint::ConnectionHandle;

    #[test]
    fn a_source_gets_a_burst_then_its_rate_and_others_are_unaffected() {
        let mut l = SourceLimits::new([1; 32], 10, 100);
        let a = Source::of(&"10.0.0.1:5000".parse().unwrap());
        let b = Source::of(&"10.0.0.2:5000".parse().unwrap());
        let granted = (0..100).filter(|_| l.allow_handshake(&a, 1000)).count();
        assert_eq!(granted, 20, "a burst of twice the rate");
        assert!(
            l.allow_handshake(&b, 1000),
            "another source has its own budget"
        );
        // one second later: ten more
        let granted = (0..100).filter(|_| l.allow_handshake(&a, 2000)).count();
        assert_eq!(granted, 10);
        assert_eq!(l.held_bytes(), BUCKETS * 16);
    }

    #[test]
    fn the_stateless_budget_is_one_second_of_burst_then_its_rate() {
        let mut l = SourceLimits::new([1; 32], 10, 100);
        assert_eq!((0..1000).filter(|_| l.allow_stateless(0)).count(), 100);
        assert_eq!((0..1000).filter(|_| l.allow_stateless(500)).count(), 50);
        assert_eq!((0..1000).filter(|_| l.allow_stateless(10_000)).count(), 100);
    }

    #[test]
    fn a_failed_read_costs_its_source_more_tokens_and_no_one_else() {
        let mut l = SourceLimits::new([1; 32], 10, 100);
        let a = Source::of(&"10.0.0.1:5000".parse().unwrap());
        let b = Source::of(&"10.0.0.2:5000".parse().unwrap());
        assert!(l.allow_handshake(&a, 0));
        l.penalise(&a);
        // 20 - 1 - 8 left
        assert_eq!((0..100).filter(|_| l.allow_handshake(&a, 0)).count(), 11);
        assert_eq!((0..100).filter(|_| l.allow_handshake(&b, 0)).count(), 20);
    }

    #[test]
    fn a_bucket_says_when_its_next_token_is_there() {
        let mut b = Bucket::full(1);
        assert_eq!(b.ready_ms(300), Some(0));
        assert!(b.take(0, 300, 1));
        assert_eq!(b.ready_ms(300), Some(4), "1000 thousandths at 300 a ms");
        assert!(!b.take(3, 300, 1));
        assert!(b.take(4, 300, 1));
        assert_eq!(b.ready_ms(0), None);
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_v4_as_v4() {
        let a = Source::of(&"[2001:db8::1]:1".parse().unwrap());
        let b = Source::of(&"[2001:db8::2]:2".parse().unwrap());
        let c = Source::of(&"[2001:db8:0:1::1]:2".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        let m = Source::of(&"[::ffff:10.0.0.1]:1".parse().unwrap());
        assert_eq!(m, Source::of(&"10.0.0.1:9".parse().unwrap()));
        // connections are counted per source by the memory ledger, per prefix here
        let mut l = SourceLimits::new([1; 32], 10, 100);
        let mut m = MemoryLedger::new(crate::MemoryBudget::default());
        let (addr_a, addr_b) = (
            "[2001:db8::1]:1".parse().unwrap(),
            "[2001:db8::2]:2".parse().unwrap(),
        );
        let ia = m.add_connection(Source::of(&addr_a));
        l.add_connection(&addr_a);
        let ib = m.add_connection(Source::of(&addr_b));
        l.add_connection(&addr_b);
        assert_eq!(m.connections_of(&c), 0);
        assert_eq!(m.connections_of(&a), 2);
        m.remove_connection(ConnectionHandle(1), ia, 0);
        l.remove_connection(&addr_a);
        m.remove_connection(ConnectionHandle(2), ib, 0);
        l.remove_connection(&addr_b);
        assert_eq!(m.connections_of(&a), 0);
        assert_eq!(m.sources_held(), 0);
        assert_eq!(l.prefixes().top(), 0);
    }
}
