//! A simulated-time harness: a game server [`Endpoint`], a [`ServerGateway`], an
//! [`EdgeGateway`] and any number of player client [`Endpoint`]s, every hop a pair of
//! [`thinwire_netmodel`] links a test can edit (delay, loss, bandwidth, queues) and, on the
//! trunk, intercept datagram by datagram with a [`Filter`].
//!
//! ```text
//!  player i ─up/down─ edge (players socket) ─ edge (trunk) ═trunk_up/trunk_down═ server gw ─lan_up/lan_down─ game
//! ```
//!
//! Time only moves when [`Harness::step`] jumps to the next event, so a run is deterministic
//! for its seed. Events are kept with the time they happened, for latency measurements:
//!
//! ```ignore
//! let mut h = Harness::builder(1).trunk_link(LinkConfig::default().with_delay(ms(20))).build();
//! let a = h.connect_player(&[ChannelKind::ReliableOrdered]).expect("connected");
//! h.player_send(a, 0, b"hello");
//! h.run_for(Duration::from_millis(100));
//! let got = h.take_game_messages(a); // [(when, Message)]
//! ```
//! Built with the `testing` feature (and in this crate's tests).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thinwire_netmodel::clock::{self, SimClock};

use bytes::Bytes;
use thinwire_netmodel::{Link, LinkConfig};
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, Message, ServerConfig,
    TransportConfig,
};

use super::{EdgeConfig, EdgeGateway, GatewayEvent, ServerGateway, ServerGatewayConfig};
use super::{Side, TrunkOptions};

/// The game server's address.
pub const GAME: SocketAddr = addr([10, 0, 0, 1], 4433);
/// The server gateway's socket facing the game server (the game's `trusted_sources`).
pub const SERVER_GW_LOCAL: SocketAddr = addr([10, 0, 0, 2], 5000);
/// The server gateway's trunk socket.
pub const SERVER_GW_TRUNK: SocketAddr = addr([10, 1, 0, 2], 4500);
/// The edge's trunk socket.
pub const EDGE_TRUNK: SocketAddr = addr([10, 1, 0, 1], 4501);
/// The edge's players socket.
pub const EDGE_PLAYERS: SocketAddr = addr([10, 2, 0, 1], 4433);

const fn addr(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])), port)
}

/// What a [`Filter`] decides for one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the link.
    Pass,
    /// Drop it.
    Drop,
}

/// A hook on every datagram of one direction: the time, its index on that direction (0, 1,
/// ...) and its bytes (which it may change).
pub type Filter = Box<dyn FnMut(Instant, u64, &mut Vec<u8>) -> Verdict>;

/// One direction of one hop.
pub struct Wire {
    /// The link model.
    pub link: Link<Vec<u8>>,
    /// The hook, if any.
    pub filter: Option<Filter>,
    count: u64,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire").field("count", &self.count).finish()
    }
}

impl Wire {
    fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            link: Link::new(config, seed),
            filter: None,
            count: 0,
        }
    }

    fn send(&mut self, now: Instant, mut bytes: Vec<u8>) {
        let idx = self.count;
        self.count += 1;
        if let Some(f) = self.filter.as_mut() {
            if f(now, idx, &mut bytes) == Verdict::Drop {
                return;
            }
        }
        let size = bytes.len() + 28; // IPv4 + UDP headers
        self.link.send(now, bytes, size);
    }

    /// Datagrams handed to this wire so far (before the filter).
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// One player.
#[derive(Debug)]
pub struct Player {
    /// Its thinwire client.
    pub endpoint: Endpoint,
    /// Its address.
    pub addr: SocketAddr,
    /// Its connection to the edge.
    pub conn: ConnectionHandle,
    /// The game server's handle of its relayed connection, once [`Harness::connect_player`]
    /// saw it.
    pub game_conn: Option<ConnectionHandle>,
    /// Its events, with the time each happened.
    pub events: VecDeque<(Instant, Event)>,
    /// Player → edge.
    pub up: Wire,
    /// Edge → player.
    pub down: Wire,
}

/// Builds a [`Harness`].
#[derive(Debug, Clone)]
pub struct HarnessBuilder {
    seed: u64,
    trunk: LinkConfig,
    access: LinkConfig,
    lan: LinkConfig,
    options: TrunkOptions,
    trunk_transport: TransportConfig,
    transport: TransportConfig,
    cleartext: bool,
    game_server: ServerConfig,
}

impl HarnessBuilder {
    /// The game server's configuration (its `trusted_sources` get the server gateway's IP).
    pub fn game_server(mut self, config: ServerConfig) -> Self {
        self.game_server = config;
        self
    }

