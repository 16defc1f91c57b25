//! Runs a scenario: every sweep point times every protocol, each in its own
//! deterministic simulation, and collects the metrics.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use crate::error::LabError;
use crate::metrics::{sweep_name, Engine, MessageRecord, ProtocolInfo, Recorder, Results, Samples};
use crate::protocol::{DeadlineCounters, ProtocolSpec, TcpModel, UdpModel};
use crate::scenario::Scenario;
use crate::sim::{self, RunOutput, SimSetup};
use crate::workload::WorkloadSpec;

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration.
    pub duration: Option<Duration>,
    /// Simulations run in parallel (0: one per available core).
    pub jobs: usize,
}

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

/// Per-simulation facts that are not part of `results.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunNote {
    /// Protocol label (with the sweep point).
    pub protocol: String,
    /// Drop rate measured on the access links.
    pub access_drop_rate: f64,
    /// Drop rate measured on the bottleneck (cross traffic included).
    pub bottleneck_drop_rate: Option<f64>,
    /// Events processed.
    pub events: u64,
    /// Deadline-delivery counters (thinwire deadline configurations only).
    pub deadline: Option<DeadlineCounters>,
}

impl RunNote {
    /// The deadline counters in words (`None` without them), e.g.
    /// `deadline delivery: 6000 messages, 240 recovery shards (122.9 kB), ...`.
    ///
    /// Recovery shards are both proactive parity and repairs: a stage that
    /// resends for missing shards sends fresh recovery shards while any are
    /// left, so retransmission-only configurations count their repairs here.
    pub fn deadline_summary(&self) -> Option<String> {
        let d = self.deadline?;
        Some(format!(
            "deadline delivery: {} messages, {} recovery shards ({:.1} kB; parity and repairs), \
             {:.1} kB retransmitted, {} abandoned by the sender, {} decoded late (receiver's \
             estimate)",
            d.messages,
            d.parity_shards,
            d.parity_bytes as f64 / 1000.0,
            d.retransmitted_bytes as f64 / 1000.0,
            d.abandoned,
            d.late
        ))
    }
}

/// The outcome of a scenario run.
#[derive(Debug, Clone)]
pub struct LabRun {
    /// The results (`results.json`).
    pub results: Results,
    /// Latency samples for the report's plots.
    pub samples: Samples,
    /// Scenario parameters for the report.
    pub params: Vec<(String, String)>,
    /// Per-simulation notes.
    pub notes: Vec<RunNote>,
    /// For an emulated run: the simulator's run of the same scenario, shown
    /// side by side in the report (`--emulate --compare-sim`).
    pub simulated: Option<Box<LabRun>>,
}

/// Runs a scenario.
pub fn run_scenario(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Result<LabRun, LabError> {
    let scn = with_options(scenario, opts)?;
    let points = scn.points();
    let mut setups = Vec::with_capacity(points.len());
    for p in &points {
        setups.push(scn.setup(p)?);
    }
    // Jobs in output order: point-major, then protocol.
    let mut jobs = Vec::new();
    for (point, p) in points.iter().enumerate() {
        let label = p.label(&scn.sweep);
        for &spec in &scn.protocols {
            let name = sweep_name(&spec.name(), &label);
            jobs.push(Job { point, spec, name });
        }
    }
    let threads = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.jobs
    }
    .clamp(1, jobs.len().max(1));
    let mut recorder = Recorder::new();
    let mut notes = Vec::new();
    let plan = Plan {
        jobs: &jobs,
        setups: &setups,
        workloads: &scn.workloads,
    };
    plan.run(threads, progress, |i, out| {
        let job = &jobs[i];
        record(&mut recorder, &job.name, &out);
        notes.push(RunNote {
            protocol: job.name.clone(),
            access_drop_rate: out.access.drop_rate(),
            bottleneck_drop_rate: setups[job.point]
                .bottleneck
                .as_ref()
                .map(|_| out.bottleneck.drop_rate()),
            events: out.events,
            deadline: out.deadline,
        });
    });
    let (results, samples) = recorder.finish(&scn.name, Engine::Sim, scn.seed);
    let mut params = scn.params();
    params.extend(notes.iter().map(measured));
    Ok(LabRun {
        results,
        samples,
        params,
        notes,
        simulated: None,
    })
}

