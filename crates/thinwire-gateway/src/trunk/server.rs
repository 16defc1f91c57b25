//! The server gateway: admits the trunks of the edges it knows and opens one ordinary thinwire
//! connection per flow to the unmodified game server.
//!
//! Admission, in two steps:
//! 1. The trunk endpoint requires connect tokens minted with the operator key
//!    ([`ServerGatewayConfig::operator_key`]): the core refuses a Connect without a valid trunk
//!    credential at the handshake (`RefuseReason::InvalidToken`), before anything is allocated,
//!    and a second trunk with the id of one that is open (`AlreadyConnected`).
//! 2. Once connected, the trunk is admitted only if its credential's id is among
//!    [`ServerGatewayConfig::peers`] and it has the trunk's channel layout; otherwise it is
//!    closed at once ([`NOT_ADMITTED`](super::close::NOT_ADMITTED) or
//!    [`PROTOCOL`](super::close::PROTOCOL)) and nothing it sent is read.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_proto::{
    ConnectToken, ConnectionHandle, Endpoint, EndpointConfig, Event, PublicKey, TokenClaims,
    TokenPolicy, Transmit,
};

use super::close;
use super::config::{check, ServerGatewayConfig, UpstreamTokens};
use super::error::GatewayError;
use super::flow::{Flow, FlowKey, FlowState};
use super::frame::{FlowClose, FlowOpen, Frame, TRUNK_CHANNELS};
use super::link::TrunkLink;
use super::peer::TrunkPeer;
use super::relay::{pump, Control, Ended, Relay};
use super::resume::Resume;
use super::stats::GatewayStats;
use super::{GatewayEvent, Side};

/// One admitted trunk, from [`ServerGateway::trunks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrunkStatus {
    /// The peer's id.
    pub peer: u64,
    /// Its name (from the configuration).
    pub name: String,
    /// Its flows open now.
    pub flows_open: usize,
    /// The trunk connection (for `trunk().connection_stats`).
    pub connection: ConnectionHandle,
}

/// The gateway near the game server. Sans-IO, with the same call order as
/// [`EdgeGateway`](super::EdgeGateway). It admits any number of trunks, one per configured
/// peer; flows are keyed by (trunk, flow id), bounded per trunk
/// ([`TrunkPeer::max_flows`]) and in total ([`TrunkOptions::max_flows`](super::TrunkOptions)).
/// Call [`set_unix_time`](Self::set_unix_time) before the first trunk can be admitted.
#[derive(Debug)]
pub struct ServerGateway {
    relay: Relay,
    game_server: SocketAddr,
    game_server_key: PublicKey,
    trunk_key: PublicKey,
    peers: HashMap<u64, TrunkPeer>,
    upstream_tokens: Option<UpstreamTokens>,
    /// The unix time at an instant (`set_unix_time`), for the upstream tokens' expiry.
    unix: Option<(Instant, Duration)>,
    /// Upstream tokens minted so far: the low half of their nonces.
    minted: u64,
    /// Trunks to close once their handshake answer is out (`poll_transmit` drained it), so
    /// that the refused peer reads the close code instead of timing out; until then nothing
    /// they send is read (they are not in the relay's links).
    refused: Vec<(ConnectionHandle, close::Refusal)>,
    /// Parked flows and the open ones by client id (moving between edges).
    resume: Resume,
}

/// Length of the connection ids the server gateway's trunk endpoint issues (at most; a
/// shorter configured length is kept). They travel in every packet from an edge, most of them
/// ACKs of 50-60 bytes. Ids this short still get stateless Resets, whose tokens are then bound
/// to the edge's address (`docs/PROTOCOL.md` §2.7), so an edge learns at once that a
/// restarted server gateway lost its trunk; a trunk endpoint serves a handful of edges, so
/// 2^32 ids are never crowded (`docs/GATEWAY.md` §2, *Connection ids*).
pub const SERVER_TRUNK_CID_LEN: usize = 4;

