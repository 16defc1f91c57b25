//! The gateways' configuration: [`TrunkOptions`], [`EdgeConfig`], [`ServerGatewayConfig`].

use std::net::SocketAddr;
use std::time::Duration;

use thinwire_proto::{EndpointConfig, PublicKey, ServerConfig, TransportConfig};

use super::error::GatewayError;

/// How the trunk holds and bounds what it carries (the same at both gateways).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrunkOptions {
    /// T: messages toward the trunk are held (at most T, at most T/2 under sparse traffic:
    /// `docs/GATEWAY.md` §2) and pushed into the trunk connection together, so that thinwire
    /// packs them into few datagrams. `ZERO` pushes them at once. Default 10 ms.
    pub period: Duration,
    /// Most flows (players) at once. Default 4096.
    pub max_flows: usize,
    /// Bytes held for one flow (waiting for the upstream connection, for reordering, or for
    /// the next period) before the flow is closed. Default 256 KiB.
    pub max_flow_backlog: usize,
    /// Bytes the hold keeps for all flows together. Once it is reached, a message that would
    /// take its flow above its fair share (`max_held / flows held`) closes the flow like a
    /// backlog overflow, so that many flows at their backlog bound cannot add up to gigabytes;
    /// a flow within its share is never refused for it. Default 32 MiB, the size of an
    /// endpoint's default [`MemoryBudget`](thinwire_proto::MemoryBudget).
    pub max_held: usize,
}

impl Default for TrunkOptions {
    fn default() -> Self {
        Self {
            period: Duration::from_millis(10),
            max_flows: 4096,
            max_flow_backlog: 256 << 10,
            max_held: 32 << 20,
        }
    }
}

impl TrunkOptions {
    /// The transport settings of the trunk connection, from those of the players' (`base`):
    /// the datagram is 16 bytes larger, so a player's full-size unreliable message still fits
    /// with its frame header; the trunk buffers 8 times what one player's connection does
    /// (it carries many flows; the trunk endpoint's memory budget still bounds it, at 8 MiB
    /// by default: its per-source share) and remembers 4 times the latest-value keys (every
    /// flow's LatestReliable keys share trunk channel 3). Redundant bundling is off: bundling
    /// each packet's unacknowledged data into the next would double the trunk's payload
    /// (`docs/GATEWAY.md` §2, loss recovery). Everything else is the players' thin-stream
    /// configuration; the trunk's congestion control is weighted by its open flows instead
    /// (`Endpoint::set_congestion_weight`), which the gateways keep up to date.
    ///
    /// (A larger RTO margin was tried first, when the unweighted trunk backed off at every
    /// loss: it helped little. The weight is what matters; with it, the default margin gives
    /// the best tail latency in the Anarchy Online reproduction.)
    pub fn transport(&self, base: &TransportConfig) -> TransportConfig {
        TransportConfig {
            max_datagram_size: base.max_datagram_size + 16,
            bundle_budget: base.bundle_budget + 16,
            recv_buffer: base.recv_buffer.saturating_mul(8),
            send_buffer: base.send_buffer.saturating_mul(8),
            bundling: false,
            max_latest_keys: base.max_latest_keys.saturating_mul(4),
            ..base.clone()
        }
    }

    /// Checks the values are usable.
    pub fn validate(&self) -> Result<(), GatewayError> {
        if self.max_flows == 0 {
            return Err(GatewayError::Options("max_flows must be positive"));
        }
        if self.max_held < self.max_flow_backlog {
            return Err(GatewayError::Options(
                "max_held must be at least max_flow_backlog",
            ));
        }
        if self.max_flow_backlog < 1024 {
            return Err(GatewayError::Options(
                "max_flow_backlog must be at least 1 KiB",
            ));
        }
        if self.period > Duration::from_secs(1) {
            return Err(GatewayError::Options("period must be at most 1 s"));
        }
        Ok(())
    }
}

/// Configuration of an [`EdgeGateway`](super::EdgeGateway).
#[derive(Debug, Clone)]
pub struct EdgeConfig {
    /// The players' socket (players connect here as they would to the game server).
    pub players: EndpointConfig,
    /// The server side of the players' socket: its key is what players pin.
    pub players_server: ServerConfig,
    /// The trunk socket. Its `max_datagram_size` should exceed the players' by 16 bytes, so
    /// that an unreliable player message of a full datagram still fits with its frame header.
    pub trunk: EndpointConfig,
    /// The server gateway's trunk address.
    pub server_gateway: SocketAddr,
    /// The server gateway's trunk key.
    pub server_gateway_key: PublicKey,
    /// Hold and bounds.
    pub options: TrunkOptions,
}

/// Configuration of a [`ServerGateway`](super::ServerGateway).
#[derive(Debug, Clone)]
pub struct ServerGatewayConfig {
    /// The trunk socket (the edge connects to it).
    pub trunk: EndpointConfig,
    /// The server side of the trunk socket: its key is what the edge pins.
    pub trunk_server: ServerConfig,
    /// The socket facing the game server: one connection per flow. The game server must list
    /// this socket's IP in its `ServerConfig::trusted_sources`.
    pub upstream: EndpointConfig,
    /// The game server's address.
    pub game_server: SocketAddr,
    /// The game server's key.
    pub game_server_key: PublicKey,
    /// Hold and bounds.
    pub options: TrunkOptions,
}

/// `Config` error naming the configuration.
pub(crate) fn check(which: &'static str, c: &EndpointConfig) -> Result<(), GatewayError> {
    c.validate()
        .map_err(|source| GatewayError::Config { which, source })
}
