//! Scenario parsing tests.

use super::*;

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
