//! One simulation's result in a form that can be written to a shard file and
//! merged later: what the report and `results.json` need (for the first run),
//! the figures of the paper tables and a latency summary (for every run).

use serde::{Deserialize, Serialize};

use crate::metrics::{
    latency_summary, LatencyMs, MessageRecord, ProtocolInfo, Recorder, RunKey, WireCounters,
};
use crate::paper::{measure, EntryId, JobFacts, LatencyFrom, PaperSpec, Value};
use crate::protocol::ThinwireCounters;
use crate::sim::RunOutput;

/// Per-simulation facts that are not part of `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunNote {
    /// The run: protocol and sweep point.
    pub key: RunKey,
    /// Drop rate measured on the access links.
    pub access_drop_rate: f64,
    /// Drop rate measured on the bottleneck (cross traffic included).
    pub bottleneck_drop_rate: Option<f64>,
    /// Events processed.
    pub events: u64,
    /// thinwire's connection counters by side (thinwire configurations
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinwire: Option<ThinwireCounters>,
}

impl RunNote {
    /// The deadline counters in words (`None` when no message went through
    /// deadline delivery), e.g. `deadline delivery: 6000 messages, 240
    /// recovery shards (122.9 kB), ...`.
    ///
    /// Recovery shards are both proactive parity and repairs: a stage that
    /// resends for missing shards sends fresh recovery shards while any are
    /// left, so retransmission-only configurations count their repairs here.
    pub fn deadline_summary(&self) -> Option<String> {
        let t = self.thinwire?.with_deadline()?;
        let (d, bytes) = (t.deadline, t.payload_bytes);
        Some(format!(
            "deadline delivery: {} messages, {} recovery shards ({:.1} kB; parity and repairs), \
             {:.1} kB retransmitted, {} abandoned by the sender, {} decoded late (receiver's \
             estimate)",
            d.messages_sent,
            d.parity_shards,
            bytes.parity as f64 / 1000.0,
            bytes.retransmitted as f64 / 1000.0,
            d.abandoned,
            d.late
        ))
    }

    /// The loss-recovery counters, server and client endpoints summed, in
    /// words (`None` without them), e.g.
    /// `loss recovery: 265 packets lost (1 thin fast, 139 spurious: lost ACK),
    /// 264 RTO expirations (39 spurious: late ACK), 209 frames retransmitted,
    /// ...`: a line for the text summary beside [`Self::deadline_summary`].
    pub fn recovery_summary(&self) -> Option<String> {
        let t = self.thinwire?.total();
        let (r, f) = (t.recovery, t.frames);
        Some(format!(
            "loss recovery: {} packets lost ({} thin fast, {} spurious: lost ACK), {} RTO \
             expirations ({} spurious: late ACK), {} frames retransmitted, {} repair copies \
             ({:.1} kB), repairs {} in time / {} late, {} ACK repeats, {} frames bundled",
            r.packets_lost,
            r.thin_fast_losses,
            r.spurious_losses,
            r.rto_expirations,
            r.spurious_timeouts,
            f.retransmitted,
            r.repair_copies,
            t.payload_bytes.copies as f64 / 1000.0,
            r.repairs_in_time,
            r.repairs_late,
            r.ack_repeats,
            f.bundled
        ))
    }
}

/// One message as the recorder needs it: sent µs, delivered µs, payload
/// bytes, class index, deadline µs.
pub(crate) type CompactMessage = (u64, Option<u64>, u32, u16, Option<u64>);

/// Everything the recorder needs from one simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recorded {
    /// Whether the protocol is a model.
    pub(crate) model: bool,
    /// Class names by index.
    pub(crate) classes: Vec<String>,
    /// Every message, in the simulation's order.
    pub(crate) messages: Vec<CompactMessage>,
    /// Wire bytes, packets and payload bytes sent.
    pub(crate) wire: (u64, u64, u64),
}

/// The all-classes latency summary of one simulation (for repetitions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// Latency statistics of the delivered messages.
    pub latency_ms: LatencyMs,
    /// Messages sent.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
}

