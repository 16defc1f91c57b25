//! Recorder aggregation: rows, counts, deadlines, redundancy, wire, samples, GSI, table.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_lab::metrics::{
    game_satisfaction_index, Engine, MessageRecord, MetricsError, ProtocolInfo, Recorder, Results,
    RunKey, Samples, WireCounters,
};

fn msg(
    key: impl Into<RunKey>,
    class: &str,
    sent_ms: u64,
    latency_ms: Option<u64>,
    bytes: u32,
    deadline_ms: Option<u64>,
) -> MessageRecord {
    MessageRecord {
        key: key.into(),
        class: class.to_owned(),
        sent_at_us: sent_ms * 1000,
        delivered_at_us: latency_ms.map(|l| (sent_ms + l) * 1000),
        payload_bytes: bytes,
        deadline_us: deadline_ms.map(|d| d * 1000),
    }
}

/// A seeded generator for property loops.
fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn finish(rec: Recorder) -> (Results, Samples) {
    rec.finish("unit", Engine::Sim, 7)
}

#[test]
fn one_class_null_row_per_protocol_then_its_classes() {
    let mut r = Recorder::new();
    r.set_protocol_info(ProtocolInfo {
        key: "tcp".into(),
        model: true,
    });
    r.record(msg("thinwire", "move", 0, Some(10), 20, None));
    r.record(msg("tcp", "chat", 0, Some(30), 20, None));
    r.record(msg("tcp", "move", 0, Some(50), 20, None));
    r.record(msg("thinwire", "chat", 0, None, 20, None));
    let (res, samples) = finish(r);
    let rows: Vec<(&str, Option<&str>, bool)> = res
        .runs
        .iter()
        .map(|x| (x.key.protocol.as_str(), x.class.as_deref(), x.model))
        .collect();
    // Protocols in order of first mention; classes in order of first appearance (move
    // was recorded before chat).
    assert_eq!(
        rows,
        vec![
            ("tcp", None, true),
            ("tcp", Some("move"), true),
            ("tcp", Some("chat"), true),
            ("thinwire", None, false),
            ("thinwire", Some("move"), false),
            ("thinwire", Some("chat"), false),
        ]
    );
    assert_eq!(res.scenario, "unit");
    assert_eq!(res.engine, Engine::Sim);
    assert_eq!(res.seed, 7);
    let all = res.run(&"thinwire".into(), None).unwrap();
    assert_eq!(
        (all.messages.sent, all.messages.delivered, all.messages.lost),
        (2, 1, 1)
    );
    let tcp = res.run(&"tcp".into(), None).unwrap();
    assert_eq!(tcp.latency_ms.mean, 40.0);
    assert_eq!(tcp.latency_ms.max, 50.0);
    assert_eq!(
        samples.get(&"tcp".into(), None).unwrap().latencies_us,
        vec![30_000, 50_000]
    );
    assert_eq!(
        samples
            .get(&"tcp".into(), Some("chat"))
            .unwrap()
            .latencies_us,
        vec![30_000]
    );
    assert_eq!(samples.series().len(), res.runs.len());
    assert_eq!(res.classes(), vec!["move", "chat"]);
}

#[test]
fn declared_protocol_without_messages_gets_an_empty_row() {
    let mut r = Recorder::new();
    r.set_protocol_info(ProtocolInfo {
        key: "udp".into(),
        model: true,
    });
    let (res, samples) = finish(r);
    assert_eq!(res.runs.len(), 1);
    let row = &res.runs[0];
    assert_eq!(row.class, None);
    assert_eq!(row.messages.sent, 0);
    assert_eq!(row.latency_ms.p999, 0.0);
    assert_eq!(row.deadline_ms, None);
    assert_eq!(row.redundancy, 0.0);
    assert!(samples.get(&"udp".into(), None).unwrap().is_empty());
}

