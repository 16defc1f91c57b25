//! The `thinwire` command line: listing, running, and clear errors on bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn thinwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(args)
        .output()
        .expect("runs the binary")
}

/// `thinwire lab run SCENARIO --out OUT EXTRA...`.
fn lab_run(scenario: &str, out: &Path, extra: &[&str]) -> Output {
    let out = out.to_str().expect("utf-8");
    let mut args = vec!["lab", "run", scenario, "--out", out];
    args.extend_from_slice(extra);
    thinwire(&args)
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("thinwire-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn list_shows_builtin_scenarios() {
    let o = thinwire(&["lab", "list"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for name in [
        "default",
        "ao-thin-stream",
        "mmorpg-content",
        "messaging-deadline",
        "deadline-xbox",
        "deadline-wild",
        "deadline-wild-bursty",
        "sweep-1000",
    ] {
        assert!(out.contains(name), "{name} missing from\n{out}");
    }
}

#[test]
fn run_writes_results_and_report() {
    let dir = tmpdir("run");
    let scn = dir.join("small.toml");
    std::fs::write(
        &scn,
        "protocols = [\"tcp-model\", \"udp-model\", \"thinwire\"]\nduration_s = 20\nclients = 3\n[access]\ndelay_ms = 50\nloss = 0.05\n[[workload]]\nkind = \"profile\"\ngame = \"world-of-warcraft\"\n",
    )
    .expect("write");
    let out = dir.join("out");
    let o = lab_run(scn.to_str().expect("utf-8"), &out, &["--seed", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("tcp-model (model)"), "{stdout}");
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    assert!(json.contains("\"engine\": \"sim\""));
    assert!(json.contains("\"seed\": 3"));
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<svg"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_scenario_fails_clearly() {
    let o = lab_run("no-such-scenario", &tmpdir("unknown"), &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("unknown scenario `no-such-scenario`"), "{e}");
}

#[test]
fn malformed_toml_names_file_and_line() {
    let dir = tmpdir("malformed");
    let scn = dir.join("bad.toml");
    std::fs::write(
        &scn,
        "protocols = [\"tcp-model\"]\n\n[access]\ndelay_ms = \"soon\"\n",
    )
    .expect("write");
    let o = lab_run(scn.to_str().expect("utf-8"), &dir, &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains(&format!("{}:4:", scn.display())), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_trace_rows_name_the_trace_file_and_line() {
    let dir = tmpdir("trace");
    std::fs::write(
        dir.join("game.csv"),
        "time_ms,direction,size,class\n0,up,20,move\n10,up,-3,move\n",
    )
    .expect("write");
    let scn = dir.join("s.toml");
    std::fs::write(
        &scn,
        "protocols = [\"udp-model\"]\n[[workload]]\nkind = \"trace\"\npath = \"game.csv\"\n",
    )
    .expect("write");
    let o = lab_run(scn.to_str().expect("utf-8"), &dir, &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("game.csv:3:"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_flags_fail() {
    let o = thinwire(&["lab", "run", "--duration", "-5"]);
    assert!(!o.status.success());
    let o = lab_run("default", &tmpdir("dur"), &["--duration", "0"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--duration"), "{}", stderr(&o));
    let o = thinwire(&["lab", "frobnicate"]);
    assert!(!o.status.success());
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn policy_json_reproduces_the_published_example() {
    let o = thinwire(&[
        "policy",
        "--packets",
        "4",
        "--stages",
        "2",
        "--loss",
        "0.02",
        "--target",
        "0.999",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = vec![
        "packets",
        "stages",
        "loss",
        "target",
        "expected_packets",
        "miss_probability",
        "policy",
    ];
    let mut got = keys.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(
        out.starts_with("{\"packets\": 4, \"stages\": 2, \"loss\": 0.02, \"target\": 0.999, "),
        "{out}"
    );
    assert_eq!(v["packets"], 4);
    assert_eq!(v["stages"], 2);
    assert_eq!(v["loss"], 0.02);
    assert_eq!(v["target"], 0.999);
    let expected = v["expected_packets"].as_f64().expect("number");
    assert!((expected - 4.16).abs() < 0.01, "{expected}");
    let miss = v["miss_probability"].as_f64().expect("number");
    assert!(miss > 0.0 && miss <= 0.001, "{miss}");
    let send = |stage: u64, missing: u64| -> u64 {
        v["policy"]
            .as_array()
            .expect("array")
            .iter()
            .find(|r| r["stage"] == stage && r["missing"] == missing)
            .and_then(|r| r["send"].as_u64())
            .unwrap_or_else(|| panic!("no row ({stage}, {missing})"))
    };
    assert_eq!(v["policy"].as_array().expect("array").len(), 8);
    assert_eq!(send(1, 4), 4);
    for q in 1..=4 {
        assert_eq!(send(2, q), q + 1, "stage 2, {q} missing");
    }
}

#[test]
fn policy_table_for_people() {
    let o = thinwire(&[
        "policy",
        "--packets",
        "4",
        "--stages",
        "2",
        "--loss",
        "0.02",
        "--target",
        "0.999",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("expected packets per message: 4.15"), "{out}");
    assert!(out.contains("miss probability:"), "{out}");
    let row = |stage: &str| {
        out.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&stage) && w.len() == 5)
            .unwrap_or_else(|| panic!("no stage {stage} row in\n{out}"))
    };
    assert_eq!(row("1"), ["1", "1", "2", "3", "4"]);
    assert_eq!(row("2"), ["2", "2", "3", "4", "5"]);
}

#[test]
fn policy_bad_arguments_fail_clearly() {
    let base = [
        "policy",
        "--packets",
        "4",
        "--stages",
        "2",
        "--loss",
        "0.02",
        "--target",
        "0.999",
    ];
    let with = |flag: &str, value: &str| -> Vec<String> {
        let mut v: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
        let i = v.iter().position(|a| a == flag).expect("flag");
        v[i + 1] = value.to_owned();
        v
    };
    for (flag, value) in [
        ("--packets", "0"),
        ("--packets", "65"),
        ("--stages", "0"),
        ("--stages", "101"),
        ("--loss", "0.6"),
        ("--loss", "-0.1"),
        ("--loss", "NaN"),
        ("--target", "1"),
        ("--target", "0"),
        ("--target", "1.5"),
        ("--loss", "lots"),
        ("--packets", "-3"),
    ] {
        let args = with(flag, value);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = thinwire(&args);
        assert!(!o.status.success(), "{flag} {value} succeeded");
        let e = stderr(&o);
        assert!(e.contains(flag), "{flag} {value}: {e}");
        assert!(stdout(&o).is_empty(), "{flag} {value}");
    }
    // A missing flag.
    let o = thinwire(&[
        "policy",
        "--packets",
        "4",
        "--stages",
        "2",
        "--loss",
        "0.02",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--target"), "{}", stderr(&o));
    // An unreachable target is an error, not a policy that misses it.
    let o = thinwire(&[
        "policy",
        "--packets",
        "64",
        "--stages",
        "1",
        "--loss",
        "0.5",
        "--target",
        "0.999999",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("most reliable"), "{}", stderr(&o));
}

#[test]
fn unknown_emulator_peer_names_the_available_ones() {
    // Refused before any namespace is created, so this runs without root too.
    let o = lab_run(
        "default",
        &tmpdir("peers"),
        &["--emulate", "--peers", "tcp-nodelay,quic-fast"],
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("\"quic-fast\""), "{err}");
    for known in ["tcp-nodelay", "kcp-fast", "quic-streams", "thinwire"] {
        assert!(err.contains(known), "{known} not listed: {err}");
    }
    // --peers without --emulate is a usage error.
    let o = thinwire(&["lab", "run", "default", "--peers", "kcp"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--emulate"), "{}", stderr(&o));
}

#[test]
fn lab_gateway_writes_both_reproductions() {
    let out = tmpdir("gateway");
    let o = thinwire(&[
        "lab",
        "gateway",
        "--out",
        out.to_str().expect("utf-8"),
        "--duration",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(out.join("gateway.html")).expect("gateway.html");
    assert!(html.contains("Anarchy Online") && html.contains("TCM"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("gateway.json")).expect("json"))
            .expect("parses");
    assert_eq!(json["ao"]["runs"].as_array().map(Vec::len), Some(4));
    let o = thinwire(&["lab", "gateway", "--duration", "0"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--duration"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn gateway_commands_refuse_a_bad_key() {
    let o = thinwire(&[
        "gateway",
        "edge",
        "--listen",
        "127.0.0.1:0",
        "--server-gateway",
        "127.0.0.1:9",
        "--server-gateway-key",
        "not-a-key",
        "--key-file",
        "/nonexistent/dir/key",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("server-gateway-key"), "{}", stderr(&o));
}

#[test]
fn shards_run_apart_and_merge_into_the_whole_run() {
    let dir = tmpdir("shards");
    let shards = dir.join("shards");
    let common = ["--duration", "10", "--runs", "2", "--jobs", "1"];
    for k in ["1/2", "2/2"] {
        let mut extra = common.to_vec();
        extra.extend_from_slice(&["--shard", k]);
        let o = lab_run("default", &shards, &extra);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(shards.join("shard-1-of-2.json").exists());
    let merged = dir.join("merged");
    let o = thinwire(&[
        "lab",
        "merge",
        shards.to_str().expect("utf-8"),
        "--out",
        merged.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = dir.join("whole");
    let o = lab_run("default", &whole, &common);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["results.json", "runs.json", "report.html"] {
        let a = std::fs::read(merged.join(f)).expect("merged output");
        let b = std::fs::read(whole.join(f)).expect("whole output");
        assert!(
            a == b,
            "{f} differs between the merged shards and the whole run"
        );
    }
    // Half the shards is refused, with the missing part named.
    std::fs::remove_file(shards.join("shard-2-of-2.json")).expect("rm");
    let o = thinwire(&[
        "lab",
        "merge",
        shards.to_str().expect("utf-8"),
        "--out",
        merged.to_str().expect("utf-8"),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("shard 2/2 is missing"),
        "{}",
        stderr(&o)
    );
    let bad = lab_run("default", &shards, &["--shard", "3/2"]);
    assert!(!bad.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn papers_runs_every_paper_scenario_into_one_report() {
    let dir = tmpdir("papers");
    let md = dir.join("papers.md");
    // 10 s: pangolin-wild's messages start at 8 s, after its 3,000 handshakes.
    let o = lab_run(
        "papers",
        &dir,
        &["--duration", "10", "--markdown", md.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let json = std::fs::read_to_string(dir.join("paper.json")).expect("paper.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let figures = v["figures"].as_array().expect("figures");
    let mut scenarios: Vec<&str> = figures
        .iter()
        .filter_map(|f| f["scenario"].as_str())
        .collect();
    scenarios.dedup();
    for s in [
        "wu-mmorpg",
        "petlund-bzflag",
        "griwodz-ao",
        "deadline-xbox",
        "pangolin-wild",
    ] {
        assert!(scenarios.contains(&s), "{s} missing from {scenarios:?}");
        assert!(
            dir.join(s).join("results.json").exists(),
            "{s}/results.json"
        );
    }
    // Every figure has a published value and, for the paper's protocols, ours.
    let measured = figures.iter().filter(|f| f["ours"].is_number()).count();
    assert!(
        measured * 10 >= figures.len() * 9,
        "{measured} of {} measured",
        figures.len()
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report");
    assert!(html.contains("Every published figure"));
    assert!(html.contains("gateway/gateway.html"));
    assert!(dir.join("gateway").join("gateway.html").exists());
    // The gateway reproductions' figures are in the comparison, with verdicts.
    for section in ["gateway-ao", "gateway-tcm"] {
        assert!(
            scenarios.contains(&section),
            "{section} missing from {scenarios:?}"
        );
    }
    assert!(figures
        .iter()
        .all(|f| ["matches", "differs", "missing"].contains(&f["verdict"].as_str().unwrap_or(""))));
    // The Markdown document names how it was made and lists the figures it counts apart.
    let md = std::fs::read_to_string(&md).expect("papers.md");
    assert!(
        md.contains("lab run papers --duration 10 --markdown"),
        "{md}"
    );
    assert!(md.contains("counted figures within tolerance"));
    assert!(
        md.contains("## Figures the setup fixes (not counted)"),
        "{md}"
    );
    assert!(html.contains("fixed by setup"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn policy_repair_json_doubles_the_retransmission_at_five_percent() {
    let o = thinwire(&["policy", "repair", "--loss", "0.05", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["plan"], serde_json::json!([1, 2]), "{out}");
    assert_eq!(v["reachable"], true, "{out}");
    assert_eq!(v["stages"], 2, "{out}");
    assert_eq!(v["repeat_loss"], 0.05, "{out}");
    assert_eq!(v["ack_loss"], 0.05, "{out}");
    let expected = v["expected_copies"].as_f64().expect("number");
    assert!((expected - 1.195).abs() < 1e-9, "{expected}");
    assert!(out.starts_with("{\"stages\": 2, \"loss\": 0.05, "), "{out}");
}

#[test]
fn policy_repair_table_and_sweep_for_people() {
    let o = thinwire(&["policy", "repair"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("expected copies per message: 1.1950"), "{out}");
    assert!(out.contains("target reachable: yes"), "{out}");
    let o = thinwire(&["policy", "repair", "--sweep"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let five: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&"5%"))
        .unwrap_or_else(|| panic!("no 5% row in\n{out}"));
    assert_eq!(five[1], "1,2", "{out}");
    assert_eq!(five.last(), Some(&"yes"), "{out}");
    for loss in ["0%", "0.5%", "7.5%", "20%"] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(loss)),
            "no {loss} row in\n{out}"
        );
    }
}

#[test]
fn policy_repair_bad_arguments_fail_clearly() {
    for (flag, value) in [
        ("--loss", "2"),
        ("--loss", "NaN"),
        ("--repeat-loss", "-0.1"),
        ("--ack-loss", "0.95"),
        ("--target", "1"),
        ("--stages", "0"),
        ("--stages", "7"),
        ("--max-copies", "0"),
        ("--rtt-ms", "0"),
        ("--rtts", "-1"),
        ("--loss", "lots"),
    ] {
        let o = thinwire(&["policy", "repair", flag, value]);
        assert!(!o.status.success(), "{flag} {value} succeeded");
        let e = stderr(&o);
        assert!(e.contains(flag), "{flag} {value}: {e}");
        assert!(stdout(&o).is_empty(), "{flag} {value}");
    }
    // The deadline policy's flags and the subcommand do not mix.
    let o = thinwire(&["policy", "--packets", "4", "repair"]);
    assert!(!o.status.success());
}
