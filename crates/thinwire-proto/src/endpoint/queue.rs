//! The queue of Connects waiting for their Noise message-1 read (`docs/PROTOCOL.md` §5.6).
//!
//! A Connect whose cookie, source budget and capacity checks passed is not read at once: it
//! waits here, and [`Endpoint::handle_handshakes`](super::Endpoint::handle_handshakes) (or
//! `handle_timeout`, a few per call) reads them within the endpoint's global budget of reads
//! (one X25519 each). The queue is served **round-robin by source**: every source with a
//! Connect waiting gets one read per round, however many it sent, so a flood from a few
//! hundred addresses delays an honest client from its own address by one round (a few hundred
//! reads), not by the flood's length. Trusted sources (a gateway, whose players all share its
//! address) have a lane of their own, served first. The queue holds at most
//! `max_pending_handshakes` Connects; when full, a Connect from a source holding at least two
//! fewer than the largest source evicts that source's newest one, and is dropped otherwise
//! (its client resends it).
//!
//! Why not a reply that costs a round trip under load (WireGuard's cookie reply, QUIC's
//! Retry): here the cookie round trip is always paid, so under load only the order of the
//! reads changes, and no byte on the wire.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::limits::{Bucket, Source};
use crate::config::ServerConfig;
use crate::cookie::{CookieInput, SpentCookies};
use crate::wire::ConnectionId;

/// Who a handshake packet says the client is: its connection id and the handshake's identity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    pub(crate) cid: ConnectionId,
    pub(crate) instance: u64,
    pub(crate) nonce: u64,
}

impl Client {
    pub(crate) fn cookie_input(&self, addr: SocketAddr) -> CookieInput<'_> {
        CookieInput {
            addr,
            cid: &self.cid,
            instance: self.instance,
            nonce: self.nonce,
        }
    }
}

/// A Connect waiting for its read.
#[derive(Debug)]
pub(crate) struct PendingConnect {
    pub(crate) from: SocketAddr,
    pub(crate) client: Client,
    /// Noise message 1.
    pub(crate) handshake: Vec<u8>,
    /// The cookie's identity in the spent filter, and its issue time.
    pub(crate) cookie_id: u64,
    pub(crate) issued_ms: u64,
    /// When it arrived (ms since the endpoint's epoch): the handshake RTT sample ends here.
    pub(crate) arrived_ms: u64,
}

/// What became of a Connect offered to the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// It waits for its read.
    Waiting,
    /// It waits, and another source's newest Connect was dropped for it.
    Evicted,
    /// Not queued: the same handshake is waiting already, or the queue is full of sources
    /// holding no more than this one.
    Dropped,
}

impl PendingConnect {
    /// Whether `other` is the same handshake (a retransmission of this Connect).
    fn same_handshake(&self, other: &PendingConnect) -> bool {
        self.from == other.from
            && self.client.instance == other.client.instance
            && self.client.nonce == other.client.nonce
    }
}

/// Per-source queues served round-robin, the global read budget and the spent cookies.
#[derive(Debug)]
pub(crate) struct HandshakeQueue {
    /// Connects from trusted sources (a gateway's players): served before the others.
    trusted: VecDeque<PendingConnect>,
    by_source: HashMap<Source, VecDeque<PendingConnect>>,
    /// Sources with a Connect waiting, in serving order.
    ring: VecDeque<Source>,
    /// `(waiting, source)` of every source in the ring: the largest is the last.
    lengths: BTreeSet<(usize, Source)>,
    len: usize,
    cap: usize,
    reads: Bucket,
    rate: u64,
    burst: u64,
    /// Reads per `handle_timeout` call.
    pub(crate) per_turn: usize,
    pub(crate) spent: SpentCookies,
}

/// The burst of the read budget: a quarter of a second's worth.
fn burst_of(rate: u64) -> u64 {
    (rate / 4).max(1)
}

