//! Tests of `thinwire policy repair`: the policy, its schedule, text, JSON and sweep.

use clap::Parser;

use super::*;

/// The command-line defaults, as clap fills them in.
fn defaults() -> RepairArgs {
    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: RepairArgs,
        #[arg(long)]
        sweep: bool,
    }
    Cmd::parse_from(["repair"]).args
}

#[test]
fn defaults_are_five_percent_on_a_200_ms_path() {
    let d = defaults();
    assert_eq!((d.loss, d.repeat_loss, d.ack_loss), (0.05, None, None));
    assert_eq!((d.rtt_ms, d.rtts, d.stages), (200.0, 1.5, None));
    assert_eq!((d.target, d.max_copies, d.copy_first), (0.999, 3, false));
}

fn at(loss: f64, stages: u8) -> RepairArgs {
    RepairArgs {
        loss,
        stages: Some(stages),
        ..defaults()
    }
}

#[test]
fn five_percent_two_stages_doubles_the_retransmission() {
    let p = solve(&at(0.05, 2)).expect("solvable");
    assert_eq!(p.plan(), &[1, 2]);
    assert!(p.reachable);
    // the defaults derive the same two stages from a 200 ms RTT and 1.5 RTT
    let d = defaults();
    assert_eq!(d.stages(), 2);
    assert_eq!(solve(&d).expect("solvable").plan(), &[1, 2]);
}

#[test]
fn two_percent_needs_no_copy() {
    let p = solve(&at(0.02, 2)).expect("solvable");
    assert_eq!(p.plan(), &[1, 1]);
    assert!(p.reachable);
}

#[test]
fn steady_rto_and_schedule() {
    let a = defaults();
    assert_eq!(a.rto(), Duration::from_millis(206));
    assert_eq!(a.stage_start(1), Duration::ZERO);
    // 206 ms RTO + 25 ms spacing
    assert_eq!(a.stage_start(2), Duration::from_millis(231));
    let text = to_text(&a, &solve(&a).expect("solvable"));
    assert!(
        text.contains("2 stage(s), loss p 5%, repeat loss r 5%, ack loss 5%, target 99.9%"),
        "{text}"
    );
    let row = |stage: &str| {
        text.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&stage) && w.len() == 4)
            .unwrap_or_else(|| panic!("no stage {stage} row in\n{text}"))
    };
    assert_eq!(row("1"), ["1", "0", "ms", "1"]);
    assert_eq!(row("2"), ["2", "231", "ms", "2"]);
    assert!(
        text.contains("expected copies per message: 1.1950"),
        "{text}"
    );
    assert!(text.contains("target reachable: yes"), "{text}");
}

#[test]
fn json_round_trips() {
    let a = at(0.05, 2);
    let p = solve(&a).expect("solvable");
    let json = to_json(&a, &p);
    assert!(
        json.starts_with(
            "{\"stages\": 2, \"loss\": 0.05, \"repeat_loss\": 0.05, \"ack_loss\": 0.05, \
             \"target\": 0.999, \"max_copies\": 3, \"copy_first\": false, \"plan\": [1, 2], "
        ),
        "{json}"
    );
    let back: RepairPolicyJson = serde_json::from_str(&json).expect("round trip");
    assert_eq!(back, to_json_value(&a, &p));
    assert!(back.reachable);
}

#[test]
fn unreachable_target_says_why() {
    // bursts three copies a stage cannot beat: 0.3^3 * 0.8^3 > 0.001
    let a = RepairArgs {
        repeat_loss: Some(0.8),
        ..at(0.3, 2)
    };
    let p = solve(&a).expect("an unreachable target is not an error");
    assert!(!p.reachable);
    assert_eq!(p.plan(), &[1, 1]);
    let text = to_text(&a, &p);
    assert!(
        text.contains("target unreachable: the plain policy"),
        "{text}"
    );
    assert!(!to_json_value(&a, &p).reachable);
}

#[test]
fn sweep_has_one_row_per_loss_rate() {
    let a = defaults();
    let text = sweep_text(&a).expect("valid");
    for loss in SWEEP_LOSS {
        let label = percent_sign(loss);
        let rows = text
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(label.as_str()))
            .count();
        assert_eq!(rows, 1, "{label} in\n{text}");
    }
    let five = text
        .lines()
        .find(|l| l.trim_start().starts_with("5% "))
        .expect("5% row");
    assert_eq!(five.split_whitespace().nth(1), Some("1,2"), "{text}");
    let json = sweep_json(&a).expect("valid");
    let rows: Vec<RepairPolicyJson> = serde_json::from_str(&json).expect("JSON");
    assert_eq!(rows.len(), SWEEP_LOSS.len());
    assert_eq!(rows[3].plan, [1, 1], "2%");
}

#[test]
fn fixed_repeat_loss_stays_fixed_in_the_sweep() {
    let a = RepairArgs {
        repeat_loss: Some(0.3),
        ..defaults()
    };
    let rows = sweep(&a).expect("valid");
    assert!(rows.iter().all(|(a, _)| a.model().repeat_loss == 0.3));
    assert!(rows.iter().all(|(a, _)| a.model().ack_loss == a.loss));
}

#[test]
fn errors_name_the_flag() {
    let with = |f: fn(&mut RepairArgs)| {
        let mut a = defaults();
        f(&mut a);
        a
    };
    let cases = [
        ("--loss", with(|a| a.loss = 2.0)),
        ("--loss", with(|a| a.loss = f64::NAN)),
        ("--repeat-loss", with(|a| a.repeat_loss = Some(-0.1))),
        ("--ack-loss", with(|a| a.ack_loss = Some(0.95))),
        ("--target", with(|a| a.target = 1.0)),
        ("--stages", with(|a| a.stages = Some(0))),
        ("--stages", with(|a| a.stages = Some(MAX_STAGES + 1))),
        ("--max-copies", with(|a| a.max_copies = 0)),
        ("--rtt-ms", with(|a| a.rtt_ms = 0.0)),
        ("--rtt-ms", with(|a| a.rtt_ms = f64::INFINITY)),
        ("--rtts", with(|a| a.rtts = -1.0)),
    ];
    for (flag, a) in cases {
        let e = solve(&a).unwrap_err();
        assert!(e.starts_with(flag), "{flag}: {e}");
        if flag == "--loss" {
            assert!(sweep_text(&a).is_ok(), "the sweep ignores --loss");
        } else {
            assert!(sweep_text(&a).unwrap_err().starts_with(flag), "{flag}");
        }
    }
}
