//! Deadline workloads in the lab: the deadline configurations of thinwire send with
//! `SendMode::Deadline` (parity counted in the redundancy), the baselines run in the same run,
//! and the deadline columns and summary are filled in.

use std::path::Path;

use thinwire_lab::metrics::{deadline_rows, deadline_table};
use thinwire_lab::runner::{run_scenario, LabRun, NoProgress, RunOptions};
use thinwire_lab::scenario::Scenario;

/// Pangolin's emulation, scaled down: RTT 250 ms, 2% loss, 2 KB per second, deadline 500 ms.
const XBOX_SMALL: &str = r#"
name = "deadline-small"
seed = 3
duration_s = 62
drain_s = 5
clients = 10
protocols = ["thinwire-deadline", "thinwire-rtx-only", "thinwire-fec+1", "tcp-model", "thinwire"]

[access]
delay_ms = 125
loss = 0.02

[[workload]]
kind = "messaging"
size = 2048
interval_ms = 1000
deadline_ms = 500
target = 0.999
start_ms = 2000
"#;

fn run(text: &str) -> LabRun {
    let scn = Scenario::parse(text, Path::new("deadline.toml"), "deadline").expect("valid");
    run_scenario(&scn, &RunOptions::default(), &NoProgress).expect("runs")
}

#[test]
fn deadline_configurations_use_deadline_delivery_and_count_parity() {
    let lab = run(XBOX_SMALL);
    let r = &lab.results;
    let names: Vec<&str> = r
        .protocol_runs()
        .map(|x| {
            assert_eq!(x.key.point, None, "no sweep");
            x.key.protocol.as_str()
        })
        .collect();
    assert_eq!(
        names,
        [
            "thinwire-deadline",
            "thinwire-rtx-only",
            "thinwire-fec+1",
            "tcp-model",
            "thinwire"
        ]
    );
    let unique = 600 * 2048;
    for p in &names {
        let row = r.run(&(*p).into(), Some("bulk")).expect("class row");
        assert_eq!(row.messages.sent, 600, "{p}");
        assert_eq!(row.payload_bytes, unique, "{p}");
        assert_eq!(row.deadline_ms, Some(500.0), "{p}");
        assert!(row.deadline_miss_rate.is_some(), "{p}");
    }
    let note = |p: &str| {
        lab.notes
            .iter()
            .find(|n| n.key == p.into())
            .unwrap_or_else(|| panic!("note of {p}"))
    };
    // Every message of the deadline configurations was sent as a deadline message.
    for p in ["thinwire-deadline", "thinwire-rtx-only", "thinwire-fec+1"] {
        let d = note(p)
            .thinwire
            .and_then(|t| t.with_deadline())
            .unwrap_or_else(|| panic!("{p}: no counters"))
            .deadline;
        assert_eq!(d.messages_sent, 600, "{p}");
        assert_eq!(
            d.delivered,
            r.run(&p.into(), None).expect("row").messages.delivered,
            "{p}"
        );
        assert!(note(p).deadline_summary().is_some());
    }
    let plain = note("thinwire").thinwire.expect("counters");
    assert_eq!(plain.with_deadline(), None);
    assert!(note("thinwire").deadline_summary().is_none());
    assert!(note("tcp-model").thinwire.is_none());

    // Fixed FEC +1 sends at least one recovery shard (512 bytes) per message, and the
    // redundancy in results.json includes them: about 25%.
    let fec = note("thinwire-fec+1")
        .thinwire
        .and_then(|t| t.with_deadline())
        .expect("counters");
    assert!(fec.deadline.parity_shards >= 600, "{fec:?}");
    let fec_row = r.run(&"thinwire-fec+1".into(), None).expect("row");
    assert!(
        fec_row.redundancy >= fec.payload_bytes.parity as f64 / unique as f64 - 1e-9,
        "{} vs parity {}",
        fec_row.redundancy,
        fec.payload_bytes.parity
    );
    assert!(
        (0.24..0.30).contains(&fec_row.redundancy),
        "{}",
        fec_row.redundancy
    );
    // Retransmission only sends about the lost share again; adaptive parity lies between.
    let rtx = r
        .run(&"thinwire-rtx-only".into(), None)
        .expect("row")
        .redundancy;
    let adaptive = r
        .run(&"thinwire-deadline".into(), None)
        .expect("row")
        .redundancy;
    assert!(rtx < 0.08, "{rtx}");
    assert!(adaptive < fec_row.redundancy, "{adaptive}");

    // The deadline summary has a row per protocol, in order.
    let rows = deadline_rows(r, &lab.samples);
    assert_eq!(
        rows.iter()
            .map(|x| x.key.protocol.as_str())
            .collect::<Vec<_>>(),
        names
    );
    for row in &rows {
        assert_eq!(row.sent, 600);
        assert_eq!(row.deadline_ms, 500.0);
        let (p95, p99) = (row.p95_ms.expect("p95"), row.p99_ms.expect("p99"));
        assert!(p95 >= 125.0 && p95 <= p99, "{row:?}");
    }
    let table = deadline_table(&rows);
    assert!(
        table.contains("p99.9 ms") && table.contains("tcp-model (model)"),
        "{table}"
    );
    // results.json names the configurations and carries the deadline fields.
    let json = r.to_json_pretty();
    for p in ["thinwire-deadline", "thinwire-rtx-only", "thinwire-fec+1"] {
        assert!(json.contains(&format!("\"protocol\": \"{p}\"")), "{p}");
    }
    assert!(json.contains("\"deadline_ms\": 500.0"));
    assert!(json.contains("\"deadline_miss_rate\": "));
    // The report carries the deadline summary and the shard counters.
    let html = thinwire_lab::report::Report::new(&lab.results, &lab.samples)
        .params(&lab.params)
        .render()
        .unwrap();
    assert!(html.contains("<table class=\"summary deadline-summary\">"));
    assert!(html.contains("<th>p99.9 ms</th>"));
    assert!(
        html.contains("recovery shards"),
        "shard counters in the parameters"
    );
}

