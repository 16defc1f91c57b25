//! The run: every measurement for every transport, interleaved A/B (thinwire, ENet, KCP,
//! GNS, thinwire, ENet, KCP, GNS, … once per repetition), then the outputs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use crate::host::{HostOptions, Protocol};
use crate::results::Cell;

/// What every measurement needs to know about the run.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The transports, in run order.
    pub(crate) protocols: Vec<Protocol>,
    /// Repetitions.
    pub(crate) reps: usize,
    /// Measured time of a throughput, round-trip or sweep run.
    pub(crate) seconds: Duration,
    /// Warm-up before a measurement.
    pub(crate) warmup: Duration,
    /// Messages per flush of a throughput client.
    pub(crate) burst: usize,
    /// Settings of every host.
    pub(crate) host: HostOptions,
    /// Idle connections of the memory measurement.
    pub(crate) idle: usize,
    /// The sweep's client counts.
    pub(crate) sweep: Vec<usize>,
    /// The sweep's thinwire hosts acknowledge on the tick (`--thinwire-tick-acks`).
    pub(crate) tick_acks: bool,
    /// The sweep's server and clients share every core (no pinning).
    pub(crate) shared_cores: bool,
    /// Players behind the edge in the gateway section.
    pub(crate) gateway_players: usize,
    /// The command that runs this program as a bench child (`thinwire bench`); the child's
    /// arguments are appended.
    pub(crate) child: Vec<OsString>,
    /// Where progress lines go ([`BenchOptions::progress`](crate::BenchOptions::progress)).
    pub(crate) progress: fn(&str),
}

/// One transport's runs of one measurement.
#[derive(Debug, Clone)]
pub(crate) enum Outcome<T> {
    /// The results of the runs so far.
    Ran(Vec<T>),
    /// The measurement does not apply, and why.
    NotApplicable(String),
    /// A run failed, with the error (later repetitions are skipped).
    Failed(String),
}

impl Ctx {
    /// Runs `f` once per repetition for every transport `na` does not exclude, interleaved,
    /// reporting each result (`show`) to [`progress`](Self::progress) as it comes.
    pub(crate) fn interleave<T>(
        &self,
        what: &str,
        na: impl Fn(Protocol) -> Option<String>,
        mut f: impl FnMut(Protocol) -> Result<T, String>,
        show: impl Fn(&T) -> String,
    ) -> BTreeMap<Protocol, Outcome<T>> {
        let mut out = self.outcomes(na);
        for rep in 1..=self.reps {
            for p in self.running(&out) {
                let result = f(p);
                self.record(&mut out, (what, rep, p), result, &show);
            }
        }
        out
    }

    /// Every transport's outcome before its first run: not applicable, as `na` says, or
    /// no runs yet.
    pub(crate) fn outcomes<T>(
        &self,
        na: impl Fn(Protocol) -> Option<String>,
    ) -> BTreeMap<Protocol, Outcome<T>> {
        self.protocols
            .iter()
            .map(|&p| {
                (
                    p,
                    na(p).map_or(Outcome::Ran(Vec::new()), Outcome::NotApplicable),
                )
            })
            .collect()
    }

    /// The transports still to run, in run order: neither not applicable nor failed.
    pub(crate) fn running<T>(&self, out: &BTreeMap<Protocol, Outcome<T>>) -> Vec<Protocol> {
        self.protocols
            .iter()
            .copied()
            .filter(|p| matches!(out.get(p), Some(Outcome::Ran(_))))
            .collect()
    }

    /// Adds the `result` of transport `p`'s run `rep` of measurement `what` to `out`, and
    /// reports it (`show`) to [`progress`](Self::progress); a failure ends the transport's
    /// runs.
    pub(crate) fn record<T>(
        &self,
        out: &mut BTreeMap<Protocol, Outcome<T>>,
        (what, rep, p): (&str, usize, Protocol),
        result: Result<T, String>,
        show: impl Fn(&T) -> String,
    ) {
        let head = format!("{what} [{}/{}] {}", rep, self.reps, p.label());
        match result {
            Ok(t) => {
                (self.progress)(&format!("{head}: {}", show(&t)));
                if let Some(Outcome::Ran(done)) = out.get_mut(&p) {
                    done.push(t);
                }
            }
            Err(e) => {
                (self.progress)(&format!("{head}: FAILED: {e}"));
                out.insert(p, Outcome::Failed(e));
            }
        }
    }
}

/// The cells of one metric (`f` of each run) from the outcomes of a measurement.
pub(crate) fn cells<T>(
    out: &BTreeMap<Protocol, Outcome<T>>,
    f: impl Fn(&T) -> f64,
) -> BTreeMap<Protocol, Cell> {
    out.iter()
        .map(|(&p, o)| {
            let cell = match o {
                Outcome::Ran(v) => Cell::Values(v.iter().map(&f).collect()),
                Outcome::NotApplicable(why) => Cell::NotApplicable(why.clone()),
                Outcome::Failed(e) => Cell::Failed(e.clone()),
            };
            (p, cell)
        })
        .collect()
}

/// One metric read from a measurement's samples: its key in row ids, its label, its unit.
pub(crate) struct Metric<S> {
    /// The last part of the row id.
    pub(crate) key: &'static str,
    /// What it is, for people.
    pub(crate) label: &'static str,
    /// Its unit.
    pub(crate) unit: &'static str,
    /// Reads it from one run's sample.
    pub(crate) read: fn(&S) -> f64,
}
