//! The workload and the message ledger: 175 AO-like server-to-client streams drawn from the
//! lab's published profile, every message's send and delivery time, and the per-flow order
//! check.
//!
//! A message's payload starts with its id (8 bytes, big endian; the profile's smallest
//! payload is 8 bytes, so no message is padded). The receiver looks the id up here: the
//! flow it was sent on must be the receiving player's, and the flow's messages must arrive
//! in the order they were sent, each once.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::workload::{Clamped, GameProfile};

/// Seed tag of a flow's message draws (index: the flow).
const FLOW_TAG: u64 = 0x414f_464c;
/// Bytes of message id at the start of every payload.
pub(super) const ID_BYTES: usize = 8;

/// The AO profile's draws, one random stream per flow, the same in both modes.
pub(super) struct Workload {
    interarrival: Clamped,
    payload: Clamped,
    rngs: Vec<ChaCha8Rng>,
}

impl Workload {
    /// The workload of `flows` streams of run seed `seed`.
    pub(super) fn new(seed: u64, flows: usize) -> Self {
        let profile = GameProfile::by_key("anarchy-online")
            .expect("the lab publishes the anarchy-online profile");
        Workload {
            interarrival: profile.interarrival(),
            payload: profile.payload(),
            rngs: (0..flows as u64)
                .map(|f| crate::seed::rng(seed, FLOW_TAG, f))
                .collect(),
        }
    }

    /// The first send time of `flow`: a random phase within one interarrival time after
    /// `start`.
    pub(super) fn first(&mut self, flow: usize, start: Instant) -> Instant {
        let rng = &mut self.rngs[flow];
        let gap = self.interarrival.sample(rng);
        let phase: f64 = rng.random();
        start + Duration::from_secs_f64(gap * phase / 1000.0)
    }

    /// The payload size of the next message of `flow` and the time of the one after it.
    pub(super) fn next(&mut self, flow: usize, now: Instant) -> (usize, Instant) {
        let rng = &mut self.rngs[flow];
        let size = self.payload.sample(rng).round().max(ID_BYTES as f64) as usize;
        let gap = self.interarrival.sample(rng);
        (size, now + Duration::from_secs_f64(gap / 1000.0))
    }
}

/// One message sent.
#[derive(Debug, Clone, Copy)]
struct Sent {
    flow: u32,
    seq: u32,
    at: Instant,
    delivered: Option<Instant>,
}

/// Every message of a run: when it was sent, on which flow, and when it arrived.
pub(super) struct Ledger {
    msgs: Vec<Sent>,
    next_seq: Vec<u32>,
    expect: Vec<u32>,
    delivered: u64,
    payload_bytes: u64,
    /// Deliveries out of order within a flow (a gap or a repeat).
    pub(super) order_violations: u64,
    /// Deliveries to a player the message was not sent to, or of unknown ids.
    pub(super) misdelivered: u64,
}

impl Ledger {
    /// An empty ledger of `flows` flows.
    pub(super) fn new(flows: usize) -> Self {
        Ledger {
            msgs: Vec::new(),
            next_seq: vec![0; flows],
            expect: vec![0; flows],
            delivered: 0,
            payload_bytes: 0,
            order_violations: 0,
            misdelivered: 0,
        }
    }

    /// Records a message of `size` bytes sent on `flow` at `now` and returns its payload.
    pub(super) fn send(&mut self, flow: usize, size: usize, now: Instant) -> Bytes {
        let id = self.msgs.len() as u64;
        let seq = self.next_seq[flow];
        self.next_seq[flow] += 1;
        self.msgs.push(Sent {
            flow: flow as u32,
            seq,
            at: now,
            delivered: None,
        });
        self.payload_bytes += size as u64;
        let mut v = vec![0u8; size.max(ID_BYTES)];
        v[..ID_BYTES].copy_from_slice(&id.to_be_bytes());
        Bytes::from(v)
    }

    /// Records the delivery of `data` to the player of `flow` at `now`.
    pub(super) fn deliver(&mut self, flow: usize, data: &[u8], now: Instant) {
        let Some(id) = data.get(..ID_BYTES) else {
            self.misdelivered += 1;
            return;
        };
        let mut b = [0u8; ID_BYTES];
        b.copy_from_slice(id);
        let Some(m) = self.msgs.get_mut(u64::from_be_bytes(b) as usize) else {
            self.misdelivered += 1;
            return;
        };
        if m.flow as usize != flow {
            self.misdelivered += 1;
            return;
        }
        if m.seq != self.expect[flow] || m.delivered.is_some() {
            self.order_violations += 1;
        }
        self.expect[flow] = self.expect[flow].max(m.seq + 1);
        if m.delivered.is_none() {
            m.delivered = Some(now);
            self.delivered += 1;
        }
    }

    /// Messages sent.
    pub(super) fn sent(&self) -> u64 {
        self.msgs.len() as u64
    }

    /// Messages delivered (each counted once).
    pub(super) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Payload bytes the application sent (each message once).
    pub(super) fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// The latencies (send to delivery) of the delivered messages in microseconds, ascending.
    pub(super) fn sorted_latencies_us(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .msgs
            .iter()
            .filter_map(|m| m.delivered.map(|d| (d - m.at).as_micros() as u64))
            .collect();
        v.sort_unstable();
        v
    }
}
