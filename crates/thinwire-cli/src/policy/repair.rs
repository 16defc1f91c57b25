//! `thinwire policy repair`: solves and prints the repair policy of a reliable thin stream
//! (`thinwire_proto::policy::repair::RepairPolicy`): how many copies of a message each transmission
//! round ("stage": 1 = first transmission, 2 = first retransmission after the timeout, ...)
//! sends, so that the message arrives within the one-way delay plus `rtts` round trips with
//! the target probability at the least expected number of copies.
//!
//! Three renderings: a table for people ([`to_text`]), a table over loss rates
//! ([`sweep_text`], `--sweep`) and JSON for tools ([`to_json`], [`sweep_json`]):
//!
//! ```json
//! {"stages": 2, "loss": 0.05, "repeat_loss": 0.05, "ack_loss": 0.05, "target": 0.999,
//!  "max_copies": 3, "plan": [1, 2], "expected_copies": 1.195,
//!  "miss_probability": 1.25e-4, "reachable": true}
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thinwire_proto::policy::repair::{copy_spacing, RepairModel, RepairPolicy, RepairTarget};
use thinwire_proto::policy::repair::{MAX_COPIES, MAX_LOSS, MAX_STAGES};
use thinwire_proto::{thin_rto, TransportConfig};

use super::json::spaced_json;

/// Loss rates of the `--sweep` table.
const SWEEP_LOSS: [f64; 11] = [
    0.0, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2,
];

/// Largest `--rtt-ms` accepted (a minute).
const MAX_RTT_MS: f64 = 60_000.0;

/// The path and target of `thinwire policy repair` (its flags but `--sweep` and `--json`).
#[derive(Debug, Clone, Copy, PartialEq, clap::Args)]
pub(super) struct RepairArgs {
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
}

impl RepairArgs {
    /// The smoothed RTT (`rtt_ms`; at least a microsecond, at most a minute).
    fn srtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms.clamp(0.001, MAX_RTT_MS) / 1000.0)
    }

    /// The retransmission timeout of a thin stream on a steady path (no RTT variance): the
    /// core's [`thin_rto`] with the default `timer_granularity` and `max_ack_delay`.
    fn rto(&self) -> Duration {
        let c = TransportConfig::default();
        thin_rto(
            self.srtt(),
            Duration::ZERO,
            c.timer_granularity,
            c.max_ack_delay,
        )
    }

    /// The stages: `stages` when given, otherwise
    /// `RepairTarget { rtts, target, max_copies }.stages(srtt, rto)` with the steady-path
    /// thin-stream RTO of [`RepairArgs::rto`].
    fn stages(&self) -> u8 {
        self.stages.unwrap_or_else(|| {
            RepairTarget {
                rtts: self.rtts,
                target: self.target,
                max_copies: self.max_copies,
                copy_first: self.copy_first,
            }
            .stages(self.srtt(), self.rto())
        })
    }

    /// When stage `stage` (1-based) leaves, after the first transmission:
    /// `(stage - 1) * (rto + copy spacing)`.
    fn stage_start(&self, stage: u8) -> Duration {
        (self.rto() + copy_spacing(self.srtt())) * u32::from(stage.saturating_sub(1))
    }

    /// The model these arguments describe (not validated).
    fn model(&self) -> RepairModel {
        RepairModel {
            stages: self.stages(),
            loss: self.loss,
            repeat_loss: self.repeat_loss.unwrap_or(self.loss),
            ack_loss: self.ack_loss.unwrap_or(self.loss),
            target: self.target,
            max_copies: self.max_copies,
            max_first_copies: if self.copy_first { self.max_copies } else { 1 },
        }
    }

    /// Checks every argument, with an error message naming the offending flag.
    fn validate(&self) -> Result<(), String> {
        if !(self.rtt_ms.is_finite() && self.rtt_ms > 0.0 && self.rtt_ms <= MAX_RTT_MS) {
            return Err(format!(
                "--rtt-ms {}: must be a positive number of milliseconds up to {MAX_RTT_MS}",
                self.rtt_ms
            ));
        }
        if !(self.rtts.is_finite() && self.rtts > 0.0) {
            return Err(format!(
                "--rtts {}: must be a positive number of round trips (e.g. 1.5)",
                self.rtts
            ));
        }
        if let Some(i) = self.stages {
            if !(1..=MAX_STAGES).contains(&i) {
                return Err(format!("--stages {i}: must be between 1 and {MAX_STAGES}"));
            }
        }
        let rates = [
            ("--loss", Some(self.loss)),
            ("--repeat-loss", self.repeat_loss),
            ("--ack-loss", self.ack_loss),
        ];
        for (flag, rate) in rates {
            if let Some(rate) = rate.filter(|r| !(0.0..=MAX_LOSS).contains(r)) {
                return Err(format!(
                    "{flag} {rate}: must be a probability between 0 and {MAX_LOSS}"
                ));
            }
        }
        if !(self.target > 0.0 && self.target < 1.0) {
            return Err(format!(
                "--target {}: must be strictly between 0 and 1 (e.g. 0.999)",
                self.target
            ));
        }
        if !(1..=MAX_COPIES).contains(&self.max_copies) {
            return Err(format!(
                "--max-copies {}: must be between 1 and {MAX_COPIES}",
                self.max_copies
            ));
        }
        Ok(())
    }
}