impl HandshakeQueue {
    pub(crate) fn new(server: Option<&ServerConfig>) -> Self {
        let (rate, cap, per_turn, lifetime) = server.map_or((0, 0, 0, Duration::ZERO), |s| {
            (
                u64::from(s.handshake_reads_per_second),
                s.max_pending_handshakes,
                s.handshakes_per_turn,
                s.cookie_lifetime,
            )
        });
        let burst = burst_of(rate);
        let lifetime_ms = lifetime.as_millis() as u64;
        // the most reads the budget allows within one lifetime
        let spent_cap = (rate * lifetime_ms).div_ceil(1000) + burst;
        Self {
            trusted: VecDeque::new(),
            by_source: HashMap::new(),
            ring: VecDeque::new(),
            lengths: BTreeSet::new(),
            len: 0,
            cap,
            reads: Bucket::full(burst),
            rate,
            burst,
            per_turn,
            spent: SpentCookies::new(lifetime_ms, spent_cap as usize),
        }
    }

    /// Connects waiting.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn resize(&mut self, source: Source, from: usize, to: usize) {
        if from > 0 {
            self.lengths.remove(&(from, source));
        }
        if to > 0 {
            self.lengths.insert((to, source));
        }
    }

    /// Offers a Connect from a trusted source (a gateway, whose players all share its
    /// address): served before every other source; when the queue is full it evicts the newest
    /// Connect of the source holding the most.
    pub(crate) fn push_trusted(&mut self, p: PendingConnect) -> Queued {
        if self.trusted.iter().any(|q| q.same_handshake(&p)) {
            return Queued::Dropped;
        }
        let mut outcome = Queued::Waiting;
        if self.len >= self.cap {
            let Some((_, victim)) = self.lengths.last().copied() else {
                return Queued::Dropped;
            };
            self.evict(victim);
            outcome = Queued::Evicted;
        }
        self.trusted.push_back(p);
        self.len += 1;
        outcome
    }

    /// Offers a Connect from `source`.
    pub(crate) fn push(&mut self, source: Source, p: PendingConnect) -> Queued {
        let own = self.by_source.get(&source);
        if own.is_some_and(|q| q.iter().any(|q| q.same_handshake(&p))) {
            return Queued::Dropped;
        }
        let own_len = own.map_or(0, VecDeque::len);
        let mut outcome = Queued::Waiting;
        if self.len >= self.cap {
            match self.lengths.last().copied() {
                // only a source that would still hold more than this one after the swap
                Some((longest, victim)) if longest > own_len + 1 => {
                    self.evict(victim);
                    outcome = Queued::Evicted;
                }
                _ => return Queued::Dropped,
            }
        }
        let q = self.by_source.entry(source).or_default();
        q.push_back(p);
        let n = q.len();
        if n == 1 {
            self.ring.push_back(source);
        }
        self.resize(source, n - 1, n);
        self.len += 1;
        outcome
    }

    /// Drops the newest Connect of `source`.
    fn evict(&mut self, source: Source) {
        let Some(q) = self.by_source.get_mut(&source) else {
            return;
        };
        q.pop_back();
        let n = q.len();
        if n == 0 {
            self.by_source.remove(&source);
            self.ring.retain(|s| *s != source);
        }
        self.resize(source, n + 1, n);
        self.len -= 1;
    }

    /// The next Connect to read: a trusted one, else the oldest of the source whose turn it
    /// is.
    pub(crate) fn pop(&mut self) -> Option<PendingConnect> {
        if let Some(p) = self.trusted.pop_front() {
            self.len -= 1;
            return Some(p);
        }
        let source = self.ring.pop_front()?;
        let q = self.by_source.get_mut(&source)?;
        let p = q.pop_front()?;
        let n = q.len();
        if n == 0 {
            self.by_source.remove(&source);
        } else {
            self.ring.push_back(source);
        }
        self.resize(source, n + 1, n);
        self.len -= 1;
        Some(p)
    }

    /// Whether the read budget has a read left at `now_ms`.
    pub(crate) fn can_read(&mut self, now_ms: u64) -> bool {
        self.reads.refill(now_ms, self.rate, self.burst)
    }

    /// Takes one read from the budget.
    pub(crate) fn take_read(&mut self, now_ms: u64) -> bool {
        self.reads.take(now_ms, self.rate, self.burst)
    }

    /// When reading can go on (`epoch` is the endpoint's), never before `latest`, the latest
    /// `now` the endpoint was given: `None` with nothing waiting.
    pub(crate) fn next_read(&self, epoch: Instant, latest: Instant) -> Option<Instant> {
        if self.len == 0 {
            return None;
        }
        let at = epoch + Duration::from_millis(self.reads.ready_ms(self.rate)?);
        Some(at.max(latest))
    }

    /// Bytes the waiting Connects and the spent filter hold (tests of the memory bounds).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        let waiting: usize = self
            .by_source
            .values()
            .chain([&self.trusted])
            .flat_map(|q| q.iter())
            .map(|p| std::mem::size_of::<PendingConnect>() + p.handshake.capacity())
            .sum();
        waiting + self.spent.held_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(ip: u8, nonce: u64) -> (Source, PendingConnect) {
        let from = SocketAddr::from(([10, 0, 0, ip], 4000));
        let p = PendingConnect {
            from,
            client: Client {
                cid: ConnectionId::new(&[ip; 8]).expect("cid"),
                instance: 1,
                nonce,
            },
            handshake: vec![0; 72],
            cookie_id: nonce,
            issued_ms: 0,
            arrived_ms: 0,
        };
        (Source::of(&from), p)
    }

    fn queue(cap: usize) -> HandshakeQueue {
        let config = ServerConfig {
            max_pending_handshakes: cap,
            ..ServerConfig::default()
        };
        HandshakeQueue::new(Some(&config))
    }

    fn offer(q: &mut HandshakeQueue, ip: u8, nonce: u64) -> Queued {
        let (s, p) = pending(ip, nonce);
        q.push(s, p)
    }

    fn order(q: &mut HandshakeQueue) -> Vec<(u8, u64)> {
        std::iter::from_fn(|| q.pop())
            .map(|p| (p.client.cid.as_bytes()[0], p.client.nonce))
            .collect()
    }

    #[test]
    fn sources_take_turns_and_a_retransmission_waits_once() {
        let mut q = queue(16);
        for n in 1..=3 {
            assert_eq!(offer(&mut q, 1, n), Queued::Waiting);
        }
        assert_eq!(offer(&mut q, 2, 7), Queued::Waiting);
        assert_eq!(offer(&mut q, 2, 7), Queued::Dropped, "the same handshake");
        assert_eq!(q.len(), 4);
        assert_eq!(order(&mut q), [(1, 1), (2, 7), (1, 2), (1, 3)]);
        assert_eq!(q.len(), 0);
        assert!(q.lengths.is_empty() && q.ring.is_empty() && q.by_source.is_empty());
    }

    #[test]
    fn a_full_queue_takes_places_from_the_source_holding_the_most() {
        let mut q = queue(4);
        for n in 1..=4 {
            offer(&mut q, 1, n);
        }
        assert_eq!(offer(&mut q, 2, 1), Queued::Evicted);
        assert_eq!(offer(&mut q, 3, 1), Queued::Evicted);
        assert_eq!(offer(&mut q, 4, 1), Queued::Evicted);
        // every source holds one: a newcomer waits for a place
        assert_eq!(offer(&mut q, 5, 1), Queued::Dropped);
        // a trusted source takes the place of one of them
        let (_, p) = pending(9, 1);
        assert_eq!(q.push_trusted(p), Queued::Evicted);
        assert_eq!(order(&mut q), [(9, 1), (1, 1), (2, 1), (3, 1)]);
    }

    #[test]
    fn trusted_sources_go_first() {
        let mut q = queue(4);
        offer(&mut q, 1, 1);
        offer(&mut q, 1, 2);
        offer(&mut q, 2, 1);
        let (_, p) = pending(9, 5);
        assert_eq!(q.push_trusted(p), Queued::Waiting);
        let (_, p) = pending(9, 6);
        assert_eq!(
            q.push_trusted(p),
            Queued::Evicted,
            "source 1's newest makes room"
        );
        assert_eq!(order(&mut q), [(9, 5), (9, 6), (1, 1), (2, 1)]);
    }
}
