//! Scenario parsing tests.

use std::path::Path;

use thinwire_netmodel::LossModel;

use super::*;
use crate::error::LabError;
use crate::protocol::{DeadlineParity, Mapping, ThinwireProtocol};

fn parse(text: &str) -> Result<Scenario, LabError> {
    Scenario::parse(text, Path::new("test.toml"), "test")
}

const MINIMAL: &str = r#"
protocols = ["tcp-model"]
[[workload]]
kind = "profile"
game = "anarchy-online"
"#;

#[test]
fn builtin_scenarios_parse() {
    for (name, _) in BUILTIN {
        let s = Scenario::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&s.name, name);
        assert!(!s.points().is_empty());
    }
}

#[test]
fn scenario_files_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("scenarios dir") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "toml") {
            Scenario::load(p.to_str().expect("utf-8 path"))
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 5, "{n} scenario files");
}

#[test]
fn minimal_scenario_defaults() {
    let s = parse(MINIMAL).expect("valid");
    assert_eq!(s.seed, 1);
    assert_eq!(s.duration, Duration::from_secs(60));
    assert_eq!(s.protocols, vec![ProtocolSpec::TcpModel]);
    assert_eq!(s.points().len(), 1);
}

#[test]
fn gateway_edges_default_to_one_and_are_bounded() {
    assert_eq!(parse(MINIMAL).expect("valid").gateway_edges, 1);
    let eight = parse(&format!("gateway_edges = 8\n{MINIMAL}")).expect("valid");
    assert_eq!(eight.gateway_edges, 8);
    assert!(eight
        .params()
        .iter()
        .any(|(k, v)| k == "gateway edges" && v.starts_with('8')));
    for bad in [0, MAX_GATEWAY_EDGES + 1] {
        let e = parse(&format!("gateway_edges = {bad}\n{MINIMAL}")).unwrap_err();
        assert!(e.to_string().contains("gateway_edges"), "{e}");
    }
}

fn err_line(text: &str) -> (usize, String) {
    let e = parse(text).unwrap_err();
    let msg = e.to_string();
    let rest = msg
        .strip_prefix("test.toml:")
        .unwrap_or_else(|| panic!("no file in `{msg}`"));
    let (line, m) = rest.split_once(':').expect("line");
    (
        line.parse()
            .unwrap_or_else(|_| panic!("no line in `{msg}`")),
        m.to_owned(),
    )
}

#[test]
fn errors_name_file_and_line() {
    // Syntax error.
    let (l, _) = err_line("protocols = [\"tcp-model\"]\nseed = = 3\n");
    assert_eq!(l, 2);
    // Unknown key.
    let (l, m) = err_line(&format!("{MINIMAL}\n[access]\ndelay_ms = 5\nfoo = 1\n"));
    assert_eq!(l, 9, "{m}");
    // A probability out of range.
    let (l, m) = err_line(&format!("{MINIMAL}\n[access]\nloss = 1.5\n"));
    assert_eq!(l, 8);
    assert!(
        m.contains("loss") || m.contains("variant") || m.contains("probability"),
        "{m}"
    );
    // Unknown protocol.
    let (l, m) = err_line("seed = 1\nprotocols = [\n  \"tcp-model\",\n  \"quic\",\n]\n[[workload]]\nkind = \"profile\"\ngame = \"anarchy-online\"\n");
    assert_eq!(l, 4);
    assert!(m.contains("quic"));
    // Unknown game.
    let (l, m) = err_line(
        "protocols = [\"tcp-model\"]\n\n[[workload]]\nkind = \"profile\"\ngame = \"pong\"\n",
    );
    assert_eq!(l, 3, "{m}");
    assert!(m.contains("pong"));
    // Negative delay.
    let (l, _) = err_line(&format!("{MINIMAL}\n[access]\ndelay_ms = -4\n"));
    assert_eq!(l, 8);
    // Cross traffic without a queue limit.
    let (l, m) = err_line(&format!(
        "{MINIMAL}\n[bottleneck]\nbandwidth_kbps = 600\n[bottleneck.cross]\ntarget_loss = 0.04\n"
    ));
    assert_eq!(l, 7, "{m}");
    // A missing trace file names that file.
    let e = parse(&format!(
        "{MINIMAL}\n[[workload]]\nkind = \"trace\"\npath = \"nope.csv\"\n"
    ))
    .unwrap_err();
    assert!(e.to_string().contains("nope.csv"), "{e}");
}

