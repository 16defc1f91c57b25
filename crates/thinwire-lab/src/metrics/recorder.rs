//! Collecting per-message records and wire counters during a run.

use std::collections::{BTreeMap, HashMap};

use super::results::{Engine, Messages, Results, RunKey, RunResult, Wire};
use super::samples::{SampleSeries, Samples};
use super::stats::{latency_summary, round_to, RATIO_SCALE};

/// What happened to one application message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    /// The run (protocol and sweep point) that carried the message.
    pub key: RunKey,
    /// Message class (e.g. `"move"`, `"attack"`, `"chat"`).
    pub class: String,
    /// Time of the sender's send call, in microseconds.
    pub sent_at_us: u64,
    /// Time of delivery to the receiving application, or `None` if never delivered.
    pub delivered_at_us: Option<u64>,
    /// Application payload size.
    pub payload_bytes: u32,
    /// Deadline relative to `sent_at_us`, in microseconds, if the message has one.
    pub deadline_us: Option<u64>,
}

/// Wire counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireCounters {
    /// Bytes on the wire, headers included.
    pub bytes: u64,
    /// Packets on the wire.
    pub packets: u64,
    /// Payload bytes transmitted, including retransmissions, bundled copies and parity.
    pub payload_bytes_sent: u64,
}

impl WireCounters {
    fn add(&mut self, other: WireCounters) {
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.packets = self.packets.saturating_add(other.packets);
        self.payload_bytes_sent = self
            .payload_bytes_sent
            .saturating_add(other.payload_bytes_sent);
    }
}

/// Static facts about a run's protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolInfo {
    /// The run, as in [`MessageRecord::key`].
    pub key: RunKey,
    /// Whether this is a simulator model (labelled "(model)" in every output).
    pub model: bool,
}

/// Running aggregate of one (run, class) pair.
#[derive(Debug, Clone, Default)]
struct Group {
    sent: u64,
    delivered: u64,
    unique_payload: u64,
    latencies_us: Vec<u64>,
    /// deadline (µs) → number of messages carrying it.
    deadlines: BTreeMap<u64, u64>,
    with_deadline: u64,
    missed: u64,
}

impl Group {
    fn add(&mut self, rec: &MessageRecord) {
        self.sent += 1;
        self.unique_payload += u64::from(rec.payload_bytes);
        let latency = rec
            .delivered_at_us
            .map(|d| d.saturating_sub(rec.sent_at_us));
        if let Some(l) = latency {
            self.delivered += 1;
            self.latencies_us.push(l);
        }
        if let Some(deadline) = rec.deadline_us {
            *self.deadlines.entry(deadline).or_insert(0) += 1;
            self.with_deadline += 1;
            let met = matches!(latency, Some(l) if l <= deadline);
            if !met {
                self.missed += 1;
            }
        }
    }

    fn merge(&mut self, other: &Group) {
        self.sent += other.sent;
        self.delivered += other.delivered;
        self.unique_payload += other.unique_payload;
        self.latencies_us.extend_from_slice(&other.latencies_us);
        for (&d, &n) in &other.deadlines {
            *self.deadlines.entry(d).or_insert(0) += n;
        }
        self.with_deadline += other.with_deadline;
        self.missed += other.missed;
    }

    /// The most common deadline in ms (ties: the smaller), if any.
    fn deadline_ms(&self) -> Option<f64> {
        let mut best: Option<(u64, u64)> = None;
        for (&d, &n) in &self.deadlines {
            let better = match best {
                None => true,
                Some((_, best_n)) => n > best_n,
            };
            if better {
                best = Some((d, n));
            }
        }
        best.map(|(d, _)| d as f64 / 1000.0)
    }

    fn miss_rate(&self) -> Option<f64> {
        (self.with_deadline > 0)
            .then(|| round_to(self.missed as f64 / self.with_deadline as f64, RATIO_SCALE))
    }
}

