//! A simulated-time harness: a game server [`Endpoint`], a [`ServerGateway`], any number of
//! [`EdgeGateway`]s and player client [`Endpoint`]s, every hop a pair of
//! [`thinwire_netmodel`] links a test can edit (delay, loss, bandwidth, queues) and, on the
//! trunks, intercept datagram by datagram with a [`Filter`].
//!
//! ```text
//!  player i ─up/down─ edge e (players socket) ─ edge e (trunk) ═trunk_up/trunk_down═ server gw ─lan_up/lan_down─ game
//! ```
//!
//! Every edge holds a trunk credential minted with [`OPERATOR_KEY`] for peer id `e + 1`, and
//! the server gateway admits those peers (unless the builder says otherwise). The gateways
//! and the game server are told the unix time [`SIM_UNIX`] at the start.
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
use std::time::{Duration, Instant};

use thinwire_netmodel::clock::{self, SimClock};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectToken, ConnectionHandle, Endpoint, Event, Message, SendMode, TokenKey,
};

use super::{
    mint_trunk_credential, CredentialSpec, EdgeGateway, GatewayEvent, ServerGateway, Side,
};
use super::{TrunkCredential, TrunkPeer};

mod builder;
mod wire;

pub use builder::HarnessBuilder;
pub use wire::{Filter, Verdict, Wire};

/// The game server's address.
pub const GAME: SocketAddr = addr([10, 0, 0, 1], 4433);
/// The server gateway's socket facing the game server (the game's `trusted_sources`).
pub const SERVER_GW_LOCAL: SocketAddr = addr([10, 0, 0, 2], 5000);
/// The server gateway's trunk socket.
pub const SERVER_GW_TRUNK: SocketAddr = addr([10, 1, 0, 2], 4500);
/// The operator key of the harness's trunk credentials.
pub const OPERATOR_KEY: [u8; 32] = [0x42; 32];
/// The unix time the harness starts at (seconds; 2027-01-15).
pub const SIM_UNIX: Duration = Duration::from_secs(1_800_000_000);

const fn addr(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])), port)
}

/// Edge `e`'s trunk socket.
pub fn edge_trunk_addr(e: usize) -> SocketAddr {
    addr([10, 1, 1, e as u8 + 1], 4501)
}

/// Edge `e`'s players socket.
pub fn edge_players_addr(e: usize) -> SocketAddr {
    addr([10, 2, 0, e as u8 + 1], 4433)
}

/// One player.
#[derive(Debug)]
pub struct Player {
    /// Its thinwire client.
    pub endpoint: Endpoint,
    /// Its address.
    pub addr: SocketAddr,
    /// The edge it connects to.
    pub edge: usize,
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

/// One edge gateway with its trunk wires.
#[derive(Debug)]
pub struct Edge {
    /// The gateway.
    pub gw: EdgeGateway,
    /// Its events so far.
    pub events: Vec<GatewayEvent>,
    /// Its credential (to restart it with).
    pub credential: TrunkCredential,
    /// Edge → server gateway.
    pub trunk_up: Wire,
    /// Server gateway → edge.
    pub trunk_down: Wire,
    /// Its trunk socket.
    pub trunk_addr: SocketAddr,
    /// Its players socket.
    pub players_addr: SocketAddr,
    /// How many times it was created (restarts + 1): seeds its endpoints.
    incarnation: u64,
}

impl Edge {
    /// Whether its trunk came up (the first event of the kind since it was created).
    pub fn trunk_up(&self) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e, GatewayEvent::TrunkUp { .. }))
    }
}

/// A game server, the gateways and the players, in simulated time.
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
    /// The edges, by index.
    pub edges: Vec<Edge>,
    /// The players, by index.
    pub players: Vec<Player>,
    /// Server gateway → game server.
    pub lan_up: Wire,
    /// Game server → server gateway.
    pub lan_down: Wire,
    by_addr: HashMap<SocketAddr, usize>,
    builder: HarnessBuilder,
    buf: Vec<u8>,
}

impl Harness {
    /// A builder: one edge, perfect links, default options, seed `seed`.
    pub fn builder(seed: u64) -> HarnessBuilder {
        HarnessBuilder::new(seed)
    }

