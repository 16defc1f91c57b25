//! `thinwire`: the command-line program of the thinwire lab and bench.
#![forbid(unsafe_code)]

#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "gateway")]
mod gateway;
mod keygen;
mod lab;
#[cfg(not(all(feature = "emulator", feature = "bench", feature = "gateway")))]
mod not_built;
mod policy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use thinwire_lab::runner::RunOptions;
use thinwire_lab::scenario::Scenario;
use tracing_subscriber::EnvFilter;

/// thinwire: a UDP transport for online-game thin streams; its lab (simulator, real-kernel
/// emulator, reports) and deadline policy tables.
#[derive(Debug, Parser)]
#[command(name = "thinwire", version)]
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
    /// Run a multiplexing gateway (edge near the players, or server near the game server);
    /// see docs/GATEWAY.md.
    #[cfg(feature = "gateway")]
    Gateway {
        #[command(subcommand)]
        command: gateway::GatewayCommand,
    },
    /// Run a multiplexing gateway (not in this build: feature `gateway`).
    #[cfg(not(feature = "gateway"))]
    Gateway(not_built::Args),
    /// Measure thinwire, ENet, KCP and GameNetworkingSockets side by side on loopback
    /// (messages per second, round trips, memory per idle connection, a 30 Hz server sweep)
    /// and write results.json and report.html.
    #[cfg(feature = "bench")]
    Bench(bench::BenchArgs),
    /// Measure thinwire, ENet, KCP and GNS on loopback (not in this build: feature `bench`).
    #[cfg(not(feature = "bench"))]
    Bench(not_built::Args),
    /// Print the optimal deadline-delivery policy (packets to send per stage) and its expected
    /// cost; `thinwire policy repair` prints the repair policy of reliable thin streams (copies
    /// per retransmission round).
    Policy(policy::PolicyArgs),
    /// Write a new server key pair from the operating system's randomness: the secret to
    /// `--out` (mode 0600) and the public key to the same name with `.pub`; print the public
    /// key. Never overwrites a file.
    Keygen(keygen::KeygenArgs),
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Run a scenario and write results.json and report.html.
    Run(RunArgs),
    /// List the built-in scenarios and the scenario files in ./scenarios.
    List,
    /// Reproduce the multiplexing papers on the real gateway code (Anarchy Online proxy,
    /// TCM) and write gateway.html and gateway.json.
    Gateway(lab::GatewayArgs),
    /// Merge the shard files of a run split with `lab run --shard K/N` (every
    /// `shard-*.json` in the given directories, or the given files) into the run's
    /// results.json, runs.json and report.html.
    Merge(lab::MergeArgs),
}

/// The arguments of `thinwire lab run`.
#[derive(Debug, Args)]
struct RunArgs {
    /// A built-in scenario name (see `thinwire lab list`) or a TOML file;
    /// the default scenario when omitted. `papers` runs every built-in
    /// scenario that reproduces a paper and writes one report.
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
    /// Independent runs (seeds) of every simulation, for confidence
    /// intervals (at least: a scenario whose paper's figures are averaged
    /// over more runs, e.g. Wu et al.'s 30, keeps its own; default 1).
    /// With --emulate: emulated runs one after another, each with its own
    /// seed, summarised in runs.json and the report's repetitions table.
    #[arg(long)]
    runs: Option<u32>,
    /// With `papers`: also write the comparison as Markdown to FILE (what
    /// docs/results/papers.md is), naming the command, the commit, the
    /// machine and the date.
    #[arg(long, value_name = "FILE", conflicts_with = "emulate")]
    markdown: Option<PathBuf>,
    /// Run only part K of N of the simulations and write DIR/shard-K-of-N.json
    /// (merge the parts with `thinwire lab merge`); see docs/REPRODUCING.md.
    #[arg(long, value_name = "K/N", conflicts_with = "emulate")]
    shard: Option<thinwire_lab::runner::Shard>,
    /// Run real stacks (kernel TCP, KCP, QUIC, ENet, GNS when built, thinwire over UDP)
    /// through the real-kernel emulator (network namespaces + TUN relay;
    /// needs root and a build with `--features emulator`) instead of the
    /// simulator; see docs/EMULATOR.md.
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
}

