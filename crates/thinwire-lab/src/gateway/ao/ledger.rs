//! The workload and the message ledger: AO-like server-to-client streams drawn from the
//! lab's published profile, each active for one session of the run, every message's send
//! and delivery time, and the per-flow order check.
//!
//! Sessions: of the `flows` streams, `active` are active at once on average. Each stream's
//! session lasts `active / flows` of the run and starts at a random point of it, wrapping
//! around the end (a stream starting late is also active at the very beginning), so the
//! expected number of active streams is `active` at every moment of the run. Outside its
//! session a stream sends nothing; its connection stays open.
//!
//! A message's payload starts with its id (8 bytes, big endian; the profile's smallest
//! payload is 8 bytes, so no message is padded). The receiver looks the id up here: the
//! flow it was sent on must be the receiving player's, and the flow's messages must arrive
//! in the order they were sent, each once.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::results::{AoModeResult, LateMessages};
use crate::metrics::latency_summary;
use crate::workload::{Clamped, GameProfile};

/// Seed tag of a flow's message draws (index: the flow).
const FLOW_TAG: u64 = 0x414f_464c;
/// Seed tag of a flow's session start (index: the flow).
const SESSION_TAG: u64 = 0x414f_5353;
/// Bytes of message id at the start of every payload.
pub(super) const ID_BYTES: usize = 8;

/// The streams' sessions within a run (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sessions {
    /// The run's first send time.
    pub(super) start: Instant,
    /// The run's length.
    pub(super) duration: Duration,
    /// Streams active at once on average (all of them when it is not below the count).
    pub(super) active: usize,
}

/// The AO profile's draws, one random stream per flow, the same in every mode.
pub(super) struct Workload {
    interarrival: Clamped,
    payload: Clamped,
    rngs: Vec<ChaCha8Rng>,
    /// Per flow: its session's start offset in the run (`None`: always active).
    session_at: Vec<Option<Duration>>,
    /// The length of every session.
    session_len: Duration,
    sessions: Sessions,
}

impl Workload {
    /// The workload of `flows` streams of run seed `seed` in `sessions`.
    pub(super) fn new(seed: u64, flows: usize, sessions: Sessions) -> Self {
        let profile = GameProfile::by_key("anarchy-online")
            .expect("the lab publishes the anarchy-online profile");
        let always = sessions.active >= flows;
        let share = sessions.active as f64 / flows.max(1) as f64;
        let d = sessions.duration;
        Workload {
            interarrival: profile.interarrival(),
            payload: profile.payload(),
            rngs: (0..flows as u64)
                .map(|f| crate::seed::rng(seed, FLOW_TAG, f))
                .collect(),
            session_at: (0..flows as u64)
                .map(|f| (!always).then(|| d.mul_f64(crate::seed::unit(seed, SESSION_TAG, f))))
                .collect(),
            session_len: if always { d } else { d.mul_f64(share) },
            sessions,
        }
    }

    /// Whether `flow` is in its session at `t`; if not, when its session begins (`None`:
    /// not again in this run).
    fn session(&self, flow: usize, t: Instant) -> Result<(), Option<Instant>> {
        let Some(at) = self.session_at[flow] else {
            return Ok(());
        };
        let rel = t.saturating_duration_since(self.sessions.start);
        let wraps = (at + self.session_len).saturating_sub(self.sessions.duration);
        if rel < wraps || (rel >= at && rel < at + self.session_len) {
            return Ok(());
        }
        Err((rel < at).then(|| self.sessions.start + at))
    }

    /// A random phase within one interarrival time after `from`.
    fn phase(&mut self, flow: usize, from: Instant) -> Instant {
        let rng = &mut self.rngs[flow];
        let gap = self.interarrival.sample(rng);
        let phase: f64 = rng.random();
        from + Duration::from_secs_f64(gap * phase / 1000.0)
    }

    /// `t` if `flow` is active then, else a random phase after its next session begins.
    fn in_session(&mut self, flow: usize, t: Instant) -> Option<Instant> {
        match self.session(flow, t) {
            Ok(()) => Some(t),
            Err(None) => None,
            Err(Some(begins)) => Some(self.phase(flow, begins)),
        }
    }

    /// The first send time of `flow` (`None`: it sends nothing in this run): a random phase
    /// within one interarrival time after the run's start, or after its session's start.
    pub(super) fn first(&mut self, flow: usize) -> Option<Instant> {
        let t = self.phase(flow, self.sessions.start);
        self.in_session(flow, t)
    }

    /// The payload size of the next message of `flow` and the time of the one after it
    /// (`None`: none in this run's sessions).
    pub(super) fn next(&mut self, flow: usize, now: Instant) -> (usize, Option<Instant>) {
        let rng = &mut self.rngs[flow];
        let size = self.payload.sample(rng).round().max(ID_BYTES as f64) as usize;
        let gap = self.interarrival.sample(rng);
        let t = now + Duration::from_secs_f64(gap / 1000.0);
        (size, self.in_session(flow, t))
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
        self.deliver_id(flow, u64::from_be_bytes(b), now);
    }

    /// Records the delivery of message `id` to the player of `flow` at `now`.
    pub(super) fn deliver_id(&mut self, flow: usize, id: u64, now: Instant) {
        let Some(m) = self.msgs.get_mut(id as usize) else {
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

    /// The flow message `id` was sent on, if it was sent.
    pub(super) fn flow_of(&self, id: u64) -> Option<usize> {
        self.msgs.get(id as usize).map(|m| m.flow as usize)
    }

    /// Payload bytes the application sent (each message once).
    pub(super) fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// A mode's result with what the ledger knows filled in (messages, payload, latency);
    /// the caller adds the link's and the endpoints' counters.
    pub(super) fn result(&self) -> AoModeResult {
        AoModeResult {
            messages_sent: self.sent(),
            messages_delivered: self.delivered(),
            order_violations: self.order_violations,
            misdelivered: self.misdelivered,
            app_payload_bytes: self.payload_bytes(),
            latency_ms: latency_summary(&self.sorted_latencies_us()),
            ..AoModeResult::default()
        }
    }

    /// The messages delivered later than `one_way + hold + 1 ms` (see [`LateMessages`]).
    pub(super) fn late(&self, one_way: Duration, hold: Duration) -> LateMessages {
        let bound = one_way + hold + Duration::from_millis(1);
        let (mut n, mut extra) = (0u64, 0.0);
        for m in &self.msgs {
            let Some(d) = m.delivered else { continue };
            let latency = d - m.at;
            if latency > bound {
                n += 1;
                extra += (latency - one_way).as_secs_f64() * 1000.0;
            }
        }
        LateMessages {
            messages: n,
            share_pct: 100.0 * n as f64 / self.delivered.max(1) as f64,
            mean_extra_ms: if n > 0 { extra / n as f64 } else { 0.0 },
        }
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
