//! Repetitions (`runs`), shards and their merge: a run split across shards
//! merges into exactly the one-machine outputs, and repetitions give every
//! published figure a confidence interval.

use std::path::PathBuf;
use std::time::Duration;

use thinwire_lab::paper::Verdict;
use thinwire_lab::runner::{
    merge_shards, run_scenario, run_shard, NoProgress, RunOptions, Shard, ShardFile,
};
use thinwire_lab::scenario::Scenario;

const SCENARIO: &str = r#"
name = "repetitions"
seed = 9
runs = 3
duration_s = 20
drain_s = 5
clients = 3
protocols = ["tcp-model", "thinwire"]

[access]
delay_ms = 50
loss = 0.03

[sweep]
burst = [1, 3]

[[workload]]
kind = "profile"
game = "anarchy-online"
direction = "down"

[paper]
title = "a test paper"
choices = ["none"]

[[published]]
what = "TCP p99"
metric = "p99_ms"
protocol = "tcp-model"
point = "burst=1"
value = 600
source = "nowhere"
tolerance = 10.0

[[published]]
what = "thinwire over TCP, mean"
metric = "mean_ms"
protocol = "thinwire"
baseline = "tcp-model"
value = 1.0
source = "nowhere"

[[published_order]]
what = "thinwire < TCP"
metric = "p99_ms"
protocols = ["thinwire", "tcp-model"]
source = "nowhere"
"#;

/// The scenario written to a file of its own (merging loads it by path).
fn scenario(tag: &str) -> Scenario {
    let dir =
        std::env::temp_dir().join(format!("thinwire-repetitions-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path: PathBuf = dir.join("repetitions.toml");
    std::fs::write(&path, SCENARIO).expect("write");
    Scenario::load(path.to_str().expect("utf-8")).expect("valid scenario")
}

fn opts() -> RunOptions {
    RunOptions {
        jobs: 2,
        ..RunOptions::default()
    }
}

#[test]
fn shards_merge_into_exactly_the_single_machine_run() {
    let scn = scenario("merge");
    let whole = run_scenario(&scn, &opts(), &NoProgress).expect("runs");
    let shards: Vec<ShardFile> = (1..=3)
        .map(|k| {
            run_shard(&scn, &opts(), Shard { index: k, count: 3 }, &NoProgress).expect("shard")
        })
        .collect();
    // 3 runs x 2 points x 2 protocols, dealt round-robin.
    assert_eq!(shards.iter().map(ShardFile::len).sum::<usize>(), 12);
    assert!(shards.iter().all(|s| s.len() == 4));
    // Through the file format, as on separate machines.
    let dir = std::env::temp_dir().join(format!("thinwire-shards-{}", std::process::id()));
    let files: Vec<ShardFile> = shards
        .iter()
        .rev()
        .map(|s| ShardFile::read(&s.write(&dir).expect("write")).expect("read"))
        .collect();
    let merged = merge_shards(files).expect("merges");
    assert_eq!(
        merged.results.to_json_pretty(),
        whole.results.to_json_pretty()
    );
    assert_eq!(merged.samples, whole.samples);
    assert_eq!(merged.repetitions, whole.repetitions);
    assert_eq!(merged.paper, whole.paper);
    assert_eq!(merged.report_html().unwrap(), whole.report_html().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merging_refuses_missing_duplicate_and_foreign_shards() {
    let scn = scenario("refuse");
    let one = |k: u32, seed: Option<u64>| {
        let o = RunOptions {
            seed,
            duration: Some(Duration::from_secs(5)),
            ..opts()
        };
        run_shard(&scn, &o, Shard { index: k, count: 2 }, &NoProgress).expect("shard")
    };
    let missing = merge_shards(vec![one(1, None)]).unwrap_err().to_string();
    assert!(missing.contains("shard 2/2 is missing"), "{missing}");
    let twice = merge_shards(vec![one(1, None), one(1, None)])
        .unwrap_err()
        .to_string();
    assert!(twice.contains("given twice"), "{twice}");
    let foreign = merge_shards(vec![one(1, None), one(2, Some(77))])
        .unwrap_err()
        .to_string();
    assert!(foreign.contains("does not belong"), "{foreign}");
    assert!(merge_shards(vec![one(1, None), one(2, None)]).is_ok());
    assert!("0/2".parse::<Shard>().is_err());
    assert!("3/2".parse::<Shard>().is_err());
    assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
}

#[test]
fn repetitions_use_independent_seeds_and_leave_the_first_run_unchanged() {
    let scn = scenario("runs");
    let three = run_scenario(&scn, &opts(), &NoProgress).expect("runs");
    let mut once = scn.clone();
    once.runs = 1;
    let single = run_scenario(&once, &opts(), &NoProgress).expect("runs");
    // results.json is the first run's, whatever the number of runs.
    assert_eq!(three.results, single.results);
    assert!(single.repetitions.is_none());
    // `--runs` raises a scenario's own runs and never lowers them.
    let raised = RunOptions {
        runs: Some(1),
        ..opts()
    };
    let still_three = run_scenario(&scn, &raised, &NoProgress).expect("runs");
    assert_eq!(still_three.repetitions.map(|r| r.seeds.len()), Some(3));
    let reps = three.repetitions.as_ref().expect("three runs");
    assert_eq!(reps.seeds.len(), 3);
    assert_eq!(reps.seeds[0], 9);
    assert!(reps.seeds[1] != reps.seeds[2] && reps.seeds[1] != 9);
    // 2 protocols x 2 points.
    assert_eq!(reps.rows.len(), 4);
    let tcp = reps.rows[0].mean_ms.expect("delivered");
    assert_eq!(tcp.runs, 3);
    assert!(
        tcp.ci95.is_some_and(|h| h > 0.0),
        "independent runs differ: {tcp:?}"
    );
    let paper = three.paper.as_ref().expect("paper tables");
    // The p99 figure at burst=1 only; the ratio figure at both points.
    assert_eq!(paper.comparisons[0].columns.len(), 1);
    assert_eq!(paper.comparisons[1].columns.len(), 2);
    let p99 = paper.comparisons[0].ours().expect("measured");
    assert_eq!(p99.runs, 3);
    assert_eq!(
        paper.comparisons[0].verdict,
        Verdict::Matches,
        "tolerance 1000%"
    );
    assert_eq!(paper.orders[0].checks.len(), 2);
    let html = three.report_html().unwrap();
    assert!(html.contains("Paper vs thinwire lab"));
    assert!(html.contains("id=\"plot-paper-ratios\""));
    assert!(html.contains("id=\"repetitions\""));
}