#[test]
fn bad_rows_in_a_referenced_trace_name_that_file_and_line() {
    let dir = std::env::temp_dir().join(format!("thinwire-scn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    std::fs::write(dir.join("t.csv"), "0,up,20,move\n5,up,twenty,move\n").expect("write");
    std::fs::write(dir.join("link.txt"), "10,0\n10,x\n").expect("write");
    let scn = dir.join("s.toml");
    std::fs::write(
        &scn,
        "protocols = [\"udp-model\"]\n[[workload]]\nkind = \"trace\"\npath = \"t.csv\"\n",
    )
    .expect("write");
    let e = Scenario::load(scn.to_str().expect("utf-8"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("t.csv:2:"), "{e}");
    std::fs::write(
        &scn,
        "protocols = [\"udp-model\"]\n[access]\ntrace = \"link.txt\"\n[[workload]]\nkind = \"profile\"\ngame = \"bzflag\"\n",
    )
    .expect("write");
    let e = Scenario::load(scn.to_str().expect("utf-8"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("link.txt:2:"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_scenario_name() {
    let e = Scenario::load("no-such-scenario").unwrap_err();
    assert!(matches!(e, LabError::UnknownScenario(_)));
}

#[test]
fn sweep_points_and_labels() {
    let s = Scenario::load("ao-thin-stream").expect("built in");
    let pts = s.points();
    assert_eq!(pts.len(), 4);
    assert_eq!(pts[0].label(&s.sweep), "delay=50ms,loss=1%");
    let setup = s.setup(&pts[3]).expect("setup");
    assert_eq!(setup.access_up[0].delay, Duration::from_millis(150));
    let m = Scenario::load("mmorpg-content").expect("built in");
    let pts = m.points();
    assert_eq!(
        pts.iter().map(|p| p.clients).collect::<Vec<_>>(),
        vec![10, 50, 100, 150]
    );
    assert_eq!(pts[1].label(&m.sweep), "n=50");
    let setup = m.setup(&pts[0]).expect("setup");
    assert_eq!(setup.access_up.len(), 10);
    assert!(setup
        .access_up
        .iter()
        .all(|c| (64_000..=128_000).contains(&c.bandwidth_bps.unwrap_or(0))));
    assert!(setup.cross.0.is_some_and(|c| c.rate_pps > 10.0));
}

#[test]
fn a_jitter_sweep_sets_the_access_jitter_as_a_share_of_the_delay() {
    let s = Scenario::load("griwodz-ao").expect("built in");
    let pts = s.points();
    // delay x loss x burst x jitter.
    assert_eq!(pts.len(), 16);
    assert_eq!(
        pts[1].label(&s.sweep),
        "delay=100ms,loss=1%,burst=1,jitter=10%"
    );
    let still = s.setup(&pts[0]).expect("setup");
    assert_eq!(still.access_up[0].jitter, Duration::ZERO);
    let last = s.setup(&pts[15]).expect("setup");
    assert_eq!(last.access_down[0].delay, Duration::from_millis(300));
    assert_eq!(last.access_down[0].jitter, Duration::from_millis(30));
    assert!(last.access_down[0].reorder);
    let bad = format!("{MINIMAL}[sweep]\njitter = [11]\n");
    assert!(parse(&bad).is_err());
}

const MESSAGING: &str = r#"
protocols = ["thinwire-deadline", "thinwire-rtx-only", "thinwire-fec+1", "tcp-model"]
clients = 200
[[workload]]
kind = "messaging"
deadline_ms = 500
target = 0.99
start_ms = 2000
"#;

#[test]
fn deadline_protocol_names_round_trip() {
    for name in ProtocolSpec::NAMES {
        let spec = ProtocolSpec::parse(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(&spec.name(), name);
    }
    let fec = |n: u8| {
        ProtocolSpec::Thinwire(ThinwireProtocol {
            thin: true,
            mapping: Mapping::SingleOrdered,
            deadline: Some(DeadlineParity::Fixed(n)),
            deadline_shards: None,
            insecure_cleartext: false,
            copy_first: false,
        })
    };
    assert_eq!(ProtocolSpec::parse("thinwire-fec+8"), Some(fec(8)));
    // the cleartext opt-out: any thinwire configuration, named with the suffix
    match ProtocolSpec::parse("thinwire-fec+2-insecure-cleartext") {
        Some(ProtocolSpec::Thinwire(t)) => {
            assert!(t.insecure_cleartext);
            assert_eq!(t.deadline, Some(DeadlineParity::Fixed(2)));
            assert_eq!(
                ProtocolSpec::Thinwire(t).name(),
                "thinwire-fec+2-insecure-cleartext"
            );
        }
        other => panic!("{other:?}"),
    }
    for bad in [
        "thinwire-fec+0",
        "thinwire-fec+9",
        "thinwire-fec+01",
        "thinwire-fec+-1",
        "thinwire-fec+",
        "tcp-model-insecure-cleartext",
        "thinwire-insecure-cleartext-insecure-cleartext",
        "insecure-cleartext",
    ] {
        assert_eq!(ProtocolSpec::parse(bad), None, "{bad}");
    }
    let s = parse(MESSAGING).expect("valid");
    let names: Vec<String> = s.protocols.iter().map(ProtocolSpec::name).collect();
    assert_eq!(
        names,
        [
            "thinwire-deadline",
            "thinwire-rtx-only",
            "thinwire-fec+1",
            "tcp-model"
        ]
    );
    let WorkloadSpec::Messaging(m) = &s.workloads[0] else {
        panic!("{:?}", s.workloads[0]);
    };
    assert_eq!(m.target, 0.99);
    assert_eq!(m.start, Duration::from_secs(2));
    assert_eq!(m.deadline, Duration::from_millis(500));
}

#[test]
fn deadline_target_defaults_and_is_checked() {
    let s = parse(&MESSAGING.replace("target = 0.99\n", "")).expect("valid");
    let WorkloadSpec::Messaging(m) = &s.workloads[0] else {
        panic!()
    };
    assert_eq!(m.target, 0.999);
    for bad in ["target = 1.0", "target = 0", "target = 1.5"] {
        let (l, m) = err_line(&MESSAGING.replace("target = 0.99", bad));
        // The position is the workload's (the workload kinds are read as one table).
        assert_eq!(l, 4, "{bad}: {m}");
        assert!(m.contains("target"), "{m}");
    }
}

const WILD: &str = r#"
protocols = ["thinwire-deadline"]
clients = 2000
seed = 9
[access]
loss = { gilbert_elliott = { mean = 0.01, burst = 3 } }
[access.per_client]
delay_ms = { lognormal = { median = 75, sigma = 0.5 }, min = 10, max = 300 }
[access.per_client.loss]
mixture = [
  { weight = 0.9, uniform = [0.0, 0.02] },
  { weight = 0.1, uniform = [0.05, 0.15] },
]
[[workload]]
kind = "messaging"
"#;

#[test]
fn per_client_links_follow_their_distributions() {
    let s = parse(WILD).expect("valid");
    let p = s.points()[0];
    let setup = s.setup(&p).expect("setup");
    assert_eq!(setup.access_up.len(), 2000);
    assert_eq!(setup.access_down.len(), 2000);
    let mut delays: Vec<f64> = setup
        .access_down
        .iter()
        .map(|c| c.delay.as_secs_f64() * 1000.0)
        .collect();
    delays.sort_by(f64::total_cmp);
    let median = delays[1000];
    assert!((median - 75.0).abs() < 5.0, "median one-way delay {median}");
    assert!(delays[0] >= 10.0 && delays[1999] <= 300.0);
    let mut lossy = 0;
    for (up, down) in setup.access_up.iter().zip(&setup.access_down) {
        // Same draw in both directions.
        assert_eq!(up.delay, down.delay);
        assert_eq!(up.loss, down.loss);
        // The Gilbert-Elliott shape (mean burst 3) is kept, the mean replaced.
        let LossModel::GilbertElliott { p_bad_to_good, .. } = down.loss else {
            panic!("{:?}", down.loss);
        };
        assert!((p_bad_to_good - 1.0 / 3.0).abs() < 1e-12);
        let m = down.loss.mean_loss();
        assert!((0.0..=0.15 + 1e-12).contains(&m), "{m}");
        assert!(!(0.02 + 1e-12..0.05 - 1e-12).contains(&m), "{m}");
        if m >= 0.05 {
            lossy += 1;
        }
    }
    assert!(
        (150..=250).contains(&lossy),
        "{lossy} lossy clients of 2000"
    );
    // The same seed gives the same population; another seed another one.
    let again = parse(WILD).expect("valid").setup(&p).expect("setup");
    let view = |v: &[LinkConfig]| -> Vec<(Duration, LossModel)> {
        v.iter().map(|c| (c.delay, c.loss)).collect()
    };
    assert_eq!(view(&again.access_down), view(&setup.access_down));
    let other = parse(&WILD.replace("seed = 9", "seed = 10"))
        .expect("valid")
        .setup(&p)
        .expect("setup");
    assert_ne!(view(&other.access_down), view(&setup.access_down));
    // The report describes the draws.
    let params = s.params();
    let drawn = params
        .iter()
        .find(|(k, _)| k == "per-client links drawn")
        .map(|(_, v)| v.clone())
        .expect("drawn summary");
    assert!(
        drawn.starts_with("2000 clients: RTT (propagation) median"),
        "{drawn}"
    );
    assert!(params.iter().any(|(k, v)| k == "access down per client"
        && v.contains("lognormal(median 75, sigma 0.5) in [10, 300]")));
}

#[test]
fn per_client_bernoulli_and_constants() {
    let s = parse(
        "protocols = [\"udp-model\"]\nclients = 3\n[access]\ndelay_ms = 20\n[access.down.per_client]\nloss = 0.07\n[[workload]]\nkind = \"messaging\"\n",
    )
    .expect("valid");
    let setup = s.setup(&s.points()[0]).expect("setup");
    // Only the down direction is drawn per client.
    assert_eq!(setup.access_up.len(), 1);
    assert_eq!(setup.access_down.len(), 3);
    for c in &setup.access_down {
        assert_eq!(c.loss, LossModel::Bernoulli { p: 0.07 });
        assert_eq!(c.delay, Duration::from_millis(20));
    }
}

#[test]
fn per_client_errors_name_the_line() {
    let base = "protocols = [\"udp-model\"]\n[[workload]]\nkind = \"messaging\"\n[access]\n";
    let cases = [
        // loss outside [0, 0.95]
        ("[access.per_client]\nloss = { uniform = [0.0, 1.2] }\n", "outside"),
        // two kinds in one table
        (
            "[access.per_client]\ndelay_ms = { uniform = [1, 2], value = 3 }\n",
            "exactly one",
        ),
        // weight outside a mixture
        (
            "[access.per_client]\ndelay_ms = { uniform = [1, 2], weight = 3 }\n",
            "weight",
        ),
        // min above max
        (
            "[access.per_client]\ndelay_ms = { lognormal = { median = 5, sigma = 1 }, min = 9, max = 3 }\n",
            "min",
        ),
        // empty mixture
        ("[access.per_client]\nloss = { mixture = [] }\n", "mixture"),
        // sweep conflict
        (
            "[sweep]\ndelay_ms = [10]\n[access.per_client]\ndelay_ms = 5\n",
            "sweep.delay_ms",
        ),
    ];
    for (extra, want) in cases {
        let text = format!("{base}{extra}");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.starts_with("test.toml:"), "{e}");
        assert!(e.contains(want), "{extra}: {e}");
    }
    let e = parse(&format!(
        "{base}[bottleneck]\nbandwidth_kbps = 100\n[bottleneck.per_client]\ndelay_ms = 5\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("per_client") && e.contains("test.toml:5:"),
        "{e}"
    );
    // A sub-table without its parent's header gets a hint (toml-rs/toml#798).
    let e = parse("protocols = [\"udp-model\"]\n[[workload]]\nkind = \"messaging\"\n[access.per_client]\ndelay_ms = 5\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("write the parent table's header"), "{e}");
}

#[test]
fn profile_rates_and_the_load_sweep() {
    let s = Scenario::load("petlund-bzflag").expect("built in");
    let rates = |p: &SweepPoint| -> Vec<f64> {
        s.workloads_at(p)
            .iter()
            .map(|w| match w {
                WorkloadSpec::Profile(pw) => pw.rate_pps(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let pts = s.points();
    assert_eq!(pts[0].label(&s.sweep), "burst=1,load=x1");
    let base = rates(&pts[0]);
    assert!(
        (base[0] - 1000.0 / 24.0).abs() < 1e-9,
        "Table 1's rate down"
    );
    assert!((base[1] - 1.6667).abs() < 1e-9, "rate_pps up");
    let half = pts.iter().find(|p| p.load == Some(0.5)).expect("x0.5");
    let r = rates(half);
    assert!((r[0] - base[0] / 2.0).abs() < 1e-9 && (r[1] - base[1] / 2.0).abs() < 1e-9);
}
