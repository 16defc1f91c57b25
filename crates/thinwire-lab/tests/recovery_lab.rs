//! thinwire's loss-recovery counters in the lab: an AO-like thin stream at 5% loss gives
//! every thinwire configuration its counters (consistent with one another), the other
//! protocols none, and the report a "thinwire loss recovery" table with a row per thinwire
//! configuration and sweep point.

use std::path::Path;

use thinwire_lab::metrics::RunKey;
use thinwire_lab::runner::{run_scenario, LabRun, NoProgress, RunOptions};
use thinwire_lab::scenario::Scenario;
use thinwire_proto::ConnectionCounters;

/// `ao-thin-stream`, scaled down: 4 clients, 40 s, RTT 300 ms, loss 1% and 5%.
const AO_SMALL: &str = r#"
name = "ao-recovery"
seed = 2
duration_s = 40
drain_s = 10
clients = 4
protocols = ["tcp-model", "thinwire"]

[access]
delay_ms = 150
loss = 0.05

[sweep]
loss = [0.01, 0.05]

[[workload]]
kind = "profile"
game = "anarchy-online"
direction = "down"
"#;

fn run() -> LabRun {
    let scn = Scenario::parse(AO_SMALL, Path::new("ao.toml"), "ao").expect("valid");
    run_scenario(&scn, &RunOptions::default(), &NoProgress).expect("runs")
}

fn counters(lab: &LabRun, key: &RunKey) -> Option<ConnectionCounters> {
    let note = lab.notes.iter().find(|n| n.key == *key);
    let note = note.unwrap_or_else(|| panic!("note of {key}"));
    note.thinwire.map(|t| t.total())
}

#[test]
fn thin_stream_at_5_percent_loss_has_consistent_recovery_counters_and_table() {
    let lab = run();
    let keys: Vec<&RunKey> = lab.notes.iter().map(|n| &n.key).collect();
    let thinwire: Vec<&RunKey> = keys
        .iter()
        .copied()
        .filter(|k| k.protocol.starts_with("thinwire"))
        .collect();
    assert_eq!(thinwire.len(), 2, "{keys:?}");
    for k in keys.iter().filter(|k| k.protocol == "tcp-model") {
        assert_eq!(counters(&lab, k), None, "{k}");
    }
    let at_5 = thinwire
        .iter()
        .copied()
        .find(|k| k.point_label().contains("5%"))
        .unwrap_or_else(|| panic!("no 5% point in {thinwire:?}"));
    for l in &thinwire {
        let c = counters(&lab, l).unwrap_or_else(|| panic!("{l}: no counters"));
        let r = c.recovery;
        assert!(r.packets_lost > 0, "{l}: {r:?}");
        assert!(r.thin_fast_losses <= r.packets_lost, "{l}: {r:?}");
        assert!(r.spurious_losses <= r.packets_lost, "{l}: {r:?}");
        assert!(r.spurious_timeouts <= r.rto_expirations, "{l}: {r:?}");
        assert!(c.frames.retransmitted > 0, "{l}: {c:?}");
        assert!(
            r.repairs_in_time + r.repairs_late <= c.frames.retransmitted + r.repair_copies,
            "{l}: {c:?}"
        );
        assert!(r.repairs_in_time + r.repairs_late > 0, "{l}: {r:?}");
    }
    let r5 = counters(&lab, at_5).expect("counters").recovery;
    assert!(r5.rto_expirations > 0, "{r5:?}");
    let text = lab.notes.iter().find(|n| n.key == *at_5).expect("note");
    let summary = text.recovery_summary().expect("summary");
    assert!(
        summary.contains(&format!("{} RTO expirations", r5.rto_expirations)),
        "{summary}"
    );

    // The report: one table, a row per thinwire configuration and sweep point, none for
    // the model.
    let html = lab.report_html().unwrap();
    assert_eq!(html.matches("<table class=\"recovery\">").count(), 1);
    let start = html.find("<h2 id=\"recovery\">").expect("section");
    let table = &html[start..start + html[start..].find("</table>").expect("end")];
    assert!(table.contains("<th>RTO expirations</th>"), "{table}");
    assert!(table.contains("<th>repairs in time</th>"), "{table}");
    assert_eq!(
        table.matches("<tr><td class=\"proto\">").count(),
        2,
        "{table}"
    );
    assert!(!table.contains("tcp-model"), "{table}");
    let row = format!("<td class=\"num\">{}</td>", r5.rto_expirations);
    assert!(table.contains(&row), "{table}");
    assert!(html.contains("server's and the clients' endpoints"));
}

#[test]
fn recovery_counters_are_deterministic() {
    let (a, b) = (run(), run());
    assert_eq!(a.recovery_rows(), b.recovery_rows());
    assert_eq!(a.report_html().unwrap(), b.report_html().unwrap());
}
