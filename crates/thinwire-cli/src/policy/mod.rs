//! `thinwire policy`: solves and prints the core's policies (`thinwire_proto::policy`), the
//! deadline policy ([`deadline`]) or, with `thinwire policy repair`, the repair policy of
//! reliable thin streams ([`repair`]), as a table for people or as JSON for tools.

mod deadline;
mod json;
mod repair;

use clap::{Args, Subcommand};

use repair::RepairArgs;

/// The arguments of `thinwire policy`: the deadline policy's flags, or a subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct PolicyArgs {
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
    #[command(flatten)]
    args: RepairArgs,
    /// Print the policy for every loss rate from 0% to 20% instead of one (--repeat-loss and
    /// --ack-loss, when given, stay fixed; otherwise they follow the loss rate).
    #[arg(long)]
    sweep: bool,
    /// Print JSON instead of a table (an array of policies with --sweep).
    #[arg(long)]
    json: bool,
}

/// `thinwire policy`: prints the deadline policy, or the repair policy with `repair`.
pub(crate) fn run(args: PolicyArgs) -> Result<(), String> {
    if let Some(PolicyCommand::Repair(r)) = args.command {
        print!("{}", repair_output(&r)?);
        return Ok(());
    }
    // clap requires all four flags when there is no subcommand
    let (Some(packets), Some(stages), Some(loss), Some(target)) =
        (args.packets, args.stages, args.loss, args.target)
    else {
        return Err("--packets, --stages, --loss and --target are required".into());
    };
    let p = deadline::solve(packets, stages, loss, target)?;
    if args.json {
        print!("{}", deadline::to_json(&p));
    } else {
        print!("{}", deadline::to_text(&p));
    }
    Ok(())
}

/// What `thinwire policy repair` prints for its arguments.
fn repair_output(r: &RepairCmdArgs) -> Result<String, String> {
    let args = &r.args;
    Ok(match (r.sweep, r.json) {
        (true, true) => repair::sweep_json(args)?,
        (true, false) => repair::sweep_text(args)?,
        (false, json) => {
            let p = repair::solve(args)?;
            if json {
                repair::to_json(args, &p)
            } else {
                repair::to_text(args, &p)
            }
        }
    })
}