/// Solves the repair policy for the command-line arguments, with error messages naming the
/// offending flag. An unreachable target is not an error: the policy is then the plain one,
/// flagged by [`RepairPolicy::reachable`].
pub(super) fn solve(args: &RepairArgs) -> Result<RepairPolicy, String> {
    args.validate()?;
    RepairPolicy::solve(&args.model()).map_err(|e| e.to_string())
}

/// The JSON output of `thinwire policy repair --json` (one per loss rate with `--sweep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepairPolicyJson {
    /// `I`: stages whose copies can arrive in time.
    stages: u8,
    /// `p`: loss rate of a first transmission.
    loss: f64,
    /// `r`: loss rate of a copy sent after a loss.
    repeat_loss: f64,
    /// Probability that the acknowledgement of a copy that arrived is lost.
    ack_loss: f64,
    /// Wanted probability of arriving in time.
    target: f64,
    /// Most copies one stage may send.
    max_copies: u8,
    /// Whether first transmissions may be copied.
    copy_first: bool,
    /// Copies each stage sends, first stage first.
    plan: Vec<u8>,
    /// Expected copies sent per message.
    expected_copies: f64,
    /// Probability that the message misses the target.
    miss_probability: f64,
    /// Whether the target is met (when not, `plan` is the plain policy).
    reachable: bool,
}

/// The JSON document of a policy solved from `args`.
fn to_json_value(args: &RepairArgs, policy: &RepairPolicy) -> RepairPolicyJson {
    let m = args.model();
    RepairPolicyJson {
        stages: policy.stages(),
        loss: m.loss,
        repeat_loss: m.repeat_loss,
        ack_loss: m.ack_loss,
        target: m.target,
        max_copies: m.max_copies,
        copy_first: m.max_first_copies > 1,
        plan: policy.plan().to_vec(),
        expected_copies: policy.expected_copies,
        miss_probability: policy.miss,
        reachable: policy.reachable,
    }
}

/// The policy as one line of JSON (with a trailing newline).
pub(super) fn to_json(args: &RepairArgs, policy: &RepairPolicy) -> String {
    spaced_json(&to_json_value(args, policy))
}

/// The policy of every loss rate of [`SWEEP_LOSS`] (`repeat_loss` and `ack_loss` follow the
/// loss rate unless `args` fixes them); `args.loss` is ignored.
fn sweep(args: &RepairArgs) -> Result<Vec<(RepairArgs, RepairPolicy)>, String> {
    RepairArgs { loss: 0.0, ..*args }.validate()?;
    SWEEP_LOSS
        .iter()
        .map(|&loss| {
            let a = RepairArgs { loss, ..*args };
            solve(&a).map(|p| (a, p))
        })
        .collect()
}

/// The sweep as one line of JSON: an array of [`RepairPolicyJson`], one per loss rate.
pub(super) fn sweep_json(args: &RepairArgs) -> Result<String, String> {
    let rows: Vec<RepairPolicyJson> = sweep(args)?
        .iter()
        .map(|(a, p)| to_json_value(a, p))
        .collect();
    Ok(spaced_json(&rows))
}