    /// A trunk credential for `peer` minted with `key` for this server gateway (an attacker's
    /// when `key` is not [`OPERATOR_KEY`]), valid for a year of simulated time.
    pub fn credential(&self, peer: u64, key: &TokenKey) -> TrunkCredential {
        let expires = (SIM_UNIX + Duration::from_secs(365 * 86_400)).as_secs();
        let mut nonce = [0u8; 24];
        nonce[..8].copy_from_slice(&peer.to_le_bytes());
        nonce[8..16].copy_from_slice(&self.builder.seed.to_le_bytes());
        nonce[16] = self.edges.len() as u8;
        let gw_key = self.server_gw.trunk_public_key();
        let name = format!("edge-{peer}");
        mint_trunk_credential(
            key,
            &CredentialSpec {
                peer_id: peer,
                name: &name,
                server_gateway_key: &gw_key,
                addresses: &[SERVER_GW_TRUNK],
                expires_unix_s: expires,
            },
            nonce,
        )
        .expect("a valid credential")
    }

    /// Adds an edge holding `credential` (it starts dialing at once); returns its index.
    pub fn add_edge(&mut self, credential: TrunkCredential) -> usize {
        let e = self.edges.len();
        let seed = self.builder.seed ^ (0x2000 + 4 * e as u64);
        let edge = Edge {
            gw: self
                .builder
                .edge_gateway(self.time, e, 0, credential.clone()),
            events: Vec::new(),
            credential,
            trunk_up: Wire::new(self.builder.trunk.clone(), seed),
            trunk_down: Wire::new(self.builder.trunk.clone(), seed + 1),
            trunk_addr: edge_trunk_addr(e),
            players_addr: edge_players_addr(e),
            incarnation: 0,
        };
        self.edges.push(edge);
        e
    }

    /// Restarts edge `e`: a new process with the same credential and sockets, which knows
    /// nothing of the old one's trunk and players.
    pub fn restart_edge(&mut self, e: usize) {
        let edge = &mut self.edges[e];
        edge.incarnation += 1;
        let cred = edge.credential.clone();
        edge.gw = self
            .builder
            .edge_gateway(self.time, e, edge.incarnation, cred);
        edge.events.clear();
    }

    /// The allowed peer of edge `e` in the default configuration.
    pub fn default_peer(e: usize) -> TrunkPeer {
        TrunkPeer::new(e as u64 + 1, &format!("edge-{}", e + 1))
    }

    /// Adds a player that starts connecting to edge 0 with `channels` (returns its index).
    pub fn add_player(&mut self, channels: &[ChannelKind]) -> usize {
        self.add_player_at(0, channels, None)
    }

    /// Adds a player that starts connecting to edge `e` with `channels`, presenting `token`
    /// (minted for that edge) if any; returns its index.
    pub fn add_player_at(
        &mut self,
        e: usize,
        channels: &[ChannelKind],
        token: Option<&ConnectToken>,
    ) -> usize {
        let i = self.players.len();
        let cfg = self.builder.endpoint_config(100 + i as u64, false);
        let mut endpoint = Endpoint::new(cfg, None, self.time).expect("valid player config");
        let conn = match token {
            Some(t) => endpoint.connect_with_token(self.time, t, channels),
            None => {
                let key = self.edges[e].gw.players_public_key();
                endpoint.connect(self.time, self.edges[e].players_addr, &key, channels)
            }
        }
        .expect("valid channels");
        let ip = Ipv4Addr::new(10, 3, (i / 250) as u8, (i % 250 + 1) as u8);
        let player_addr = SocketAddr::new(IpAddr::V4(ip), 40000 + (i / 62500) as u16);
        let seed = self.builder.seed ^ (0x1000 + 2 * i as u64);
        self.players.push(Player {
            endpoint,
            addr: player_addr,
            edge: e,
            conn,
            game_conn: None,
            events: VecDeque::new(),
            up: Wire::new(self.builder.access.clone(), seed),
            down: Wire::new(self.builder.access.clone(), seed + 1),
        });
        self.by_addr.insert(player_addr, i);
        i
    }

    /// Adds a player at edge 0 and runs until the game server accepted its relayed
    /// connection; see [`connect_player_at`](Self::connect_player_at).
    pub fn connect_player(&mut self, channels: &[ChannelKind]) -> Option<usize> {
        self.connect_player_at(0, channels, None)
    }

    /// Adds a player at edge `e` and runs until the game server accepted its relayed
    /// connection (at most 10 simulated seconds); records [`Player::game_conn`]. Players
    /// connected this way, one after another, are matched to the game's connections in order.
    pub fn connect_player_at(
        &mut self,
        e: usize,
        channels: &[ChannelKind],
        token: Option<&ConnectToken>,
    ) -> Option<usize> {
        let i = self.add_player_at(e, channels, token);
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
            .send(self.time, p.conn, channel, data, SendMode::Plain)
            .expect("player send");
    }

    /// Queues the value for `key` from player `i` on a latest-value `channel`.
    pub fn player_send_latest(&mut self, i: usize, channel: u8, key: u64, data: &[u8]) {
        let p = &mut self.players[i];
        let data = Bytes::copy_from_slice(data);
        p.endpoint
            .send(self.time, p.conn, channel, data, SendMode::Latest { key })
            .expect("player send_latest");
    }

