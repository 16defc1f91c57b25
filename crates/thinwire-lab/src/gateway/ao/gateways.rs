//! The two gateways as nodes of the simulated network: each has two sockets (the local side
//! and the trunk side) and tells which side a datagram arrived on and leaves from.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, EdgeConfig, EdgeGateway, GatewayEvent, ServerGateway,
    ServerGatewayConfig, Side, TrunkOptions, TrunkPeer,
};
use thinwire_proto::{
    Endpoint, EndpointConfig, PublicKey, ServerConfig, TokenKey, TransportConfig,
};

use super::nodes::Trouble;
use super::results::{PayloadCount, TrunkSummary};
use super::AoOptions;

/// The operator key of the run's trunk credential (the edge is peer 1).
const OPERATOR_KEY: [u8; 32] = [0x0a; 32];
/// The unix time the gateways are told (credential expiry only).
const UNIX: Duration = Duration::from_secs(1_800_000_000);

/// The trunk options of a run: its period, room for every flow.
fn options(opts: &AoOptions) -> TrunkOptions {
    TrunkOptions {
        period: opts.period,
        max_flows: opts.flows.max(1),
        ..TrunkOptions::default()
    }
}

/// What the server gateway is built from.
pub(super) struct ServerGwSetup<'a> {
    /// The run.
    pub(super) opts: &'a AoOptions,
    /// The trunk socket's configuration (its transport is replaced).
    pub(super) trunk: EndpointConfig,
    /// The trunk's transport.
    pub(super) trunk_transport: Arc<TransportConfig>,
    /// The socket facing the game server.
    pub(super) upstream: EndpointConfig,
    /// The game server's address and key.
    pub(super) game_server: (SocketAddr, PublicKey),
    /// The gateway's sockets: toward the game server, and the trunk.
    pub(super) addrs: (SocketAddr, SocketAddr),
}

/// What the edge gateway is built from.
pub(super) struct EdgeSetup<'a> {
    /// The run.
    pub(super) opts: &'a AoOptions,
    /// The players' socket.
    pub(super) players: EndpointConfig,
    /// The server side of the players' socket.
    pub(super) players_server: ServerConfig,
    /// The trunk socket's configuration (its transport is replaced).
    pub(super) trunk: EndpointConfig,
    /// The trunk's transport.
    pub(super) trunk_transport: Arc<TransportConfig>,
    /// The server gateway's trunk address and key.
    pub(super) server_gateway: (SocketAddr, PublicKey),
    /// The gateway's sockets: toward the players, and the trunk.
    pub(super) addrs: (SocketAddr, SocketAddr),
}

/// The server gateway and its two sockets.
pub(super) struct ServerGwNode {
    gw: ServerGateway,
    local: SocketAddr,
    trunk: SocketAddr,
    trunk_downs: u64,
}

/// The edge gateway and its two sockets.
pub(super) struct EdgeNode {
    gw: EdgeGateway,
    local: SocketAddr,
    trunk: SocketAddr,
    trunk_downs: u64,
}

/// Adds the payload counters of every connection of the trunk endpoint `ep` to `total`.
fn trunk_payload(ep: &Endpoint, total: &mut PayloadCount) {
    for s in ep.connections().filter_map(|h| ep.connection_stats(h)) {
        total.add(&s);
    }
}

fn side(local: SocketAddr, trunk: SocketAddr, at: SocketAddr) -> Side {
    if at == trunk {
        Side::Trunk
    } else {
        debug_assert_eq!(at, local);
        Side::Local
    }
}

impl ServerGwNode {
    /// The server gateway of `setup` at `now`.
    pub(super) fn new(now: Instant, setup: ServerGwSetup<'_>) -> Self {
        let mut trunk = setup.trunk;
        trunk.transport = setup.trunk_transport;
        let config = ServerGatewayConfig {
            trunk,
            trunk_server: ServerConfig::default(),
            operator_key: TokenKey::new(OPERATOR_KEY),
            peers: vec![TrunkPeer::new(1, "edge")],
            upstream: setup.upstream,
            game_server: setup.game_server.0,
            game_server_key: setup.game_server.1,
            upstream_tokens: None,
            options: options(setup.opts),
        };
        let mut gw = ServerGateway::new(now, config).expect("the server gateway's setup is valid");
        gw.set_unix_time(now, UNIX);
        ServerGwNode {
            gw,
            local: setup.addrs.0,
            trunk: setup.addrs.1,
            trunk_downs: 0,
        }
    }