/// A probability as a percentage without trailing zeros (`0.075` -> `7.5`).
fn percent(x: f64) -> String {
    let s = format!("{:.4}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Milliseconds of a duration without trailing zeros.
fn ms(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64() * 1000.0);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A plan as `1,2`.
fn plan_text(policy: &RepairPolicy) -> String {
    let copies: Vec<String> = policy.plan().iter().map(u8::to_string).collect();
    copies.join(",")
}

/// The path and deadline lines shared by the table and the sweep.
fn path_lines(out: &mut String, args: &RepairArgs) {
    let c = TransportConfig::default();
    let _ = writeln!(
        out,
        "path: RTT {} ms, RTO {} ms (RTT + {} ms granularity + {} ms peer ACK delay), \
         copy spacing {} ms",
        ms(args.srtt()),
        ms(args.rto()),
        ms(c.timer_granularity),
        ms(c.max_ack_delay),
        ms(copy_spacing(args.srtt()))
    );
    let deadline = args.srtt().mul_f64(args.rtts);
    let stages = args.stages();
    let how = if args.stages.is_some() {
        "given by --stages"
    } else {
        "the stages that fit"
    };
    let _ = writeln!(
        out,
        "deadline: one-way delay + {} RTT ({} ms); {stages} stage(s) ({how})",
        args.rtts,
        ms(deadline)
    );
}

/// Why an unreachable target falls back to the plain policy.
fn unreachable_text(out: &mut String, args: &RepairArgs) {
    let m = args.model();
    let most = [m.max_copies; MAX_STAGES as usize];
    let (_, best_miss) = m.evaluate(&most);
    let _ = writeln!(
        out,
        "target unreachable: the plain policy (one copy per stage) is used. Even {} copies in \
         each of the {} stage(s) miss with probability {best_miss:.3e} (budget {:.3e}); copies \
         that cannot bring the message in time only load a path that is already failing. \
         Allow more time (--rtts) or stages (--stages), more copies (--max-copies), or lower \
         --target.",
        m.max_copies,
        m.stages,
        1.0 - m.target
    );
}

/// The policy as a table for people: the model, then one row per stage (when it leaves
/// after the first transmission, copies), then the expected copies, the miss probability
/// and whether the target is reachable.
pub(super) fn to_text(args: &RepairArgs, policy: &RepairPolicy) -> String {
    let m = args.model();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "repair policy: {} stage(s), loss p {}%, repeat loss r {}%, ack loss {}%, target {}%, \
         at most {} copies per stage",
        policy.stages(),
        percent(m.loss),
        percent(m.repeat_loss),
        percent(m.ack_loss),
        percent(m.target),
        m.max_copies
    );
    path_lines(&mut out, args);
    out.push('\n');
    let _ = writeln!(out, "{:>5}  {:>10}  {:>6}", "stage", "leaves at", "copies");
    for stage in 1..=policy.stages() {
        let at = format!("{} ms", ms(args.stage_start(stage)));
        let _ = writeln!(out, "{stage:>5}  {at:>10}  {:>6}", policy.copies(stage));
    }
    let _ = writeln!(
        out,
        "(a stage's further copies leave {} ms after its first; retransmissions after the \
         last stage send one copy)",
        ms(copy_spacing(args.srtt()))
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "expected copies per message: {:.4} ({:.2}% overhead)",
        policy.expected_copies,
        (policy.expected_copies - 1.0) * 100.0
    );
    let _ = writeln!(
        out,
        "miss probability: {} (budget {:.3e})",
        sci(policy.miss, 3),
        1.0 - m.target
    );
    if policy.reachable {
        out.push_str("target reachable: yes\n");
    } else {
        unreachable_text(&mut out, args);
    }
    out
}

/// The policy over the loss rates of [`SWEEP_LOSS`] as a table for people: loss, plan,
/// expected copies, miss probability, reachable (what `thinwire policy repair --sweep`
/// prints).
pub(super) fn sweep_text(args: &RepairArgs) -> Result<String, String> {
    let rows = sweep(args)?;
    let mut out = String::new();
    let follows = |rate: Option<f64>| rate.map_or_else(|| "= loss".to_owned(), percent_sign);
    let _ = writeln!(
        out,
        "repair policy by loss rate: target {}%, at most {} copies per stage, repeat loss {}, \
         ack loss {}",
        percent(args.target),
        args.max_copies,
        follows(args.repeat_loss),
        follows(args.ack_loss)
    );
    path_lines(&mut out, args);
    out.push('\n');
    let plan_width = rows
        .iter()
        .map(|(_, p)| plan_text(p).len())
        .chain(["plan".len()])
        .max()
        .unwrap_or(4);
    let _ = writeln!(
        out,
        "{:>6}  {:<plan_width$}  {:>15}  {:>9}  {:>9}",
        "loss", "plan", "expected copies", "miss", "reachable"
    );
    for (a, p) in &rows {
        let _ = writeln!(
            out,
            "{:>6}  {:<plan_width$}  {:>15.4}  {:>9}  {:>9}",
            percent_sign(a.loss),
            plan_text(p),
            p.expected_copies,
            sci(p.miss, 2),
            if p.reachable { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        out,
        "(plan: copies per stage, first transmission first; an unreachable target gets the \
         plain policy)"
    );
    Ok(out)
}

/// A probability in scientific notation with `digits` decimals, `0` when it is zero.
fn sci(x: f64, digits: usize) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else {
        format!("{x:.digits$e}")
    }
}

/// A probability as a percentage with its sign (`0.05` -> `5%`).
fn percent_sign(x: f64) -> String {
    format!("{}%", percent(x))
}

#[cfg(test)]
mod tests;
