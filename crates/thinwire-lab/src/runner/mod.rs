//! Runs a scenario: every sweep point times every protocol, each in its own
//! deterministic simulation, repeated for `runs` independent seeds, and
//! collects the metrics.
//!
//! The simulations of a run are numbered run-major, then sweep point, then
//! protocol. A run can be split into shards (`--shard K/N` takes every N-th
//! simulation starting at the K-th); each shard writes a [`ShardFile`], and
//! [`merge_shards`] assembles the shards of a run into exactly what one
//! machine would have produced: the same `results.json`, report and
//! `runs.json`, because every simulation depends only on its own seed and
//! the results are put together in simulation order either way.

mod job;
mod plan;
pub(crate) use plan::worker_threads;
mod repeat;
mod shard;

use std::path::Path;
use std::time::Duration;

use thinwire_proto::ConnectionCounters;

pub use crate::metrics::{RepeatedRow, Repetitions};
pub use crate::paper::PaperOutcome;
pub use job::{JobSummary, RunNote};
pub use repeat::run_seed;
pub use shard::{merge_shards, run_shard, Shard, ShardFile};

use crate::error::LabError;
use crate::metrics::{Engine, Recorder, Results, RunKey, Samples};
use crate::paper::{compare_published, SetupOverride};
use crate::protocol::{DccpModel, ProtocolSpec, SctpModel, TcpModel, TcpStreams, UdpModel};
use crate::report::{LabSections, Report, ReportError};
use crate::scenario::Scenario;
use crate::sim::{self, RunOutput, SimSetup};
use crate::workload::WorkloadSpec;
use job::JobResult;

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration.
    pub duration: Option<Duration>,
    /// Simulations run in parallel (0: one per available core).
    pub jobs: usize,
    /// Runs (independent seeds) at least: raises the scenario's own `runs` (the number its
    /// paper's figures are averaged over), never lowers it.
    pub runs: Option<u32>,
}

pub use crate::scenario::MAX_RUNS;

/// Something that wants to hear about progress (fraction of all work done).
pub trait Progress: Sync {
    /// Called with the fraction done, in `[0, 1]`.
    fn update(&self, fraction: f64);
}

/// No progress reporting.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn update(&self, _fraction: f64) {}
}

/// The outcome of a scenario run.
#[derive(Debug, Clone)]
pub struct LabRun {
    /// The results of the first run (`results.json`).
    pub results: Results,
    /// Latency samples of the first run for the report's plots.
    pub samples: Samples,
    /// Scenario parameters for the report.
    pub params: Vec<(String, String)>,
    /// Per-simulation notes of the first run.
    pub notes: Vec<RunNote>,
    /// For an emulated run: the simulator's run of the same scenario, shown
    /// side by side in the report (`--emulate --compare-sim`).
    pub simulated: Option<Box<LabRun>>,
    /// The paper's figures beside ours (scenarios with a `[paper]` or `[[published]]`).
    pub paper: Option<PaperOutcome>,
    /// Every row over every run, with more than one run (`runs.json`).
    pub repetitions: Option<Repetitions>,
}

impl LabRun {
    /// A run with results only (as the emulator produces).
    pub fn from_results(results: Results, samples: Samples, params: Vec<(String, String)>) -> Self {
        LabRun {
            results,
            samples,
            params,
            notes: Vec::new(),
            simulated: None,
            paper: None,
            repetitions: None,
        }
    }
}

impl LabRun {
    /// The run's `report.html` (see [`Report`]): with the simulator's run beside an
    /// emulated one, and the paper, repetitions and loss-recovery sections the run has.
    pub fn report_html(&self) -> Result<String, ReportError> {
        let recovery = self.recovery_rows();
        let mut report = Report::new(&self.results, &self.samples)
            .params(&self.params)
            .sections(LabSections {
                paper: self.paper.as_ref(),
                repetitions: self.repetitions.as_ref(),
                recovery: &recovery,
            });
        if let Some(sim) = &self.simulated {
            report = report.beside(&sim.results, &sim.samples);
        }
        report.render()
    }

    /// thinwire's connection counters of the first run's simulations that
    /// have them (thinwire configurations), server and client endpoints
    /// summed, by run, in the notes' order.
    pub fn recovery_rows(&self) -> Vec<(RunKey, ConnectionCounters)> {
        self.notes
            .iter()
            .filter_map(|n| Some((n.key.clone(), n.thinwire?.total())))
            .collect()
    }
}

