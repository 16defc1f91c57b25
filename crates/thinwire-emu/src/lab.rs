//! `thinwire lab run SCENARIO --emulate`: the scenario through the real
//! peers ([`run_emulated`]), optionally the simulator beside it, the outputs
//! written and the summary returned for the command to print.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::{default_peers, run_emulated, EmuError, EmuOptions, FailedPeer, RealPeer};
use thinwire_lab::metrics::{Repetitions, Results};
use thinwire_lab::runner::{run_scenario, run_seed, write_outputs, LabRun, NoProgress, RunOptions};
use thinwire_lab::scenario::Scenario;

/// The options of `thinwire lab run --emulate`.
#[derive(Debug, Clone, Default)]
pub struct LabRunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration.
    pub duration: Option<Duration>,
    /// Also run the simulator on the scenario and put the two engines side
    /// by side (a report section, `compare.txt` and `compare.json`).
    pub compare_sim: bool,
    /// Run the real peers one after another instead of side by side.
    pub serial_peers: bool,
    /// Run only the real peers with these names (as in `results.json`);
    /// empty: every peer of [`default_peers`].
    pub peers: Vec<String>,
    /// Independent runs, one after another, each with its own seed (run 0 the scenario's,
    /// as the simulator's `--runs`): `results.json` and the report's figures are run 0's,
    /// `runs.json` and the report's repetitions table give every row's mean and 95%
    /// interval over the runs. 0 or 1: one run.
    pub runs: u32,
}

/// Runs `scn` in the emulator and writes `results.json` and `report.html`
/// into `out` (with [`LabRunOptions::compare_sim`] also `compare.txt` and
/// `compare.json`), as `thinwire lab run SCENARIO --emulate` does. Progress
/// lines (which stage runs) go to `progress`; the summary (the
/// results table, the comparison and the files written) is returned, for
/// the command to print to stdout.
///
/// Unknown peer names are refused before anything is created, so that
/// check needs no root.
pub fn run_and_write(
    scn: &Scenario,
    out: &Path,
    opts: &LabRunOptions,
    progress: &dyn Fn(&str),
) -> Result<String, EmuError> {
    let peers = select_peers(scn, &opts.peers)?;
    let runs = opts.runs.max(1);
    let base_seed = opts.seed.unwrap_or(scn.seed);
    let seeds: Vec<u64> = (0..runs).map(|r| run_seed(base_seed, r)).collect();
    let mut all = Vec::new();
    for (r, &seed) in seeds.iter().enumerate() {
        let emu = EmuOptions {
            peers: peers.clone(),
            seed: Some(seed),
            duration: opts.duration,
            serial: opts.serial_peers,
        };
        progress(&if runs > 1 {
            format!(
                "emulating {} run {} of {runs}, seed {seed} (real stacks, real time)...",
                scn.name,
                r + 1
            )
        } else {
            format!("emulating {} (real stacks, real time)...", scn.name)
        });
        all.push(run_emulated(scn, &emu)?);
    }
    let repetitions = (runs > 1).then(|| {
        let results: Vec<&Results> = all.iter().map(|r| &r.results).collect();
        Repetitions::from_results(&results, seeds)
    });
    let failed: Vec<(u32, FailedPeer)> = all
        .iter_mut()
        .enumerate()
        .flat_map(|(r, run)| {
            std::mem::take(&mut run.failed)
                .into_iter()
                .map(move |f| (r as u32, f))
        })
        .collect();
    let run = all.swap_remove(0);
    let mut params = scn.params();
    params.push(("engine".to_owned(), "real-kernel emulator".to_owned()));
    for c in &run.counters {
        if let Some(text) = c.summary() {
            params.push((format!("measured: {}", c.peer), text));
        }
    }
    for (r, f) in &failed {
        params.push((
            format!("FAILED: {}{}", f.peer, run_label(*r, runs)),
            f.error.clone(),
        ));
    }
    let simulated = if opts.compare_sim {
        progress(&format!("simulating {} for the comparison...", scn.name));
        let sim = run_scenario(
            scn,
            &RunOptions {
                seed: opts.seed,
                duration: opts.duration,
                ..Default::default()
            },
            &NoProgress,
        )?;
        Some(Box::new(sim))
    } else {
        None
    };
    let mut lab = LabRun::from_results(run.results, run.samples, params);
    lab.simulated = simulated;
    lab.repetitions = repetitions;
    write_outputs(&lab, out)?;
    let mut summary = summary(scn, &lab, out);
    for (r, f) in &failed {
        let _ = writeln!(
            summary,
            "FAILED {}{}: {} (no rows; the other peers ran)",
            f.peer,
            run_label(*r, runs),
            f.error
        );
    }
    if let Some(reps) = &lab.repetitions {
        summary.push('\n');
        summary += &reps.terminal_table();
        let _ = writeln!(summary, "wrote {}", out.join("runs.json").display());
    }
    if let Some(sim) = &lab.simulated {
        summary += &write_comparison(sim, &lab, out)?;
    }
    Ok(summary)
}

/// ` (run R of N)` for a repeated run, nothing for a single one.
fn run_label(r: u32, runs: u32) -> String {
    if runs > 1 {
        format!(" (run {} of {runs})", r + 1)
    } else {
        String::new()
    }
}

/// What `thinwire lab run --emulate` prints once `lab` is written into
/// `out`: the scenario, the results table, the thinwire security setting
/// and the files written.
fn summary(scn: &Scenario, lab: &LabRun, out: &Path) -> String {
    let mut s = format!(
        "scenario {} ({}), emulated, seed {}\n\n",
        scn.name, scn.source, lab.results.seed
    );
    s += &lab.results.terminal_table();
    if let Some(security) = scn.thinwire_security() {
        let _ = writeln!(s, "thinwire security: {security}");
    }
    s.push('\n');
    let _ = writeln!(s, "wrote {}", out.join("results.json").display());
    let _ = writeln!(s, "wrote {}", out.join("report.html").display());
    s
}

/// The real peers named in `names`, from the scenario's [`default_peers`];
/// `None` (every peer) when `names` is empty.
fn select_peers(scn: &Scenario, names: &[String]) -> Result<Option<Vec<RealPeer>>, EmuError> {
    if names.is_empty() {
        return Ok(None);
    }
    let all = default_peers(scn);
    let mut chosen = Vec::new();
    for name in names {
        match all.iter().find(|p| p.name() == *name) {
            Some(p) => chosen.push(p.clone()),
            None => {
                return Err(EmuError::UnknownPeer {
                    name: name.clone(),
                    scenario: scn.name.clone(),
                    available: all.iter().map(RealPeer::name).collect(),
                })
            }
        }
    }
    Ok(Some(chosen))
}

/// Writes `compare.txt` and `compare.json` (the simulator's run `sim` beside
/// the emulator's `emu`) into `out` and returns what the command prints of
/// it: the comparison and the files written.
fn write_comparison(sim: &LabRun, emu: &LabRun, out: &Path) -> Result<String, EmuError> {
    let cmp = thinwire_lab::metrics::compare(&sim.results, &emu.results);
    let text = cmp.to_text();
    std::fs::write(out.join("compare.txt"), &text)?;
    std::fs::write(out.join("compare.json"), cmp.to_json_pretty() + "\n")?;
    let mut s = format!("\n{text}\n");
    let _ = writeln!(s, "wrote {}", out.join("compare.txt").display());
    let _ = writeln!(s, "wrote {}", out.join("compare.json").display());
    s += "(the report's section \"Simulator and emulator side by side\" shows the same)\n";
    Ok(s)
}
