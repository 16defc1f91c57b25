//! Tests of the paper tables: parsing, metrics, comparison over runs.

use std::path::Path;

use super::*;
use crate::metrics::RunKey;
use crate::protocol::Counters;
use crate::scenario::Scenario;

const BASE: &str = r#"
name = "paper-test"
protocols = ["tcp-model", "udp-model"]
[[workload]]
kind = "profile"
game = "anarchy-online"
"#;

fn parse(extra: &str) -> Result<Scenario, String> {
    Scenario::parse(&format!("{BASE}{extra}"), Path::new("t.toml"), "t").map_err(|e| e.to_string())
}

#[test]
fn published_tables_parse_with_their_defaults() {
    let s = parse(
        r#"
[paper]
title = "A paper"
choices = ["one"]

[[published]]
what = "p99.9"
metric = "p999_ms"
protocol = "tcp-model"
value = 1359
source = "Table 2"

[[published]]
what = "share"
metric = "within_ms"
ms = 80
protocol = "udp-model"
baseline = "tcp-model"
point = "n=10, burst=1"
value = 85
source = "Sec. 4.2"
tolerance_abs = 5

[[published_order]]
what = "UDP < TCP"
metric = "mean_ms"
protocols = ["udp-model", "tcp-model"]
source = "Fig. 9"
slack = 0.05
"#,
    )
    .expect("valid");
    let p = &s.paper;
    assert_eq!(p.info.as_ref().map(|i| i.choices.len()), Some(1));
    assert_eq!(p.published[0].metric, Metric::QuantileMs(0.999));
    assert_eq!(p.published[0].tolerance, Tolerance::Relative(0.15));
    assert_eq!(p.published[1].metric, Metric::WithinMs(80.0));
    assert_eq!(p.published[1].point, ["n=10", "burst=1"]);
    assert_eq!(p.published[1].tolerance, Tolerance::Absolute(5.0));
    assert_eq!(p.orders[0].slack, 0.05);
}

#[test]
fn bad_published_entries_are_refused_with_the_entry_named() {
    let unknown_protocol = parse(
        "[[published]]\nwhat = \"x\"\nmetric = \"mean_ms\"\nprotocol = \"sctp\"\nvalue = 1\nsource = \"s\"\n",
    )
    .unwrap_err();
    assert!(unknown_protocol.contains("`sctp`"), "{unknown_protocol}");
    assert!(
        unknown_protocol.contains("[[published]] #1"),
        "{unknown_protocol}"
    );
    let unknown_metric = parse(
        "[[published]]\nwhat = \"x\"\nmetric = \"median\"\nprotocol = \"tcp-model\"\nvalue = 1\nsource = \"s\"\n",
    )
    .unwrap_err();
    assert!(
        unknown_metric.contains("unknown metric `median`"),
        "{unknown_metric}"
    );
    let no_ms = parse(
        "[[published]]\nwhat = \"x\"\nmetric = \"within_ms\"\nprotocol = \"tcp-model\"\nvalue = 1\nsource = \"s\"\n",
    )
    .unwrap_err();
    assert!(no_ms.contains("needs `ms`"), "{no_ms}");
    let one_protocol = parse(
        "[[published_order]]\nwhat = \"x\"\nmetric = \"mean_ms\"\nprotocols = [\"tcp-model\"]\nsource = \"s\"\n",
    )
    .unwrap_err();
    assert!(one_protocol.contains("at least two"), "{one_protocol}");
}

fn facts() -> JobFacts {
    let mut counters = Counters::new();
    counters.insert("rtx_delay_sum_ms".into(), 1200.0);
    counters.insert("rtx_count".into(), 3.0);
    JobFacts {
        classes: vec![
            ClassFacts {
                class: "move".into(),
                sent: 5,
                payload_bytes: 100,
                // 10, 20, 30, 40 ms delivered; one lost.
                latencies_us: vec![10_000, 20_000, 30_000, 40_000],
            },
            ClassFacts {
                class: "state".into(),
                sent: 1,
                payload_bytes: 100,
                latencies_us: vec![1_000_000],
            },
        ],
        wire_bytes: 500,
        payload_bytes_sent: 250,
        counters,
    }
}