/// Runs a scenario: every simulation of every run, on `opts.jobs` threads.
pub fn run_scenario(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Result<LabRun, LabError> {
    let scn = with_options(scenario, opts)?;
    let plan = plan::JobPlan::new(&scn)?;
    let all: Vec<usize> = (0..plan.len()).collect();
    let jobs = plan.run(&all, opts.jobs, progress)?;
    Ok(assemble(
        &scn,
        &plan,
        &jobs,
        setup_overrides(scenario, &scn),
    ))
}

/// The scenario with the options' seed, duration and runs.
fn with_options(scenario: &Scenario, opts: &RunOptions) -> Result<Scenario, LabError> {
    let mut scn = scenario.clone();
    if let Some(seed) = opts.seed {
        scn.seed = seed;
    }
    if let Some(d) = opts.duration {
        if d.is_zero() {
            return Err(LabError::Invalid("--duration must be positive".into()));
        }
        scn.duration = d;
    }
    if let Some(r) = opts.runs {
        if !(1..=MAX_RUNS).contains(&r) {
            return Err(LabError::Invalid(format!(
                "--runs {r}: must be between 1 and {MAX_RUNS}"
            )));
        }
        // A scenario's own `runs` is what its paper's figures are averaged over: `--runs`
        // raises it, never lowers it.
        scn.runs = scn.runs.max(r);
    }
    Ok(scn)
}

/// The settings of `scenario` (the paper's setup) that the options replaced in `run`.
fn setup_overrides(scenario: &Scenario, run: &Scenario) -> Vec<SetupOverride> {
    SetupOverride::duration(scenario.duration, run.duration)
        .into_iter()
        .collect()
}

/// Puts the results of every simulation (`jobs`, in job order) together; `overrides` are
/// the settings of the paper's setup that the run's options replaced.
fn assemble(
    scn: &Scenario,
    plan: &plan::JobPlan,
    jobs: &[JobResult],
    overrides: Vec<SetupOverride>,
) -> LabRun {
    let mut recorder = Recorder::new();
    let mut notes = Vec::new();
    for j in jobs.iter().filter(|j| j.run == 0) {
        j.record(&mut recorder);
        if let Some(n) = &j.note {
            notes.push(n.clone());
        }
    }
    let (results, samples) = recorder.finish(&scn.name, Engine::Sim, scn.seed);
    let mut params = scn.params();
    if scn.runs > 1 {
        params.push((
            "runs".into(),
            format!(
                "{} independent seeds (run 0: seed {}; run r: derived from it); the tables \
                 and figures below show run 0, the repetitions table and the paper section \
                 every run",
                scn.runs, scn.seed
            ),
        ));
    }
    params.extend(notes.iter().map(measured));
    let paper = (!scn.paper.is_empty()).then(|| {
        let values: Vec<_> = jobs.iter().flat_map(|j| j.values.iter().cloned()).collect();
        let (comparisons, orders) = compare_published(&scn.paper, &plan.point_labels(), &values);
        PaperOutcome {
            info: scn.paper.info.clone(),
            comparisons,
            orders,
            overrides,
        }
    });
    let repetitions =
        (scn.runs > 1).then(|| repeat::repetitions(&scn.name, scn.seed, scn.runs, jobs));
    LabRun {
        results,
        samples,
        params,
        notes,
        simulated: None,
        paper,
        repetitions,
    }
}

/// Runs one protocol in the simulator.
fn simulate(
    spec: ProtocolSpec,
    setup: &SimSetup,
    workloads: &[WorkloadSpec],
    progress: &mut dyn FnMut(f64),
) -> RunOutput {
    match spec {
        ProtocolSpec::TcpModel => sim::run(&TcpModel::default(), setup, workloads, progress),
        ProtocolSpec::TcpVariant(v) => sim::run(&TcpModel::variant(v), setup, workloads, progress),
        ProtocolSpec::UdpModel => sim::run(&UdpModel, setup, workloads, progress),
        ProtocolSpec::SctpModel => sim::run(&SctpModel::default(), setup, workloads, progress),
        ProtocolSpec::DccpModel => sim::run(&DccpModel::default(), setup, workloads, progress),
        ProtocolSpec::TcpStreams(m) => sim::run(&TcpStreams::new(m), setup, workloads, progress),
        ProtocolSpec::Thinwire(config) => sim::run(&config, setup, workloads, progress),
    }
}

/// The report parameter with what one simulation measured.
fn measured(n: &RunNote) -> (String, String) {
    let mut v = format!("access drops {:.2}%", n.access_drop_rate * 100.0);
    if let Some(b) = n.bottleneck_drop_rate {
        v.push_str(&format!(
            ", bottleneck drops {:.2}% (cross traffic included)",
            b * 100.0
        ));
    }
    if let Some(d) = n.deadline_summary() {
        v.push_str(&format!("; {d}"));
    }
    (format!("measured: {}", n.key), v)
}

/// Writes `results.json`, `report.html` and, with more than one run,
/// `runs.json` into `dir`.
pub fn write_outputs(run: &LabRun, dir: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
    let json = dir.join("results.json");
    std::fs::write(&json, run.results.to_json_pretty()).map_err(|e| LabError::io(&json, e))?;
    let runs = dir.join("runs.json");
    match &run.repetitions {
        Some(r) => std::fs::write(&runs, r.to_json_pretty()).map_err(|e| LabError::io(&runs, e))?,
        // A runs.json of an earlier run with repetitions would be stale.
        None if runs.exists() => std::fs::remove_file(&runs).map_err(|e| LabError::io(&runs, e))?,
        None => {}
    }
    let html = dir.join("report.html");
    let report = run
        .report_html()
        .map_err(|e| LabError::Invalid(format!("{}: {e}", html.display())))?;
    std::fs::write(&html, report).map_err(|e| LabError::io(&html, e))?;
    Ok(())
}
