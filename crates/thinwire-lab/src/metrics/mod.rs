//! Metrics of a lab run: per-message records in, `results.json` and latency samples out.
//!
//! The simulator (or the emulator) feeds a [`Recorder`] with one [`MessageRecord`] per
//! application message and with the [`WireCounters`] of every protocol; [`Recorder::finish`]
//! turns them into [`Results`] (the binding `results.json` contract, defined below) and
//! [`Samples`] (the exact latency samples, for the CDF plots of the report).
//!
//! # Definitions
//!
//! Rows: one [`RunResult`] per run with `class: null` (all classes together), followed
//! by one per message class that run carried. A run is a protocol, at a sweep point in a
//! sweep: its [`RunKey`], written `{"protocol": "tcp-model", "point": "n=50"}` in
//! `results.json` (`"point": null` outside a sweep) and shown as `tcp-model [n=50]`. Runs
//! appear in the order in which the recorder first heard of them (through
//! [`Recorder::set_protocol_info`], [`Recorder::add_wire`] or [`Recorder::record`]); classes
//! appear in the order in which they were first recorded (for any run).
//!
//! * **Latency** is `delivered_at_us - sent_at_us` of every *delivered* message
//!   (application send call to delivery to the receiving application), reported in
//!   milliseconds. Undelivered messages do not contribute to latency statistics; they are
//!   counted as `lost` (and as deadline misses).
//! * **mean** is the arithmetic mean; **jitter** is the population standard deviation
//!   (divisor `n`, not `n - 1`) of the delivered latencies.
//! * **Percentiles** use the *nearest-rank* definition on the exact, sorted samples: the
//!   `q`-quantile of `n` samples is the sample of 1-based rank `ceil(q * n)` (at least 1),
//!   computed in integer arithmetic (`q` is an exact fraction, e.g. 999/1000 for p99.9).
//!   Every reported percentile is therefore a latency that was actually observed. See
//!   [`nearest_rank`].
//! * **max** is the largest delivered latency.
//! * When nothing was delivered, all latency fields are `0.0` (the contract has no null
//!   there); `messages.delivered == 0` tells such a row apart.
//! * **messages**: `sent` records, `delivered` records with a delivery time, and
//!   `lost = sent - delivered`.
//! * **Deadline**: a message *meets* its deadline when it was delivered and
//!   `delivered_at_us <= sent_at_us + deadline_us`; every other message that carries a
//!   deadline (late or never delivered) is a miss. `deadline_miss_rate` = misses / number of
//!   messages of the row that carry a deadline (which is `sent` when the whole class has a
//!   deadline). `deadline_ms` is the most common deadline among those messages (ties: the
//!   smaller). Both are `null` when no message of the row carries a deadline.
//! * **wire** (`bytes`, `packets`) and **redundancy** are per-protocol quantities (the
//!   counters are only known per protocol): every row of a protocol, per-class rows
//!   included, carries the protocol's totals. The human-readable outputs (terminal table,
//!   report) show them on the protocol row only.
//! * **payload_bytes** is the unique application payload of the row: the sum of
//!   `payload_bytes` over the row's sent messages.
//! * **redundancy** = `payload_bytes_sent / unique payload bytes - 1` over the whole
//!   protocol, where `payload_bytes_sent` (from [`WireCounters`]) counts retransmissions,
//!   bundled copies and parity. It is `0.0` when no unique payload was sent. It is not
//!   clamped: a protocol that never transmits some messages (e.g. superseded latest-value
//!   updates, or a protocol for which no wire counters were added) can have a negative
//!   redundancy.
//! * **Rounding**: mean and jitter are rounded to 1e-6 ms, miss rates and redundancy to
//!   1e-9; percentiles, max and deadlines are exact multiples of 1 µs. Every float in
//!   `results.json` therefore has a short decimal form that parses back to the same value,
//!   so `results.json` round-trips exactly through [`Results::from_json`].
//! * **Deadline summary** ([`deadline_rows`]): p95 / p99 / p99.9 over *all* messages of a
//!   class with a deadline (undelivered ones counting as infinitely late), with the miss
//!   rate, redundancy and wire bytes; in the terminal output and the report, not in
//!   `results.json`.
//! * **Game-satisfaction index** (GSI): see [`game_satisfaction_index`]; it appears in the
//!   terminal table and the report, never in `results.json`. Ratios compare a row with the
//!   baseline protocol's row of the same class and, for sweeps (runs whose [`RunKey`] has a
//!   point), of the same sweep point.

mod ci;
mod compare;
mod deadline;
mod gsi;
mod recorder;
mod repetitions;
mod results;
mod samples;
mod stats;
pub(crate) mod table;

pub use ci::{confidence_interval, decimals, t95, Estimate};
pub use compare::{compare, CompareRow, Comparison, DISAGREE_AT_P99};
pub(crate) use deadline::{deadline_cells, DEADLINE_HEADERS, DEADLINE_NOTE};
pub use deadline::{deadline_rows, deadline_table, DeadlineRow};
pub use gsi::{
    game_satisfaction_index, Satisfaction, SatisfactionRatios, DELAY_COEFFICIENT_PER_S,
    JITTER_COEFFICIENT_PER_S,
};
pub use recorder::{MessageRecord, ProtocolInfo, Recorder, WireCounters};
pub use repetitions::{RepeatedRow, Repetitions, RunOutcome};
pub(crate) use results::display_protocol;
pub use results::{Engine, LatencyMs, Messages, Results, RunKey, RunResult, Wire};
pub use samples::{SampleSeries, Samples};
pub use stats::{latency_summary, nearest_rank, Quantile};
pub(crate) use table::format_ratio;

/// Errors of the metrics module.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MetricsError {
    /// A baseline protocol was named that has no row in the results.
    #[error("unknown baseline protocol `{0}`: it has no run in these results")]
    UnknownBaseline(String),
}