    /// Both directions of the trunk (default: perfect).
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

    /// Transport of the trunk connection (default: thinwire's, 1300-byte datagrams).
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

    fn endpoint_config(&self, n: u64, transport: &TransportConfig) -> EndpointConfig {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.seed.to_le_bytes());
        seed[8..16].copy_from_slice(&n.to_le_bytes());
        let mut c = EndpointConfig::new(seed);
        c.transport = Arc::new(transport.clone());
        if self.cleartext {
            c = c.insecure_cleartext();
        }
        c
    }

    /// Creates everything and runs until the trunk is up (at most 10 simulated seconds).
    pub fn build(self) -> Harness {
        let time = Instant::now();
        let mut game_server = self.game_server.clone();
        game_server.trusted_sources.push(SERVER_GW_LOCAL.ip());
        let game = Endpoint::new(
            self.endpoint_config(1, &self.transport),
            Some(game_server),
            time,
        )
        .expect("valid game server config");
        let server_gw = ServerGateway::new(
            time,
            ServerGatewayConfig {
                trunk: self.endpoint_config(2, &self.trunk_transport),
                trunk_server: ServerConfig::default(),
                upstream: self.endpoint_config(3, &self.transport),
                game_server: GAME,
                game_server_key: game.public_key().expect("a server"),
                options: self.options.clone(),
            },
        )
        .expect("valid server gateway config");
        let edge = EdgeGateway::new(
            time,
            EdgeConfig {
                players: self.endpoint_config(4, &self.transport),
                players_server: ServerConfig::default(),
                trunk: self.endpoint_config(5, &self.trunk_transport),
                server_gateway: SERVER_GW_TRUNK,
                server_gateway_key: server_gw.trunk_public_key(),
                options: self.options.clone(),
            },
        )
        .expect("valid edge config");
        let s = self.seed;
        let mut h = Harness {
            time,
            game,
            game_events: VecDeque::new(),
            server_gw,
            server_events: Vec::new(),
            edge,
            edge_events: Vec::new(),
            players: Vec::new(),
            by_addr: HashMap::new(),
            trunk_up: Wire::new(self.trunk.clone(), s ^ 0x11),
            trunk_down: Wire::new(self.trunk.clone(), s ^ 0x12),
            lan_up: Wire::new(self.lan.clone(), s ^ 0x13),
            lan_down: Wire::new(self.lan.clone(), s ^ 0x14),
            builder: self,
            buf: Vec::with_capacity(2048),
        };
        h.run_while(Duration::from_secs(10), |h| {
            h.edge_events.contains(&GatewayEvent::TrunkUp)
        });
        h
    }
}

/// A game server, both gateways and the players, in simulated time.
#[derive(Debug)]
pub struct Harness {
    /// The current simulated time.
    pub time: Instant,
    /// The unmodified game server.
    pub game: Endpoint,
    /// The game server's events, with their times.
    pub game_events: VecDeque<(Instant, ConnectionHandle, Event)>,
    /// The server gateway.
    pub server_gw: ServerGateway,
    /// Its events so far.
    pub server_events: Vec<GatewayEvent>,
    /// The edge gateway.
    pub edge: EdgeGateway,
    /// Its events so far.
    pub edge_events: Vec<GatewayEvent>,
    /// The players, by index.
    pub players: Vec<Player>,
    /// Edge → server gateway.
    pub trunk_up: Wire,
    /// Server gateway → edge.
    pub trunk_down: Wire,
    /// Server gateway → game server.
    pub lan_up: Wire,
    /// Game server → server gateway.
    pub lan_down: Wire,
    by_addr: HashMap<SocketAddr, usize>,
    builder: HarnessBuilder,
    buf: Vec<u8>,
}

impl Harness {
    /// A builder: perfect links, default options, seed `seed`.
    pub fn builder(seed: u64) -> HarnessBuilder {
        let trunk_transport = TransportConfig {
            max_datagram_size: 1300,
            ..TransportConfig::default()
        };
        HarnessBuilder {
            seed,
            trunk: LinkConfig::default(),
            access: LinkConfig::default(),
            lan: LinkConfig::default(),
            options: TrunkOptions::default(),
            trunk_transport,
            transport: TransportConfig::default(),
            cleartext: false,
            game_server: ServerConfig::default(),
        }
    }

