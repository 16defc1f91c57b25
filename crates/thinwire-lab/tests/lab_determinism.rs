//! Same scenario and seed give byte-identical results.json; another seed does not.

use std::path::Path;
use std::time::Duration;

use thinwire_lab::runner::{run_scenario, NoProgress, RunOptions};
use thinwire_lab::scenario::Scenario;

const MIXED: &str = r#"
name = "determinism"
seed = 11
duration_s = 20
drain_s = 5
clients = 8
protocols = ["tcp-model", "udp-model", "thinwire", "thinwire-thin-off", "thinwire-full-mapping"]

[access]
delay_ms = 30
jitter_ms = 10
reorder = true
bandwidth_kbps = [64, 128]
queue = { bytes = 8000 }
loss = { gilbert_elliott = { mean = 0.02, burst = 2 } }
duplicate = 0.01
corrupt = 0.01

[bottleneck]
delay_ms = 10
bandwidth_kbps = 300
queue = { time_ms = 60 }

[bottleneck.cross]
rate_kbps = 150
packet_bytes = 800
shape = "on-off"
mean_on_ms = 500
mean_off_ms = 500

[[workload]]
kind = "mmorpg"
zone_size = 4

[[workload]]
kind = "messaging"
size = 1500
interval_ms = 2000
deadline_ms = 800
synchronized = false
"#;

fn json(scn: &Scenario, seed: Option<u64>, jobs: usize) -> String {
    let opts = RunOptions {
        seed,
        duration: None,
        jobs,
        runs: None,
    };
    run_scenario(scn, &opts, &NoProgress)
        .expect("runs")
        .results
        .to_json_pretty()
}

#[test]
fn same_seed_gives_identical_results_json() {
    let scn = Scenario::parse(MIXED, Path::new("determinism.toml"), "determinism").expect("valid");
    let a = json(&scn, None, 1);
    let b = json(&scn, None, 2);
    assert_eq!(a, b, "parallel and sequential runs must agree");
    let c = json(&scn, Some(12), 2);
    assert_ne!(a, c);
    // Every protocol has a row for all classes and per class.
    for p in [
        "tcp-model",
        "udp-model",
        "thinwire",
        "thinwire-thin-off",
        "thinwire-full-mapping",
    ] {
        assert!(a.contains(&format!("\"protocol\": \"{p}\"")), "{p} missing");
    }
}

#[test]
fn default_scenario_is_deterministic() {
    let scn = Scenario::load("default").expect("built in");
    let opts = RunOptions {
        seed: None,
        duration: Some(Duration::from_secs(30)),
        jobs: 2,
        runs: None,
    };
    let a = run_scenario(&scn, &opts, &NoProgress).expect("runs");
    let b = run_scenario(&scn, &opts, &NoProgress).expect("runs");
    assert_eq!(a.results.to_json_pretty(), b.results.to_json_pretty());
    assert_eq!(a.results.scenario, "default");
    assert_eq!(a.results.seed, 1);
}

/// Deadline delivery over a per-client population with bursty loss.
const DEADLINE: &str = r#"
name = "determinism-deadline"
seed = 21
duration_s = 22
drain_s = 5
clients = 12
protocols = ["thinwire-deadline", "thinwire-fec+2", "thinwire-rtx-only", "tcp-model"]

[access]
jitter_ms = 5
jitter = "normal"
loss = { gilbert_elliott = { mean = 0.02, burst = 2 } }

[access.per_client]
delay_ms = { lognormal = { median = 60, sigma = 0.6 }, min = 10, max = 250 }
loss = { mixture = [{ weight = 0.8, uniform = [0.0, 0.02] }, { weight = 0.2, uniform = [0.05, 0.1] }] }

[[workload]]
kind = "messaging"
size = 2048
deadline_ms = 800
target = 0.999
start_ms = 2000
"#;

#[test]
fn deadline_scenario_is_deterministic() {
    let scn = Scenario::parse(DEADLINE, Path::new("deadline.toml"), "determinism-deadline")
        .expect("valid");
    let opts = |jobs| RunOptions {
        seed: None,
        duration: None,
        jobs,
        runs: None,
    };
    let a = run_scenario(&scn, &opts(1), &NoProgress).expect("runs");
    let b = run_scenario(&scn, &opts(2), &NoProgress).expect("runs");
    assert_eq!(a.results.to_json_pretty(), b.results.to_json_pretty());
    assert_eq!(a.notes, b.notes);
    let table = |r: &thinwire_lab::runner::LabRun| {
        thinwire_lab::metrics::deadline_table(&thinwire_lab::metrics::deadline_rows(
            &r.results, &r.samples,
        ))
    };
    assert_eq!(table(&a), table(&b));
    assert!(table(&a).contains("thinwire-fec+2"));
    let c = run_scenario(
        &scn,
        &RunOptions {
            seed: Some(22),
            ..opts(2)
        },
        &NoProgress,
    )
    .expect("runs");
    assert_ne!(a.results.to_json_pretty(), c.results.to_json_pretty());
}