#[test]
fn deadline_misses_count_late_and_undelivered_messages() {
    let mut r = Recorder::new();
    // deadline 100 ms: on time, exactly on the deadline (met), late, never delivered.
    r.record(msg("p", "attack", 0, Some(40), 10, Some(100)));
    r.record(msg("p", "attack", 5, Some(100), 10, Some(100)));
    r.record(msg("p", "attack", 9, Some(101), 10, Some(100)));
    r.record(msg("p", "attack", 20, None, 10, Some(100)));
    // Another class without a deadline, one lost message.
    r.record(msg("p", "move", 0, Some(500), 10, None));
    r.record(msg("p", "move", 0, None, 10, None));
    let (res, _) = finish(r);

    let attack = res.run(&"p".into(), Some("attack")).unwrap();
    assert_eq!(attack.deadline_ms, Some(100.0));
    assert_eq!(attack.deadline_miss_rate, Some(0.5));
    assert_eq!(attack.messages.lost, 1);

    let mv = res.run(&"p".into(), Some("move")).unwrap();
    assert_eq!(mv.deadline_ms, None);
    assert_eq!(mv.deadline_miss_rate, None);

    // The all-classes row judges only the messages that carry a deadline.
    let all = res.run(&"p".into(), None).unwrap();
    assert_eq!(all.deadline_ms, Some(100.0));
    assert_eq!(all.deadline_miss_rate, Some(0.5));
    assert_eq!(all.messages.sent, 6);
    assert_eq!(all.messages.lost, 2);
}

#[test]
fn deadline_reported_is_the_most_common_one() {
    let mut r = Recorder::new();
    for (i, d) in [300u64, 200, 300, 200, 300, 1000].iter().enumerate() {
        r.record(msg("p", "chat", i as u64, Some(250), 1, Some(*d)));
    }
    // Tie between 50 and 70 in another class: the smaller wins.
    r.record(msg("p", "hit", 0, Some(60), 1, Some(70)));
    r.record(msg("p", "hit", 0, Some(60), 1, Some(50)));
    let (res, _) = finish(r);
    let chat = res.run(&"p".into(), Some("chat")).unwrap();
    assert_eq!(chat.deadline_ms, Some(300.0));
    // 250 ms misses the two 200 ms deadlines only.
    assert_eq!(chat.deadline_miss_rate, Some(0.333333333)); // 2/6, rounded to 1e-9
    let hit = res.run(&"p".into(), Some("hit")).unwrap();
    assert_eq!(hit.deadline_ms, Some(50.0));
    assert_eq!(hit.deadline_miss_rate, Some(0.5));
}

#[test]
fn redundancy_and_wire_arithmetic() {
    let mut r = Recorder::new();
    for _ in 0..10 {
        r.record(msg("fec", "move", 0, Some(1), 100, None));
    }
    r.record(msg("fec", "chat", 0, Some(1), 1000, None));
    // 2000 unique payload bytes; counters added in two calls accumulate.
    r.add_wire(
        &"fec".into(),
        WireCounters {
            bytes: 3000,
            packets: 20,
            payload_bytes_sent: 2500,
        },
    );
    r.add_wire(
        &"fec".into(),
        WireCounters {
            bytes: 1000,
            packets: 5,
            payload_bytes_sent: 500,
        },
    );
    // A protocol that never transmitted half of its (superseded) payload.
    r.record(msg("latest", "move", 0, Some(1), 100, None));
    r.record(msg("latest", "move", 0, None, 100, None));
    r.add_wire(
        &"latest".into(),
        WireCounters {
            bytes: 128,
            packets: 1,
            payload_bytes_sent: 100,
        },
    );
    let (res, _) = finish(r);
    let all = res.run(&"fec".into(), None).unwrap();
    assert_eq!(all.payload_bytes, 2000);
    assert_eq!(all.redundancy, 0.5); // 3000 / 2000 - 1
    assert_eq!((all.wire.bytes, all.wire.packets), (4000, 25));
    // Per-class rows: their own unique payload, the protocol's wire totals and redundancy.
    let mv = res.run(&"fec".into(), Some("move")).unwrap();
    assert_eq!(mv.payload_bytes, 1000);
    assert_eq!(mv.redundancy, 0.5);
    assert_eq!(mv.wire, all.wire);
    let chat = res.run(&"fec".into(), Some("chat")).unwrap();
    assert_eq!(chat.payload_bytes, 1000);

    let latest = res.run(&"latest".into(), None).unwrap();
    assert_eq!(latest.redundancy, -0.5);
}