    /// Adds a player that starts connecting to the edge with `channels` (returns its index).
    pub fn add_player(&mut self, channels: &[ChannelKind]) -> usize {
        let i = self.players.len();
        let cfg = self
            .builder
            .endpoint_config(100 + i as u64, &self.builder.transport);
        let mut endpoint = Endpoint::new(cfg, None, self.time).expect("valid player config");
        let key = self.edge.players_public_key();
        let conn = endpoint
            .connect(self.time, EDGE_PLAYERS, &key, channels)
            .expect("valid channels");
        let ip = Ipv4Addr::new(10, 3, (i / 250) as u8, (i % 250 + 1) as u8);
        let player_addr = SocketAddr::new(IpAddr::V4(ip), 40000 + (i / 62500) as u16);
        let seed = self.builder.seed ^ (0x1000 + 2 * i as u64);
        self.players.push(Player {
            endpoint,
            addr: player_addr,
            conn,
            game_conn: None,
            events: VecDeque::new(),
            up: Wire::new(self.builder.access.clone(), seed),
            down: Wire::new(self.builder.access.clone(), seed + 1),
        });
        self.by_addr.insert(player_addr, i);
        i
    }

    /// Adds a player and runs until the game server accepted its relayed connection (at
    /// most 10 simulated seconds); records [`Player::game_conn`]. Players connected this
    /// way, one after another, are matched to the game's connections in order.
    pub fn connect_player(&mut self, channels: &[ChannelKind]) -> Option<usize> {
        let i = self.add_player(channels);
        let ok = self.run_while(Duration::from_secs(10), |h| {
            h.game_events
                .iter()
                .any(|(_, _, e)| matches!(e, Event::Connected { .. }))
                && h.players[i]
                    .events
                    .iter()
                    .any(|(_, e)| matches!(e, Event::Connected { .. }))
        });
        let pos = self
            .game_events
            .iter()
            .position(|(_, _, e)| matches!(e, Event::Connected { .. }))?;
        let (_, game_conn, _) = self.game_events.remove(pos)?;
        self.players[i].game_conn = Some(game_conn);
        self.players[i]
            .events
            .retain(|(_, e)| !matches!(e, Event::Connected { .. }));
        ok.then_some(i)
    }

    /// Queues a message from player `i` on `channel` (latest-value channels: see
    /// [`player_send_latest`](Self::player_send_latest)).
    pub fn player_send(&mut self, i: usize, channel: u8, data: &[u8]) {
        let p = &mut self.players[i];
        let data = Bytes::copy_from_slice(data);
        p.endpoint
            .send(self.time, p.conn, channel, data)
            .expect("player send");
    }

    /// Queues the value for `key` from player `i` on a latest-value `channel`.
    pub fn player_send_latest(&mut self, i: usize, channel: u8, key: u64, data: &[u8]) {
        let p = &mut self.players[i];
        let data = Bytes::copy_from_slice(data);
        p.endpoint
            .send_latest(self.time, p.conn, channel, key, data)
            .expect("player send_latest");
    }

    /// Queues a message from the game server to player `i` (needs [`Player::game_conn`]).
    pub fn game_send(&mut self, i: usize, channel: u8, key: Option<u64>, data: &[u8]) {
        let conn = self.players[i].game_conn.expect("player connected");
        let data = Bytes::copy_from_slice(data);
        let r = match key {
            Some(k) => self.game.send_latest(self.time, conn, channel, k, data),
            None => self.game.send(self.time, conn, channel, data),
        };
        r.expect("game send");
    }

    /// Removes and returns the messages the game server received from player `i`.
    pub fn take_game_messages(&mut self, i: usize) -> Vec<(Instant, Message)> {
        let Some(conn) = self.players[i].game_conn else {
            return Vec::new();
        };
        let mut out = Vec::new();
        self.game_events.retain(|(t, h, e)| match e {
            Event::Message(m) if *h == conn => {
                out.push((*t, m.clone()));
                false
            }
            _ => true,
        });
        out
    }

    /// Removes and returns the messages player `i` received.
    pub fn take_player_messages(&mut self, i: usize) -> Vec<(Instant, Message)> {
        let mut out = Vec::new();
        self.players[i].events.retain(|(t, e)| match e {
            Event::Message(m) => {
                out.push((*t, m.clone()));
                false
            }
            _ => true,
        });
        out
    }

