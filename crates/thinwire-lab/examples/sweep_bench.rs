//! Sweep-size benchmark: 1,000 MMORPG clients over 60 simulated seconds, one
//! protocol at a time on one core, timed with the wall clock.
//!
//! Run with `cargo run --release -p thinwire-lab --example sweep_bench`
//! (optionally followed by a client count and a duration in seconds).

use std::time::{Duration, Instant};

use thinwire_lab::runner::{run_scenario, NoProgress, RunOptions};
use thinwire_lab::scenario::Scenario;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut scn = Scenario::load("sweep-1000")?;
    if let Some(n) = args.first() {
        scn.clients = n.parse()?;
    }
    let duration = match args.get(1) {
        Some(d) => Duration::from_secs_f64(d.parse()?),
        None => scn.duration,
    };
    println!(
        "{} clients, {} simulated seconds (+{} s drain), MMORPG workload, one core per run",
        scn.clients,
        duration.as_secs_f64(),
        scn.drain.as_secs_f64()
    );
    let protocols = scn.protocols.clone();
    for p in protocols {
        let mut one = scn.clone();
        one.protocols = vec![p];
        let opts = RunOptions {
            seed: None,
            duration: Some(duration),
            jobs: 1,
            runs: None,
        };
        let start = Instant::now();
        let run = run_scenario(&one, &opts, &NoProgress)?;
        let wall = start.elapsed();
        let events: u64 = run.notes.iter().map(|n| n.events).sum();
        let msgs: u64 = run.results.protocol_runs().map(|r| r.messages.sent).sum();
        println!(
            "{:<24} {:>8.2} s wall  {:>10} events  {:>9} messages  {:>6.2} M events/s",
            p.name(),
            wall.as_secs_f64(),
            events,
            msgs,
            events as f64 / wall.as_secs_f64() / 1e6
        );
    }
    Ok(())
}