    /// The key the edge pins.
    pub(super) fn trunk_public_key(&self) -> PublicKey {
        self.gw.trunk_public_key()
    }

    /// The trunk's summary: its connection's counters and the period-T hold.
    pub(super) fn trunk_summary(&self) -> TrunkSummary {
        let trunk = self.gw.trunk();
        let stats: Vec<_> = trunk
            .connections()
            .filter_map(|h| trunk.connection_stats(h))
            .collect();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        TrunkSummary {
            hold_mean_ms: ms(self.gw.stats().held_delay_mean()),
            hold_max_ms: ms(self.gw.stats().held_delay_max),
            ..TrunkSummary::of(&stats)
        }
    }
}

impl EdgeNode {
    /// The edge gateway of `setup` at `now`.
    pub(super) fn new(now: Instant, setup: EdgeSetup<'_>) -> Self {
        let mut trunk = setup.trunk;
        trunk.transport = setup.trunk_transport;
        let config = EdgeConfig {
            players: setup.players,
            players_server: setup.players_server,
            trunk,
            credential: mint_trunk_credential(
                &TokenKey::new(OPERATOR_KEY),
                &CredentialSpec {
                    peer_id: 1,
                    name: "edge",
                    server_gateway_key: &setup.server_gateway.1,
                    addresses: &[setup.server_gateway.0],
                    expires_unix_s: (UNIX + Duration::from_secs(86_400)).as_secs(),
                },
                [1; 24],
            )
            .expect("a valid credential"),
            server_gateway: None,
            options: options(setup.opts),
        };
        EdgeNode {
            gw: EdgeGateway::new(now, config).expect("the edge gateway's setup is valid"),
            local: setup.addrs.0,
            trunk: setup.addrs.1,
            trunk_downs: 0,
        }
    }

    /// The key the players pin.
    pub(super) fn players_public_key(&self) -> PublicKey {
        self.gw.players_public_key()
    }
}

/// The node calls both gateways share.
macro_rules! gateway_node {
    ($t:ty) => {
        impl $t {
            /// Handles a datagram from `from` that arrived at the socket `at`.
            pub(super) fn handle_datagram(
                &mut self,
                now: Instant,
                at: SocketAddr,
                from: SocketAddr,
                data: &[u8],
            ) {
                let side = side(self.local, self.trunk, at);
                self.gw.handle_datagram(now, side, from, data);
                self.drain_events();
            }

            fn drain_events(&mut self) {
                while let Some(ev) = self.gw.poll_event() {
                    if let GatewayEvent::TrunkDown { .. } = ev {
                        self.trunk_downs += 1;
                    }
                }
            }

            /// Handles the gateway's timer.
            pub(super) fn handle_timeout(&mut self, now: Instant) {
                self.gw.handle_timeout(now);
                self.drain_events();
            }

            /// The gateway's next timer.
            pub(super) fn poll_timeout(&mut self) -> Option<Instant> {
                self.gw.poll_timeout()
            }

            /// The next datagram: source socket, destination, length (in `buf`).
            pub(super) fn poll_transmit(
                &mut self,
                now: Instant,
                buf: &mut Vec<u8>,
            ) -> Option<(SocketAddr, SocketAddr, usize)> {
                let (side, t) = self.gw.poll_transmit(now, buf)?;
                let from = match side {
                    Side::Local => self.local,
                    Side::Trunk => self.trunk,
                };
                Some((from, t.destination, t.size))
            }

            /// Trunk losses, and messages the gateway dropped or refused.
            pub(super) fn trouble(&self) -> Trouble {
                let s = self.gw.stats();
                Trouble {
                    disconnects: self.trunk_downs,
                    refused_sends: s.dropped_messages + s.flows_refused,
                }
            }

            /// Adds the trunk connection's payload counters to `total`.
            pub(super) fn payload(&self, total: &mut PayloadCount) {
                trunk_payload(self.gw.trunk(), total);
            }
        }
    };
}

gateway_node!(ServerGwNode);
gateway_node!(EdgeNode);
