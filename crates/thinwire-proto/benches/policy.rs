//! Deadline policy benchmarks: O(1) table lookup on the send path, solving single policies, and
//! building the full tables for target 0.999 (time and memory).
//!
//! The full build runs once, timed with `Instant`, and prints one line:
//! `deadline policy tables target=0.999: built N non-trivial of M cells in S s, table bytes B, total bytes T`.
//! Set `THINWIRE_POLICY_SKIP_FULL_BUILD=1` to skip it (then lookups use lazily built cells).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use thinwire_proto::policy::deadline::{Policy, PolicyParams, PolicyTables};

const TARGET: f64 = 0.999;

/// The tables, fully built once (and the full-build report printed) unless skipped.
fn tables() -> &'static PolicyTables {
    static TABLES: OnceLock<PolicyTables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let tables = PolicyTables::new(TARGET).expect("valid target");
        if std::env::var_os("THINWIRE_POLICY_SKIP_FULL_BUILD").is_none() {
            let start = Instant::now();
            let report = tables.build_all();
            let elapsed = start.elapsed();
            println!(
                "deadline policy tables target={TARGET}: built {} non-trivial of {} cells ({} best-effort) \
                 in {:.2} s, table bytes {}, total bytes {}",
                report.stored,
                report.cells,
                report.unreachable,
                elapsed.as_secs_f64(),
                report.table_bytes,
                report.total_bytes,
            );
        }
        tables
    })
}

/// A deterministic spread of send-path queries: (k, stages, loss, stage, missing).
fn queries() -> Vec<(u16, u16, f64, u16, u16)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    (0..1024)
        .map(|_| {
            let k = 1 + next(64) as u16;
            let stages = 1 + next(6) as u16;
            let loss = next(5001) as f64 / 10_000.0;
            let stage = 1 + next(u64::from(stages)) as u16;
            let missing = 1 + next(u64::from(k)) as u16;
            (k, stages, loss, stage, missing)
        })
        .collect()
}

fn lookup(c: &mut Criterion) {
    let t = tables();
    // Make sure every queried cell is built (no-op after a full build).
    let qs = queries();
    for &(k, stages, loss, stage, missing) in &qs {
        black_box(t.lookup(k, stages, loss, stage, missing));
    }
    let mut group = c.benchmark_group("deadline_policy_lookup");
    group.bench_function("worked_example_k4_I2_2pct", |b| {
        b.iter(|| {
            t.lookup(
                black_box(4),
                black_box(2),
                black_box(0.02),
                black_box(2),
                black_box(1),
            )
        })
    });
    group.bench_function("mixed_1024_queries", |b| {
        b.iter(|| {
            let mut sum = 0u32;
            for &(k, stages, loss, stage, missing) in &qs {
                sum += u32::from(t.lookup(k, stages, loss, stage, missing));
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn solve(c: &mut Criterion) {
    let mut group = c.benchmark_group("deadline_policy_solve");
    for &(packets, stages, loss) in &[
        (4u16, 2u16, 0.02),
        (16, 3, 0.1),
        (32, 2, 0.05),
        (64, 4, 0.3),
        (64, 12, 0.5),
    ] {
        let params = PolicyParams {
            packets,
            stages,
            loss,
            target: TARGET,
        };
        group.bench_function(format!("k{packets}_I{stages}_p{loss}"), |b| {
            b.iter(|| Policy::solve(black_box(params)).expect("reachable"))
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    // Full build: timed once inside `tables()`.
    let _ = tables();
    let mut group = c.benchmark_group("deadline_policy_build");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for packets in [4u16, 16, 64] {
        group.bench_function(format!("all_stages_and_buckets_k{packets}"), |b| {
            b.iter_batched(
                || PolicyTables::new(TARGET).expect("valid target"),
                |t| {
                    t.build_packets(packets);
                    t
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.bench_function("index_only", |b| {
        b.iter(|| PolicyTables::new(black_box(TARGET)).expect("valid target"))
    });
    group.finish();
}

criterion_group!(benches, lookup, solve, build);
criterion_main!(benches);
