//! The published TCM figures beside ours, with tolerances and verdicts
//! ([`crate::paper::Figure`]); the report's table and `paper.json` both read them.
//!
//! Three figures are the fit's inputs and two more follow from them by arithmetic: those are
//! [`FigureKind::FixedBySetup`]. The loss findings are orders along the background sweep,
//! expressed as numbers: the background rate where native traffic starts to lose less than
//! T = 25 ms (published 925 kbit/s), and the share of loaded points where T = 25 ms loses less
//! than T = 50 ms (published: all of them).

use super::{LinkRow, RouterBuffer, TcmReport};
use crate::paper::{Figure, FigureKind, Tolerance};

/// A sweep point counts as loaded when either period loses at least this fraction.
const LOADED: f64 = 0.001;

/// Why the 20-player IP-level saving sits below the asymptote, with the measurement.
const SAVING_20_NOTE: &str =
    "the text gives 30% for Fig. 4's asymptote, not for this point; Eq. 1 puts the point \
     below the asymptote by CH's share, CH/(E[k]·(NH+P)) = 26/(11.8 × 70.4 B) = 3.1 \
     points (measured: 26.9% against 30.0%). The paper's own facts bound it: 319 kbit/s \
     at Ethernet level and a 608 B bundle every 25 ms give 1 − 194.6/(319 − 0.112·pps) \
     kbit/s, 30% only at 366 packets/s, i.e. MH+RH = −3.2 B; with the gateway's \
     measured 6.95 B it is 26.9%, and 27% needs MH+RH ≤ 6.65 B (the paper's MH and RH \
     are not in the text)";

/// Every published figure of the TCM reproduction, ours from `report`.
pub fn figures(report: &TcmReport) -> Vec<Figure> {
    let mut out = bandwidth(report);
    out.extend(buffer(report));
    out
}