/// One simulation's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobResult {
    /// Index in the run's job list (run-major, then point, then protocol).
    pub(crate) index: usize,
    /// Repetition (0: the scenario's seed).
    pub(crate) run: u32,
    /// The run: protocol and sweep point.
    pub(crate) key: RunKey,
    /// What the simulation measured (first run only).
    pub(crate) note: Option<RunNote>,
    /// The messages for `results.json` and the report (first run only).
    pub(crate) recorded: Option<Recorded>,
    /// The paper tables' figures for this protocol and point.
    pub(crate) values: Vec<Value>,
    /// Latency summary over all classes.
    pub(crate) summary: JobSummary,
}

/// The job's inputs that [`JobResult::from_output`] records.
pub(crate) struct JobContext<'a> {
    pub(crate) index: usize,
    pub(crate) run: u32,
    pub(crate) key: &'a RunKey,
    pub(crate) has_bottleneck: bool,
    pub(crate) paper: &'a PaperSpec,
}

impl JobResult {
    /// Reduces a simulation's output to what is kept.
    pub(crate) fn from_output(cx: &JobContext<'_>, out: RunOutput) -> JobResult {
        let facts = JobFacts::from_output(&out, LatencyFrom::Write);
        let paper_facts = match cx.paper.latency_from {
            LatencyFrom::Write => None,
            from => Some(JobFacts::from_output(&out, from)),
        };
        let figure_facts = paper_facts.as_ref().unwrap_or(&facts);
        let mut values = Vec::new();
        let point_ok =
            |filter: &[String]| crate::paper::point_matches(cx.key.point_label(), filter);
        let base = cx.key.protocol.as_str();
        for (i, p) in cx.paper.published.iter().enumerate() {
            let mine = p.protocol == base || p.baseline.as_deref() == Some(base);
            if mine && point_ok(&p.point) {
                values.push(Value {
                    entry: EntryId::Published(i),
                    run: cx.run,
                    key: cx.key.clone(),
                    value: measure(&p.metric, figure_facts, &p.classes),
                });
            }
        }
        for (i, o) in cx.paper.orders.iter().enumerate() {
            let at = o.points.is_empty() || o.points.iter().any(|f| point_ok(f));
            if at && o.protocols.iter().any(|p| p == base) {
                values.push(Value {
                    entry: EntryId::Order(i),
                    run: cx.run,
                    key: cx.key.clone(),
                    value: measure(&o.metric, figure_facts, &o.classes),
                });
            }
        }
        let mut all: Vec<u64> = facts
            .classes
            .iter()
            .flat_map(|c| c.latencies_us.iter().copied())
            .collect();
        all.sort_unstable();
        let summary = JobSummary {
            latency_ms: latency_summary(&all),
            sent: facts.classes.iter().map(|c| c.sent).sum(),
            delivered: all.len() as u64,
        };
        let first = cx.run == 0;
        JobResult {
            index: cx.index,
            run: cx.run,
            key: cx.key.clone(),
            note: first.then(|| RunNote {
                key: cx.key.clone(),
                access_drop_rate: out.access.drop_rate(),
                bottleneck_drop_rate: cx.has_bottleneck.then(|| out.bottleneck.drop_rate()),
                events: out.events,
                thinwire: out.thinwire,
            }),
            recorded: first.then(|| Recorded {
                model: out.model,
                messages: out
                    .messages
                    .iter()
                    .map(|m| (m.sent_us, m.delivered_us, m.size, m.class, m.deadline_us))
                    .collect(),
                classes: out.classes,
                wire: (
                    out.wire.bytes,
                    out.wire.packets,
                    out.wire.payload_bytes_sent,
                ),
            }),
            values,
            summary,
        }
    }

    /// Feeds the recorded messages to `recorder` under the job's run key.
    pub(crate) fn record(&self, recorder: &mut Recorder) {
        let Some(r) = &self.recorded else {
            return;
        };
        recorder.set_protocol_info(ProtocolInfo {
            key: self.key.clone(),
            model: r.model,
        });
        for &(sent, delivered, size, class, deadline) in &r.messages {
            recorder.record(MessageRecord {
                key: self.key.clone(),
                class: r.classes.get(class as usize).cloned().unwrap_or_default(),
                sent_at_us: sent,
                delivered_at_us: delivered,
                payload_bytes: size,
                deadline_us: deadline,
            });
        }
        recorder.add_wire(
            &self.key,
            WireCounters {
                bytes: r.wire.0,
                packets: r.wire.1,
                payload_bytes_sent: r.wire.2,
            },
        );
    }
}
