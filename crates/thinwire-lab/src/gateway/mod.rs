//! The gateway reproductions, run on the real sans-IO gateway code over simulated links:
//! - [`ao`]: the Anarchy Online multiplexing proxy (Griwodz & Halvorsen, NOSSDAV 2006):
//!   175 AO-like server-to-client flows (63 at once) direct against multiplexed over one trunk,
//!   on thinwire and on the lab's TCP model;
//! - [`tcm`]: TCM (Saldaña et al.): Counter-Strike-like client traffic compressed and
//!   multiplexed per period T, against the paper's bandwidth-reduction formula, and behind a
//!   1 Mbit/s bottleneck with 50 ms and 500 ms buffers.
//!
//! `thinwire lab gateway` runs both and writes `gateway.html` and `gateway.json`
//! ([`write_gateway_report`]).

pub mod ao;
pub mod tcm;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::paper::{merge_runs, Figure};
use crate::runner::{run_seed, worker_threads};
use crate::LabError;

/// Options of `thinwire lab gateway`.
#[derive(Debug, Clone, Default)]
pub struct GatewayLabOptions {
    /// The Anarchy Online reproduction.
    pub ao: ao::AoOptions,
    /// The TCM reproduction.
    pub tcm: tcm::TcmOptions,
}

/// Both reproductions' results (`gateway.json`).
#[derive(Debug, Clone, Serialize)]
pub struct GatewayReport {
    /// The Anarchy Online multiplexing proxy.
    pub ao: ao::AoReport,
    /// TCM.
    pub tcm: tcm::TcmReport,
}

/// One gateway reproduction as the papers report lists it, where a scenario would stand.
#[derive(Debug, Clone)]
pub struct GatewaySection {
    /// Its name in `paper.json` and the summary (`gateway-ao`, `gateway-tcm`).
    pub name: &'static str,
    /// The paper and what is reproduced.
    pub title: &'static str,
    /// Its part of the gateway report, relative to the report's directory.
    pub href: &'static str,
    /// The published figures beside ours.
    pub figures: Vec<Figure>,
    /// Its calibrations (a free parameter set to meet a fact the paper states about its
    /// setup), in words.
    pub calibrations: Vec<String>,
}

impl GatewayReport {
    /// Both reproductions as sections of the papers report.
    pub fn sections(&self) -> Vec<GatewaySection> {
        vec![
            GatewaySection {
                name: "gateway-ao",
                title: "Griwodz & Halvorsen (NOSSDAV 2006): the multiplexing proxy, on the real \
                        gateway code",
                href: "gateway.html",
                figures: ao::figures(&self.ao),
                calibrations: ao::calibrations(&self.ao),
            },
            GatewaySection {
                name: "gateway-tcm",
                title: "Saldaña et al.: TCM, on the real gateway code",
                href: "gateway.html#tcm",
                figures: tcm::figures(&self.tcm),
                calibrations: tcm::calibrations(&self.tcm),
            },
        ]
    }
}

/// Runs both reproductions.
pub fn run_gateway_lab(opts: &GatewayLabOptions) -> GatewayReport {
    GatewayReport {
        ao: ao::run_ao(&opts.ao),
        tcm: tcm::run_tcm(&opts.tcm),
    }
}

/// The HTML page of a gateway report.
pub fn gateway_report_html(report: &GatewayReport) -> String {
    let mut body = String::from(
        "<h1>thinwire gateway: the multiplexing reproductions</h1>\n<p>Both run the real \
         sans-IO gateway code (<code>thinwire-gateway</code>) in simulated time over the \
         lab's link model. The published figures stand beside ours; the setups follow the \
         papers, and where a paper is silent the choice is stated.</p>\n",
    );
    body.push_str(&ao::ao_report_html(&report.ao));
    body.push_str(&tcm::tcm_report_html(&report.tcm));
    thinwire_report::html::page("thinwire gateway reproductions", &body)
}

/// Both reproductions run with `runs` independent seeds (run 0 with the options' own, as a
/// scenario's `--runs` does), at most `jobs` at a time (0: one per core): the first run's
/// report, and its sections with ours averaged over the runs (a 95% interval with more than
/// one).
pub fn run_gateway_repeated(
    opts: &GatewayLabOptions,
    runs: u32,
    jobs: usize,
) -> (GatewayReport, Vec<GatewaySection>) {
    let runs = runs.max(1);
    let jobs = worker_threads(jobs);
    let options = |run: u32| {
        let mut o = opts.clone();
        o.ao.seed = run_seed(opts.ao.seed, run);
        o.tcm.seed = run_seed(opts.tcm.seed, run);
        o
    };
    let mut reports: Vec<GatewayReport> = Vec::with_capacity(runs as usize);
    let all: Vec<u32> = (0..runs).collect();
    for chunk in all.chunks(jobs) {
        let done: Vec<GatewayReport> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&r| {
                    let o = options(r);
                    s.spawn(move || run_gateway_lab(&o))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a gateway run panicked"))
                .collect()
        });
        reports.extend(done);
    }
    let per_run: Vec<Vec<GatewaySection>> = reports.iter().map(GatewayReport::sections).collect();
    let merged = per_run[0]
        .iter()
        .enumerate()
        .map(|(i, section)| {
            let lists: Vec<Vec<Figure>> = per_run.iter().map(|r| r[i].figures.clone()).collect();
            GatewaySection {
                figures: merge_runs(&lists),
                ..section.clone()
            }
        })
        .collect();
    (reports.swap_remove(0), merged)
}

/// Runs both reproductions and writes `gateway.json` and `gateway.html` into `out`; returns
/// the report and the HTML file's path.
pub fn write_gateway_report(
    out: &Path,
    opts: &GatewayLabOptions,
) -> Result<(GatewayReport, PathBuf), LabError> {
    let report = run_gateway_lab(opts);
    let html = write_gateway_files(out, &report)?;
    Ok((report, html))
}

/// Writes `report` as `gateway.json` and `gateway.html` into `out`; returns the HTML file's
/// path.
pub fn write_gateway_files(out: &Path, report: &GatewayReport) -> Result<PathBuf, LabError> {
    std::fs::create_dir_all(out).map_err(|e| LabError::io(out, e))?;
    let json_path = out.join("gateway.json");
    let json = serde_json::to_string_pretty(report).map_err(std::io::Error::other);
    json.and_then(|j| std::fs::write(&json_path, j))
        .map_err(|e| LabError::io(&json_path, e))?;
    let html = out.join("gateway.html");
    std::fs::write(&html, gateway_report_html(report)).map_err(|e| LabError::io(&html, e))?;
    Ok(html)
}
