//! [`SimSetup`]: the network and run parameters of one simulation.

use std::time::Duration;

use thinwire_netmodel::LinkConfig;

use super::cross::CrossTraffic;

/// Network and run parameters of one simulation.
#[derive(Debug, Clone)]
pub struct SimSetup {
    /// Number of clients.
    pub clients: u32,
    /// Access link client to server, per client.
    pub access_up: Vec<LinkConfig>,
    /// Access link server to client, per client.
    pub access_down: Vec<LinkConfig>,
    /// Shared bottleneck (up, down), if any.
    pub bottleneck: Option<(LinkConfig, LinkConfig)>,
    /// Cross traffic on the bottleneck (up, down).
    pub cross: (Option<CrossTraffic>, Option<CrossTraffic>),
    /// Application traffic stops after this time.
    pub duration: Duration,
    /// Extra simulated time after `duration` for messages in flight.
    pub drain: Duration,
    /// Run seed.
    pub seed: u64,
}
