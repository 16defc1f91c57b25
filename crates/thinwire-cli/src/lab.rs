//! What `thinwire lab run` (in the simulator) and `thinwire lab list` show:
//! a progress bar while simulating, then the results tables and the files
//! written.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use thinwire_lab::metrics::{deadline_rows, deadline_table};
use thinwire_lab::runner::{run_scenario, write_outputs, LabRun, Progress, RunOptions};
use thinwire_lab::scenario::{Scenario, BUILTIN};

/// The simulator's progress as an `indicatif` bar (hidden unless stderr is a terminal).
struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, fraction: f64) {
        self.0
            .set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
}

fn progress_bar(scenario: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(1000),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {percent:>3}% {elapsed_precise} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(format!("simulating {scenario}"));
    bar
}

/// `thinwire lab run`: simulates `scn`, writes `results.json` and
/// `report.html` into `out` and prints the summary.
pub(crate) fn simulate(scn: &Scenario, out: &Path, opts: &RunOptions) -> Result<(), String> {
    let bar = progress_bar(&scn.name);
    let result = run_scenario(scn, opts, &Bar(bar.clone()));
    bar.finish_and_clear();
    let lab = result.map_err(|e| e.to_string())?;
    write_outputs(&lab, out).map_err(|e| e.to_string())?;
    print_summary(scn, &lab, out);
    Ok(())
}

/// The results table, the deadline table, the per-run notes and the files written.
fn print_summary(scn: &Scenario, lab: &LabRun, out: &Path) {
    println!(
        "scenario {} ({}), seed {}",
        scn.name, scn.source, lab.results.seed
    );
    if !scn.description.is_empty() {
        println!("{}", scn.description);
    }
    println!();
    print!("{}", lab.results.terminal_table());
    if let Some(security) = scn.thinwire_security() {
        println!("thinwire security: {security}");
    }
    println!();
    let deadline = deadline_table(&deadline_rows(&lab.results, &lab.samples));
    if !deadline.is_empty() {
        print!("{deadline}");
        println!();
    }
    for n in &lab.notes {
        let mut line = format!(
            "  {}: access drops {:.2}%",
            n.protocol,
            n.access_drop_rate * 100.0
        );
        if let Some(b) = n.bottleneck_drop_rate {
            line.push_str(&format!(
                ", bottleneck drops {:.2}% (incl. cross traffic)",
                b * 100.0
            ));
        }
        if let Some(d) = n.deadline_summary() {
            line.push_str(&format!("; {d}"));
        }
        println!("{line}");
    }
    println!();
    println!("wrote {}", out.join("results.json").display());
    println!("wrote {}", out.join("report.html").display());
}

/// `thinwire lab list`: the built-in scenarios and the files in `./scenarios`.
pub(crate) fn list() {
    println!("built-in scenarios:");
    for (name, text) in BUILTIN {
        let desc = Scenario::parse(text, Path::new(name), name)
            .map(|s| s.description)
            .unwrap_or_else(|e| format!("(invalid: {e})"));
        println!("  {name:<20} {desc}");
    }
    let dir = Path::new("scenarios");
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        if !files.is_empty() {
            println!("scenario files in ./scenarios (run with `thinwire lab run PATH`):");
            for f in files {
                println!("  {}", f.display());
            }
        }
    }
}

/// The arguments of `thinwire lab gateway`.
#[derive(Debug, clap::Args)]
pub(crate) struct GatewayArgs {
    /// Output directory.
    #[arg(long, default_value = "lab-out")]
    out: std::path::PathBuf,
    /// Seed of both reproductions.
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated seconds of traffic per run (overrides both reproductions' defaults).
    #[arg(long)]
    duration: Option<f64>,
}

/// `thinwire lab gateway`: runs the Anarchy Online and TCM reproductions on the gateway code.
pub(crate) fn gateway(args: GatewayArgs) -> Result<(), String> {
    use thinwire_lab::gateway::{write_gateway_report, GatewayLabOptions};
    let mut opts = GatewayLabOptions::default();
    if let Some(seed) = args.seed {
        opts.ao.seed = seed;
        opts.tcm.seed = seed;
    }
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0 && d < 1e6) {
            return Err(format!(
                "--duration {d}: must be a positive number of seconds"
            ));
        }
        opts.ao.duration = Duration::from_secs_f64(d);
        opts.tcm.duration = Duration::from_secs_f64(d);
    }
    let (_, html) = write_gateway_report(&args.out, &opts).map_err(|e| e.to_string())?;
    println!("wrote {}", html.display());
    Ok(())
}
