//! What a run produces (`results.json`): per section, rows of one metric each, with every
//! repetition's value per transport and the thinwire/ENet ratio of each A/B pair.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::host::Protocol;
use crate::sys::Machine;

/// One transport's result for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    /// One value per repetition, in run order.
    Values(Vec<f64>),
    /// The metric does not apply to this transport, and why.
    NotApplicable(String),
    /// The measurement failed, with the error.
    Failed(String),
}

impl Cell {
    /// The values, when measured.
    pub fn values(&self) -> Option<&[f64]> {
        match self {
            Cell::Values(v) if !v.is_empty() => Some(v),
            _ => None,
        }
    }

    /// Smallest, median and largest value, when measured.
    pub fn summary(&self) -> Option<(f64, f64, f64)> {
        let mut v = self.values()?.to_vec();
        v.sort_by(f64::total_cmp);
        let mid = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        Some((v[0], mid, v[v.len() - 1]))
    }
}

/// One metric measured for every transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// A stable key, e.g. `throughput/reliable/24B/1/rate`.
    pub id: String,
    /// What is measured, for people: `reliable 24 B, 1 client`.
    pub label: String,
    /// The unit of the values.
    pub unit: String,
    /// The x value for plots against a parameter (the sweep's client count).
    pub x: Option<f64>,
    /// Per transport.
    pub cells: BTreeMap<Protocol, Cell>,
    /// thinwire / ENet: the smallest and largest ratio of the repetitions' pairs (in each
    /// repetition thinwire and ENet ran back to back, or in the round trips in turns, or
    /// one after the other when thinwire spins in its low-latency mode).
    pub ratio: Option<[f64; 2]>,
}

impl Row {
    /// A row with the ratio computed from the cells.
    pub fn new(
        id: String,
        label: String,
        unit: &str,
        x: Option<f64>,
        cells: BTreeMap<Protocol, Cell>,
    ) -> Self {
        let pair = |p| cells.get(&p).and_then(Cell::values);
        let ratio = match (pair(Protocol::Thinwire), pair(Protocol::Enet)) {
            (Some(t), Some(e)) => {
                let r: Vec<f64> = t
                    .iter()
                    .zip(e)
                    .filter(|(_, e)| **e != 0.0)
                    .map(|(t, e)| t / e)
                    .collect();
                let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (!r.is_empty()).then_some([lo, hi])
            }
            _ => None,
        };
        Self {
            id,
            label,
            unit: unit.to_owned(),
            x,
            cells,
            ratio,
        }
    }
}

/// One part of the bench: throughput, round trip, memory or the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// `throughput`, `round_trip`, `memory` or `sweep`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// How it was measured.
    pub method: String,
    /// Its rows.
    pub rows: Vec<Row>,
}

/// The options a run used, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionsRecord {
    /// Seconds per throughput, round-trip and sweep measurement.
    pub seconds: f64,
    /// Repetitions of every measurement (each runs every transport once, interleaved).
    pub reps: usize,
    /// Idle connections of the memory measurement.
    pub idle: usize,
    /// The sweep's client counts.
    pub sweep: Vec<usize>,
    /// Messages queued per flush by a throughput client.
    pub burst: usize,
    /// Whether this was the short CI run.
    pub quick: bool,
    /// Whether thinwire ran with the INSECURE cleartext opt-out.
    pub insecure_cleartext: bool,
}

/// Everything a run measured (`results.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// The machine.
    pub machine: Machine,
    /// The options.
    pub options: OptionsRecord,
    /// Start time, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Wall time of the whole run in seconds.
    pub elapsed_s: f64,
    /// The sections, in run order.
    pub sections: Vec<Section>,
}
