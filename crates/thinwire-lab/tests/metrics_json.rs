//! `results.json` follows its contract (the definitions in `thinwire_lab::metrics`) exactly.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use thinwire_lab::metrics::{
    Engine, MessageRecord, ProtocolInfo, Recorder, Results, RunKey, WireCounters,
};

fn sample_results() -> Results {
    let mut r = Recorder::new();
    r.set_protocol_info(ProtocolInfo {
        key: "tcp".into(),
        model: true,
    });
    for i in 0..50u64 {
        for (p, lat) in [("tcp", 130 + i), ("thinwire", 101)] {
            r.record(MessageRecord {
                key: p.into(),
                class: "move".into(),
                sent_at_us: i * 125_000,
                delivered_at_us: (i % 7 != 0).then_some(i * 125_000 + lat * 1000),
                payload_bytes: 25,
                deadline_us: None,
            });
            r.record(MessageRecord {
                key: p.into(),
                class: "chat".into(),
                sent_at_us: i * 125_000,
                delivered_at_us: Some(i * 125_000 + lat * 1000),
                payload_bytes: 60,
                deadline_us: Some(150_000),
            });
        }
    }
    r.add_wire(
        &"tcp".into(),
        WireCounters {
            bytes: 12_345,
            packets: 99,
            payload_bytes_sent: 4600,
        },
    );
    r.finish("json-test", Engine::Sim, 42).0
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn is_int(v: &Value) -> bool {
    v.is_u64() || v.is_i64()
}

/// A JSON number written as a float or an integer: the contract's `f`.
fn is_float(v: &Value) -> bool {
    v.is_number()
}

#[test]
fn json_shape_matches_the_contract() {
    let res = sample_results();
    let v: Value = serde_json::from_str(&res.to_json_pretty()).unwrap();
    assert_eq!(keys(&v), vec!["engine", "runs", "scenario", "seed"]);
    assert_eq!(v["scenario"], Value::from("json-test"));
    assert_eq!(v["engine"], Value::from("sim"));
    assert!(is_int(&v["seed"]));
    assert_eq!(v["seed"], Value::from(42));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let mut saw_null_class = 0;
    let mut saw_null_deadline = 0;
    for run in runs {
        assert_eq!(
            keys(run),
            vec![
                "class",
                "deadline_miss_rate",
                "deadline_ms",
                "key",
                "latency_ms",
                "messages",
                "model",
                "payload_bytes",
                "redundancy",
                "wire"
            ]
        );
        // The run key is an object; `point` is null outside a sweep.
        assert_eq!(keys(&run["key"]), vec!["point", "protocol"]);
        assert!(run["key"]["protocol"].is_string());
        assert!(run["key"]["point"].is_null());
        assert!(run["model"].is_boolean());
        assert!(run["class"].is_string() || run["class"].is_null());
        saw_null_class += usize::from(run["class"].is_null());
        assert_eq!(keys(&run["messages"]), vec!["delivered", "lost", "sent"]);
        for k in ["sent", "delivered", "lost"] {
            assert!(is_int(&run["messages"][k]), "messages.{k}");
        }
        assert_eq!(
            keys(&run["latency_ms"]),
            vec!["jitter", "max", "mean", "p50", "p90", "p99", "p999"]
        );
        for k in ["mean", "jitter", "p50", "p90", "p99", "p999", "max"] {
            assert!(is_float(&run["latency_ms"][k]), "latency_ms.{k}");
        }
        for k in ["deadline_ms", "deadline_miss_rate"] {
            assert!(is_float(&run[k]) || run[k].is_null(), "{k}");
        }
        assert_eq!(
            run["deadline_ms"].is_null(),
            run["deadline_miss_rate"].is_null()
        );
        saw_null_deadline += usize::from(run["deadline_ms"].is_null());
        assert_eq!(keys(&run["wire"]), vec!["bytes", "packets"]);
        assert!(is_int(&run["wire"]["bytes"]) && is_int(&run["wire"]["packets"]));
        assert!(is_int(&run["payload_bytes"]));
        assert!(is_float(&run["redundancy"]));
    }
    assert_eq!(saw_null_class, 2, "one class-null row per protocol");
    assert_eq!(saw_null_deadline, 2, "the move rows have no deadline");

    // Values land where the contract says.
    let tcp_all = &runs[0];
    assert_eq!(tcp_all["key"]["protocol"], Value::from("tcp"));
    assert_eq!(tcp_all["model"], Value::from(true));
    assert_eq!(tcp_all["class"], Value::Null);
    assert_eq!(tcp_all["messages"]["sent"], Value::from(100));
    assert_eq!(tcp_all["messages"]["lost"], Value::from(8));
    assert_eq!(tcp_all["wire"]["bytes"], Value::from(12_345));
    assert_eq!(tcp_all["payload_bytes"], Value::from(50 * 25 + 50 * 60));
    assert_eq!(tcp_all["deadline_ms"].as_f64(), Some(150.0));
}

#[test]
fn engine_spellings() {
    assert_eq!(serde_json::to_string(&Engine::Sim).unwrap(), "\"sim\"");
    assert_eq!(serde_json::to_string(&Engine::Emu).unwrap(), "\"emu\"");
    assert_eq!(
        serde_json::from_str::<Engine>("\"emu\"").unwrap(),
        Engine::Emu
    );
}

#[test]
fn json_round_trips_and_rejects_extra_fields() {
    let res = sample_results();
    let text = res.to_json_pretty();
    assert!(text.ends_with("}\n"));
    let back = Results::from_json(&text).unwrap();
    assert_eq!(back, res);
    assert_eq!(back.to_json_pretty(), text);

    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["runs"][0]["gsi"] = Value::from(1.0);
    assert!(Results::from_json(&v.to_string()).is_err());
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["engine"] = Value::from("real");
    assert!(Results::from_json(&v.to_string()).is_err());
}

#[test]
fn json_is_deterministic() {
    assert_eq!(
        sample_results().to_json_pretty(),
        sample_results().to_json_pretty()
    );
}

#[test]
fn random_results_round_trip_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut next = move || rng.random::<u64>();
    // Protocol p2 runs at a sweep point.
    let key = |p: u64| RunKey::at(format!("p{p}"), if p == 2 { "n=5" } else { "" });
    for round in 0..30 {
        let mut r = Recorder::new();
        let n = 1 + next() % 2000;
        for i in 0..n {
            let sent = i * 10_007 + next() % 997;
            r.record(MessageRecord {
                key: key(next() % 3),
                class: format!("c{}", next() % 4),
                sent_at_us: sent,
                delivered_at_us: (next() % 13 != 0).then(|| sent + 1 + next() % 3_000_000),
                payload_bytes: (1 + next() % 2000) as u32,
                deadline_us: (next() % 2 == 0).then(|| 1 + next() % 1_000_000),
            });
        }
        for p in 0..3 {
            r.add_wire(
                &key(p),
                WireCounters {
                    bytes: next() % 10_000_000,
                    packets: next() % 100_000,
                    payload_bytes_sent: next() % 5_000_000,
                },
            );
        }
        let res = r.finish("random", Engine::Emu, round).0;
        let text = res.to_json_pretty();
        assert!(text.contains("\"point\": \"n=5\"") && text.contains("\"point\": null"));
        let back = Results::from_json(&text).unwrap();
        assert_eq!(back, res, "round {round}");
        assert_eq!(back.to_json_pretty(), text);
    }
}
