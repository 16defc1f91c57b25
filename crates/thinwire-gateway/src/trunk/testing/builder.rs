//! [`HarnessBuilder`]: the links, options and identities of a [`Harness`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thinwire_netmodel::LinkConfig;
use thinwire_proto::{Endpoint, EndpointConfig, ServerConfig, TokenKey, TransportConfig};

use super::{Harness, Wire, GAME, OPERATOR_KEY, SERVER_GW_LOCAL, SIM_UNIX};
use crate::trunk::{
    EdgeConfig, EdgeGateway, ServerGateway, ServerGatewayConfig, TrunkCredential, TrunkOptions,
    TrunkPeer, UpstreamTokens,
};

/// Builds a [`Harness`].
#[derive(Debug, Clone)]
pub struct HarnessBuilder {
    pub(super) seed: u64,
    pub(super) trunk: LinkConfig,
    pub(super) access: LinkConfig,
    lan: LinkConfig,
    options: TrunkOptions,
    trunk_transport: TransportConfig,
    transport: TransportConfig,
    cleartext: bool,
    game_server: ServerConfig,
    edges: usize,
    peers: Option<Vec<TrunkPeer>>,
    players_server: ServerConfig,
    upstream_tokens: Option<TokenKey>,
}

impl HarnessBuilder {
    pub(super) fn new(seed: u64) -> Self {
        let trunk_transport = TransportConfig {
            max_datagram_size: 1300,
            ..TransportConfig::default()
        };
        Self {
            seed,
            trunk: LinkConfig::default(),
            access: LinkConfig::default(),
            lan: LinkConfig::default(),
            options: TrunkOptions::default(),
            trunk_transport,
            transport: TransportConfig::default(),
            cleartext: false,
            game_server: ServerConfig::default(),
            edges: 1,
            peers: None,
            players_server: ServerConfig::default(),
            upstream_tokens: None,
        }
    }

    /// The game server's configuration (its `trusted_sources` get the server gateway's IP).
    pub fn game_server(mut self, config: ServerConfig) -> Self {
        self.game_server = config;
        self
    }

    /// How many edges (default 1), each with a credential for peer id `index + 1`.
    pub fn edges(mut self, n: usize) -> Self {
        self.edges = n;
        self
    }

    /// The server gateway's allowed peers (default: [`Harness::default_peer`] of each edge).
    pub fn peers(mut self, peers: Vec<TrunkPeer>) -> Self {
        self.peers = Some(peers);
        self
    }

    /// The server side of every edge's players socket (e.g. with `connect_tokens`).
    pub fn players_server(mut self, config: ServerConfig) -> Self {
        self.players_server = config;
        self
    }

    /// The server gateway mints upstream tokens with `key` (the game server's token key).
    pub fn upstream_tokens(mut self, key: TokenKey) -> Self {
        self.upstream_tokens = Some(key);
        self
    }

    /// Both directions of every trunk (default: perfect).
    pub fn trunk_link(mut self, link: LinkConfig) -> Self {
        self.trunk = link;
        self
    }

    /// Both directions of each player's access link (default: perfect).
    pub fn access_link(mut self, link: LinkConfig) -> Self {
        self.access = link;
        self
    }

    /// Both directions between the server gateway and the game server (default: perfect).
    pub fn lan_link(mut self, link: LinkConfig) -> Self {
        self.lan = link;
        self
    }

    /// The gateways' options (default: [`TrunkOptions::default`]).
    pub fn options(mut self, options: TrunkOptions) -> Self {
        self.options = options;
        self
    }

    /// Transport of the trunk connections (default: thinwire's, 1300-byte datagrams).
    pub fn trunk_transport(mut self, t: TransportConfig) -> Self {
        self.trunk_transport = t;
        self
    }

    /// Transport of the players' and game server's connections (default: thinwire's).
    pub fn transport(mut self, t: TransportConfig) -> Self {
        self.transport = t;
        self
    }

    /// Turns packet encryption off everywhere (faster simulations of many players).
    pub fn insecure_cleartext(mut self) -> Self {
        self.cleartext = true;
        self
    }

    pub(super) fn endpoint_config(&self, n: u64, trunk: bool) -> EndpointConfig {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.seed.to_le_bytes());
        seed[8..16].copy_from_slice(&n.to_le_bytes());
        let mut c = EndpointConfig::new(seed);
        let transport = if trunk {
            &self.trunk_transport
        } else {
            &self.transport
        };
        c.transport = Arc::new(transport.clone());
        if self.cleartext {
            c = c.insecure_cleartext();
        }
        c
    }

    /// Edge `e`'s gateway, the `incarnation`-th time it starts.
    pub(super) fn edge_gateway(
        &self,
        now: Instant,
        e: usize,
        incarnation: u64,
        credential: TrunkCredential,
    ) -> EdgeGateway {
        let n = 1000 + 16 * e as u64 + 2 * incarnation;
        let config = EdgeConfig {
            players: self.endpoint_config(n, false),
            players_server: self.players_server.clone(),
            trunk: self.endpoint_config(n + 1, true),
            credential,
            server_gateway: None,
            options: self.options.clone(),
        };
        let mut gw = EdgeGateway::new(now, config).expect("valid edge config");
        gw.set_unix_time(now, SIM_UNIX);
        gw
    }

    /// Creates everything and runs until every edge's trunk is up (at most 10 simulated
    /// seconds).
    pub fn build(self) -> Harness {
        let time = Instant::now();
        let mut game_server = self.game_server.clone();
        game_server.trusted_sources.push(SERVER_GW_LOCAL.ip());
        let mut game = Endpoint::new(self.endpoint_config(1, false), Some(game_server), time)
            .expect("valid game server config");
        game.set_unix_time(time, SIM_UNIX);
        let peers = self
            .peers
            .clone()
            .unwrap_or_else(|| (0..self.edges).map(Harness::default_peer).collect());
        let upstream_tokens = self.upstream_tokens.clone().map(|key| UpstreamTokens {
            key,
            lifetime: Duration::from_secs(60),
            nonce_prefix: [self.seed as u8; 16],
        });
        let mut server_gw = ServerGateway::new(
            time,
            ServerGatewayConfig {
                trunk: self.endpoint_config(2, true),
                trunk_server: ServerConfig::default(),
                operator_key: TokenKey::new(OPERATOR_KEY),
                peers,
                upstream: self.endpoint_config(3, false),
                game_server: GAME,
                game_server_key: game.public_key().expect("a server"),
                upstream_tokens,
                options: self.options.clone(),
            },
        )
        .expect("valid server gateway config");
        server_gw.set_unix_time(time, SIM_UNIX);
        let s = self.seed;
        let edges = self.edges;
        let mut h = Harness {
            time,
            game,
            game_events: VecDeque::new(),
            server_gw,
            server_events: Vec::new(),
            edges: Vec::new(),
            players: Vec::new(),
            by_addr: HashMap::new(),
            lan_up: Wire::new(self.lan.clone(), s ^ 0x13),
            lan_down: Wire::new(self.lan.clone(), s ^ 0x14),
            builder: self,
            buf: Vec::with_capacity(2048),
        };
        let key = TokenKey::new(OPERATOR_KEY);
        for e in 0..edges {
            let cred = h.credential(e as u64 + 1, &key);
            h.add_edge(cred);
        }
        h.run_while(Duration::from_secs(10), |h| {
            h.edges.iter().all(|e| e.trunk_up())
        });
        h
    }
}