/// The scenario with the options' seed and duration.
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
    Ok(scn)
}

/// One simulation: a protocol at a sweep point.
struct Job {
    /// Index of the sweep point (and of its setup).
    point: usize,
    /// The protocol.
    spec: ProtocolSpec,
    /// Its name in the results (with the sweep point).
    name: String,
}

/// Every simulation of a run.
struct Plan<'a> {
    jobs: &'a [Job],
    setups: &'a [SimSetup],
    workloads: &'a [WorkloadSpec],
}

impl Plan<'_> {
    /// Runs the jobs on `threads` threads, reporting overall progress, and
    /// hands each output to `done` in job order (so that what is recorded does
    /// not depend on timing), as soon as the jobs before it are done.
    fn run(&self, threads: usize, progress: &dyn Progress, mut done: impl FnMut(usize, RunOutput)) {
        let next = AtomicUsize::new(0);
        let fractions: Vec<Mutex<f64>> = self.jobs.iter().map(|_| Mutex::new(0.0)).collect();
        let total = self.jobs.len() as f64;
        let report = |i: usize, f: f64| {
            if let Ok(mut d) = fractions[i].lock() {
                *d = f;
            }
            let sum: f64 = fractions.iter().map(|d| d.lock().map_or(0.0, |v| *v)).sum();
            progress.update(sum / total);
        };
        let (tx, rx) = mpsc::channel::<(usize, RunOutput)>();
        std::thread::scope(|s| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (next, report) = (&next, &report);
                s.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = self.jobs.get(i) else {
                        break;
                    };
                    let mut last = 0.0;
                    let mut cb = |f: f64| {
                        if f - last >= 0.01 || f >= 1.0 {
                            last = f;
                            report(i, f);
                        }
                    };
                    let out = simulate(job.spec, &self.setups[job.point], self.workloads, &mut cb);
                    if tx.send((i, out)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            let mut pending: BTreeMap<usize, RunOutput> = BTreeMap::new();
            let mut next_done = 0usize;
            for (i, out) in rx {
                pending.insert(i, out);
                while let Some(out) = pending.remove(&next_done) {
                    done(next_done, out);
                    next_done += 1;
                }
            }
        });
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
        ProtocolSpec::UdpModel => sim::run(&UdpModel, setup, workloads, progress),
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
    (format!("measured: {}", n.protocol), v)
}

fn record(recorder: &mut Recorder, label: &str, out: &RunOutput) {
    recorder.set_protocol_info(ProtocolInfo {
        name: label.to_owned(),
        model: out.model,
    });
    for m in &out.messages {
        recorder.record(MessageRecord {
            protocol: label.to_owned(),
            class: out.classes[m.class as usize].clone(),
            sent_at_us: m.sent_us,
            delivered_at_us: m.delivered_us,
            payload_bytes: m.size,
            deadline_us: m.deadline_us,
        });
    }
    recorder.add_wire(label, out.wire);
}

/// Writes `results.json` and `report.html` into `dir`.
pub fn write_outputs(run: &LabRun, dir: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
    let json = dir.join("results.json");
    std::fs::write(&json, run.results.to_json_pretty()).map_err(|e| LabError::io(&json, e))?;
    let html = dir.join("report.html");
    match &run.simulated {
        None => crate::report::write_report(&html, &run.results, &run.samples, &run.params),
        Some(sim) => std::fs::write(
            &html,
            crate::report::render_report_side_by_side(
                &run.results,
                &run.samples,
                &run.params,
                &sim.results,
                &sim.samples,
            ),
        ),
    }
    .map_err(|e| LabError::io(&html, e))?;
    Ok(())
}