#[test]
fn metrics_follow_their_definitions() {
    let f = facts();
    let mv = ["move".to_owned()];
    assert_eq!(measure(&Metric::MeanMs, &f, &mv), Some(25.0));
    let sd = measure(&Metric::JitterMs, &f, &mv).expect("defined");
    assert!((sd - 125f64.sqrt()).abs() < 1e-9, "{sd}");
    assert_eq!(measure(&Metric::QuantileMs(0.5), &f, &mv), Some(20.0));
    assert_eq!(measure(&Metric::QuantileMs(0.999), &f, &[]), Some(1000.0));
    // Within 20 ms: 2 of the 5 sent (the lost one counts against).
    assert_eq!(measure(&Metric::WithinMs(20.0), &f, &mv), Some(40.0));
    assert_eq!(measure(&Metric::DeliveredPct, &f, &mv), Some(80.0));
    assert_eq!(measure(&Metric::RedundancyPct, &f, &[]), Some(25.0));
    assert_eq!(measure(&Metric::OverheadPct, &f, &[]), Some(150.0));
    let counter = Metric::Counter {
        name: "rtx_delay_sum_ms".into(),
        per: Some("rtx_count".into()),
        scale: 1.0,
    };
    assert_eq!(measure(&counter, &f, &[]), Some(400.0));
    let missing = Metric::Counter {
        name: "nope".into(),
        per: None,
        scale: 1.0,
    };
    assert_eq!(measure(&missing, &f, &[]), None);
    let gsi = measure(&Metric::Gsi, &f, &mv).expect("defined");
    assert!((gsi - (-1.6 * 0.025 - 9.2 * sd / 1000.0)).abs() < 1e-12);
    let nothing = ["talk".to_owned()];
    assert_eq!(measure(&Metric::MeanMs, &f, &nothing), None);
}

fn value(entry: EntryId, run: u32, point: &str, protocol: &str, v: f64) -> Value {
    Value {
        entry,
        run,
        key: RunKey::at(protocol, point),
        value: Some(v),
    }
}

fn published(metric: Metric, baseline: Option<&str>, point: &[&str], value: f64) -> Published {
    Published {
        what: "w".into(),
        metric,
        protocol: "a".into(),
        baseline: baseline.map(str::to_owned),
        classes: Vec::new(),
        point: point.iter().map(|s| (*s).to_owned()).collect(),
        offset: 0.0,
        value,
        source: "s".into(),
        tolerance: Tolerance::Relative(0.2),
        kind: FigureKind::Measured,
        note: String::new(),
    }
}

#[test]
fn a_ratio_is_taken_per_run_then_averaged_with_an_interval() {
    let spec = PaperSpec {
        published: vec![published(Metric::MeanMs, Some("b"), &["n=150"], 2.0)],
        ..PaperSpec::default()
    };
    let id = EntryId::Published(0);
    let points = ["n=10".to_owned(), "n=150".to_owned()];
    let values = vec![
        value(id, 0, "n=150", "a", 300.0),
        value(id, 0, "n=150", "b", 100.0),
        value(id, 1, "n=150", "a", 200.0),
        value(id, 1, "n=150", "b", 100.0),
        // Another point, not the figure's.
        value(id, 0, "n=10", "a", 1.0),
    ];
    let (c, _) = compare_published(&spec, &points, &values);
    let c = &c[0];
    assert_eq!(c.columns.len(), 1, "only n=150 matches");
    let e = c.ours().expect("measured");
    assert_eq!(e.mean, 2.5);
    assert_eq!(e.runs, 2);
    // t(0.975, 1) * s / sqrt(2) with s = 0.7071...
    let h = e.ci95.expect("two runs");
    assert!((h - 12.706 * 0.5).abs() < 1e-9, "{h}");
    assert_eq!(c.verdict, Verdict::Differs, "2.5 is 25% above 2.0");
    assert_eq!(c.ratio(), Some(1.25));
}

#[test]
fn gsi_ratios_come_from_log_indices_and_verdicts_use_the_first_point() {
    let spec = PaperSpec {
        published: vec![published(Metric::Gsi, Some("b"), &[], 3.57)],
        ..PaperSpec::default()
    };
    let id = EntryId::Published(0);
    let points = ["burst=1".to_owned(), "burst=3".to_owned()];
    let values = vec![
        value(id, 0, "burst=1", "a", -0.4),
        value(id, 0, "burst=1", "b", -0.4 - 3.57f64.ln()),
        value(id, 0, "burst=3", "a", -1.0),
        value(id, 0, "burst=3", "b", -1.0),
    ];
    let (c, _) = compare_published(&spec, &points, &values);
    let first = c[0].ours().expect("measured");
    assert!((first.mean - 3.57).abs() < 1e-9);
    assert_eq!(first.ci95, None);
    assert_eq!(c[0].verdict, Verdict::Matches);
    assert_eq!(c[0].columns[1].1.map(|e| e.mean), Some(1.0));
    let (none, _) = compare_published(&spec, &points, &[]);
    assert_eq!(none[0].verdict, Verdict::Missing);
}

