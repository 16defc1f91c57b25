//! Reproductions of the papers behind thinwire: the figures each paper
//! published travel with the scenario that reproduces it (`[paper]`,
//! `[[published]]` and `[[published_order]]` in the TOML), and every run puts
//! ours beside them.
//!
//! * [`PaperInfo`], [`Published`], [`PublishedOrder`]: what a scenario file
//!   says about its paper (parsed with the scenario).
//! * [`Metric`]: how a published figure is computed from a simulation, as the
//!   paper defines it (evaluated per simulation by [`measure`]).
//! * [`Comparison`]: published against ours over every run (mean and a 95%
//!   confidence interval over independent seeds), with a verdict; rendered in
//!   the report's "paper vs thinwire lab" section.
//! * [`SetupOverride`]: a setting of the paper's setup that a run's options replaced (a
//!   report says "at the paper's setup" only without one).

use serde::Serialize;

mod compare;
mod figure;
mod markdown;
mod measure;
mod setup;
mod text;
mod toml;

pub use crate::metrics::{confidence_interval, decimals, Estimate};
pub use compare::{
    compare_published, Comparison, EntryId, OrderCheck, OrderComparison, PaperOutcome, Value,
    Verdict,
};
pub use figure::{merge_runs, Figure};
pub use markdown::{figure_rows_of_markdown, papers_markdown, Calibrations, Provenance};
pub use measure::{measure, ClassFacts, JobFacts, Measured};
pub use setup::SetupOverride;
pub use text::{comparison_table, FigureJson, OrderJson, PaperJson, PaperScore};
pub(crate) use toml::{parse_paper, PaperToml, PublishedOrderToml, PublishedToml};

/// The paper a scenario reproduces and the choices made where it is silent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaperInfo {
    /// Authors, title and venue, e.g. `Wu et al., "On the challenge ..." (MTAP 2009)`.
    pub title: String,
    /// The experiment reproduced (section, figure or table).
    pub experiment: String,
    /// Choices made where the paper is silent or ambiguous, each with its reason.
    pub choices: Vec<String>,
    /// Where this reproduction differs from the paper's setup, and why.
    pub differences: Vec<String>,
    /// Every calibration: a free parameter of the setup set so that the setup meets a fact
    /// the paper states about it (a loss rate, a load), with the fact quoted and the value
    /// found. Never a calibration to a result.
    pub calibrations: Vec<String>,
}

/// Whether a figure counts towards the reproduction's score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// Measured at the paper's setup: counted.
    #[default]
    Measured,
    /// Determined by the configuration itself (e.g. a share that equals one minus the
    /// configured loss rate): shown, with its verdict, but not counted.
    FixedBySetup,
    /// Measured on a population of our own making, constrained by what the paper
    /// publishes about its population but not the paper's: counted apart.
    SyntheticPopulation,
}

impl FigureKind {
    /// `measured`, `fixed by setup` or `synthetic population`, for tables.
    pub fn label(self) -> &'static str {
        match self {
            FigureKind::Measured => "measured",
            FigureKind::FixedBySetup => "fixed by setup",
            FigureKind::SyntheticPopulation => "synthetic population",
        }
    }
}

/// How a figure is computed from one simulation of one protocol (at one sweep
/// point), over the messages of the chosen classes.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Mean latency of delivered messages, ms.
    MeanMs,
    /// Standard deviation of the latency of delivered messages ("delay
    /// jitter" as Wu et al. define it), ms.
    JitterMs,
    /// The nearest-rank quantile `q` of delivered latencies, ms.
    QuantileMs(f64),
    /// Share of *sent* messages delivered within `ms` of being sent, in %.
    WithinMs(f64),
    /// Share of sent messages delivered, in %.
    DeliveredPct,
    /// The protocol's payload redundancy (retransmissions, bundled copies and
    /// parity over unique payload), in %.
    RedundancyPct,
    /// Every byte on the wire (headers included) over the unique payload,
    /// minus one, in % (Pangolin's Tables 3-4).
    OverheadPct,
    /// The game-satisfaction index `exp(-1.6 d - 9.2 j)` (seconds) of the
    /// chosen classes; with a baseline, the ratio of the two.
    Gsi,
    /// A protocol counter (see [`crate::protocol::Counters`]), optionally
    /// divided by another, times `scale`.
    Counter {
        /// Counter name.
        name: String,
        /// Divisor counter.
        per: Option<String>,
        /// Factor (e.g. 100 for a percentage).
        scale: f64,
    },
}

impl Metric {
    /// The metric's name as written in scenario files.
    pub fn name(&self) -> String {
        match self {
            Metric::MeanMs => "mean_ms".into(),
            Metric::JitterMs => "jitter_ms".into(),
            Metric::QuantileMs(q) => format!("quantile_ms(q={q})"),
            Metric::WithinMs(ms) => format!("within_ms({ms} ms)"),
            Metric::DeliveredPct => "delivered_pct".into(),
            Metric::RedundancyPct => "redundancy_pct".into(),
            Metric::OverheadPct => "overhead_pct".into(),
            Metric::Gsi => "gsi".into(),
            Metric::Counter { name, per, .. } => match per {
                Some(p) => format!("counter({name}/{p})"),
                None => format!("counter({name})"),
            },
        }
    }

