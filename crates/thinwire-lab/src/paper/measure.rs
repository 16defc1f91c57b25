//! One simulation's facts, and a [`Metric`] computed from them.

use serde::{Deserialize, Serialize};

use super::{LatencyFrom, Metric};
use crate::metrics::{nearest_rank, Quantile, DELAY_COEFFICIENT_PER_S, JITTER_COEFFICIENT_PER_S};
use crate::protocol::Counters;
use crate::sim::RunOutput;

/// The messages of one class in one simulation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFacts {
    /// Class name.
    pub class: String,
    /// Messages sent.
    pub sent: u64,
    /// Unique payload bytes sent.
    pub payload_bytes: u64,
    /// Latencies of the delivered messages, µs, ascending.
    pub latencies_us: Vec<u64>,
}

/// What a [`Metric`] may need from one simulation (one protocol at one point).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobFacts {
    /// Per message class.
    pub classes: Vec<ClassFacts>,
    /// Bytes on the wire, headers included.
    pub wire_bytes: u64,
    /// Payload bytes transmitted (copies and parity included).
    pub payload_bytes_sent: u64,
    /// The protocol's named counters.
    pub counters: Counters,
}

impl JobFacts {
    /// The facts of a simulation's output, latencies measured from `from`.
    pub fn from_output(out: &RunOutput, from: LatencyFrom) -> JobFacts {
        let mut classes: Vec<ClassFacts> = out
            .classes
            .iter()
            .map(|c| ClassFacts {
                class: c.clone(),
                ..ClassFacts::default()
            })
            .collect();
        for m in &out.messages {
            let Some(c) = classes.get_mut(m.class as usize) else {
                continue;
            };
            c.sent += 1;
            c.payload_bytes += u64::from(m.size);
            if let Some(d) = m.delivered_us {
                let start = match from {
                    LatencyFrom::Write => m.sent_us,
                    LatencyFrom::FirstTransmission => m.wire_us.unwrap_or(m.sent_us),
                };
                c.latencies_us.push(d.saturating_sub(start));
            }
        }
        for c in &mut classes {
            c.latencies_us.sort_unstable();
        }
        JobFacts {
            classes,
            wire_bytes: out.wire.bytes,
            payload_bytes_sent: out.wire.payload_bytes_sent,
            counters: {
                let mut c = out.counters.clone();
                out.network.add_to(&mut c);
                c
            },
        }
    }

    /// Sent count and sorted latencies over `classes` (empty: all).
    fn select(&self, classes: &[String]) -> (u64, Vec<u64>) {
        let mut sent = 0;
        let mut lat = Vec::new();
        for c in &self.classes {
            if classes.is_empty() || classes.contains(&c.class) {
                sent += c.sent;
                lat.extend_from_slice(&c.latencies_us);
            }
        }
        lat.sort_unstable();
        (sent, lat)
    }
}

/// A metric's value for one simulation; `Gsi` gives the natural log of the
/// index (so that ratios of tiny indices stay exact).
pub type Measured = Option<f64>;

/// `q` as the exact fraction the nearest-rank code wants (to 1e-6).
fn quantile(q: f64) -> Quantile {
    Quantile {
        num: (q * 1e6).round() as u64,
        den: 1_000_000,
    }
}

/// Mean and population standard deviation of `lat` in ms.
fn mean_sd_ms(lat: &[u64]) -> Option<(f64, f64)> {
    if lat.is_empty() {
        return None;
    }
    let n = lat.len() as f64;
    let mean = lat.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = lat.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    Some((mean / 1000.0, var.sqrt() / 1000.0))
}

/// `metric` over the messages of `classes` (empty: all) in `facts`; `None`
/// when it is undefined (nothing delivered, a missing counter, zero divisor).
pub fn measure(metric: &Metric, facts: &JobFacts, classes: &[String]) -> Measured {
    let (sent, lat) = facts.select(classes);
    match metric {
        Metric::MeanMs => mean_sd_ms(&lat).map(|v| v.0),
        Metric::JitterMs => mean_sd_ms(&lat).map(|v| v.1),
        Metric::QuantileMs(q) => nearest_rank(&lat, quantile(*q)).map(|v| v as f64 / 1000.0),
        Metric::WithinMs(ms) => {
            let limit = (ms * 1000.0).round() as u64;
            (sent > 0)
                .then(|| 100.0 * lat.iter().filter(|&&v| v <= limit).count() as f64 / sent as f64)
        }
        Metric::DeliveredPct => (sent > 0).then(|| 100.0 * lat.len() as f64 / sent as f64),
        Metric::RedundancyPct => {
            let unique: u64 = facts.classes.iter().map(|c| c.payload_bytes).sum();
            (unique > 0).then(|| 100.0 * (facts.payload_bytes_sent as f64 / unique as f64 - 1.0))
        }
        Metric::OverheadPct => {
            let unique: u64 = facts.classes.iter().map(|c| c.payload_bytes).sum();
            (unique > 0).then(|| 100.0 * (facts.wire_bytes as f64 / unique as f64 - 1.0))
        }
        Metric::Gsi => mean_sd_ms(&lat).map(|(m, j)| {
            -DELAY_COEFFICIENT_PER_S * m / 1000.0 - JITTER_COEFFICIENT_PER_S * j / 1000.0
        }),
        Metric::Counter { name, per, scale } => {
            let v = *facts.counters.get(name)?;
            match per {
                None => Some(v * scale),
                Some(p) => {
                    let d = *facts.counters.get(p)?;
                    (d != 0.0).then(|| v / d * scale)
                }
            }
        }
    }
}
