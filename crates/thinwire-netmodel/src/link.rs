//! One direction of a simulated link.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{JitterDistribution, LinkConfig};
use super::error::ConfigError;
use super::loss::LossState;
use super::queue::{Admission, Serializer};

/// A packet type whose bits the link can corrupt.
///
/// Implemented for byte containers (`Vec<u8>`, `Box<[u8]>`, `bytes::Bytes`,
/// `bytes::BytesMut`) and for pairs `(A, B)` whose second element is
/// corruptible (e.g. `(SocketAddr, Vec<u8>)`). Structured simulator packets can
/// implement it by marking themselves as damaged.
pub trait Corruptible {
    /// Number of bits that may be flipped; `0` means the packet cannot be
    /// corrupted (and is not counted as corrupted).
    fn bit_len(&self) -> usize;
    /// Flips bit `bit` (`bit < self.bit_len()`), counting from the most
    /// significant bit of the first byte.
    fn flip_bit(&mut self, bit: usize);
}

fn flip(bytes: &mut [u8], bit: usize) {
    if let Some(b) = bytes.get_mut(bit / 8) {
        *b ^= 0x80 >> (bit % 8);
    }
}

impl Corruptible for Vec<u8> {
    fn bit_len(&self) -> usize {
        self.len() * 8
    }
    fn flip_bit(&mut self, bit: usize) {
        flip(self, bit);
    }
}

impl Corruptible for Box<[u8]> {
    fn bit_len(&self) -> usize {
        self.len() * 8
    }
    fn flip_bit(&mut self, bit: usize) {
        flip(self, bit);
    }
}

impl Corruptible for bytes::BytesMut {
    fn bit_len(&self) -> usize {
        self.len() * 8
    }
    fn flip_bit(&mut self, bit: usize) {
        flip(self, bit);
    }
}

impl Corruptible for bytes::Bytes {
    fn bit_len(&self) -> usize {
        self.len() * 8
    }
    fn flip_bit(&mut self, bit: usize) {
        let mut v = self.to_vec();
        flip(&mut v, bit);
        *self = bytes::Bytes::from(v);
    }
}

impl<A, B: Corruptible> Corruptible for (A, B) {
    fn bit_len(&self) -> usize {
        self.1.bit_len()
    }
    fn flip_bit(&mut self, bit: usize) {
        self.1.flip_bit(bit);
    }
}

/// Counters of a [`Link`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LinkStats {
    /// Packets handed to [`Link::send`].
    pub sent: u64,
    /// Bytes handed to [`Link::send`] (the `size` arguments).
    pub bytes: u64,
    /// Packets returned by [`Link::poll_deliver`] (duplicates included).
    pub delivered: u64,
    /// Bytes of the delivered packets.
    pub bytes_delivered: u64,
    /// Packets dropped by the loss model or the trace.
    pub lost: u64,
    /// Packets dropped by the queue limit.
    pub dropped_queue: u64,
    /// Extra copies created by duplication.
    pub duplicated: u64,
    /// Copies that had a bit flipped.
    pub corrupted: u64,
}

impl std::ops::AddAssign for LinkStats {
    fn add_assign(&mut self, rhs: Self) {
        self.sent += rhs.sent;
        self.bytes += rhs.bytes;
        self.delivered += rhs.delivered;
        self.bytes_delivered += rhs.bytes_delivered;
        self.lost += rhs.lost;
        self.dropped_queue += rhs.dropped_queue;
        self.duplicated += rhs.duplicated;
        self.corrupted += rhs.corrupted;
    }
}

/// What happened to a packet handed to [`Link::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// The packet will be delivered at this time (a duplicate may follow).
    Scheduled(Instant),
    /// The loss model or trace dropped the packet.
    Lost,
    /// The queue limit dropped the packet.
    DroppedQueue,
}

#[derive(Debug)]
struct Pending<P> {
    at: Instant,
    seq: u64,
    size: usize,
    packet: P,
}

impl<P> PartialEq for Pending<P> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<P> Eq for Pending<P> {}
impl<P> PartialOrd for Pending<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Pending<P> {
    // Reversed so that `BinaryHeap` pops the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// One direction of a network path (see the [module docs](super)).
#[derive(Debug)]
pub struct Link<P> {
    config: LinkConfig,
    rng: ChaCha8Rng,
    loss: LossState,
    serializer: Serializer,
    pending: BinaryHeap<Pending<P>>,
    next_seq: u64,
    trace_pos: u64,
    last_delivery: Option<Instant>,
    stats: LinkStats,
}

impl<P: Clone + Corruptible> Link<P> {
    /// Creates a link with the given configuration and RNG seed.
    ///
    /// # Panics
    /// If the configuration is invalid (see [`LinkConfig::validate`]); use
    /// [`Link::try_new`] for configurations that come from user input.
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        match Self::try_new(config, seed) {
            Ok(link) => link,
            Err(e) => panic!("invalid link configuration: {e}"),
        }
    }