#[test]
fn random_records_aggregate_consistently() {
    let mut rng = rng(0xfeed);
    let protocols = ["a", "b", "c"];
    let classes = ["move", "attack", "talk"];
    for round in 0..40 {
        let mut r = Recorder::new();
        let mut expected_sent = std::collections::BTreeMap::new();
        let n = 1 + rng.random_range(0..3000);
        for i in 0..n {
            let p = protocols[rng.random_range(0..3) as usize];
            let c = classes[rng.random_range(0..3) as usize];
            let lat = (rng.random_range(0..10) != 0).then(|| rng.random_range(0..400));
            let deadline = (c != "move").then_some(200);
            r.record(msg(
                p,
                c,
                i,
                lat,
                1 + rng.random_range(0..100) as u32,
                deadline,
            ));
            *expected_sent.entry((p, c)).or_insert(0u64) += 1;
        }
        let (res, samples) = r.finish("prop", Engine::Emu, round);
        for all in res.protocol_runs() {
            let classes: Vec<_> = res.class_runs().filter(|x| x.key == all.key).collect();
            let sent: u64 = classes.iter().map(|x| x.messages.sent).sum();
            let delivered: u64 = classes.iter().map(|x| x.messages.delivered).sum();
            let payload: u64 = classes.iter().map(|x| x.payload_bytes).sum();
            assert_eq!(all.messages.sent, sent);
            assert_eq!(all.messages.delivered, delivered);
            assert_eq!(all.payload_bytes, payload);
            for x in classes.iter().chain(std::iter::once(&all)) {
                assert_eq!(x.messages.lost, x.messages.sent - x.messages.delivered);
                let s = samples.get(&x.key, x.class.as_deref()).unwrap();
                assert_eq!(s.len() as u64, x.messages.delivered);
                assert!(s.latencies_us.windows(2).all(|w| w[0] <= w[1]));
                if let Some(c) = &x.class {
                    assert_eq!(
                        x.messages.sent,
                        expected_sent[&(x.key.protocol.as_str(), c.as_str())]
                    );
                }
                if x.messages.delivered > 0 {
                    assert_eq!(
                        x.latency_ms.max,
                        *s.latencies_us.last().unwrap() as f64 / 1000.0
                    );
                }
            }
            // The all-classes samples are exactly the union of the class samples.
            let mut union: Vec<u64> = classes
                .iter()
                .flat_map(|x| {
                    samples
                        .get(&x.key, x.class.as_deref())
                        .unwrap()
                        .latencies_us
                        .clone()
                })
                .collect();
            union.sort_unstable();
            assert_eq!(samples.get(&all.key, None).unwrap().latencies_us, union);
        }
        // Determinism: the same records give the same results.
        assert_eq!(res.to_json_pretty(), res.clone().to_json_pretty());
    }
}

#[test]
fn same_records_give_identical_output() {
    let build = || {
        let mut rng = rng(5);
        let mut r = Recorder::new();
        for i in 0..5000 {
            let lat = (rng.random_range(0..20) != 0).then(|| 50 + rng.random_range(0..300));
            r.record(msg(
                ["x", "y"][rng.random_range(0..2) as usize],
                ["m", "n"][rng.random_range(0..2) as usize],
                i,
                lat,
                24,
                Some(250),
            ));
        }
        r.finish("det", Engine::Sim, 1)
    };
    let (a, sa) = build();
    let (b, sb) = build();
    assert_eq!(a.to_json_pretty(), b.to_json_pretty());
    assert_eq!(a.terminal_table(), b.terminal_table());
    assert_eq!(sa, sb);
}

