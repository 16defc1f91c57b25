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

#[cfg(test)]
impl SimSetup {
    /// Tests' setup: `clients` clients, each over its own access links `up` and `down` and
    /// nothing else (no bottleneck, no cross traffic), 10 s of traffic, 5 s of drain, seed 1.
    pub(crate) fn access_only(clients: u32, up: LinkConfig, down: LinkConfig) -> Self {
        SimSetup {
            clients,
            access_up: vec![up],
            access_down: vec![down],
            bottleneck: None,
            cross: (None, None),
            duration: Duration::from_secs(10),
            drain: Duration::from_secs(5),
            seed: 1,
        }
    }
}
