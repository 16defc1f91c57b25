//! Shards: one part of a run's simulations on one machine, written to a
//! file, and the merge of every part into the run's outputs.
//!
//! `--shard K/N` runs the simulations whose number `i` (run-major, then
//! sweep point, then protocol) has `i % N == K - 1`, so every shard gets a
//! similar mix of sweep points. Each simulation depends only on its own seed,
//! so the merged outputs are the ones a single machine writes.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::job::JobResult;
use super::plan::JobPlan;
use super::{assemble, setup_overrides, with_options, LabRun, Progress, RunOptions};
use crate::error::LabError;
use crate::scenario::Scenario;

/// Part `index` (1-based) of `count` of a run's simulations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which part, `1..=count`.
    pub index: u32,
    /// Number of parts.
    pub count: u32,
}

impl Shard {
    /// Whether simulation `i` belongs to this shard.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count as usize == (self.index - 1) as usize
    }

    /// The shard's file name, `shard-K-of-N.json`.
    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `K/N` with `1 <= K <= N <= 100000`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}`: a shard is K/N with 1 <= K <= N, e.g. 3/8");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count || count > 100_000 {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The format tag of shard files.
const FORMAT: &str = "thinwire-lab-shard/2";

/// What one shard computed (`shard-K-of-N.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    /// Always `thinwire-lab-shard/2` (version 2: runs keyed by protocol and sweep point).
    format: String,
    /// The scenario's name.
    pub scenario: String,
    /// Where the scenario came from (`built-in:NAME` or a path), to load it when merging.
    pub source: String,
    /// A hash of the scenario with the run's options: shards of different
    /// scenarios, options or lab versions do not merge.
    pub fingerprint: String,
    /// The run's seed.
    pub seed: u64,
    /// Simulated seconds of application traffic.
    pub duration_s: f64,
    /// Number of runs.
    pub runs: u32,
    /// This shard.
    pub shard: Shard,
    /// Simulations in the whole run.
    pub total_jobs: usize,
    /// This shard's simulations.
    jobs: Vec<JobResult>,
}

impl ShardFile {
    /// Writes the shard as JSON to `dir/shard-K-of-N.json`; returns the path.
    pub fn write(&self, dir: &Path) -> Result<std::path::PathBuf, LabError> {
        std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
        let path = dir.join(self.shard.file_name());
        let text = serde_json::to_string(self)
            .map_err(|e| LabError::Invalid(format!("serializing the shard: {e}")))?;
        std::fs::write(&path, text).map_err(|e| LabError::io(&path, e))?;
        Ok(path)
    }

    /// Reads a shard file.
    pub fn read(path: &Path) -> Result<ShardFile, LabError> {
        let text = std::fs::read_to_string(path).map_err(|e| LabError::io(path, e))?;
        let f: ShardFile = serde_json::from_str(&text).map_err(|e| LabError::Input {
            path: path.to_owned(),
            location: format!("line {}", e.line()),
            msg: format!("not a shard file: {e}"),
        })?;
        if f.format != FORMAT {
            return Err(LabError::Input {
                path: path.to_owned(),
                location: "format".into(),
                msg: format!("format `{}`, expected `{FORMAT}`", f.format),
            });
        }
        Ok(f)
    }

    /// Number of simulations in this shard.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the shard has no simulation (more shards than simulations).
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// FNV-1a over the scenario's full description: stable for one lab version.
fn fingerprint(scn: &Scenario) -> String {
    let text = format!("{scn:?}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Runs the simulations of `shard` (see [`Shard::owns`]).
pub fn run_shard(
    scenario: &Scenario,
    opts: &RunOptions,
    shard: Shard,
    progress: &dyn Progress,
) -> Result<ShardFile, LabError> {
    let scn = with_options(scenario, opts)?;
    let plan = JobPlan::new(&scn)?;
    let mine: Vec<usize> = (0..plan.len()).filter(|&i| shard.owns(i)).collect();
    let jobs = plan.run(&mine, opts.jobs, progress)?;
    Ok(ShardFile {
        format: FORMAT.into(),
        scenario: scn.name.clone(),
        source: scn.source.clone(),
        fingerprint: fingerprint(&scn),
        seed: scn.seed,
        duration_s: scn.duration.as_secs_f64(),
        runs: scn.runs,
        shard,
        total_jobs: plan.len(),
        jobs,
    })
}

/// Assembles the shards of one run (every part exactly once) into the run's
/// outputs. The scenario is loaded again from the shards' `source` (a
/// built-in name, or a path relative to the current directory).
pub fn merge_shards(mut shards: Vec<ShardFile>) -> Result<LabRun, LabError> {
    let Some(first) = shards.first() else {
        return Err(LabError::Invalid("no shard files to merge".into()));
    };
    let name = first
        .source
        .strip_prefix("built-in:")
        .unwrap_or(&first.source)
        .to_owned();
    let scenario = Scenario::load(&name)?;
    let opts = RunOptions {
        seed: Some(first.seed),
        duration: Some(Duration::from_secs_f64(first.duration_s)),
        runs: Some(first.runs),
        jobs: 1,
    };
    let scn = with_options(&scenario, &opts)?;
    let expect = fingerprint(&scn);
    let count = first.shard.count;
    let mut seen = vec![false; count as usize];
    for s in &shards {
        if s.fingerprint != expect || s.shard.count != count || s.total_jobs != first.total_jobs {
            return Err(LabError::Invalid(format!(
                "shard {} of `{}` does not belong to this run (scenario, options, shard count \
                 or lab version differ)",
                s.shard, s.scenario
            )));
        }
        let k = (s.shard.index - 1) as usize;
        if std::mem::replace(&mut seen[k], true) {
            return Err(LabError::Invalid(format!("shard {} given twice", s.shard)));
        }
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(LabError::Invalid(format!(
            "shard {}/{count} is missing",
            k + 1
        )));
    }
    let plan = JobPlan::new(&scn)?;
    let mut jobs: Vec<JobResult> = shards.iter_mut().flat_map(|s| s.jobs.drain(..)).collect();
    jobs.sort_by_key(|j| j.index);
    if jobs.len() != plan.len() || jobs.iter().enumerate().any(|(i, j)| j.index != i) {
        return Err(LabError::Invalid(
            "the shards do not hold every simulation of the run exactly once".into(),
        ));
    }
    Ok(assemble(
        &scn,
        &plan,
        &jobs,
        setup_overrides(&scenario, &scn),
    ))
}
