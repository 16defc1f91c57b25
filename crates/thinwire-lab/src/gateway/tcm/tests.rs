//! Short runs of the TCM reproduction that check behaviour which could fail.

use std::sync::OnceLock;
use std::time::Duration;

use super::*;
use crate::paper::{FigureKind, Verdict};

/// The short sweep every test reads, run once per test binary.
fn short() -> &'static TcmReport {
    static SHORT: OnceLock<TcmReport> = OnceLock::new();
    SHORT.get_or_init(short_run)
}

fn short_run() -> TcmReport {
    run_tcm(&TcmOptions {
        seed: 7,
        duration: Duration::from_secs(20),
        players: vec![5, 20],
        periods_ms: vec![10, 25, 50],
        background_kbps: vec![0, 1000],
        buffers_ms: vec![50, 500],
        buffer_kinds: vec![RouterBuffer::Bytes, RouterBuffer::Time],
        background_arrivals: Arrivals::Poisson,
    })
}

#[test]
fn tcm_reproduction_matches_formula_and_paper_shape() {
    let r = short();
    for row in &r.bwr {
        assert!(row.exact, "restoration not exact at {row:?}");
        let rel = (row.bwr_measured - row.bwr_formula).abs() / row.bwr_formula;
        assert!(rel < 0.10, "measured BWR off Eq. 1 by {rel:.3} at {row:?}");
        let rel = (row.bwr_measured_l2tp - row.bwr_formula_l2tp).abs() / row.bwr_formula_l2tp;
        assert!(
            rel < 0.10,
            "L2TP: measured BWR off Eq. 1 by {rel:.3} at {row:?}"
        );
        // The paper's model predicts it a priori too (Poisson k at the packet rate, 6 B per
        // record): the FULL refreshes and the MTU cap keep us a little above the prediction.
        let rel = (row.bwr_measured - row.bwr_predicted).abs() / row.bwr_predicted;
        assert!(
            rel < 0.10,
            "measured BWR off the prediction by {rel:.3} at {row:?}"
        );
        // 6 B per COMPRESSED record plus the FULL refreshes (33 B extra every 32 packets).
        assert!(row.mh_rh <= 8.0, "MH+RH {} > 8 B", row.mh_rh);
        assert!(row.mean_hold_ms <= row.period_ms as f64);
    }
    let twenty: Vec<_> = r.bwr.iter().filter(|x| x.players == 20).collect();
    for w in twenty.windows(2) {
        assert!(
            w[1].mean_bundle_bytes > w[0].mean_bundle_bytes,
            "bundles grow with T"
        );
        assert!(w[1].bwr_measured < w[0].bwr_measured, "saving grows with T");
    }
    // Calibration: 20 players near 319 kbit/s at Ethernet level.
    let native = twenty[0].native_eth_kbps;
    assert!((native - 319.0).abs() < 15.0, "native {native}");
    // More players, more packets per period, more saving.
    let at = |p: usize| {
        r.bwr
            .iter()
            .find(|x| x.players == p && x.period_ms == 25)
            .unwrap()
    };
    assert!(at(20).bwr_measured < at(5).bwr_measured);
}

#[test]
fn tcm_time_limited_buffer_bounds_owd() {
    let r = short();
    let time_limited = |x: &&LinkRow| x.buffer == RouterBuffer::Time;
    for row in r
        .link
        .iter()
        .filter(time_limited)
        .filter(|x| x.buffer_ms == 50)
    {
        assert!(row.owd_p99_ms < 160.0, "OWD p99 over 160 ms: {row:?}");
    }
    let overloaded = |buf: u64, mode: &str| {
        r.link
            .iter()
            .filter(time_limited)
            .find(|x| x.buffer_ms == buf && x.background_kbps == 1000 && x.mode == mode)
            .unwrap()
            .clone()
    };
    // With 1000 kbit/s of background the link is overloaded: the 500 ms buffer delays, the
    // 50 ms one drops.
    assert!(overloaded(500, "native").owd_mean_ms > overloaded(50, "native").owd_mean_ms + 100.0);
    assert!(overloaded(50, "T=25").loss > 0.0);
    // Without background nothing is lost and multiplexing saves bandwidth on the link.
    let idle: Vec<_> = r.link.iter().filter(|x| x.background_kbps == 0).collect();
    assert!(idle.iter().all(|x| x.loss == 0.0));
    let native = idle
        .iter()
        .find(|x| x.mode == "native")
        .unwrap()
        .game_eth_kbps;
    let t25 = idle
        .iter()
        .find(|x| x.mode == "T=25")
        .unwrap()
        .game_eth_kbps;
    assert!(t25 < 0.8 * native, "{t25} vs {native}");
    let html = tcm_report_html(r);
    assert!(html.contains("608 B") && html.contains("<table>"));
}