/// The bandwidth figures (20 players).
fn bandwidth(report: &TcmReport) -> Vec<Figure> {
    let at = |t: u64| {
        report
            .bwr
            .iter()
            .find(|r| r.players == 20 && r.period_ms == t)
    };
    let eth = report.eth_overhead as f64;
    // The bundle as the paper's L2TP tunnel would carry it: our trunk's overhead replaced by
    // the paper's common header.
    let l2tp_bundle =
        |t: u64| at(t).map(|r| r.mean_bundle_bytes - (report.ch_thinwire - report.ch_l2tp) as f64);
    // Multiplexed traffic at Ethernet level with the paper's CH.
    let mux_eth = |t: u64| {
        at(t).map(|r| r.bwr_measured_l2tp * r.native_ip_kbps + r.mux_pps * eth * 8.0 / 1000.0)
    };
    let rel = Tolerance::Relative(0.15);
    let fitted = "an input of the workload's fit (see the calibrations)";
    let saving_ip = at(25).map(|r| (1.0 - r.bwr_measured_l2tp) * 100.0);
    vec![
        Figure::one_run(
            "native game traffic, 20 players (Ethernet level)",
            "Sec. IV: 'El ancho de banda del tráfico nativo es de 319 kbps a nivel eth'",
            319.0,
            "kbit/s",
            at(25).map(|r| r.native_eth_kbps),
            rel,
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note(fitted),
        Figure::one_run(
            "mean multiplexed packet, 20 players, T = 25 ms (CH 25 B)",
            "Sec. IV: 'en el primer caso son 608 bytes'",
            608.0,
            "B",
            l2tp_bundle(25),
            rel,
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note(fitted),
        Figure::one_run(
            "mean multiplexed packet, 20 players, T = 50 ms (CH 25 B)",
            "Sec. IV: 'mientras que en el segundo son 1192'",
            1192.0,
            "B",
            l2tp_bundle(50),
            rel,
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note(fitted),
        Figure::one_run(
            "bandwidth saved, 20 players, T = 25 ms (Ethernet level, CH 25 B)",
            "Sec. IV: 'el ahorro de ancho de banda (unos 120 kbps)'",
            120.0,
            "kbit/s",
            at(25).zip(mux_eth(25)).map(|(r, m)| r.native_eth_kbps - m),
            Tolerance::Absolute(10.0),
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note(
            "follows from the fit's inputs alone: 319 − (608 + 14)·8/25 = 120 kbit/s (37.6% of \
             the native traffic), whatever the split between payload and headers",
        ),
        Figure::one_run(
            "bandwidth T = 25 ms minus T = 50 ms, 20 players (Ethernet level, CH 25 B)",
            "Sec. IV: 'la diferencia en términos de ancho de banda es de 6 kbps'",
            6.0,
            "kbit/s",
            mux_eth(25).zip(mux_eth(50)).map(|(a, b)| a - b),
            Tolerance::Absolute(3.0),
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note("follows from the fit's inputs: (608 + 14)·8/25 − (1192 + 14)·8/50 = 6.1"),
        Figure::one_run(
            "saving at Eq. 1's asymptote, IPv4 (1 − (MH+RH+P)/(NH+P), measured MH+RH and P)",
            "Sec. III, Fig. 4: 'se puede conseguir un 30% de ahorro de ancho de banda usando IPv4'",
            30.0,
            "%",
            at(25).map(|r| (1.0 - r.bwr_asymptote) * 100.0),
            Tolerance::Absolute(3.0),
        )
        .with_note(
            "the saving many players and long periods reach; depends on the fit's split between \
             payload and headers and on the gateway's own MH+RH, not on the saving",
        ),
        Figure::one_run(
            "saving, 20 players, T = 25 ms (IP level, CH 25 B)",
            "Sec. III: 'se puede conseguir un 30% de ahorro de ancho de banda usando IPv4' (Fig. \
             4's asymptote; no player count or T given) and Sec. IV: the 20-player BWR at 25 and \
             50 ms is 'muy cerca de la asíntota'",
            30.0,
            "%",
            saving_ip,
            Tolerance::Absolute(3.0),
        )
        .with_note(SAVING_20_NOTE),
    ]
}

/// The router-buffer figures, on the paper's byte-limited buffer.
fn buffer(report: &TcmReport) -> Vec<Figure> {
    let rows = |ms: u64| -> Vec<&LinkRow> {
        report
            .link
            .iter()
            .filter(|r| r.buffer == RouterBuffer::Bytes && r.buffer_ms == ms)
            .collect()
    };
    let crossover_tol = Tolerance::Absolute(50.0);
    let crossover_note = "the background rate (interpolated along the sweep) above which native \
                          traffic loses less than T = 25 ms at every swept rate; small packets \
                          fit where bundles do not. Ours follows the rate where T = 25 ms alone \
                          fills the link (1000 − 199 = 801 kbit/s of background): 810 and 849 \
                          kbit/s over 10 runs with Poisson background, 841 and 862 with evenly \
                          spaced background (4 runs), so the background's burstiness does not \
                          explain the gap; the paper's sweep points are not given, and its \
                          'a partir de 925' may name the first swept rate past the crossing";
    let mut out: Vec<Figure> = [50, 500]
        .into_iter()
        .map(|ms| {
            Figure::one_run(
                &format!("background rate from which native loses less than T = 25 ms, {ms} ms byte buffer"),
                "Sec. IV: 'a partir de 925 kbps de tráfico de fondo se puede ver que el tráfico \
                 nativo tiene menos pérdidas que el multiplexado, para los dos buffer'",
                925.0,
                "kbit/s",
                crossover(&rows(ms)),
                crossover_tol,
            )
            .with_note(crossover_note)
        })
        .collect();
    let loaded: Vec<(f64, f64)> = [50, 500]
        .into_iter()
        .flat_map(|ms| {
            let rs = rows(ms);
            by_background(&rs)
                .into_iter()
                .filter_map(|(_, by)| Some((by[1]?, by[2]?)))
                .filter(|&(a, b)| a.max(b) >= LOADED)
                .collect::<Vec<_>>()
        })
        .collect();
    let order = (!loaded.is_empty())
        .then(|| loaded.iter().filter(|(a, b)| a < b).count() as f64 / loaded.len() as f64 * 100.0);
    out.push(
        Figure::one_run(
            "loaded sweep points where T = 25 ms loses less than T = 50 ms (both byte buffers)",
            "Sec. IV: 'la utilización del periodo de 25 ms da mejores resultados ... siendo \
             además mejor que usar un periodo de 50 ms'",
            100.0,
            "%",
            order,
            Tolerance::Absolute(10.0),
        )
        .with_note("points where either period loses at least 0.1%; ±10 points allows one point in ten at the noise level"),
    );
    let under: Vec<bool> = rows(50).iter().map(|r| r.owd_mean_ms < 160.0).collect();
    let share = (!under.is_empty())
        .then(|| under.iter().filter(|&&u| u).count() as f64 / under.len() as f64 * 100.0);
    out.push(
        Figure::one_run(
            "sweep points with the mean game OWD below 160 ms, 50 ms byte buffer (all modes)",
            "Sec. IV, Fig. 7: 'mantener el OWD por debajo de 160 ms independientemente del \
             tráfico de fondo'",
            100.0,
            "%",
            share,
            Tolerance::Absolute(10.0),
        )
        .with_note("the byte limit (rate × 50 ms + 5000 B burst) holds up to 90 ms of queue"),
    );
    out
}

/// Loss by background rate, ascending: `[native, T=25, T=50]`.
fn by_background(rows: &[&LinkRow]) -> Vec<(u64, [Option<f64>; 3])> {
    let mut rates: Vec<u64> = rows.iter().map(|r| r.background_kbps).collect();
    rates.sort_unstable();
    rates.dedup();
    rates
        .into_iter()
        .map(|bg| {
            let loss = |mode: &str| {
                rows.iter()
                    .find(|r| r.background_kbps == bg && r.mode == mode)
                    .map(|r| r.loss)
            };
            (bg, [loss("native"), loss("T=25"), loss("T=50")])
        })
        .collect()
}

/// The background rate above which native loses less than T = 25 ms at every swept rate,
/// interpolated between the last rate where it does not and the next; `None` when native does
/// not lose less at the highest rate.
fn crossover(rows: &[&LinkRow]) -> Option<f64> {
    let diffs: Vec<(f64, f64)> = by_background(rows)
        .into_iter()
        .filter_map(|(bg, [n, t25, _])| Some((bg as f64, n? - t25?)))
        .collect();
    let last = diffs.iter().rposition(|&(_, d)| d >= 0.0);
    match last {
        None => diffs.first().map(|&(x, _)| x),
        Some(j) if j + 1 == diffs.len() => None,
        Some(j) => {
            let ((x0, d0), (x1, d1)) = (diffs[j], diffs[j + 1]);
            Some(x0 + (x1 - x0) * d0 / (d0 - d1))
        }
    }
}

/// The reproduction's calibrations (a free parameter of the setup set to meet a fact the
/// paper states about its setup), in words: the workload's fit.
pub fn calibrations(report: &TcmReport) -> Vec<String> {
    report.calibrations.clone()
}
