//! The self-contained HTML report (`report.html`) of a lab run.
//!
//! The report is one HTML file with inline CSS and inline SVG plots (drawn with plotters'
//! SVG backend); it fetches nothing and needs no script. It shows the scenario's name,
//! engine, seed and parameters; the summary table (as in the terminal, models labelled);
//! the game-satisfaction index per protocol; and these figures, each in a
//! `<figure id="...">` holding one `<svg>`:
//!
//! * `plot-cdf`: latency CDF per protocol (all classes), linear axes;
//! * `plot-tail`: the complementary CDF on a log scale down to 1e-4 (p99 / p99.9 tail);
//! * `plot-redundancy`: p99.9 latency versus redundancy, one labelled point per protocol;
//! * `plot-classes`: p99 and p99.9 per message class and protocol (grouped bars);
//! * `plot-deadline`: deadline miss rate per protocol and class, present only when some
//!   message carries a deadline, followed by the deadline summary table (p95 / p99 / p99.9
//!   over all messages, miss rate, redundancy, wire bytes; see
//!   [`crate::metrics::deadline_rows`]);
//! * `plot-wire`: bytes on the wire per protocol (with a table of the counters).
//!
//! A lab run's report (see [`render_lab_report`]) adds, for thinwire configurations, the
//! "thinwire loss recovery" table after the summary (`<table class="recovery">`): losses,
//! RTO expirations, spurious losses and timeouts, retransmissions, repair copies, repairs in
//! time and late, ACK repeats and bundled frames per protocol and sweep point.
//!
//! Output is deterministic: the same inputs give the same string.
//!
//! `html` writes the page (skeleton, escaping, tables, figures); `sections` the text and
//! table sections; `recovery` the loss-recovery table; `figures` the figure sections (drawn
//! by `plots`); `side_by_side` the simulator-versus-emulator section.

mod figures;
mod html;
mod paper;
mod plots;
mod recovery;
mod sections;
mod side_by_side;

use std::path::Path;

pub use paper::{render_papers_report, LinkedReport, PaperRun};

use crate::metrics::Repetitions;
use crate::metrics::{MetricsError, Results, RunKey, Samples};
use crate::paper::PaperOutcome;
use thinwire_proto::ConnectionCounters;

/// Renders the report and writes it to `path` (creating the parent directory if needed).
pub fn write_report(
    path: &Path,
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    std::fs::write(path, render_report(results, samples, scenario_params))
}

/// The report's HTML, with GSI ratios against the first protocol.
pub fn render_report(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
) -> String {
    // With no named baseline there is nothing that can fail.
    render_report_with_baseline(results, samples, scenario_params, None).unwrap_or_default()
}

/// [`render_report`] with GSI ratios against `baseline` (`None`: the first run).
/// Errors if `baseline` names no run.
pub fn render_report_with_baseline(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    baseline: Option<&RunKey>,
) -> Result<String, MetricsError> {
    render(results, samples, scenario_params, baseline, None)
}

/// The report of an emulated run (`results`, `samples`) with a section that
/// puts the simulator's results for the same scenario (`sim`, `sim_samples`)
/// beside it: a table pairing each simulated protocol with the real peer that
/// implements it (see [`crate::metrics::compare`]), rows where the two engines
/// disagree at p99 flagged, and the tail of every pair in one figure
/// (`plot-sim-emu`).
pub fn render_report_side_by_side(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    sim: &Results,
    sim_samples: &Samples,
) -> String {
    render(
        results,
        samples,
        scenario_params,
        None,
        Some((sim, sim_samples)),
    )
    .unwrap_or_default()
}

/// The report of a lab run: [`render_report`] (or, for an emulated run with
/// the simulator beside it, [`render_report_side_by_side`]) plus the
/// [`LabSections`] the run has: the "paper vs thinwire lab" section, the
/// repetitions table and the "thinwire loss recovery" table.
pub fn render_lab_report(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    sim: Option<(&Results, &Samples)>,
    sections: LabSections<'_>,
) -> String {
    render_full(results, samples, scenario_params, None, sim, sections).unwrap_or_default()
}

/// The optional sections of a lab run's report (absent when `None` or empty).
#[derive(Debug, Clone, Copy, Default)]
pub struct LabSections<'a> {
    /// The paper's figures beside ours.
    pub paper: Option<&'a PaperOutcome>,
    /// Every row over every run.
    pub repetitions: Option<&'a Repetitions>,
    /// thinwire's connection counters per thinwire run (protocol and sweep
    /// point), for the "thinwire loss recovery" table.
    pub recovery: &'a [(RunKey, ConnectionCounters)],
}

fn render(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    baseline: Option<&RunKey>,
    sim: Option<(&Results, &Samples)>,
) -> Result<String, MetricsError> {
    render_full(
        results,
        samples,
        scenario_params,
        baseline,
        sim,
        LabSections::default(),
    )
}

fn render_full(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    baseline: Option<&RunKey>,
    sim: Option<(&Results, &Samples)>,
    extra: LabSections<'_>,
) -> Result<String, MetricsError> {
    let ratios = results.satisfaction_ratios(baseline)?;
    let mut html = String::with_capacity(256 * 1024);
    html::page_start(
        &mut html,
        &format!("thinwire lab report: {}", results.scenario),
    );
    sections::header(&mut html, results);
    sections::params_section(&mut html, scenario_params);
    if let Some(o) = extra.paper {
        let runs = extra.repetitions.map_or(1, |r| r.runs);
        paper::paper_section(&mut html, o, runs, "");
    }
    sections::summary_section(&mut html, results, &ratios);
    if let Some(r) = extra.repetitions {
        paper::repetitions_section(&mut html, r, "");
    }
    recovery::recovery_section(&mut html, extra.recovery);
    sections::gsi_section(&mut html, results, &ratios);
    figures::figure_sections(&mut html, results, samples);
    if let Some(sim) = sim {
        side_by_side::side_by_side_section(&mut html, (results, samples), sim);
    }
    sections::definitions_section(&mut html, results.engine);
    html::page_end(&mut html);
    Ok(html)
}

/// A whole report page (the lab's style) around an HTML `body` fragment: for reports other
/// than a scenario's, such as the gateway reproductions.
pub fn html_page(title: &str, body: &str) -> String {
    let mut html = String::new();
    html::page_start(&mut html, title);
    html.push_str(body);
    html::page_end(&mut html);
    html
}
