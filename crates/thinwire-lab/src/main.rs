//! `thinwire`: the command-line program of the thinwire lab.
#![forbid(unsafe_code)]

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use thinwire_lab::runner::{run_scenario, write_outputs, Progress, RunOptions};
use thinwire_lab::scenario::{Scenario, BUILTIN};

/// thinwire: a UDP transport for online-game thin streams, and its lab.
#[derive(Debug, Parser)]
#[command(name = "thinwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate scenarios and compare transports.
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Run a scenario and write results.json and report.html.
    Run {
        /// A built-in scenario name (see `thinwire lab list`) or a TOML file;
        /// the default scenario when omitted.
        scenario: Option<String>,
        /// Output directory.
        #[arg(long, default_value = "lab-out")]
        out: PathBuf,
        /// Seed (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Simulated seconds of application traffic (overrides the scenario's).
        #[arg(long)]
        duration: Option<f64>,
        /// Simulations run in parallel (default: one per core).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
    },
    /// List the built-in scenarios and the scenario files in ./scenarios.
    List,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, fraction: f64) {
        self.0
            .set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
}

fn run(
    scenario: Option<String>,
    out: PathBuf,
    seed: Option<u64>,
    duration: Option<f64>,
    jobs: usize,
) -> Result<(), String> {
    let name = scenario.unwrap_or_else(|| "default".to_owned());
    let scn = Scenario::load(&name).map_err(|e| e.to_string())?;
    let duration = match duration {
        None => None,
        Some(d) if d.is_finite() && d > 0.0 && d < 1e7 => Some(Duration::from_secs_f64(d)),
        Some(d) => {
            return Err(format!(
                "--duration {d}: must be a positive number of seconds"
            ))
        }
    };
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
    bar.set_message(format!("simulating {}", scn.name));
    let opts = RunOptions {
        seed,
        duration,
        jobs,
    };
    let result = run_scenario(&scn, &opts, &Bar(bar.clone()));
    bar.finish_and_clear();
    let lab = result.map_err(|e| e.to_string())?;
    write_outputs(&lab, &out).map_err(|e| e.to_string())?;
    println!(
        "scenario {} ({}), seed {}",
        scn.name, scn.source, lab.results.seed
    );
    if !scn.description.is_empty() {
        println!("{}", scn.description);
    }
    println!();
    print!("{}", lab.results.terminal_table());
    println!();
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
        println!("{line}");
    }
    println!();
    println!("wrote {}", out.join("results.json").display());
    println!("wrote {}", out.join("report.html").display());
    Ok(())
}

fn list() {
    println!("built-in scenarios:");
    for (name, text) in BUILTIN {
        let desc = Scenario::parse(text, std::path::Path::new(name), name)
            .map(|s| s.description)
            .unwrap_or_else(|e| format!("(invalid: {e})"));
        println!("  {name:<20} {desc}");
    }
    let dir = std::path::Path::new("scenarios");
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lab { command } => match command {
            LabCommand::Run {
                scenario,
                out,
                seed,
                duration,
                jobs,
            } => run(scenario, out, seed, duration, jobs),
            LabCommand::List => {
                list();
                Ok(())
            }
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
