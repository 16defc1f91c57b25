//! The `thinwire` command line: listing, running, and clear errors on bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn thinwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(args)
        .output()
        .expect("runs the binary")
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
    let o = thinwire(&[
        "lab",
        "run",
        scn.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--seed",
        "3",
    ]);
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
    let o = thinwire(&[
        "lab",
        "run",
        "no-such-scenario",
        "--out",
        tmpdir("unknown").to_str().expect("utf-8"),
    ]);
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
    let o = thinwire(&[
        "lab",
        "run",
        scn.to_str().expect("utf-8"),
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
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
    let o = thinwire(&[
        "lab",
        "run",
        scn.to_str().expect("utf-8"),
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("game.csv:3:"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_flags_fail() {
    let o = thinwire(&["lab", "run", "--duration", "-5"]);
    assert!(!o.status.success());
    let o = thinwire(&[
        "lab",
        "run",
        "default",
        "--duration",
        "0",
        "--out",
        tmpdir("dur").to_str().expect("utf-8"),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--duration"), "{}", stderr(&o));
    let o = thinwire(&["lab", "frobnicate"]);
    assert!(!o.status.success());
}