#[test]
fn tcm_fit_meets_the_traffic_facts_and_figures_get_verdicts() {
    let r = short();
    let f = &r.fit;
    // The two bundle facts agree with the paper's CH (25 B + our 1 B version): intercept 24 B.
    assert!((f.implied_ch - 24.0).abs() < 0.5, "{f:?}");
    assert!(f.mh_rh > 6.0 && f.mh_rh < 8.0, "{f:?}");
    let iat = f.model.mean_iat.as_secs_f64() * 1000.0;
    assert!((35.0..50.0).contains(&iat), "IAT {iat}");
    assert!((35.0..50.0).contains(&f.model.mean_payload), "{f:?}");
    assert_eq!(r.calibrations.len(), 2);
    let figs = figures(r);
    let fixed: Vec<_> = figs
        .iter()
        .filter(|x| x.kind == FigureKind::FixedBySetup)
        .collect();
    assert_eq!(fixed.len(), 5);
    for x in fixed {
        assert_eq!(x.verdict(), Verdict::Matches, "{x:?}");
    }
    // The asymptote's saving is measured, not fitted: near the paper's 30%.
    let asym = figs.iter().find(|x| x.what.contains("asymptote")).unwrap();
    assert_eq!(asym.verdict(), Verdict::Matches, "{asym:?}");
    let crossings = figs.iter().filter(|x| x.published == 925.0).count();
    assert_eq!(crossings, 2);
}

#[test]
fn tcm_byte_buffer_drops_bundles_before_small_packets() {
    let r = short();
    let loss = |kind: RouterBuffer, mode: &str| {
        r.link
            .iter()
            .find(|x| {
                x.buffer == kind && x.buffer_ms == 50 && x.background_kbps == 1000 && x.mode == mode
            })
            .unwrap()
            .loss
    };
    // Under the paper's router (a byte limit) the small native packets fit where bundles do
    // not, and the larger the bundle the likelier its drop.
    let bytes = RouterBuffer::Bytes;
    assert!(loss(bytes, "native") < loss(bytes, "T=25"));
    assert!(loss(bytes, "T=25") < loss(bytes, "T=50"));
    // A per-packet time limit does not look at sizes: there the saving wins.
    assert!(loss(RouterBuffer::Time, "native") > loss(RouterBuffer::Time, "T=25"));
}

/// The full default sweep (120 s per point); prints the report as JSON.
/// `cargo test -p thinwire-lab --release tcm_full_sweep -- --ignored --nocapture`
#[test]
#[ignore]
fn tcm_full_sweep() {
    let r = run_tcm(&TcmOptions::default());
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
}

/// The published figures over `TCM_RUNS` seeds (default 10) as `lab run papers --runs N`
/// merges them, with `TCM_SECS` simulated seconds per point (default 120); `TCM_PERIODIC=1`
/// spaces the background evenly (the diagnostic of docs/REPRODUCING.md).
/// `TCM_RUNS=10 cargo test -p thinwire-lab --release tcm_figures_over_runs -- --ignored --nocapture`
#[test]
#[ignore]
fn tcm_figures_over_runs() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let base = TcmOptions {
        duration: Duration::from_secs(env("TCM_SECS", 120)),
        background_arrivals: if env("TCM_PERIODIC", 0) == 1 {
            Arrivals::Periodic
        } else {
            Arrivals::Poisson
        },
        ..TcmOptions::default()
    };
    let reports: Vec<TcmReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..env("TCM_RUNS", 10) as u32)
            .map(|r| {
                let mut o = base.clone();
                o.seed = crate::runner::run_seed(base.seed, r);
                s.spawn(move || run_tcm(&o))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let runs: Vec<_> = reports.iter().map(figures).collect();
    for f in crate::paper::merge_runs(&runs) {
        let ours = f.ours.map_or("n/a".into(), |e| e.display(2));
        println!(
            "{} | {} | {ours} | {}",
            f.what,
            f.published,
            f.verdict().as_str()
        );
    }
    // Game loss (%) native / T=25 / T=50 by buffer and background, mean over the runs.
    for row in reports[0].link.iter().filter(|x| x.mode == "native") {
        let loss = |mode: &str| {
            let all = reports.iter().flat_map(|r| &r.link).filter(|x| {
                (x.buffer, x.buffer_ms, x.background_kbps, x.mode.as_str())
                    == (row.buffer, row.buffer_ms, row.background_kbps, mode)
            });
            let v: Vec<f64> = all.map(|x| x.loss * 100.0).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        println!(
            "loss {} {} ms bg {}: {:.2} / {:.2} / {:.2}",
            row.buffer.label(),
            row.buffer_ms,
            row.background_kbps,
            loss("native"),
            loss("T=25"),
            loss("T=50")
        );
    }
}