impl ServerGateway {
    /// A new server gateway, waiting for edges.
    pub fn new(now: Instant, config: ServerGatewayConfig) -> Result<Self, GatewayError> {
        config.options.validate()?;
        check("trunk", &config.trunk)?;
        check("upstream", &config.upstream)?;
        let mut peers = HashMap::new();
        for p in config.peers {
            if p.max_flows == Some(0) {
                return Err(GatewayError::Peers(format!("peer {}: max_flows 0", p.id)));
            }
            if let Some(old) = peers.insert(p.id, p) {
                return Err(GatewayError::Peers(format!("peer id {} twice", old.id)));
            }
        }
        let mut trunk_server = config.trunk_server;
        trunk_server.connect_tokens = Some(TokenPolicy {
            key: config.operator_key,
            public_addresses: Vec::new(),
        });
        let trunk_config = EndpointConfig {
            cid_len: config.trunk.cid_len.min(SERVER_TRUNK_CID_LEN),
            ..config.trunk
        };
        let trunk = Endpoint::new(trunk_config, Some(trunk_server), now).map_err(|source| {
            GatewayError::Config {
                which: "trunk",
                source,
            }
        })?;
        let upstream =
            Endpoint::new(config.upstream, None, now).map_err(|source| GatewayError::Config {
                which: "upstream",
                source,
            })?;
        let trunk_key = trunk.public_key().ok_or(GatewayError::Options(
            "the trunk endpoint has no server key",
        ))?;
        let resume = Resume::new(config.options.resume_grace);
        Ok(Self {
            relay: Relay::new(config.options, trunk, upstream),
            resume,
            game_server: config.game_server,
            game_server_key: config.game_server_key,
            trunk_key,
            peers,
            upstream_tokens: config.upstream_tokens,
            unix: None,
            minted: 0,
            refused: Vec::new(),
        })
    }

    /// The key the edges' credentials are minted for (the trunk socket's static key).
    pub fn trunk_public_key(&self) -> PublicKey {
        self.trunk_key
    }

    /// Tells the gateway the current unix time, which the trunk credentials' expiry (and the
    /// upstream tokens') need: until it is set, every trunk is refused. The runtime passes the
    /// wall clock, tests a fixed simulated time.
    pub fn set_unix_time(&mut self, now: Instant, unix: Duration) {
        self.relay.trunk.set_unix_time(now, unix);
        self.unix = Some((now, unix));
    }