/// `thinwire lab run`: loads the scenario, checks `--duration`, and hands
/// over to the emulator (`--emulate`) or the simulator.
fn run(args: RunArgs) -> Result<(), String> {
    let name = args
        .scenario
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let duration = match args.duration {
        None => None,
        Some(d) if d.is_finite() && d > 0.0 && d < 1e7 => Some(Duration::from_secs_f64(d)),
        Some(d) => {
            return Err(format!(
                "--duration {d}: must be a positive number of seconds"
            ))
        }
    };
    let opts = RunOptions {
        seed: args.seed,
        duration,
        jobs: args.jobs,
        runs: args.runs,
    };
    if name == "papers" && !Path::new(&name).exists() {
        if args.emulate || args.shard.is_some() {
            return Err(
                "`lab run papers` runs the simulator on every paper scenario; emulate or shard \
                 one scenario at a time (see docs/REPRODUCING.md)"
                    .into(),
            );
        }
        return lab::papers(&args.out, &opts, args.markdown.as_deref());
    }
    if args.markdown.is_some() {
        return Err("--markdown is for `lab run papers`".into());
    }
    let scn = Scenario::load(&name).map_err(|e| e.to_string())?;
    if let Some(shard) = args.shard {
        return lab::shard(&scn, &args.out, &opts, shard);
    }
    if args.emulate {
        return emulate(&scn, args, duration);
    }
    lab::simulate(&scn, &args.out, &opts)
}

/// Sends `tracing` events to stderr, filtered by `RUST_LOG` (e.g. `thinwire=debug`: every
/// target starting with `thinwire`, the runtime's, the core's and the gateway's). Without it
/// (or with one that does not parse): `info` for the gateway processes, whose trunk and flow
/// lines are what their operators read, and `warn` for the other commands, whose own output
/// stays as it is.
fn init_logs(gateway: bool) {
    let default = if gateway { "info" } else { "warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// `thinwire lab run --emulate`: the scenario through the real-kernel emulator.
#[cfg(feature = "emulator")]
fn emulate(scn: &Scenario, args: RunArgs, duration: Option<Duration>) -> Result<(), String> {
    let opts = thinwire_emu::LabRunOptions {
        seed: args.seed,
        duration,
        compare_sim: args.compare_sim,
        serial_peers: args.serial_peers,
        peers: args.peers,
        runs: args.runs.unwrap_or(1),
    };
    let summary = thinwire_emu::run_and_write(scn, &args.out, &opts, &|line| eprintln!("{line}"))
        .map_err(|e| e.to_string())?;
    print!("{summary}");
    Ok(())
}

/// `thinwire lab run --emulate` in a build without the emulator.
#[cfg(not(feature = "emulator"))]
fn emulate(_: &Scenario, _: RunArgs, _: Option<Duration>) -> Result<(), String> {
    Err(not_built::error("lab run --emulate", "emulator"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(matches!(cli.command, Command::Gateway { .. }));
    let result = match cli.command {
        Command::Lab { command } => match command {
            LabCommand::Run(args) => run(args),
            LabCommand::List => {
                lab::list();
                Ok(())
            }
            LabCommand::Gateway(args) => lab::gateway(args),
            LabCommand::Merge(args) => lab::merge(args),
        },
        #[cfg(feature = "gateway")]
        Command::Gateway { command } => gateway::run(command),
        #[cfg(not(feature = "gateway"))]
        Command::Gateway(_) => Err(not_built::error("gateway", "gateway")),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::run(args),
        #[cfg(not(feature = "bench"))]
        Command::Bench(_) => Err(not_built::error("bench", "bench")),
        Command::Policy(args) => policy::run(args),
        Command::Keygen(args) => keygen::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
