//! `thinwire policy`: solves and prints one deadline-delivery decision policy
//! (`thinwire_proto::policy::deadline::Policy`): how many packets to send at each stage
//! (round trip) given how many of the message's `k` packets are still missing,
//! so that the message is complete after the last stage with the target
//! probability at the least expected number of packets.
//!
//! Two renderings: a table for people ([`to_text`]) and JSON for tools
//! ([`to_json`]):
//!
//! ```json
//! {"packets": 4, "stages": 2, "loss": 0.02, "target": 0.999,
//!  "expected_packets": 4.16, "miss_probability": 3.1e-5,
//!  "policy": [{"stage": 1, "missing": 1, "send": 1}, ...]}
//! ```
//!
//! `policy` lists every state, stage by stage and by increasing `missing`
//! (`1..=packets`), as [`Policy::rows`] does.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use thinwire_proto::policy::deadline::{max_extra, Policy, PolicyError, PolicyParams};
use thinwire_proto::policy::deadline::{MAX_LOSS, MAX_PACKETS, MAX_STAGES};

use super::json::spaced_json;

/// One state of a policy in the JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyRowJson {
    /// Stage, 1-based.
    stage: u16,
    /// Packets still missing at the start of the stage.
    missing: u16,
    /// Packets to send in the stage.
    send: u16,
}

/// The JSON output of `thinwire policy --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyJson {
    /// `k`: data packets in the message.
    packets: u16,
    /// `I`: stages before the deadline.
    stages: u16,
    /// Per-packet loss probability.
    loss: f64,
    /// Required probability of completing by the last stage.
    target: f64,
    /// Expected packets sent per message (data and parity, all stages).
    expected_packets: f64,
    /// Probability the message is incomplete after the last stage.
    miss_probability: f64,
    /// Every state and its action.
    policy: Vec<PolicyRowJson>,
}

/// Solves the policy for the command-line arguments, with error messages
/// naming the offending flag.
pub(super) fn solve(packets: u16, stages: u16, loss: f64, target: f64) -> Result<Policy, String> {
    let params = PolicyParams {
        packets,
        stages,
        loss,
        target,
    };
    Policy::solve(params).map_err(|e| match e {
        PolicyError::Packets(k) => {
            format!("--packets {k}: must be between 1 and {MAX_PACKETS}")
        }
        PolicyError::Stages(i) => format!("--stages {i}: must be between 1 and {MAX_STAGES}"),
        PolicyError::Loss(p) => {
            format!("--loss {p}: must be a probability between 0 and {MAX_LOSS}")
        }
        PolicyError::Target(s) => {
            format!("--target {s}: must be strictly between 0 and 1 (e.g. 0.999)")
        }
        PolicyError::Unreachable {
            best_miss_probability,
        } => format!(
            "no policy meets --target {target} with {packets} packets, {stages} stage(s) and \
             loss {loss} within the per-stage cap of {} extra packets: the most reliable one \
             still misses with probability {best_miss_probability:.3e}; lower the target or \
             allow more stages",
            max_extra(packets)
        ),
    })
}

/// The JSON document of a policy.
fn to_json_value(policy: &Policy) -> PolicyJson {
    let p = policy.params();
    PolicyJson {
        packets: p.packets,
        stages: p.stages,
        loss: p.loss,
        target: p.target,
        expected_packets: policy.expected_packets(),
        miss_probability: policy.miss_probability(),
        policy: policy
            .rows()
            .map(|(stage, missing, send)| PolicyRowJson {
                stage,
                missing,
                send,
            })
            .collect(),
    }
}

/// The policy as one line of JSON (with a trailing newline).
pub(super) fn to_json(policy: &Policy) -> String {
    spaced_json(&to_json_value(policy))
}