    /// Processes a datagram that arrived at the `side` socket from `from`.
    pub fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, datagram: &[u8]) {
        self.relay.handle_datagram(now, side, from, datagram);
        self.pump(now);
        self.relay.ride(now);
        self.pump(now);
    }

    /// Processes expired timers (the endpoints' and the period tick).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
        self.resume.expire(now, &mut self.relay);
        self.pump(now);
        self.relay.flush(now);
        self.pump(now);
    }

    /// The earliest instant `handle_timeout` has work.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let parked = self.resume.poll_timeout();
        self.relay.poll_timeout().into_iter().chain(parked).min()
    }

    /// The next datagram to send, from the `Side` socket, written into `buf`.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<(Side, Transmit)> {
        loop {
            if let Some(t) = self.relay.poll_transmit(now, buf) {
                return Some(t);
            }
            let refused = std::mem::take(&mut self.refused);
            for &(h, why) in &refused {
                (self.relay.trunk).close(now, h, why.code(), why.text().as_bytes());
            }
            if !self.pump(now) && refused.is_empty() {
                return None;
            }
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<GatewayEvent> {
        self.relay.poll_event()
    }

    /// The counters.
    pub fn stats(&self) -> &GatewayStats {
        &self.relay.stats
    }

    /// The admitted trunks, by peer id.
    pub fn trunks(&self) -> Vec<TrunkStatus> {
        let mut out: Vec<TrunkStatus> = (self.relay.links.iter())
            .map(|(&connection, l)| TrunkStatus {
                peer: l.peer,
                name: self
                    .peers
                    .get(&l.peer)
                    .map(|p| p.name.clone())
                    .unwrap_or_default(),
                flows_open: l.flows,
                connection,
            })
            .collect();
        out.sort_by_key(|t| t.peer);
        out
    }

    /// Flows parked now: their game-server connections wait for their players to come back
    /// through an edge (`TrunkOptions::resume_grace`).
    pub fn parked_flows(&self) -> usize {
        self.resume.len()
    }

    /// The configured peer of id `peer`.
    pub fn peer(&self, peer: u64) -> Option<&TrunkPeer> {
        self.peers.get(&peer)
    }

    /// Sends an opaque TCM bundle over the trunk of `peer` (unreliable channel 2); that edge
    /// reports it as [`GatewayEvent::Bundle`].
    pub fn send_bundle(
        &mut self,
        now: Instant,
        peer: u64,
        bundle: &[u8],
    ) -> Result<(), GatewayError> {
        let trunk = self.trunk_of(peer).ok_or(GatewayError::TrunkNotUp)?;
        self.relay.send_bundle(now, trunk, bundle)?;
        self.pump(now);
        Ok(())
    }

    /// The connection to the game server that carries flow `flow` of `peer`'s trunk, if open.
    pub fn upstream_connection(&self, peer: u64, flow: u32) -> Option<ConnectionHandle> {
        let key = FlowKey {
            trunk: self.trunk_of(peer)?,
            id: flow,
        };
        self.relay.flows.get(key).map(|f| f.conn)
    }

    /// The endpoint facing the game server (read-only).
    pub fn upstream(&self) -> &Endpoint {
        &self.relay.local
    }

    /// The trunk endpoint (read-only: its connection statistics).
    pub fn trunk(&self) -> &Endpoint {
        &self.relay.trunk
    }

    #[cfg(test)]
    pub(crate) fn relay_mut(&mut self) -> &mut Relay {
        &mut self.relay
    }

    fn trunk_of(&self, peer: u64) -> Option<ConnectionHandle> {
        let mut links = self.relay.links.iter();
        links.find(|(_, l)| l.peer == peer).map(|(&h, _)| h)
    }

    /// Handles what the endpoints reported; true if there was anything.
    fn pump(&mut self, now: Instant) -> bool {
        pump(
            self,
            now,
            |g| &mut g.relay,
            Self::on_trunk,
            Self::on_upstream,
        )
    }

    fn on_trunk(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        if let Event::Connected { .. } = e {
            return self.admit(h);
        }
        let Some(peer) = self.relay.peer(h) else {
            return; // not admitted: nothing it sends is read
        };
        match e {
            Event::Message(m) => match self.relay.take_trunk(now, h, m.data) {
                Some(Control::Open(o)) => self.open_flow(now, h, o),
                Some(Control::Close { flow, code, reason }) => {
                    let key = FlowKey { trunk: h, id: flow };
                    // the edge lost the player (timed out, or its client restarted): it may
                    // come back through an edge
                    let lost = matches!(code, close::TIMED_OUT | close::RESET);
                    let why = (code, &b"player lost"[..]);
                    if !lost || !self.resume.park(now, &mut self.relay, key, why) {
                        self.relay
                            .close_flow(now, key, (code, &reason), Ended::ByTrunk);
                    }
                }
                Some(Control::Opened(_)) => self.relay.stats.bad_frames += 1,
                None => {}
            },
            Event::Disconnected { reason } => {
                let down = (close::TRUNK_DOWN, &b"trunk down"[..]);
                for key in self.relay.flows.of_trunk(h) {
                    self.resume.park(now, &mut self.relay, key, down);
                }
                self.relay.trunk_down(now, h, down);
                self.relay.event(GatewayEvent::TrunkDown {
                    peer,
                    reason,
                    redial_in: None,
                });
            }
            Event::Connected { .. } => {}
        }
    }

    /// A trunk finished its handshake (its credential is valid): admits it if its id is a
    /// configured peer's and its channels are a trunk's, else closes it at once.
    fn admit(&mut self, h: ConnectionHandle) {
        let id = self.relay.trunk.token_claims(h).map(|c| c.client_id);
        let layout_ok = self.relay.trunk.channels(h) == Some(&TRUNK_CHANNELS[..]);
        let peer = id.and_then(|id| self.peers.get(&id));
        let refusal = match (peer, layout_ok) {
            (None, _) => Some(close::Refusal::NotAdmitted),
            (Some(_), false) => Some(close::Refusal::NotATrunk),
            (Some(_), true) => None,
        };
        let id = id.unwrap_or_default();
        if let Some(reason) = refusal {
            self.relay.stats.trunks_refused += 1;
            self.refused.push((h, reason));
            self.relay
                .event(GatewayEvent::TrunkRefused { peer: id, reason });
            return;
        }
        let o = &self.relay.options;
        let max = peer.and_then(|p| p.max_flows).unwrap_or(o.max_flows);
        let link = TrunkLink::new(id, o, max.min(o.max_flows), true);
        self.relay.links.insert(h, link);
        self.relay.event(GatewayEvent::TrunkUp { peer: id });
    }

    fn open_flow(&mut self, now: Instant, trunk: ConnectionHandle, o: FlowOpen) {
        let early = self
            .relay
            .links
            .get_mut(&trunk)
            .and_then(|l| l.early.as_mut());
        let Some(early) = early.and_then(|e| e.open(o.flow)) else {
            self.relay.stats.bad_frames += 1;
            return;
        };
        let refuse = |relay: &mut Relay, code: u64, reason: &[u8]| {
            relay.stats.flows_refused += 1;
            let frame = Frame::FlowClose(FlowClose {
                flow: o.flow,
                code,
                reason,
            });
            relay.send_control(now, trunk, &frame);
        };
        let key = FlowKey { trunk, id: o.flow };
        let client = o.claims.as_ref().map(|c| c.client_id);
        let links = &self.relay.links;
        let room_on_trunk = links.get(&trunk).is_some_and(|l| l.flows < l.max_flows);
        if let Some(client) = client.filter(|_| room_on_trunk) {
            let r = &mut self.relay;
            if let Some(t) = self.resume.take_over(now, r, (client, key), &o.channels) {
                self.resume.attach(now, r, key, t);
                return self.relay.replay_early(now, trunk, early);
            }
        }
        let parked = self.resume.len();
        if !self.relay.has_room(trunk)
            || self.relay.flows.len() + parked >= self.relay.options.max_flows
        {
            return refuse(&mut self.relay, close::GATEWAY_FULL, b"gateway full");
        }
        let conn = match self.upstream_token(now, o.claims.as_ref()) {
            Some(token) => self
                .relay
                .local
                .connect_with_token(now, &token, &o.channels),
            None => {
                let key = &self.game_server_key;
                self.relay
                    .local
                    .connect(now, self.game_server, key, &o.channels)
            }
        };
        let Ok(conn) = conn else {
            return refuse(&mut self.relay, close::PROTOCOL, b"cannot connect");
        };
        let mut flow = Flow::new(conn, o.channels, FlowState::AwaitingUpstream);
        flow.client = client;
        self.relay.add_flow(key, flow);
        if let Some(client) = client {
            self.resume.opened(&self.relay, client, key);
        }
        self.relay.replay_early(now, trunk, early);
    }

    /// A fresh token for the game server carrying `claims`, when upstream tokens are
    /// configured, the flow has claims and the unix time is known.
    fn upstream_token(
        &mut self,
        now: Instant,
        claims: Option<&TokenClaims>,
    ) -> Option<ConnectToken> {
        let (t, claims) = (self.upstream_tokens.as_ref()?, claims?);
        let (at, unix) = self.unix?;
        let expires = (unix + now.saturating_duration_since(at) + t.lifetime).as_secs();
        // nonce: the configured random prefix and a counter, never twice in one run
        let mut nonce = [0u8; 24];
        nonce[..16].copy_from_slice(&t.nonce_prefix);
        nonce[16..].copy_from_slice(&self.minted.to_be_bytes());
        self.minted += 1;
        let addrs = [self.game_server];
        ConnectToken::mint(
            &t.key,
            claims,
            self.game_server_key.0,
            &addrs,
            expires,
            nonce,
        )
        .ok()
    }

    fn on_upstream(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        let Some(key) = self.relay.flows.of_conn(h) else {
            return self.resume.on_upstream(now, &mut self.relay, h, e);
        };
        match e {
            Event::Connected { .. } => {
                let pending = self
                    .relay
                    .flows
                    .get_mut(key)
                    .map(Flow::open)
                    .unwrap_or_default();
                self.relay.deliver(now, h, pending);
                let opened = Frame::FlowOpened { flow: key.id };
                self.relay.send_control(now, key.trunk, &opened);
                let peer = self.relay.peer(key.trunk).unwrap_or_default();
                self.relay
                    .event(GatewayEvent::FlowOpened { peer, flow: key.id });
            }
            Event::Message(m) => self.relay.take_local(now, h, m),
            Event::Disconnected { reason } => {
                let (code, text) = close::of(&reason);
                self.relay
                    .close_flow(now, key, (code, &text), Ended::ByLocal);
            }
        }
    }
}
