//! Scenarios: TOML files describing topology, links, workload, protocols,
//! duration and seed.
//!
//! A [`Scenario`] is parsed from its file ([`parse`](Scenario::parse), errors
//! with file and line), expanded into sweep [points](Scenario::points), turned
//! into the simulator's network per point ([`setup`](Scenario::setup)) and
//! described for the report ([`params`](Scenario::params)). Files a scenario
//! refers to (link traces, CSV traces, pcaps) are resolved relative to the
//! scenario file. See `scenarios/README.md` for the format.

mod builtin;
mod describe;
mod parse;
mod per_client;
mod setup;
mod sweep;
mod toml_types;

use std::time::Duration;

use thinwire_netmodel::LinkConfig;

pub use builtin::{builtin, BUILTIN};
pub use per_client::{with_mean_loss, PerClient, ValueDist, MAX_CLIENT_LOSS};
pub use sweep::{Sweep, SweepPoint};

use crate::protocol::ProtocolSpec;
use crate::sim::CrossShape;
use crate::workload::WorkloadSpec;

/// Largest number of runs (independent seeds) of one scenario.
pub const MAX_RUNS: u32 = 100_000;

/// Most edge gateways of one scenario (`gateway_edges`): each is an emulated host.
pub const MAX_GATEWAY_EDGES: u32 = 64;

/// An access-link direction, possibly with per-client parameters.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// The configuration (its bandwidth, delay or loss are replaced per
    /// client when a range or a per-client distribution is set).
    pub config: LinkConfig,
    /// Per-client bandwidth drawn uniformly from this range (kbit/s).
    pub bandwidth_kbps: Option<(f64, f64)>,
    /// Per-client delay and loss distributions (`[access.per_client]`).
    pub per_client: PerClient,
}

/// Cross-traffic intensity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CrossRate {
    /// Calibrated so that cross traffic alone sees this loss rate.
    TargetLoss(f64),
    /// A fixed mean rate in kbit/s.
    Kbps(f64),
}

/// Cross traffic on one bottleneck direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossSpec {
    /// Intensity.
    pub rate: CrossRate,
    /// Packet size.
    pub packet_bytes: u32,
    /// Arrival process.
    pub shape: CrossShape,
}

/// A shared bottleneck (dumbbell).
#[derive(Debug, Clone)]
pub struct BottleneckSpec {
    /// Client-to-server direction.
    pub up: LinkConfig,
    /// Server-to-client direction.
    pub down: LinkConfig,
    /// Cross traffic client-to-server.
    pub cross_up: Option<CrossSpec>,
    /// Cross traffic server-to-client.
    pub cross_down: Option<CrossSpec>,
}

/// A parsed and validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name (results' `scenario` field).
    pub name: String,
    /// What the scenario shows.
    pub description: String,
    /// Where it came from (a path or `built-in:NAME`).
    pub source: String,
    /// Run seed.
    pub seed: u64,
    /// Independent runs (seeds), for confidence intervals (`runs`, default 1).
    pub runs: u32,
    /// Application traffic duration.
    pub duration: Duration,
    /// Extra time for messages in flight.
    pub drain: Duration,
    /// Clients (when not swept).
    pub clients: u32,
    /// Edge gateways the emulator's gateway peer puts the clients behind, split evenly
    /// (`gateway_edges`, default 1, at most [`MAX_GATEWAY_EDGES`]).
    pub gateway_edges: u32,
    /// Access link client to server.
    pub access_up: LinkSpec,
    /// Access link server to client.
    pub access_down: LinkSpec,
    /// Optional dumbbell bottleneck.
    pub bottleneck: Option<BottleneckSpec>,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
    /// Protocols in output order.
    pub protocols: Vec<ProtocolSpec>,
    /// Sweep.
    pub sweep: Sweep,
    /// The paper this scenario reproduces and its published figures.
    pub paper: crate::paper::PaperSpec,
}

#[cfg(test)]
mod tests;