/// The policy as a table for people: one row per stage, one column per
/// number of missing packets, each cell the packets to send.
pub(super) fn to_text(policy: &Policy) -> String {
    let p = policy.params();
    let k = p.packets;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "deadline-delivery policy: k = {k} packets, {} stage(s), loss {}%, target {}%",
        p.stages,
        p.loss * 100.0,
        p.target * 100.0
    );
    let expected = policy.expected_packets();
    let _ = writeln!(
        out,
        "expected packets per message: {expected:.4} ({:.2}% overhead over {k})",
        (expected / f64::from(k) - 1.0) * 100.0
    );
    let _ = writeln!(
        out,
        "miss probability: {:.3e} (budget {:.3e})",
        policy.miss_probability(),
        p.miss_budget()
    );
    if policy.is_trivial() {
        out.push_str("trivial policy: every stage sends exactly the missing packets (no parity)\n");
    }
    out.push('\n');
    out.push_str("packets to send at the start of a stage, by packets still missing:\n");
    let width = policy
        .rows()
        .map(|(_, _, send)| send.to_string().len())
        .chain([k.to_string().len(), 2])
        .max()
        .unwrap_or(2);
    let label = "stage".len().max(p.stages.to_string().len());
    let _ = write!(out, "{:>label$}  missing:", "");
    out.push('\n');
    let _ = write!(out, "{:>label$}", "stage");
    for q in 1..=k {
        let _ = write!(out, " {q:>width$}");
    }
    out.push('\n');
    let mut rows = policy.rows().peekable();
    while let Some(&(stage, _, _)) = rows.peek() {
        let _ = write!(out, "{stage:>label$}");
        while let Some(&(s, _, send)) = rows.peek() {
            if s != stage {
                break;
            }
            let _ = write!(out, " {send:>width$}");
            rows.next();
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "(a message starts at stage 1 with all {k} missing; the other stage-1 cells are what the \
         policy would send there)"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_example() {
        let p = solve(4, 2, 0.02, 0.999).expect("solvable");
        let j = to_json_value(&p);
        assert_eq!(j.policy.len(), 8);
        let at = |stage: u16, missing: u16| {
            j.policy
                .iter()
                .find(|r| r.stage == stage && r.missing == missing)
                .map(|r| r.send)
        };
        assert_eq!(at(1, 4), Some(4));
        for q in 1..=4 {
            assert_eq!(at(2, q), Some(q + 1));
        }
        assert!(
            (j.expected_packets - 4.16).abs() < 0.01,
            "{}",
            j.expected_packets
        );
        let json = to_json(&p);
        assert!(json.starts_with("{\"packets\": 4, \"stages\": 2, \"loss\": 0.02, \"target\": 0.999, \"expected_packets\": "), "{json}");
        assert!(
            json.contains("\"policy\": [{\"stage\": 1, \"missing\": 1, \"send\": 1}, "),
            "{json}"
        );
        let back: PolicyJson = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, j);
        let text = to_text(&p);
        assert!(
            text.contains("k = 4 packets, 2 stage(s), loss 2%, target 99.9%"),
            "{text}"
        );
        // stage 2 row: 2 3 4 5
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["2", "2", "3", "4", "5"]),
            "{text}"
        );
    }

    #[test]
    fn errors_name_the_flag() {
        assert!(solve(0, 2, 0.02, 0.999).unwrap_err().contains("--packets"));
        assert!(solve(65, 2, 0.02, 0.999).unwrap_err().contains("--packets"));
        assert!(solve(4, 0, 0.02, 0.999).unwrap_err().contains("--stages"));
        assert!(solve(4, 2, 0.7, 0.999).unwrap_err().contains("--loss"));
        assert!(solve(4, 2, f64::NAN, 0.999).unwrap_err().contains("--loss"));
        assert!(solve(4, 2, 0.02, 1.0).unwrap_err().contains("--target"));
        assert!(solve(64, 1, 0.5, 0.999999)
            .unwrap_err()
            .contains("most reliable"));
    }

    #[test]
    fn trivial_policy_is_labelled() {
        let p = solve(4, 5, 0.01, 0.9).expect("solvable");
        assert!(p.is_trivial());
        assert!(to_text(&p).contains("trivial policy"));
    }
}