#[test]
fn no_deadline_summary_without_deadlines() {
    let text = XBOX_SMALL
        .replace(
            "kind = \"messaging\"",
            "kind = \"profile\"\ngame = \"anarchy-online\"",
        )
        .replace(
            "size = 2048\ninterval_ms = 1000\ndeadline_ms = 500\ntarget = 0.999\nstart_ms = 2000\n",
            "",
        )
        .replace("duration_s = 62", "duration_s = 10");
    let lab = run(&text);
    assert!(deadline_rows(&lab.results, &lab.samples).is_empty());
    assert!(lab.notes.iter().all(|n| n.deadline_summary().is_none()));
    let html = thinwire_lab::report::Report::new(&lab.results, &lab.samples)
        .params(&lab.params)
        .render()
        .unwrap();
    assert!(!html.contains("deadline-summary"));
}

#[test]
fn messages_too_large_for_deadline_delivery_are_sent_as_ordinary_messages() {
    let text = XBOX_SMALL
        .replace("size = 2048", "size = 40000")
        .replace("duration_s = 62", "duration_s = 12")
        .replace(
            "protocols = [\"thinwire-deadline\", \"thinwire-rtx-only\", \"thinwire-fec+1\", \"tcp-model\", \"thinwire\"]",
            "protocols = [\"thinwire-deadline\"]",
        );
    let lab = run(&text);
    let row = lab
        .results
        .run(&"thinwire-deadline".into(), None)
        .expect("row");
    assert_eq!(row.messages.sent, 100);
    assert_eq!(row.messages.delivered, 100);
    // No message went through deadline delivery.
    assert_eq!(lab.notes[0].thinwire.and_then(|t| t.with_deadline()), None);
}