    /// Sends what every node wants to send now and collects their events.
    pub fn flush(&mut self) {
        let now = self.time;
        for p in &mut self.players {
            while let Some(t) = p.endpoint.poll_transmit(now, &mut self.buf) {
                p.up.send(now, self.buf[..t.size].to_vec());
            }
            while let Some((_, e)) = p.endpoint.poll_event() {
                p.events.push_back((now, e));
            }
        }
        while let Some((side, t)) = self.edge.poll_transmit(now, &mut self.buf) {
            let bytes = self.buf[..t.size].to_vec();
            match side {
                Side::Trunk => self.trunk_up.send(now, bytes),
                Side::Local => {
                    if let Some(&i) = self.by_addr.get(&t.destination) {
                        self.players[i].down.send(now, bytes);
                    }
                }
            }
        }
        while let Some((side, t)) = self.server_gw.poll_transmit(now, &mut self.buf) {
            let bytes = self.buf[..t.size].to_vec();
            match side {
                Side::Trunk => self.trunk_down.send(now, bytes),
                Side::Local => self.lan_up.send(now, bytes),
            }
        }
        while let Some(t) = self.game.poll_transmit(now, &mut self.buf) {
            self.lan_down.send(now, self.buf[..t.size].to_vec());
        }
        while let Some((h, e)) = self.game.poll_event() {
            self.game_events.push_back((now, h, e));
        }
        self.edge_events
            .extend(std::iter::from_fn(|| self.edge.poll_event()));
        self.server_events
            .extend(std::iter::from_fn(|| self.server_gw.poll_event()));
    }

    /// The next instant anything happens (a delivery or a timer).
    pub fn next_event(&self) -> Option<Instant> {
        let wires = [
            &self.trunk_up,
            &self.trunk_down,
            &self.lan_up,
            &self.lan_down,
        ];
        let players = self.players.iter().flat_map(|p| {
            [
                p.endpoint.poll_timeout(),
                p.up.link.next_delivery(),
                p.down.link.next_delivery(),
            ]
        });
        wires
            .iter()
            .map(|w| w.link.next_delivery())
            .chain([
                self.game.poll_timeout(),
                self.server_gw.poll_timeout(),
                self.edge.poll_timeout(),
            ])
            .chain(players)
            .flatten()
            .min()
    }

    fn process_due(&mut self) {
        let now = self.time;
        while let Some(d) = self.trunk_up.link.poll_deliver(now) {
            self.server_gw
                .handle_datagram(now, Side::Trunk, EDGE_TRUNK, &d);
        }
        while let Some(d) = self.trunk_down.link.poll_deliver(now) {
            self.edge
                .handle_datagram(now, Side::Trunk, SERVER_GW_TRUNK, &d);
        }
        while let Some(d) = self.lan_up.link.poll_deliver(now) {
            self.game.handle_datagram(now, SERVER_GW_LOCAL, &d);
        }
        while let Some(d) = self.lan_down.link.poll_deliver(now) {
            self.server_gw.handle_datagram(now, Side::Local, GAME, &d);
        }
        for p in &mut self.players {
            while let Some(d) = p.up.link.poll_deliver(now) {
                self.edge.handle_datagram(now, Side::Local, p.addr, &d);
            }
            while let Some(d) = p.down.link.poll_deliver(now) {
                p.endpoint.handle_datagram(now, EDGE_PLAYERS, &d);
            }
            if p.endpoint.poll_timeout().is_some_and(|t| t <= now) {
                p.endpoint.handle_timeout(now);
            }
        }
        if self.game.poll_timeout().is_some_and(|t| t <= now) {
            self.game.handle_timeout(now);
        }
        if self.server_gw.poll_timeout().is_some_and(|t| t <= now) {
            self.server_gw.handle_timeout(now);
        }
        if self.edge.poll_timeout().is_some_and(|t| t <= now) {
            self.edge.handle_timeout(now);
        }
        self.flush();
    }

    /// Advances to the next event and processes everything due then; false when nothing is
    /// scheduled at all.
    pub fn step(&mut self) -> bool {
        self.flush();
        let Some(next) = self.next_event() else {
            return false;
        };
        self.time = self.time.max(next);
        self.process_due();
        true
    }

    /// Runs every event up to `until`, then sets the time to `until`.
    pub fn run_until(&mut self, until: Instant) {
        clock::run_until(self, until);
    }

    /// Runs for `d` of simulated time.
    pub fn run_for(&mut self, d: Duration) {
        clock::run_for(self, d);
    }

    /// Runs until `done` holds or `limit` of simulated time passes; returns whether it held.
    pub fn run_while(&mut self, limit: Duration, done: impl FnMut(&Harness) -> bool) -> bool {
        clock::run_while(self, limit, done)
    }
}

impl SimClock for Harness {
    fn time_mut(&mut self) -> &mut Instant {
        &mut self.time
    }
    fn flush(&mut self) {
        Harness::flush(self);
    }
    fn next_event(&self) -> Option<Instant> {
        Harness::next_event(self)
    }
    fn process_due(&mut self) {
        Harness::process_due(self);
    }
}
