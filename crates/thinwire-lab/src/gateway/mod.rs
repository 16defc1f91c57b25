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

use crate::paper::Figure;
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

impl GatewayReport {
    /// The published figures beside ours, by reproduction: `("gateway-ao", ...)` and
    /// `("gateway-tcm", ...)` (the names stand where a scenario's name would in `paper.json`).
    pub fn figures(&self) -> Vec<(&'static str, Vec<Figure>)> {
        vec![
            ("gateway-ao", ao::figures(&self.ao)),
            ("gateway-tcm", tcm::figures(&self.tcm)),
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

/// Runs both reproductions and writes `gateway.json` and `gateway.html` into `out`; returns
/// the report and the HTML file's path.
pub fn write_gateway_report(
    out: &Path,
    opts: &GatewayLabOptions,
) -> Result<(GatewayReport, PathBuf), LabError> {
    let report = run_gateway_lab(opts);
    std::fs::create_dir_all(out).map_err(|e| LabError::io(out, e))?;
    let json_path = out.join("gateway.json");
    let json = serde_json::to_string_pretty(&report).map_err(std::io::Error::other);
    json.and_then(|j| std::fs::write(&json_path, j))
        .map_err(|e| LabError::io(&json_path, e))?;
    let html = out.join("gateway.html");
    std::fs::write(&html, gateway_report_html(&report)).map_err(|e| LabError::io(&html, e))?;
    Ok((report, html))
}