#[test]
fn gsi_formula_and_ratios() {
    assert_eq!(game_satisfaction_index(0.0, 0.0), 1.0);
    let g = game_satisfaction_index(100.0, 10.0);
    assert!((g - (-1.6f64 * 0.1 - 9.2 * 0.01).exp()).abs() < 1e-15);

    let mut r = Recorder::new();
    // base: latencies 100 ms (jitter 0); fast: 50 ms (jitter 0); none: nothing delivered.
    r.record(msg("base", "m", 0, Some(100), 1, None));
    r.record(msg("fast", "m", 0, Some(50), 1, None));
    r.record(msg("none", "m", 0, None, 1, None));
    let (res, _) = finish(r);
    let s = res.satisfaction_ratios(None).unwrap();
    assert_eq!(s.baseline, Some("base".into()));
    let fast = s.get(&"fast".into(), None).unwrap();
    assert!((fast.ratio.unwrap() - (1.6f64 * 0.05).exp()).abs() < 1e-12);
    assert_eq!(s.get(&"base".into(), None).unwrap().ratio, Some(1.0));
    assert_eq!(s.get(&"none".into(), None).unwrap().gsi, None);
    assert_eq!(s.get(&"none".into(), None).unwrap().ratio, None);
    // Per-class ratios compare the same class.
    assert!(s.get(&"fast".into(), Some("m")).unwrap().ratio.unwrap() > 1.0);

    let named = res.satisfaction_ratios(Some(&"fast".into())).unwrap();
    assert!(
        (named.get(&"base".into(), None).unwrap().ratio.unwrap() - (-0.08f64).exp()).abs() < 1e-12
    );
    assert_eq!(
        res.satisfaction_ratios(Some(&"nope".into())),
        Err(MetricsError::UnknownBaseline("nope".into()))
    );
}

#[test]
fn terminal_table_lists_protocols_then_classes() {
    let mut r = Recorder::new();
    r.set_protocol_info(ProtocolInfo {
        key: "tcp".into(),
        model: true,
    });
    r.set_protocol_info(ProtocolInfo {
        key: "thinwire".into(),
        model: false,
    });
    for i in 0..100 {
        r.record(msg("tcp", "move", i, Some(100 + i), 24, None));
        r.record(msg("tcp", "chat", i, Some(300), 24, Some(250)));
        r.record(msg("thinwire", "move", i, Some(100), 24, None));
        r.record(msg(
            "thinwire",
            "chat",
            i,
            (i % 10 != 0).then_some(120),
            24,
            Some(250),
        ));
    }
    r.add_wire(
        &"tcp".into(),
        WireCounters {
            bytes: 20_000,
            packets: 200,
            payload_bytes_sent: 4800,
        },
    );
    let (res, _) = finish(r);
    let t = res.terminal_table();
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].contains("scenario unit") && lines[0].contains("engine sim"));
    assert!(lines[1].starts_with("protocol"));
    for h in [
        "mean ms",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "deadline miss",
        "wire kB",
        "redundancy",
        "GSI ratio",
    ] {
        assert!(lines[1].contains(h), "header {h}");
    }
    let data: Vec<&str> = lines[2..]
        .iter()
        .copied()
        .filter(|l| l.starts_with("tcp") || l.starts_with("thinwire"))
        .collect();
    assert_eq!(data.len(), 6);
    assert!(data[0].starts_with("tcp (model)") && data[0].contains(" all "));
    assert!(data[1].starts_with("thinwire ") && data[1].contains(" all "));
    assert!(data[2].starts_with("tcp (model)") && data[2].contains(" move "));
    assert!(data[0].contains("200/200"));
    assert!(data[0].contains("20.0")); // wire kB
                                       // tcp misses every chat deadline (300 ms > 250 ms); thinwire loses 10 of its 100 chat
                                       // messages, and only chat messages carry a deadline.
    assert!(data[0].contains("100.00%"));
    assert!(data[1].contains("10.00%"));
    assert!(t.contains("relative to tcp"));
    assert_eq!(
        res.terminal_table_with_baseline(Some(&"x".into())),
        Err(MetricsError::UnknownBaseline("x".into()))
    );
}