#[derive(Debug, Clone)]
struct ProtocolState {
    key: RunKey,
    model: bool,
    wire: WireCounters,
    /// class index → aggregate; iteration follows class first-appearance order.
    classes: BTreeMap<usize, Group>,
}

/// Collects message records and wire counters of a run and turns them into [`Results`].
///
/// Records are aggregated as they arrive (counts, and one `u64` latency per delivered
/// message), so memory stays small even for millions of messages.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    protocols: Vec<ProtocolState>,
    protocol_index: HashMap<RunKey, usize>,
    classes: Vec<String>,
    class_index: HashMap<String, usize>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn protocol_mut(&mut self, key: &RunKey) -> &mut ProtocolState {
        let idx = match self.protocol_index.get(key) {
            Some(&i) => i,
            None => {
                let i = self.protocols.len();
                self.protocols.push(ProtocolState {
                    key: key.clone(),
                    model: false,
                    wire: WireCounters::default(),
                    classes: BTreeMap::new(),
                });
                self.protocol_index.insert(key.clone(), i);
                i
            }
        };
        &mut self.protocols[idx]
    }

    fn class_idx(&mut self, class: &str) -> usize {
        match self.class_index.get(class) {
            Some(&i) => i,
            None => {
                let i = self.classes.len();
                self.classes.push(class.to_owned());
                self.class_index.insert(class.to_owned(), i);
                i
            }
        }
    }

    /// Adds one message's fate.
    pub fn record(&mut self, rec: MessageRecord) {
        let class = self.class_idx(&rec.class);
        self.protocol_mut(&rec.key)
            .classes
            .entry(class)
            .or_default()
            .add(&rec);
    }

    /// Adds wire counters to the run `key`'s totals (calls accumulate).
    pub fn add_wire(&mut self, key: &RunKey, counters: WireCounters) {
        self.protocol_mut(key).wire.add(counters);
    }

    /// Declares a run's protocol (and whether it is a model). Runs not declared are
    /// treated as real implementations (`model: false`). Declaring also fixes the
    /// run's position in the output if it was not heard of before.
    pub fn set_protocol_info(&mut self, info: ProtocolInfo) {
        self.protocol_mut(&info.key).model = info.model;
    }

    /// Computes the results and the latency samples.
    pub fn finish(self, scenario: &str, engine: Engine, seed: u64) -> (Results, Samples) {
        let mut runs = Vec::new();
        let mut series = Vec::new();
        for p in self.protocols {
            let mut all = Group::default();
            for g in p.classes.values() {
                all.merge(g);
            }
            let redundancy = if all.unique_payload == 0 {
                0.0
            } else {
                round_to(
                    p.wire.payload_bytes_sent as f64 / all.unique_payload as f64 - 1.0,
                    RATIO_SCALE,
                )
            };
            let wire = Wire {
                bytes: p.wire.bytes,
                packets: p.wire.packets,
            };
            let rows = std::iter::once((None, all)).chain(
                p.classes
                    .into_iter()
                    .map(|(ci, g)| (Some(self.classes[ci].clone()), g)),
            );
            for (class, mut g) in rows {
                g.latencies_us.sort_unstable();
                runs.push(RunResult {
                    key: p.key.clone(),
                    model: p.model,
                    class: class.clone(),
                    messages: Messages {
                        sent: g.sent,
                        delivered: g.delivered,
                        lost: g.sent - g.delivered,
                    },
                    latency_ms: latency_summary(&g.latencies_us),
                    deadline_ms: g.deadline_ms(),
                    deadline_miss_rate: g.miss_rate(),
                    wire,
                    payload_bytes: g.unique_payload,
                    redundancy,
                });
                series.push(SampleSeries {
                    key: p.key.clone(),
                    model: p.model,
                    class,
                    latencies_us: g.latencies_us,
                });
            }
        }
        (
            Results {
                scenario: scenario.to_owned(),
                engine,
                seed,
                runs,
            },
            Samples::from_series(series),
        )
    }
}
