//! The gateways' configuration: [`TrunkOptions`], [`EdgeConfig`], [`ServerGatewayConfig`].

use std::net::SocketAddr;
use std::time::Duration;

use thinwire_proto::{EndpointConfig, PublicKey, ServerConfig, TokenKey, TransportConfig};

use super::credential::TrunkCredential;
use super::error::GatewayError;
use super::peer::TrunkPeer;

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
    /// Edge processes: most players connected from one source address (an IPv4 address or an
    /// IPv6 /64) at once, the players' endpoint's `ServerConfig::max_connections_per_source`.
    /// An edge serves a region, where many honest players can share one carrier-grade NAT
    /// address, so it admits more than a game server's default 64; the edge's global bounds
    /// (`max_flows`, the memory budget, the busy-network rule of `docs/PROTOCOL.md` §5.6)
    /// still hold, and an edge that requires players' connect tokens lifts the per-source
    /// limit altogether. Default 1024.
    pub players_per_source: usize,
    /// Server gateway: how long a flow whose player carried an identity (FlowOpen claims)
    /// stays **parked** after its trunk went down or its edge lost the player, its
    /// game-server connection kept open, waiting for the player to come back through any
    /// edge with the same client id (`docs/GATEWAY.md` §2, Moving between edges). `ZERO`
    /// closes such flows at once, as flows without claims are. Default 10 s.
    pub resume_grace: Duration,
    /// Paired ACKs on the trunk ([`TransportConfig::ack_pairs`], both gateways): the
    /// receiving gateway acknowledges every second trunk packet, holding the ACK of the
    /// other up to 2T. About half the ACK-only packets (a tenth of the trunk's IP bytes in
    /// the Anarchy Online reproduction), at the price of finding a lost held packet only when
    /// the next one arrives, about T later (`docs/GATEWAY.md` §5.1). Default off.
    pub paired_acks: bool,
}

impl Default for TrunkOptions {
    fn default() -> Self {
        Self {
            period: Duration::from_millis(10),
            max_flows: 4096,
            max_flow_backlog: 256 << 10,
            max_held: 32 << 20,
            players_per_source: 1024,
            resume_grace: Duration::from_secs(10),
            paired_acks: false,
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
            ack_pairs: self.paired_acks,
            max_ack_delay: if self.paired_acks {
                (self.period * 2).max(base.max_ack_delay)
            } else {
                base.max_ack_delay
            },
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
        if self.resume_grace > Duration::from_secs(3600) {
            return Err(GatewayError::Options(
                "resume_grace must be at most an hour",
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
    /// The server side of the players' socket: its key is what players pin. With
    /// `connect_tokens` set, players need a connect token minted for the edge (by the game's
    /// backend), and their claims travel in FlowOpen (the edge must then be given the unix
    /// time: [`EdgeGateway::set_unix_time`](super::EdgeGateway::set_unix_time)).
    pub players_server: ServerConfig,
    /// The trunk socket. Its `max_datagram_size` should exceed the players' by 16 bytes, so
    /// that an unreliable player message of a full datagram still fits with its frame header.
    pub trunk: EndpointConfig,
    /// This edge's trunk credential: the server gateway's address and key, and the sealed id
    /// the server gateway admits (see [`mint_trunk_credential`](super::mint_trunk_credential)).
    pub credential: TrunkCredential,
    /// The server gateway's address to dial instead of the credential's first (e.g. its name
    /// resolved where the edge stands); `None`: the credential's.
    pub server_gateway: Option<SocketAddr>,
    /// Hold and bounds.
    pub options: TrunkOptions,
}

/// Configuration of a [`ServerGateway`](super::ServerGateway).
#[derive(Debug, Clone)]
pub struct ServerGatewayConfig {
    /// The trunk socket (the edge connects to it).
    pub trunk: EndpointConfig,
    /// The server side of the trunk socket: its key is what the edges pin. Its
    /// `connect_tokens` is set by the gateway (from `operator_key`): whatever it holds is
    /// replaced.
    pub trunk_server: ServerConfig,
    /// The operator key the trunk credentials are minted with: a Connect without a valid
    /// credential is refused by the trunk endpoint at the handshake.
    pub operator_key: TokenKey,
    /// The peers admitted, by the id their credential carries; a trunk with a valid
    /// credential whose id is not here is closed at once
    /// ([`NOT_ADMITTED`](super::close::NOT_ADMITTED)).
    pub peers: Vec<TrunkPeer>,
    /// The socket facing the game server: one connection per flow. The game server must list
    /// this socket's IP in its `ServerConfig::trusted_sources`.
    pub upstream: EndpointConfig,
    /// The game server's address.
    pub game_server: SocketAddr,
    /// The game server's key.
    pub game_server_key: PublicKey,
    /// Players' identities toward the game server: when set, each flow's connection to the
    /// game server presents a connect token minted here with this key, carrying the claims
    /// the edge read from the player's own token, so the game server reads them with
    /// `Endpoint::token_claims` as for a direct player. `None`: claims are not forwarded.
    pub upstream_tokens: Option<UpstreamTokens>,
    /// Hold and bounds.
    pub options: TrunkOptions,
}

/// How a server gateway mints the connect tokens of its connections to the game server.
#[derive(Debug, Clone)]
pub struct UpstreamTokens {
    /// The game server's token key (what its `ServerConfig::connect_tokens` holds).
    pub key: TokenKey,
    /// Lifetime of each token (it only has to outlive the handshake), e.g. 60 s.
    pub lifetime: Duration,
    /// The first 16 bytes of every token's nonce (the last 8 count the tokens minted): draw
    /// them from a cryptographic RNG at each start, so that no nonce is used twice with the
    /// key.
    pub nonce_prefix: [u8; 16],
}

/// `Config` error naming the configuration.
pub(crate) fn check(which: &'static str, c: &EndpointConfig) -> Result<(), GatewayError> {
    c.validate()
        .map_err(|source| GatewayError::Config { which, source })
}