#[test]
fn terminal_table_omits_class_rows_for_a_single_class() {
    let mut r = Recorder::new();
    for i in 0..10 {
        r.record(msg("a", "game", i, Some(100), 20, None));
        r.record(msg("b", "game", i, Some(120), 20, None));
    }
    let (res, _) = finish(r);
    // results.json keeps every row…
    assert_eq!(res.runs.len(), 4);
    // …the table does not repeat them.
    let t = res.terminal_table();
    assert_eq!(
        t.lines()
            .filter(|l| l.starts_with("a ") || l.starts_with("b "))
            .count(),
        2
    );
    assert!(t.contains("Every message is of class 'game'"));
    assert!(!t.contains("sweep point"));
}

#[test]
fn run_keys_are_objects_in_json_and_labels_on_screen() {
    let at = RunKey::at("tcp-model", "n=50");
    assert_eq!(at.point.as_deref(), Some("n=50"));
    assert_eq!(at.to_string(), "tcp-model [n=50]");
    assert_eq!(format!("{at:<20}|"), "tcp-model [n=50]    |");
    assert_eq!(
        RunKey::at("thinwire", "delay=50ms,loss=1%").to_string(),
        "thinwire [delay=50ms,loss=1%]"
    );
    // Outside a sweep (an empty point label) there is no point.
    assert_eq!(RunKey::at("thinwire", ""), RunKey::new("thinwire"));
    assert_eq!(RunKey::new("thinwire").to_string(), "thinwire");
    assert_eq!(RunKey::new("thinwire").point_label(), "");
    // A name is never parsed: brackets stay part of the protocol.
    assert_eq!(RunKey::from("odd [x]").point, None);
    let json = serde_json::to_string(&at).unwrap();
    assert_eq!(json, r#"{"protocol":"tcp-model","point":"n=50"}"#);
    assert_eq!(
        serde_json::to_string(&RunKey::new("udp")).unwrap(),
        r#"{"protocol":"udp","point":null}"#
    );
    assert_eq!(serde_json::from_str::<RunKey>(&json).unwrap(), at);
}

#[test]
fn gsi_ratios_compare_within_a_sweep_point() {
    let mut r = Recorder::new();
    for (pt, tcp, tw) in [("n=10", 100, 50), ("n=50", 400, 200)] {
        r.record(msg(RunKey::at("tcp", pt), "m", 0, Some(tcp), 1, None));
        r.record(msg(RunKey::at("tw", pt), "m", 0, Some(tw), 1, None));
    }
    let (res, _) = finish(r);
    let s = res.satisfaction_ratios(None).unwrap();
    assert_eq!(s.baseline, Some("tcp".into()));
    let at = |name: &str, pt: &str| s.get(&RunKey::at(name, pt), None).unwrap().ratio.unwrap();
    assert_eq!(at("tcp", "n=50"), 1.0);
    assert!((at("tw", "n=10") - (1.6f64 * 0.05).exp()).abs() < 1e-12);
    assert!((at("tw", "n=50") - (1.6f64 * 0.2).exp()).abs() < 1e-12);
    // The baseline may be named with or without its point.
    let unnamed_point = res.satisfaction_ratios(Some(&"tw".into())).unwrap();
    assert_eq!(unnamed_point.baseline, Some("tw".into()));
    let named = res
        .satisfaction_ratios(Some(&RunKey::at("tw", "n=10")))
        .unwrap();
    assert_eq!(
        named.get(&RunKey::at("tw", "n=50"), None).unwrap().ratio,
        Some(1.0)
    );
    assert!(res
        .satisfaction_ratios(Some(&RunKey::at("tw", "n=99")))
        .is_err());
    let table = res.terminal_table();
    assert!(table.contains("same sweep point"));
    assert!(table.contains("tw [n=50]"));
}