    /// The unit of the metric's values, for tables (`ms`, `%`, or empty).
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::MeanMs | Metric::JitterMs | Metric::QuantileMs(_) => "ms",
            Metric::WithinMs(_)
            | Metric::DeliveredPct
            | Metric::RedundancyPct
            | Metric::OverheadPct => "%",
            Metric::Gsi | Metric::Counter { .. } => "",
        }
    }
}

/// How far ours may be from the published value and still match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// A fraction of the published value (0.15 = within 15%).
    Relative(f64),
    /// An absolute difference in the metric's unit (e.g. 5 percentage points).
    Absolute(f64),
}

impl Tolerance {
    /// Whether `ours` is within the tolerance of `published`.
    pub fn holds(self, published: f64, ours: f64) -> bool {
        match self {
            Tolerance::Relative(f) => (ours - published).abs() <= f * published.abs() + 1e-12,
            Tolerance::Absolute(a) => (ours - published).abs() <= a + 1e-12,
        }
    }

    /// `±15%` or `±5` (in the metric's unit).
    pub fn describe(self, unit: &str) -> String {
        match self {
            Tolerance::Relative(f) => format!("±{}%", f * 100.0),
            Tolerance::Absolute(a) => format!("±{a}{}", if unit == "%" { " pts" } else { unit }),
        }
    }
}

/// One published figure and how to compute ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// What the figure is, in words (the table's first column).
    pub what: String,
    /// How ours is computed.
    pub metric: Metric,
    /// The protocol (base name, without the sweep point).
    pub protocol: String,
    /// For a ratio: the protocol ours is divided by (same run, same point).
    pub baseline: Option<String>,
    /// The message classes counted (empty: all).
    pub classes: Vec<String>,
    /// The sweep point, as label parts that must all appear in a run's point
    /// (e.g. `["n=150"]`); empty: every point. The first matching point gives
    /// the verdict; the others are shown beside it (e.g. bursty loss).
    pub point: Vec<String>,
    /// Added to ours before comparing (e.g. `-65` to turn a latency into
    /// Petlund et al.'s extra latency over the one-way delay).
    pub offset: f64,
    /// The published value, in the metric's unit.
    pub value: f64,
    /// Where the paper gives it (section, table, figure).
    pub source: String,
    /// How close ours must be.
    pub tolerance: Tolerance,
    /// Whether the figure counts (see [`FigureKind`]).
    pub kind: FigureKind,
    /// Why ours may differ, or how the published value was read.
    pub note: String,
}

/// A published ranking: the protocols, from best to worst, must be in this
/// order at every matching sweep point (ascending values for latencies and
/// shares; descending for the GSI, where higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedOrder {
    /// The ranking in words, e.g. `UDP < DCCP < SCTP ≲ TCP`.
    pub what: String,
    /// The metric compared.
    pub metric: Metric,
    /// Protocols from best to worst.
    pub protocols: Vec<String>,
    /// Message classes counted (empty: all).
    pub classes: Vec<String>,
    /// Sweep points where the order must hold, as label-part filters (empty: all).
    pub points: Vec<Vec<String>>,
    /// Relative slack: a protocol may be up to this fraction below the one
    /// before it and still count as in order (for "≲").
    pub slack: f64,
    /// Where the paper states it.
    pub source: String,
    /// Notes.
    pub note: String,
}

/// Everything a scenario says about its paper.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaperSpec {
    /// The paper and the setup choices (`[paper]`).
    pub info: Option<PaperInfo>,
    /// Published figures (`[[published]]`).
    pub published: Vec<Published>,
    /// Published rankings (`[[published_order]]`).
    pub orders: Vec<PublishedOrder>,
    /// Where the figures' latencies start (`[paper].latency_from`).
    pub latency_from: LatencyFrom,
}

/// Where a paper's latencies start. Results and reports always measure from
/// the application's write; a paper's figures may follow the paper's own
/// measuring point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LatencyFrom {
    /// The application's write (`"write"`, the default).
    #[default]
    Write,
    /// The first transmission of the message's last byte (`"first_transmission"`):
    /// latency as a packet trace at the sender measures it, blind to any wait
    /// in the sender's buffer. Messages of endpoints that do not report their
    /// first transmission keep their write time.
    FirstTransmission,
}

impl PaperSpec {
    /// Whether the scenario names a paper or any published figure.
    pub fn is_empty(&self) -> bool {
        self.info.is_none() && self.published.is_empty() && self.orders.is_empty()
    }
}

/// Whether the run label's point (e.g. `n=150,burst=3`) has every part of `filter`.
pub fn point_matches(point: &str, filter: &[String]) -> bool {
    let parts: Vec<&str> = point.split(',').filter(|p| !p.is_empty()).collect();
    filter.iter().all(|f| parts.contains(&f.as_str()))
}

#[cfg(test)]
mod tests;
