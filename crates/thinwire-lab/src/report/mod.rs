//! The self-contained HTML report (`report.html`) of a lab run.
//!
//! The report is one HTML file with inline CSS and inline SVG plots (drawn with plotters'
//! SVG backend); it fetches nothing and needs no script. It shows the scenario's name,
//! engine, seed and parameters; the summary table (as in the terminal, models labelled);
//! the game-satisfaction index per protocol; and these figures, each in a
//! `<figure id="...">` holding one `<svg>`:
//!
//! * `plot-tail`, the lead figure: the fraction of messages later than x per protocol (all
//!   classes) on a log scale down to the samples' resolution, with p99, p99.9… guides (the
//!   kit's [`thinwire_report::plot::distribution::tail_chart`]);
//! * `plot-cdf`: latency CDF per protocol (all classes), linear axes, up to just past the
//!   largest p99;
//! * `plot-redundancy`: p99.9 latency versus redundancy, one labelled point per protocol;
//! * `plot-classes`: p99 and p99.9 per message class and protocol (grouped bars);
//! * `plot-deadline`: deadline miss rate per protocol and class, present only when some
//!   message carries a deadline, followed by the deadline summary table (p95 / p99 / p99.9
//!   over all messages, miss rate, redundancy, wire bytes; see
//!   [`crate::metrics::deadline_rows`]);
//! * `plot-wire`: bytes on the wire per protocol (with a table of the counters).
//!
//! A lab run's report (see [`Report::sections`]) adds, for thinwire configurations, the
//! "thinwire loss recovery" table after the summary (`<table class="recovery">`): losses,
//! RTO expirations, spurious losses and timeouts, retransmissions, repair copies, repairs in
//! time and late, ACK repeats and bundled frames per protocol and sweep point.
//!
//! [`Report`] is the one entry point: say what the report holds, then
//! [`render`](Report::render) it or [`write`](Report::write) it to a file; both return
//! errors (a GSI baseline that names no run, a file that cannot be written). Output is
//! deterministic: the same inputs give the same string.
//!
//! The page, its style sheet, tables, the HTML escape and the plot families come from the
//! report kit ([`thinwire_report`]). Here, `html` writes the lab's table cells (a protocol
//! with its "model" badge); `sections` the text and table sections; `recovery` the
//! loss-recovery table; `figures` the figure sections (the runs turned into the kit's series
//! by `plots`); `side_by_side` the simulator-versus-emulator section; `paper` the paper
//! tables and the papers' one-page report.

mod figures;
mod html;
mod paper;
mod papers;
mod plots;
mod recovery;
mod sections;
mod side_by_side;

use std::path::{Path, PathBuf};

use thinwire_proto::ConnectionCounters;
use thinwire_report::html::{page_end, page_start};

pub use papers::{render_papers_report, LinkedReport, PaperRun};

use crate::metrics::Repetitions;
use crate::metrics::{MetricsError, Results, RunKey, Samples};
use crate::paper::PaperOutcome;

/// Why a report could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The GSI baseline names no run of the results.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// The report file could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The report of a run (`report.html`): what it holds, then [`Report::render`] or
/// [`Report::write`].
///
/// ```no_run
/// # fn f(lab: &thinwire_lab::runner::LabRun) -> Result<(), thinwire_lab::report::ReportError> {
/// use thinwire_lab::report::Report;
/// let html = Report::new(&lab.results, &lab.samples)
///     .params(&lab.params)
///     .render()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    results: &'a Results,
    samples: &'a Samples,
    params: &'a [(String, String)],
    baseline: Option<&'a RunKey>,
    simulated: Option<(&'a Results, &'a Samples)>,
    sections: LabSections<'a>,
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

impl<'a> Report<'a> {
    /// The report of `results` (with their latency `samples` for the figures): no
    /// parameters, GSI ratios against the first run, no optional section.
    pub fn new(results: &'a Results, samples: &'a Samples) -> Report<'a> {
        Report {
            results,
            samples,
            params: &[],
            baseline: None,
            simulated: None,
            sections: LabSections::default(),
        }
    }

    /// The scenario's parameters, listed under the header.
    pub fn params(mut self, params: &'a [(String, String)]) -> Report<'a> {
        self.params = params;
        self
    }

    /// GSI ratios against `baseline` (with or without a sweep point, see
    /// [`Results::satisfaction_ratios`]) instead of the first run.
    pub fn baseline(mut self, baseline: &'a RunKey) -> Report<'a> {
        self.baseline = Some(baseline);
        self
    }

    /// For an emulated run: the simulator's run of the same scenario (`sim`, `sim_samples`)
    /// beside it, in a section that pairs each simulated protocol with the real peer that
    /// implements it (see [`crate::metrics::compare`]), flags rows where the two engines
    /// disagree at p99, and draws the tail of every pair in one figure (`plot-sim-emu`).
    pub fn beside(mut self, sim: &'a Results, sim_samples: &'a Samples) -> Report<'a> {
        self.simulated = Some((sim, sim_samples));
        self
    }

    /// The optional sections of a lab run: the "paper vs thinwire lab" section, the
    /// repetitions table and the "thinwire loss recovery" table.
    pub fn sections(mut self, sections: LabSections<'a>) -> Report<'a> {
        self.sections = sections;
        self
    }

    /// The report's HTML. Errors if the baseline names no run.
    pub fn render(&self) -> Result<String, ReportError> {
        let results = self.results;
        let extra = self.sections;
        let ratios = results.satisfaction_ratios(self.baseline)?;
        let mut html = String::with_capacity(256 * 1024);
        page_start(
            &mut html,
            &format!("thinwire lab report: {}", results.scenario),
        );
        sections::header(&mut html, results);
        sections::params_section(&mut html, self.params);
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
        figures::figure_sections(&mut html, results, self.samples);
        if let Some(sim) = self.simulated {
            side_by_side::side_by_side_section(&mut html, (results, self.samples), sim);
        }
        sections::definitions_section(&mut html, results.engine);
        page_end(&mut html);
        Ok(html)
    }

    /// Renders the report and writes it to `path`, creating the parent directory if needed.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        let html = self.render()?;
        let io = |source| ReportError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
        }
        std::fs::write(path, html).map_err(io)
    }
}
