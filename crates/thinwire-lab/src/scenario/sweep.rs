//! Sweeps: the swept parameters of a scenario, expanded into points (their
//! cartesian product), each labelled for the protocol names of its runs.

use std::borrow::Cow;

use super::Scenario;
use crate::workload::WorkloadSpec;

/// Swept parameters (cartesian product).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// Client counts.
    pub clients: Vec<u32>,
    /// One-way access delays in ms (both directions).
    pub delay_ms: Vec<f64>,
    /// Bernoulli access loss rates (both directions).
    pub loss: Vec<f64>,
    /// Mean loss-burst lengths in packets of the access loss (both
    /// directions): `1` keeps the loss as it is (Bernoulli), `b > 1` makes it
    /// Gilbert-Elliott with the same mean and bursts of `b` packets on average.
    pub burst: Vec<f64>,
    /// Factors on the packet rate of every `profile` workload (1: the
    /// workload as configured).
    pub load: Vec<f64>,
    /// Jitter of the access links (both directions) as a fraction of their
    /// delay (netem's "100 ms with 10% jitter": `0.1`); `0` keeps the links
    /// as they are.
    pub jitter: Vec<f64>,
}

/// One point of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Client count.
    pub clients: u32,
    /// Access delay override (ms).
    pub delay_ms: Option<f64>,
    /// Access loss override.
    pub loss: Option<f64>,
    /// Mean loss-burst length of the access loss (see [`Sweep::burst`]).
    pub burst: Option<f64>,
    /// Packet-rate factor of the profile workloads (see [`Sweep::load`]).
    pub load: Option<f64>,
    /// Access jitter as a fraction of the delay (see [`Sweep::jitter`]).
    pub jitter: Option<f64>,
}

impl SweepPoint {
    /// Label appended to protocol names (`""` without a sweep).
    pub fn label(&self, sweep: &Sweep) -> String {
        let mut parts = Vec::new();
        if sweep.clients.len() > 1 {
            parts.push(format!("n={}", self.clients));
        }
        if let Some(d) = self.delay_ms {
            parts.push(format!("delay={d}ms"));
        }
        if let Some(l) = self.loss {
            parts.push(format!("loss={}%", l * 100.0));
        }
        if let Some(b) = self.burst {
            parts.push(format!("burst={b}"));
        }
        if let Some(f) = self.load {
            parts.push(format!("load=x{f}"));
        }
        if let Some(j) = self.jitter {
            parts.push(format!("jitter={}%", j * 100.0));
        }
        parts.join(",")
    }
}

impl Scenario {
    /// The sweep points (one when nothing is swept).
    pub fn points(&self) -> Vec<SweepPoint> {
        let clients: Vec<u32> = if self.sweep.clients.is_empty() {
            vec![self.clients]
        } else {
            self.sweep.clients.clone()
        };
        let delays: Vec<Option<f64>> = if self.sweep.delay_ms.is_empty() {
            vec![None]
        } else {
            self.sweep.delay_ms.iter().map(|&d| Some(d)).collect()
        };
        let losses: Vec<Option<f64>> = if self.sweep.loss.is_empty() {
            vec![None]
        } else {
            self.sweep.loss.iter().map(|&l| Some(l)).collect()
        };
        let bursts: Vec<Option<f64>> = if self.sweep.burst.is_empty() {
            vec![None]
        } else {
            self.sweep.burst.iter().map(|&b| Some(b)).collect()
        };
        let loads: Vec<Option<f64>> = if self.sweep.load.is_empty() {
            vec![None]
        } else {
            self.sweep.load.iter().map(|&f| Some(f)).collect()
        };
        let jitters: Vec<Option<f64>> = if self.sweep.jitter.is_empty() {
            vec![None]
        } else {
            self.sweep.jitter.iter().map(|&j| Some(j)).collect()
        };
        let mut out = Vec::new();
        for &c in &clients {
            for &d in &delays {
                for &l in &losses {
                    for &b in &bursts {
                        for &f in &loads {
                            for &j in &jitters {
                                out.push(SweepPoint {
                                    clients: c,
                                    delay_ms: d,
                                    loss: l,
                                    burst: b,
                                    load: f,
                                    jitter: j,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The workloads at sweep point `p`: the scenario's own, with the packet
    /// rate of every `profile` workload multiplied by the point's load factor.
    pub fn workloads_at(&self, p: &SweepPoint) -> Cow<'_, [WorkloadSpec]> {
        let Some(f) = p.load else {
            return Cow::Borrowed(&self.workloads);
        };
        let mut w = self.workloads.clone();
        for spec in &mut w {
            if let WorkloadSpec::Profile(pw) = spec {
                pw.rate_scale *= f;
            }
        }
        Cow::Owned(w)
    }
}
