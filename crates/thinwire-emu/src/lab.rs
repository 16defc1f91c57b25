//! `thinwire lab run SCENARIO --emulate`: the scenario through the real
//! peers ([`run_emulated`]), optionally the simulator beside it, the outputs
//! written and the summary printed.

use std::path::Path;
use std::time::Duration;

use super::{default_peers, run_emulated, EmuError, EmuOptions, RealPeer};
use thinwire_lab::runner::{run_scenario, write_outputs, LabRun, NoProgress, RunOptions};
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
}

/// Runs `scn` in the emulator and writes `results.json` and `report.html`
/// into `out` (with [`LabRunOptions::compare_sim`] also `compare.txt` and
/// `compare.json`), as `thinwire lab run SCENARIO --emulate` does: progress
/// lines go to stderr, the results table and the files written to stdout.
///
/// Unknown peer names are refused before anything is created, so that
/// check needs no root.
pub fn run_and_write(scn: &Scenario, out: &Path, opts: &LabRunOptions) -> Result<(), EmuError> {
    let emu = EmuOptions {
        peers: select_peers(scn, &opts.peers)?,
        seed: opts.seed,
        duration: opts.duration,
        serial: opts.serial_peers,
    };
    eprintln!("emulating {} (real stacks, real time)...", scn.name);
    let run = run_emulated(scn, &emu)?;
    let mut params = scn.params();
    params.push(("engine".to_owned(), "real-kernel emulator".to_owned()));
    for c in &run.counters {
        if let Some(text) = c.summary() {
            params.push((format!("measured: {}", c.peer), text));
        }
    }
    let simulated = if opts.compare_sim {
        eprintln!("simulating {} for the comparison...", scn.name);
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
    write_outputs(&lab, out)?;
    println!(
        "scenario {} ({}), emulated, seed {}",
        scn.name, scn.source, lab.results.seed
    );
    println!();
    print!("{}", lab.results.terminal_table());
    if let Some(security) = scn.thinwire_security() {
        println!("thinwire security: {security}");
    }
    println!();
    println!("wrote {}", out.join("results.json").display());
    println!("wrote {}", out.join("report.html").display());
    if let Some(sim) = &lab.simulated {
        write_comparison(sim, &lab, out)?;
    }
    Ok(())
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
/// the emulator's `emu`) into `out` and prints the comparison.
fn write_comparison(sim: &LabRun, emu: &LabRun, out: &Path) -> Result<(), EmuError> {
    let cmp = thinwire_lab::metrics::compare(&sim.results, &emu.results);
    let text = cmp.to_text();
    std::fs::write(out.join("compare.txt"), &text)?;
    std::fs::write(out.join("compare.json"), cmp.to_json_pretty() + "\n")?;
    println!();
    print!("{text}");
    println!();
    println!("wrote {}", out.join("compare.txt").display());
    println!("wrote {}", out.join("compare.json").display());
    println!("(the report's section \"Simulator and emulator side by side\" shows the same)");
    Ok(())
}