    /// Creates a link, validating the configuration.
    pub fn try_new(config: LinkConfig, seed: u64) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Link {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            loss: LossState::default(),
            serializer: Serializer::default(),
            pending: BinaryHeap::new(),
            next_seq: 0,
            trace_pos: 0,
            last_delivery: None,
            stats: LinkStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Replaces the configuration (e.g. to change conditions mid-run). Packets
    /// already in flight keep their delivery times; loss-chain state is kept.
    pub fn set_config(&mut self, config: LinkConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// Offers `packet` of `size` bytes on the wire to the link at `now`.
    ///
    /// `now` must not go backwards between calls.
    pub fn send(&mut self, now: Instant, packet: P, size: usize) -> SendOutcome {
        self.stats.sent += 1;
        self.stats.bytes += size as u64;

        // 1. Bandwidth queue.
        let departs =
            match self
                .serializer
                .admit(now, size, self.config.bandwidth_bps, self.config.queue)
            {
                Admission::Departs(t) => t,
                Admission::Dropped => {
                    self.stats.dropped_queue += 1;
                    return SendOutcome::DroppedQueue;
                }
            };

        // 2. Loss (trace overrides).
        let trace_entry = self.config.trace.as_ref().map(|t| {
            let e = t.entry(self.trace_pos);
            self.trace_pos += 1;
            e
        });
        let lost = match trace_entry {
            Some(e) => e.lost,
            None => self.loss.is_lost(&self.config.loss, &mut self.rng),
        };
        if lost {
            self.stats.lost += 1;
            return SendOutcome::Lost;
        }

        // 3. Delay and jitter.
        let fixed_delay = trace_entry.map(|e| e.delay);
        let at = self.delivery_time(departs, fixed_delay);

        // 4. Duplicate.
        let dup_at =
            if self.config.duplicate > 0.0 && self.rng.random::<f64>() < self.config.duplicate {
                self.stats.duplicated += 1;
                Some(self.delivery_time(departs, fixed_delay))
            } else {
                None
            };

        // 5. Corrupt (independently per copy).
        match dup_at {
            Some(dup_at) => {
                let mut copy = packet.clone();
                self.maybe_corrupt(&mut copy);
                let mut original = packet;
                self.maybe_corrupt(&mut original);
                self.push(at, size, original);
                self.push(dup_at, size, copy);
            }
            None => {
                let mut original = packet;
                self.maybe_corrupt(&mut original);
                self.push(at, size, original);
            }
        }
        SendOutcome::Scheduled(at)
    }

    fn maybe_corrupt(&mut self, packet: &mut P) {
        if self.config.corrupt > 0.0 && self.rng.random::<f64>() < self.config.corrupt {
            let bits = packet.bit_len();
            if bits > 0 {
                let bit = self.rng.random_range(0..bits);
                packet.flip_bit(bit);
                self.stats.corrupted += 1;
            }
        }
    }

    fn push(&mut self, at: Instant, size: usize, packet: P) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.push(Pending {
            at,
            seq,
            size,
            packet,
        });
    }

    /// Delivery time of a copy whose last bit leaves the sender at `departs`.
    fn delivery_time(&mut self, departs: Instant, fixed_delay: Option<Duration>) -> Instant {
        let delay = match fixed_delay {
            Some(d) => d,
            None => self.jittered_delay(),
        };
        let mut at = departs + delay;
        if !self.config.reorder {
            if let Some(last) = self.last_delivery {
                at = at.max(last);
            }
        }
        self.last_delivery = Some(self.last_delivery.map_or(at, |l| l.max(at)));
        at
    }

    fn jittered_delay(&mut self) -> Duration {
        let jitter = self.config.jitter;
        if jitter.is_zero() {
            return self.config.delay;
        }
        let unit: f64 = match self.config.jitter_distribution {
            JitterDistribution::Uniform => self.rng.random_range(-1.0..=1.0),
            JitterDistribution::Normal => {
                // Box-Muller, standard deviation 1/2 of the amplitude, truncated.
                let u1: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
                let u2: f64 = self.rng.random::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (z * 0.5).clamp(-1.0, 1.0)
            }
        };
        let offset = jitter.as_secs_f64() * unit;
        let total = (self.config.delay.as_secs_f64() + offset).max(0.0);
        Duration::from_secs_f64(total)
    }

    /// Delivery time of the earliest packet in flight.
    pub fn next_delivery(&self) -> Option<Instant> {
        self.pending.peek().map(|p| p.at)
    }

    /// Returns the earliest packet whose delivery time is `<= now` (ties in
    /// send order), or `None`.
    pub fn poll_deliver(&mut self, now: Instant) -> Option<P> {
        if self.pending.peek()?.at > now {
            return None;
        }
        let p = self.pending.pop()?;
        self.stats.delivered += 1;
        self.stats.bytes_delivered += p.size as u64;
        Some(p.packet)
    }

    /// Like [`Link::poll_deliver`] but also returns the delivery time.
    pub fn poll_deliver_timed(&mut self, now: Instant) -> Option<(Instant, P)> {
        let at = self.next_delivery()?;
        self.poll_deliver(now).map(|p| (at, p))
    }

    /// Packets scheduled for delivery and not yet polled.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Bytes in the bandwidth queue (including the packet being serialized).
    pub fn backlog_bytes(&mut self, now: Instant) -> usize {
        self.serializer.backlog_bytes(now)
    }

    /// Queueing delay a packet sent at `now` would wait before serialization.
    pub fn queue_delay(&self, now: Instant) -> Duration {
        self.serializer.queue_delay(now)
    }

    /// Counters.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
}
