//! `thinwire`: the command-line program of the thinwire lab and bench.
#![forbid(unsafe_code)]

mod bench;
mod gateway;
mod lab;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use thinwire_lab::runner::RunOptions;
use thinwire_lab::scenario::Scenario;

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
    Gateway {
        #[command(subcommand)]
        command: gateway::GatewayCommand,
    },
    /// Measure thinwire, ENet and KCP side by side on loopback (messages per second, round
    /// trips, memory per idle connection, a 30 Hz server sweep) and write results.json and
    /// report.html.
    Bench(bench::BenchArgs),
    /// Print the optimal deadline-delivery policy (packets to send per stage) and its expected
    /// cost; `thinwire policy repair` prints the repair policy of reliable thin streams (copies
    /// per retransmission round).
    Policy(PolicyArgs),
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

/// The arguments of `thinwire policy`: the deadline policy's flags, or a subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct PolicyArgs {
    #[command(subcommand)]
    command: Option<PolicyCommand>,
    /// k: data packets in the message (1-64).
    #[arg(long, required = true)]
    packets: Option<u16>,
    /// I: stages (round trips) before the deadline (1-100).
    #[arg(long, required = true)]
    stages: Option<u16>,
    /// Per-packet loss probability (0-0.5).
    #[arg(long, required = true)]
    loss: Option<f64>,
    /// Required probability of completing by the deadline, e.g. 0.999.
    #[arg(long, required = true)]
    target: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the repair policy of reliable thin streams (copies per transmission round).
    ///
    /// How many copies of a message each transmission round (stage 1 = first transmission,
    /// stage 2 = first retransmission after the timeout, ...) sends so that it arrives within
    /// the one-way delay plus --rtts round trips with probability --target, at the least
    /// expected number of copies. --sweep prints the policy for loss rates from 0% to 20%.
    Repair(RepairCmdArgs),
}

/// The arguments of `thinwire policy repair`.
#[derive(Debug, Args)]
struct RepairCmdArgs {
    /// p: loss rate of a first transmission (0-0.9).
    #[arg(
        long,
        default_value_t = 0.05,
        conflicts_with = "sweep",
        allow_negative_numbers = true
    )]
    loss: f64,
    /// r: loss rate of a copy sent after a loss (0-0.9; bursty paths have r > p)
    /// [default: the loss rate].
    #[arg(long, allow_negative_numbers = true)]
    repeat_loss: Option<f64>,
    /// Probability that the acknowledgement of a copy that arrived is lost (0-0.9)
    /// [default: the loss rate].
    #[arg(long, allow_negative_numbers = true)]
    ack_loss: Option<f64>,
    /// Smoothed round-trip time of the path, in milliseconds (the RTO is taken as the core's
    /// thin-stream RTO at the default transport settings).
    #[arg(long, default_value_t = 200.0, allow_negative_numbers = true)]
    rtt_ms: f64,
    /// Time allowed past the one-way delay, in round trips.
    #[arg(long, default_value_t = 1.5, allow_negative_numbers = true)]
    rtts: f64,
    /// I: transmission rounds that can arrive in time (1-6) [default: derived from --rtts
    /// and --rtt-ms].
    #[arg(long)]
    stages: Option<u8>,
    /// Wanted probability of arriving in time.
    #[arg(long, default_value_t = 0.999, allow_negative_numbers = true)]
    target: f64,
    /// Most copies one stage may send (1-4).
    #[arg(long, default_value_t = 3)]
    max_copies: u8,
    /// Allow copies of first transmissions too (off in thinwire's default target: they at
    /// least double the bytes).
    #[arg(long)]
    copy_first: bool,
    /// Print the policy for every loss rate from 0% to 20% instead of one (--repeat-loss and
    /// --ack-loss, when given, stay fixed; otherwise they follow the loss rate).
    #[arg(long)]
    sweep: bool,
    /// Print JSON instead of a table (an array of policies with --sweep).
    #[arg(long)]
    json: bool,
}

/// `thinwire policy`: the deadline policy, or `thinwire policy repair`.
fn policy(args: PolicyArgs) -> Result<(), String> {
    use thinwire_lab::{policy, repair_policy};
    if let Some(PolicyCommand::Repair(r)) = args.command {
        let repair = repair_policy::RepairArgs {
            stages: r.stages,
            rtts: r.rtts,
            rtt_ms: r.rtt_ms,
            loss: r.loss,
            repeat_loss: r.repeat_loss,
            ack_loss: r.ack_loss,
            target: r.target,
            max_copies: r.max_copies,
            copy_first: r.copy_first,
        };
        let out = match (r.sweep, r.json) {
            (true, true) => repair_policy::sweep_json(&repair)?,
            (true, false) => repair_policy::sweep_text(&repair)?,
            (false, json) => {
                let p = repair_policy::solve(&repair)?;
                if json {
                    repair_policy::to_json(&repair, &p)
                } else {
                    repair_policy::to_text(&repair, &p)
                }
            }
        };
        print!("{out}");
        return Ok(());
    }
    // clap requires all four flags when there is no subcommand
    let (Some(packets), Some(stages), Some(loss), Some(target)) =
        (args.packets, args.stages, args.loss, args.target)
    else {
        return Err("--packets, --stages, --loss and --target are required".into());
    };
    let p = policy::solve(packets, stages, loss, target)?;
    if args.json {
        print!("{}", policy::to_json(&p));
    } else {
        print!("{}", policy::to_text(&p));
    }
    Ok(())
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
    /// intervals (overrides the scenario's `runs`; default 1).
    #[arg(long, conflicts_with = "emulate")]
    runs: Option<u32>,
    /// Run only part K of N of the simulations and write DIR/shard-K-of-N.json
    /// (merge the parts with `thinwire lab merge`); see docs/REPRODUCING.md.
    #[arg(long, value_name = "K/N", conflicts_with = "emulate")]
    shard: Option<thinwire_lab::runner::Shard>,
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
}

/// `thinwire lab run`: loads the scenario, checks `--duration`, and hands
/// over to the emulator (`--emulate`) or the simulator.
fn run(args: RunArgs) -> Result<(), String> {
    let name = args.scenario.unwrap_or_else(|| "default".to_owned());
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
        return lab::papers(&args.out, &opts);
    }
    let scn = Scenario::load(&name).map_err(|e| e.to_string())?;
    if let Some(shard) = args.shard {
        return lab::shard(&scn, &args.out, &opts, shard);
    }
    if args.emulate {
        let opts = thinwire_emu::LabRunOptions {
            seed: args.seed,
            duration,
            compare_sim: args.compare_sim,
            serial_peers: args.serial_peers,
            peers: args.peers,
        };
        let summary =
            thinwire_emu::run_and_write(&scn, &args.out, &opts).map_err(|e| e.to_string())?;
        print!("{summary}");
        return Ok(());
    }
    lab::simulate(&scn, &args.out, &opts)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Command::Gateway { command } => gateway::run(command),
        Command::Bench(args) => bench::run(args),
        Command::Policy(args) => policy(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