#[test]
fn a_gsi_ratio_over_runs_is_the_ratio_of_the_mean_indices() {
    let spec = PaperSpec {
        published: vec![published(Metric::Gsi, Some("b"), &[], 3.57)],
        ..PaperSpec::default()
    };
    let id = EntryId::Published(0);
    let points = ["n=150".to_owned()];
    // Run 0: GSI 0.8 against 0.4; run 1: 0.6 against e^-20 (the baseline's jitter ran away).
    let values = vec![
        value(id, 0, "n=150", "a", 0.8f64.ln()),
        value(id, 0, "n=150", "b", 0.4f64.ln()),
        value(id, 1, "n=150", "a", 0.6f64.ln()),
        value(id, 1, "n=150", "b", -20.0),
    ];
    let (c, _) = compare_published(&spec, &points, &values);
    let e = c[0].ours().expect("measured");
    let want = 0.7 / ((0.4 + (-20.0f64).exp()) / 2.0);
    assert!((e.mean - want).abs() < 1e-9, "{} vs {want}", e.mean);
    // Not the mean of the per-run ratios, which the second run would blow up to ~1.5e8.
    assert!(e.mean < 4.0);
    assert_eq!(e.runs, 2);
    assert!(e.ci95.expect("two runs") > 0.0);
}

#[test]
fn an_order_holds_within_its_slack_and_fails_outside_it() {
    let order = PublishedOrder {
        what: "a < b".into(),
        metric: Metric::MeanMs,
        protocols: vec!["a".into(), "b".into()],
        classes: Vec::new(),
        points: Vec::new(),
        slack: 0.05,
        source: "s".into(),
        note: String::new(),
    };
    let spec = PaperSpec {
        orders: vec![order],
        ..PaperSpec::default()
    };
    let id = EntryId::Order(0);
    let points = ["n=1".to_owned(), "n=2".to_owned(), "n=3".to_owned()];
    let values = vec![
        value(id, 0, "n=1", "a", 100.0),
        value(id, 0, "n=1", "b", 120.0),
        // b 4% below a: within the slack.
        value(id, 0, "n=2", "a", 100.0),
        value(id, 0, "n=2", "b", 96.0),
        // b 10% below a: broken.
        value(id, 0, "n=3", "a", 100.0),
        value(id, 0, "n=3", "b", 90.0),
    ];
    let (_, orders) = compare_published(&spec, &points, &values);
    let holds: Vec<bool> = orders[0].checks.iter().map(|c| c.holds).collect();
    assert_eq!(holds, [true, true, false]);
    assert_eq!(orders[0].score(), (2, 3));
}

#[test]
fn confidence_intervals_widen_with_spread_and_shrink_with_runs() {
    assert_eq!(confidence_interval(&[]), None);
    assert_eq!(confidence_interval(&[4.0]).and_then(|e| e.ci95), None);
    let narrow = confidence_interval(&[10.0, 10.0, 10.0]).expect("values");
    assert_eq!(narrow.ci95, Some(0.0));
    let few = confidence_interval(&[9.0, 11.0, 9.0, 11.0]).expect("values");
    let many: Vec<f64> = (0..40)
        .map(|i| if i % 2 == 0 { 9.0 } else { 11.0 })
        .collect();
    let many = confidence_interval(&many).expect("values");
    assert!(many.ci95 < few.ci95, "{many:?} {few:?}");
    assert!(point_matches("n=150,burst=3", &["burst=3".into()]));
    assert!(!point_matches("n=150,burst=3", &["n=15".into()]));
    assert!(point_matches("", &[]));
}

#[test]
fn latency_from_parses_and_rejects_unknown_origins() {
    let s =
        parse("[paper]\ntitle = \"t\"\nlatency_from = \"first_transmission\"\n").expect("valid");
    assert_eq!(s.paper.latency_from, LatencyFrom::FirstTransmission);
    let s = parse("[paper]\ntitle = \"t\"\n").expect("valid");
    assert_eq!(s.paper.latency_from, LatencyFrom::Write);
    let e = parse("[paper]\ntitle = \"t\"\nlatency_from = \"arrival\"\n").expect_err("unknown");
    assert!(e.contains("first_transmission"), "{e}");
}

#[test]
fn first_transmission_latency_leaves_out_the_wait_for_the_window() {
    use crate::protocol::{TcpModel, TcpVariant};
    use crate::sim::{run, SimSetup};
    use crate::workload::{MessagingWorkload, WorkloadSpec};
    use std::time::Duration;
    use thinwire_netmodel::LinkConfig;
    // One 8000-byte message (6 segments) into an initial window of 3 over a
    // lossless path (50 ms down, 0 up): its last segment leaves one RTT
    // after the write.
    let down = LinkConfig {
        delay: Duration::from_millis(50),
        ..LinkConfig::default()
    };
    let setup = SimSetup {
        duration: Duration::from_millis(500),
        drain: Duration::from_secs(2),
        ..SimSetup::access_only(1, LinkConfig::default(), down)
    };
    let w = [WorkloadSpec::Messaging(MessagingWorkload {
        size: 8000,
        ..MessagingWorkload::default()
    })];
    let out = run(
        &TcpModel::variant(TcpVariant::Linux2623),
        &setup,
        &w,
        &mut |_| {},
    );
    let lat = |from| {
        JobFacts::from_output(&out, from).classes[0]
            .latencies_us
            .clone()
    };
    assert_eq!(lat(LatencyFrom::FirstTransmission), [50_000]);
    assert_eq!(lat(LatencyFrom::Write), [100_000]);
}
