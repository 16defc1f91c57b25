//! The queue of Connects waiting for their Noise message-1 read (`docs/PROTOCOL.md` §5.6).
//!
//! A Connect whose cookie, source budget and capacity checks passed is not read at once: it
//! waits here, and [`Endpoint::handle_handshakes`](super::Endpoint::handle_handshakes) (or
//! `handle_timeout`, a few per call) reads them within the endpoint's global budget of reads
//! (one X25519 each). The queue is served **round-robin by source**: every source with a
//! Connect waiting gets one read per round, however many it sent, so a flood from a few
//! hundred addresses delays an honest client from its own address by one round (a few hundred
//! reads), not by the flood's length. It holds at most `max_pending_handshakes` Connects; when
//! full, a Connect from a source holding at least two fewer than the largest source evicts
//! that source's newest one, and is dropped otherwise (its client resends it).
//!
//! Wire to work: WireGuard answers load with a cookie reply, QUIC with a Retry; both cost a
//! round trip to everyone. Here the cookie round trip is always paid, so under load only the
//! order of the reads changes.

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

/// Per-source queues served round-robin, the global read budget and the spent cookies.
#[derive(Debug)]
pub(crate) struct HandshakeQueue {
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
    /// The latest `now` seen, so that `poll_timeout` never goes back.
    last: Option<Instant>,
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
            last: None,
        }
    }

    /// Connects waiting.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn saw(&mut self, now: Instant) {
        self.last = Some(self.last.map_or(now, |l| l.max(now)));
    }

    fn resize(&mut self, source: Source, from: usize, to: usize) {
        if from > 0 {
            self.lengths.remove(&(from, source));
        }
        if to > 0 {
            self.lengths.insert((to, source));
        }
    }

    /// Offers a Connect from `source`.
    pub(crate) fn push(&mut self, source: Source, p: PendingConnect) -> Queued {
        let own = self.by_source.get(&source);
        let same = |q: &PendingConnect| {
            q.from == p.from
                && q.client.instance == p.client.instance
                && q.client.nonce == p.client.nonce
        };
        if own.is_some_and(|q| q.iter().any(same)) {
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

    /// The next Connect to read: the oldest of the source whose turn it is.
    pub(crate) fn pop(&mut self) -> Option<PendingConnect> {
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

    /// When reading can go on (`epoch` is the endpoint's): `None` with nothing waiting.
    pub(crate) fn next_read(&self, epoch: Instant) -> Option<Instant> {
        if self.len == 0 {
            return None;
        }
        let at = epoch + Duration::from_millis(self.reads.ready_ms(self.rate)?);
        Some(self.last.map_or(at, |l| l.max(at)))
    }

    /// Bytes the waiting Connects and the spent filter hold (tests of the memory bounds).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        let waiting: usize = self
            .by_source
            .values()
            .flat_map(|q| q.iter())
            .map(|p| std::mem::size_of::<PendingConnect>() + p.handshake.capacity())
            .sum();
        waiting + self.spent.held_bytes()
    }
}
