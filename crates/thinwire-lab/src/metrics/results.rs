//! The `results.json` contract, as Rust types (its definitions are in [`crate::metrics`]).

use serde::{Deserialize, Serialize};

/// Which engine produced the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The deterministic discrete-event simulator (`"sim"`).
    Sim,
    /// The real-network emulator (`"emu"`).
    Emu,
}

impl Engine {
    /// The contract's spelling: `"sim"` or `"emu"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Sim => "sim",
            Engine::Emu => "emu",
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole of `results.json`.
///
/// Serializes to exactly
/// `{"scenario", "engine", "seed", "runs": [RunResult...]}`; deserialization rejects
/// unknown fields so that drift from the contract is caught.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    /// Scenario name.
    pub scenario: String,
    /// Engine that produced the runs.
    pub engine: Engine,
    /// Seed of the run.
    pub seed: u64,
    /// One run per protocol (`class: null`) followed by its per-class runs.
    pub runs: Vec<RunResult>,
}

/// Message counts of a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Messages {
    /// Messages handed to the sender's send call.
    pub sent: u64,
    /// Messages delivered to the receiving application.
    pub delivered: u64,
    /// `sent - delivered`.
    pub lost: u64,
}

/// Latency statistics of a row, in milliseconds, over delivered messages.
///
/// All fields are `0.0` when no message was delivered. See the module docs of
/// [`crate::metrics`] for the definitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyMs {
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation.
    pub jitter: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// 99.9th percentile (nearest rank).
    pub p999: f64,
    /// Largest latency.
    pub max: f64,
}

/// Bytes and packets on the wire (headers included) of the row's protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wire {
    /// Bytes on the wire, including IP and transport headers.
    pub bytes: u64,
    /// Packets on the wire.
    pub packets: u64,
}

/// One row of `results.json`: a protocol, for one message class or (`class: None`) for all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// Protocol name.
    pub protocol: String,
    /// Whether the protocol is a simulator model rather than a real implementation.
    pub model: bool,
    /// Message class, or `None` (`null`) for all classes together.
    pub class: Option<String>,
    /// Message counts.
    pub messages: Messages,
    /// Latency statistics over delivered messages.
    pub latency_ms: LatencyMs,
    /// The row's deadline (most common one), or `None` when no message has one.
    pub deadline_ms: Option<f64>,
    /// Fraction of deadline-carrying messages that missed it (late or undelivered).
    pub deadline_miss_rate: Option<f64>,
    /// The protocol's wire totals (the same on every row of the protocol).
    pub wire: Wire,
    /// Unique payload bytes sent in this row.
    pub payload_bytes: u64,
    /// The protocol's redundancy (the same on every row of the protocol).
    pub redundancy: f64,
}

impl RunResult {
    /// The protocol name as shown to people: with ` (model)` appended for models.
    pub fn display_protocol(&self) -> String {
        display_protocol(&self.protocol, self.model)
    }
}

/// Splits a protocol name of the form `base [point]` (how the lab names the runs of a
/// sweep, e.g. `tcp-model [n=50]`, see [`sweep_name`]) into `("tcp-model", Some("n=50"))`;
/// also accepts `base[point]`, the emulator's former form. Any other name gives
/// `(name, None)`. This is the one parser of run labels.
pub fn split_sweep_label(name: &str) -> (&str, Option<&str>) {
    if let Some(inner) = name.strip_suffix(']') {
        if let Some(i) = inner.rfind('[') {
            let (base, point) = (&inner[..i], &inner[i + 1..]);
            let base = base.strip_suffix(' ').unwrap_or(base);
            if !base.is_empty() && !point.is_empty() {
                return (base, Some(point));
            }
        }
    }
    (name, None)
}

/// The name of a run at a sweep point: `base [point]`, or `base` when `point` is empty
/// (the inverse of [`split_sweep_label`]).
pub fn sweep_name(base: &str, point: &str) -> String {
    if point.is_empty() {
        base.to_owned()
    } else {
        format!("{base} [{point}]")
    }
}

/// `name`, with ` (model)` appended when `model` is true.
pub(crate) fn display_protocol(name: &str, model: bool) -> String {
    if model {
        format!("{name} (model)")
    } else {
        name.to_owned()
    }
}

impl Results {
    /// Pretty-printed JSON following the contract, with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        // Serializing these plain structs (string keys, finite floats) cannot fail; fall
        // back to the compact form only to avoid a panic path.
        let mut s = serde_json::to_string_pretty(self)
            .or_else(|_| serde_json::to_string(self))
            .unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses `results.json` text, rejecting anything outside the contract.
    pub fn from_json(text: &str) -> Result<Results, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The rows with `class: null`, one per protocol, in order.
    pub fn protocol_runs(&self) -> impl Iterator<Item = &RunResult> {
        self.runs.iter().filter(|r| r.class.is_none())
    }

    /// The per-class rows, in order.
    pub fn class_runs(&self) -> impl Iterator<Item = &RunResult> {
        self.runs.iter().filter(|r| r.class.is_some())
    }

    /// The row of `protocol` for `class` (`None`: all classes).
    pub fn run(&self, protocol: &str, class: Option<&str>) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.protocol == protocol && r.class.as_deref() == class)
    }

    /// Distinct class names, in order of first appearance.
    pub fn classes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in self.class_runs().filter_map(|r| r.class.as_deref()) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}
