//! thinwire lab: a deterministic discrete-event simulator, link models, game
//! workloads, baseline transport models, metrics and HTML reports.
//!
//! The main entry point is the `thinwire lab run` command (see the binary);
//! as a library, [`runner::run_scenario`] runs a parsed [`scenario::Scenario`].
#![forbid(unsafe_code)]

pub mod error;
pub mod gateway;
pub mod metrics;
pub mod paper;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod seed;
pub mod sim;
pub mod workload;

pub use error::LabError;
