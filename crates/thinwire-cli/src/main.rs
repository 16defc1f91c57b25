//! `thinwire`: the command-line program of the thinwire lab.
#![forbid(unsafe_code)]

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use thinwire_lab::metrics::{deadline_rows, deadline_table};
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
    /// Print the optimal deadline-delivery policy (packets to send per stage)
    /// and its expected cost.
    Policy {
        /// k: data packets in the message (1-64).
        #[arg(long)]
        packets: u16,
        /// I: stages (round trips) before the deadline (1-100).
        #[arg(long)]
        stages: u16,
        /// Per-packet loss probability (0-0.5).
        #[arg(long)]
        loss: f64,
        /// Required probability of completing by the deadline, e.g. 0.999.
        #[arg(long)]
        target: f64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
        /// Run real stacks (kernel TCP, KCP, QUIC, ENet, thinwire over UDP)
        /// through the real-kernel emulator (network namespaces + TUN relay;
        /// needs root) instead of the simulator; see docs/EMULATOR.md.
        #[arg(long)]
        emulate: bool,
        /// With --emulate: also run the simulator on the scenario and put the
        /// two engines side by side (a report section, DIR/compare.txt and
        /// DIR/compare.json).
        #[arg(long, requires = "emulate")]
        compare_sim: bool,
        /// With --emulate: run the real peers one after another instead of
        /// side by side (each peer always has its own emulated network).
        #[arg(long, requires = "emulate")]
        serial_peers: bool,
        /// With --emulate: run only these real peers (comma-separated names
        /// as in results.json, e.g. `tcp-nodelay,kcp-fast,thinwire`).
        #[arg(long, requires = "emulate", value_delimiter = ',')]
        peers: Vec<String>,
    },
    /// List the built-in scenarios and the scenario files in ./scenarios.
    List,
}

/// The `--emulate` options.
#[derive(Debug, Clone)]
struct EmuFlags {
    compare_sim: bool,
    serial_peers: bool,
    peers: Vec<String>,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, fraction: f64) {
        self.0
            .set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
}

/// `thinwire lab run --emulate`: the scenario through real stacks in network namespaces.
fn run_emulated(
    scn: &Scenario,
    out: &std::path::Path,
    seed: Option<u64>,
    duration: Option<Duration>,
    flags: EmuFlags,
) -> Result<(), String> {
    let peers = if flags.peers.is_empty() {
        None
    } else {
        let all = thinwire_emu::default_peers(scn);
        let mut chosen = Vec::new();
        for name in &flags.peers {
            match all.iter().find(|p| p.name() == *name) {
                Some(p) => chosen.push(p.clone()),
                None => {
                    let names: Vec<String> = all.iter().map(|p| p.name()).collect();
                    return Err(format!(
                        "no real peer {name:?} for scenario {}; it has: {}",
                        scn.name,
                        names.join(", ")
                    ));
                }
            }
        }
        Some(chosen)
    };
    let opts = thinwire_emu::EmuOptions {
        peers,
        seed,
        duration,
        serial: flags.serial_peers,
    };
    let compare_sim = flags.compare_sim;
    eprintln!("emulating {} (real stacks, real time)...", scn.name);
    let run = thinwire_emu::run_emulated(scn, &opts).map_err(|e| e.to_string())?;
    let (results, samples) = (run.results, run.samples);
    let mut params = scn.params();
    params.push(("engine".to_owned(), "real-kernel emulator".to_owned()));
    for c in &run.counters {
        if let Some(text) = c.summary() {
            params.push((format!("measured: {}", c.peer), text));
        }
    }
    let simulated = if compare_sim {
        eprintln!("simulating {} for the comparison...", scn.name);
        let sim = thinwire_lab::runner::run_scenario(
            scn,
            &thinwire_lab::runner::RunOptions {
                seed,
                duration,
                ..Default::default()
            },
            &thinwire_lab::runner::NoProgress,
        )
        .map_err(|e| e.to_string())?;
        Some(Box::new(sim))
    } else {
        None
    };
    let lab = thinwire_lab::runner::LabRun {
        results,
        samples,
        params,
        notes: Vec::new(),
        simulated,
    };
    write_outputs(&lab, out).map_err(|e| e.to_string())?;
    println!(
        "scenario {} ({}), emulated, seed {}",
        scn.name, scn.source, lab.results.seed
    );
    println!();
    print!("{}", lab.results.terminal_table());
    println!();
    println!("wrote {}", out.join("results.json").display());
    println!("wrote {}", out.join("report.html").display());
    if let Some(sim) = &lab.simulated {
        let cmp = thinwire_lab::metrics::compare(&sim.results, &lab.results);
        let text = cmp.to_text();
        std::fs::write(out.join("compare.txt"), &text).map_err(|e| e.to_string())?;
        std::fs::write(out.join("compare.json"), cmp.to_json_pretty() + "\n")
            .map_err(|e| e.to_string())?;
        println!();
        print!("{text}");
        println!();
        println!("wrote {}", out.join("compare.txt").display());
        println!("wrote {}", out.join("compare.json").display());
        println!("(the report's section \"Simulator and emulator side by side\" shows the same)");
    }
    Ok(())
}

fn run(
    scenario: Option<String>,
    out: PathBuf,
    seed: Option<u64>,
    duration: Option<f64>,
    jobs: usize,
    emulate: bool,
    flags: EmuFlags,
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
    if emulate {
        return run_emulated(&scn, &out, seed, duration, flags);
    }
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
                emulate,
                compare_sim,
                serial_peers,
                peers,
            } => run(
                scenario,
                out,
                seed,
                duration,
                jobs,
                emulate,
                EmuFlags {
                    compare_sim,
                    serial_peers,
                    peers,
                },
            ),
            LabCommand::List => {
                list();
                Ok(())
            }
        },
        Command::Policy {
            packets,
            stages,
            loss,
            target,
            json,
        } => thinwire_lab::policy::solve(packets, stages, loss, target).map(|p| {
            if json {
                print!("{}", thinwire_lab::policy::to_json(&p));
            } else {
                print!("{}", thinwire_lab::policy::to_text(&p));
            }
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