    /// Queues a message from the game server to player `i` (needs [`Player::game_conn`]).
    pub fn game_send(&mut self, i: usize, channel: u8, key: Option<u64>, data: &[u8]) {
        let conn = self.players[i].game_conn.expect("player connected");
        let data = Bytes::copy_from_slice(data);
        let mode = key.map_or(SendMode::Plain, |key| SendMode::Latest { key });
        self.game
            .send(self.time, conn, channel, data, mode)
            .expect("game send");
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
        for edge in &mut self.edges {
            while let Some((side, t)) = edge.gw.poll_transmit(now, &mut self.buf) {
                let bytes = self.buf[..t.size].to_vec();
                match side {
                    Side::Trunk => edge.trunk_up.send(now, bytes),
                    Side::Local => {
                        if let Some(&i) = self.by_addr.get(&t.destination) {
                            self.players[i].down.send(now, bytes);
                        }
                    }
                }
            }
            edge.events
                .extend(std::iter::from_fn(|| edge.gw.poll_event()));
        }
        while let Some((side, t)) = self.server_gw.poll_transmit(now, &mut self.buf) {
            let bytes = self.buf[..t.size].to_vec();
            match side {
                Side::Trunk => {
                    let to = self
                        .edges
                        .iter_mut()
                        .find(|e| e.trunk_addr == t.destination);
                    if let Some(e) = to {
                        e.trunk_down.send(now, bytes);
                    }
                }
                Side::Local => self.lan_up.send(now, bytes),
            }
        }
        while let Some(t) = self.game.poll_transmit(now, &mut self.buf) {
            self.lan_down.send(now, self.buf[..t.size].to_vec());
        }
        while let Some((h, e)) = self.game.poll_event() {
            self.game_events.push_back((now, h, e));
        }
        self.server_events
            .extend(std::iter::from_fn(|| self.server_gw.poll_event()));
    }

    /// The next instant anything happens (a delivery or a timer).
    pub fn next_event(&mut self) -> Option<Instant> {
        let wires = [&self.lan_up, &self.lan_down];
        let edges = self.edges.iter_mut().flat_map(|e| {
            [
                e.gw.poll_timeout(),
                e.trunk_up.link.next_delivery(),
                e.trunk_down.link.next_delivery(),
            ]
        });
        let players = self.players.iter_mut().flat_map(|p| {
            [
                p.endpoint.poll_timeout(),
                p.up.link.next_delivery(),
                p.down.link.next_delivery(),
            ]
        });
        wires
            .iter()
            .map(|w| w.link.next_delivery())
            .chain([self.game.poll_timeout(), self.server_gw.poll_timeout()])
            .chain(edges)
            .chain(players)
            .flatten()
            .min()
    }

    fn process_due(&mut self) {
        let now = self.time;
        for e in &mut self.edges {
            while let Some(d) = e.trunk_up.link.poll_deliver(now) {
                self.server_gw
                    .handle_datagram(now, Side::Trunk, e.trunk_addr, &d);
            }
            while let Some(d) = e.trunk_down.link.poll_deliver(now) {
                e.gw.handle_datagram(now, Side::Trunk, SERVER_GW_TRUNK, &d);
            }
        }
        while let Some(d) = self.lan_up.link.poll_deliver(now) {
            self.game.handle_datagram(now, SERVER_GW_LOCAL, &d);
        }
        while let Some(d) = self.lan_down.link.poll_deliver(now) {
            self.server_gw.handle_datagram(now, Side::Local, GAME, &d);
        }
        for p in &mut self.players {
            let edge = &mut self.edges[p.edge];
            while let Some(d) = p.up.link.poll_deliver(now) {
                edge.gw.handle_datagram(now, Side::Local, p.addr, &d);
            }
            while let Some(d) = p.down.link.poll_deliver(now) {
                p.endpoint.handle_datagram(now, edge.players_addr, &d);
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
        for e in &mut self.edges {
            if e.gw.poll_timeout().is_some_and(|t| t <= now) {
                e.gw.handle_timeout(now);
            }
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

    /// Jumps `dt` ahead and processes everything due by then in one pass: timers fire up to
    /// `dt` late, but thousands of players cost one pass over them per `dt` instead of one
    /// per event (the scale tests).
    pub fn advance(&mut self, dt: Duration) {
        self.flush();
        self.time += dt;
        self.process_due();
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
    fn next_event(&mut self) -> Option<Instant> {
        Harness::next_event(self)
    }
    fn process_due(&mut self) {
        Harness::process_due(self);
    }
}
