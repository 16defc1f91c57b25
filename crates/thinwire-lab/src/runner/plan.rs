//! The simulations of a run and the threads that run them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use super::job::{JobContext, JobResult};
use super::{run_seed, simulate, Progress};
use crate::error::LabError;
use crate::metrics::RunKey;
use crate::protocol::ProtocolSpec;
use crate::scenario::{Scenario, SweepPoint};

/// One simulation: a protocol at a sweep point in one run.
#[derive(Debug, Clone)]
struct JobSpec {
    run: u32,
    point: usize,
    spec: ProtocolSpec,
    key: RunKey,
}

/// Every simulation of a run, numbered run-major, then point, then protocol.
#[derive(Debug)]
pub(super) struct JobPlan {
    /// The scenario of each run (its seed changed).
    runs: Vec<Scenario>,
    points: Vec<SweepPoint>,
    labels: Vec<String>,
    jobs: Vec<JobSpec>,
}

impl JobPlan {
    /// The plan of `scn` (checking that every sweep point of the first run
    /// can be set up).
    pub(super) fn new(scn: &Scenario) -> Result<JobPlan, LabError> {
        let points = scn.points();
        for p in &points {
            scn.setup(p)?;
        }
        let labels: Vec<String> = points.iter().map(|p| p.label(&scn.sweep)).collect();
        let runs: Vec<Scenario> = (0..scn.runs)
            .map(|r| {
                let mut s = scn.clone();
                s.seed = run_seed(scn.seed, r);
                s
            })
            .collect();
        let mut jobs = Vec::new();
        for run in 0..scn.runs {
            for (point, l) in labels.iter().enumerate() {
                for spec in &scn.protocols {
                    jobs.push(JobSpec {
                        run,
                        point,
                        spec: *spec,
                        key: RunKey::at(spec.name(), l),
                    });
                }
            }
        }
        Ok(JobPlan {
            runs,
            points,
            labels,
            jobs,
        })
    }

    /// Number of simulations.
    pub(super) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// The sweep points' labels, in sweep order.
    pub(super) fn point_labels(&self) -> Vec<String> {
        self.labels.clone()
    }

    /// Runs simulation `i`.
    fn run_one(&self, i: usize, progress: &mut dyn FnMut(f64)) -> Result<JobResult, LabError> {
        let job = &self.jobs[i];
        let scn = &self.runs[job.run as usize];
        let point = &self.points[job.point];
        let setup = scn.setup(point)?;
        let out = simulate(job.spec, &setup, &scn.workloads_at(point), progress);
        let cx = JobContext {
            index: i,
            run: job.run,
            key: &job.key,
            has_bottleneck: setup.bottleneck.is_some(),
            paper: &scn.paper,
        };
        Ok(JobResult::from_output(&cx, out))
    }

    /// Runs the simulations `which` on `threads` threads (0: one per core),
    /// reporting overall progress, and returns their results in the order of
    /// `which`, so that what is recorded does not depend on timing.
    pub(super) fn run(
        &self,
        which: &[usize],
        threads: usize,
        progress: &dyn Progress,
    ) -> Result<Vec<JobResult>, LabError> {
        let threads = worker_threads(threads).clamp(1, which.len().max(1));
        let next = AtomicUsize::new(0);
        let fractions: Vec<Mutex<f64>> = which.iter().map(|_| Mutex::new(0.0)).collect();
        let total = which.len().max(1) as f64;
        let report = |k: usize, f: f64| {
            if let Ok(mut d) = fractions[k].lock() {
                *d = f;
            }
            let sum: f64 = fractions.iter().map(|d| d.lock().map_or(0.0, |v| *v)).sum();
            progress.update(sum / total);
        };
        let (tx, rx) = mpsc::channel::<(usize, Result<JobResult, LabError>)>();
        let mut done: BTreeMap<usize, JobResult> = BTreeMap::new();
        let mut first_error = None;
        std::thread::scope(|s| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (next, report) = (&next, &report);
                s.spawn(move || loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = which.get(k) else {
                        break;
                    };
                    let mut last = 0.0;
                    let mut cb = |f: f64| {
                        if f - last >= 0.01 || f >= 1.0 {
                            last = f;
                            report(k, f);
                        }
                    };
                    let out = self.run_one(i, &mut cb);
                    if tx.send((k, out)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (k, out) in rx {
                match out {
                    Ok(j) => {
                        done.insert(k, j);
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        });
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok(done.into_values().collect())
    }
}

/// Threads for `--jobs N`: `N`, or one per core for 0.
pub(crate) fn worker_threads(jobs: usize) -> usize {
    match jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        j => j,
    }
}
