//! The `results.json` contract, as Rust types (its definitions are in [`crate::metrics`]).

use std::fmt;

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

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

/// Which run a row belongs to: a protocol, at a sweep point when the scenario sweeps.
///
/// In `results.json` (and every other JSON the lab writes) it is an object,
/// `{"protocol": "tcp-model", "point": "n=50"}`, with `"point": null` outside a sweep
/// (the contract spells out every field, as it does `"class": null`). People see it as
/// `tcp-model [n=50]` (or `tcp-model`): [`RunKey`]'s [`Display`](fmt::Display) is the one
/// place that form is written, and nothing parses it back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunKey {
    /// Protocol name (a simulator protocol or a real peer), e.g. `tcp-model`.
    pub protocol: String,
    /// The sweep point's label (e.g. `n=50,loss=2%`, see
    /// [`SweepPoint::label`](crate::scenario::SweepPoint::label)), `None` outside a sweep.
    pub point: Option<String>,
}

impl RunKey {
    /// The run of `protocol` outside a sweep.
    pub fn new(protocol: impl Into<String>) -> RunKey {
        RunKey {
            protocol: protocol.into(),
            point: None,
        }
    }

    /// The run of `protocol` at the sweep point labelled `point`; an empty label (a
    /// scenario without a sweep, see
    /// [`SweepPoint::label`](crate::scenario::SweepPoint::label)) means no point.
    pub fn at(protocol: impl Into<String>, point: &str) -> RunKey {
        RunKey {
            protocol: protocol.into(),
            point: (!point.is_empty()).then(|| point.to_owned()),
        }
    }

    /// The sweep point's label, `""` outside a sweep.
    pub fn point_label(&self) -> &str {
        self.point.as_deref().unwrap_or("")
    }
}

impl From<&str> for RunKey {
    /// The run of a protocol outside a sweep ([`RunKey::new`]; the name is taken as it is).
    fn from(protocol: &str) -> RunKey {
        RunKey::new(protocol)
    }
}

impl fmt::Display for RunKey {
    /// `protocol [point]`, or `protocol` outside a sweep; honours width and alignment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.point {
            None => f.pad(&self.protocol),
            Some(point) => f.pad(&format!("{} [{point}]", self.protocol)),
        }
    }
}

/// One row of `results.json`: a protocol's run, for one message class or (`class: None`)
/// for all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// The run: protocol and sweep point.
    pub key: RunKey,
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
    /// The run as shown to people: `protocol [point]`, with ` (model)` appended for models.
    pub fn display_protocol(&self) -> String {
        display_protocol(&self.key, self.model)
    }
}

/// `name`, with ` (model)` appended when `model` is true.
pub(crate) fn display_protocol(name: &impl fmt::Display, model: bool) -> String {
    if model {
        format!("{name} (model)")
    } else {
        name.to_string()
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

    /// The row of the run `key` for `class` (`None`: all classes).
    pub fn run(&self, key: &RunKey, class: Option<&str>) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.key == *key && r.class.as_deref() == class)
    }

    /// Whether the runs are a sweep's (some run has a sweep point).
    pub fn is_sweep(&self) -> bool {
        self.runs.iter().any(|r| r.key.point.is_some())
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
