//! The edge gateway: players connect to it as to the game server; each becomes a flow on the
//! trunk it keeps to the server gateway.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_proto::{
    ConnectionHandle, DisconnectReason, Endpoint, EndpointConfig, Event, PublicKey, RefuseReason,
    Transmit,
};

use super::close;
use super::config::{check, EdgeConfig};
use super::credential::TrunkCredential;
use super::error::GatewayError;
use super::flow::{Flow, FlowKey, FlowState};
use super::frame::{FlowOpen, Frame, MAX_REASON, TRUNK_CHANNELS};
use super::link::TrunkLink;
use super::relay::{pump, Control, Ended, Relay};
use super::stats::GatewayStats;
use super::{GatewayEvent, Side};

/// First wait before the edge dials the trunk again after it went down or could not be
/// opened; each failure in a row doubles it, up to [`REDIAL_MAX`]; a trunk that comes up
/// resets it.
pub const REDIAL_MIN: Duration = Duration::from_secs(1);
/// Longest wait between two dials.
pub const REDIAL_MAX: Duration = Duration::from_secs(30);

/// The edge's trunk, by what it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dial {
    /// Handshake under way.
    Connecting(ConnectionHandle),
    /// Up (its [`TrunkLink`] is in the relay).
    Up(ConnectionHandle),
    /// Down: dials again at this instant.
    Waiting(Instant),
}

/// The gateway near the players. Sans-IO, with the call order of a thinwire
/// [`Endpoint`]: feed datagrams (saying which socket they came to) and timeouts, then drain
/// [`poll_transmit`](Self::poll_transmit) (which says which socket to send from) and
/// [`poll_event`](Self::poll_event), then sleep until [`poll_timeout`](Self::poll_timeout).
///
/// It keeps one trunk to the server gateway, opened with its [`TrunkCredential`]; when the
/// trunk ends or cannot be opened it dials again after [`REDIAL_MIN`], doubling to
/// [`REDIAL_MAX`], and says why ([`GatewayEvent::TrunkDown`]).
#[derive(Debug)]
pub struct EdgeGateway {
    relay: Relay,
    credential: TrunkCredential,
    /// Where the trunk is dialed: `EdgeConfig::server_gateway`, else the credential's first
    /// address.
    server_gateway: SocketAddr,
    players_key: PublicKey,
    dial: Dial,
    /// The wait after the next failure.
    backoff: Duration,
    next_flow: u32,
    /// Players to turn away once their handshake answer is out (`poll_transmit` drained it):
    /// closing a connection in the step that accepted it would leave the player without an
    /// answer, to time out instead of reading the close code.
    refused: Vec<(ConnectionHandle, u64, &'static [u8])>,
}

/// Length of the connection ids the edge's trunk endpoint issues (at most; a shorter
/// configured length is kept). They travel in every packet from the server gateway to the
/// edge. The endpoint is a client with one connection (two while a redial overlaps a closing
/// trunk), so the reasons for long ids (`docs/PROTOCOL.md` §2.1) do not apply: it sends no
/// stateless Resets (only servers do), it has no ids to enumerate, and a guessed id only gets
/// a forged packet as far as the AEAD check, which drops it, as it drops any datagram whose
/// id is known to an on-path attacker (`docs/GATEWAY.md` §2, *Connection ids*).
pub const EDGE_TRUNK_CID_LEN: usize = 2;

impl EdgeGateway {
    /// A new edge; it starts connecting the trunk at once.
    pub fn new(now: Instant, config: EdgeConfig) -> Result<Self, GatewayError> {
        config.options.validate()?;
        check("players", &config.players)?;
        check("trunk", &config.trunk)?;
        let players =
            Endpoint::new(config.players, Some(config.players_server), now).map_err(|source| {
                GatewayError::Config {
                    which: "players",
                    source,
                }
            })?;
        // the ids this client endpoint issues are short (`EDGE_TRUNK_CID_LEN`)
        let trunk_config = EndpointConfig {
            cid_len: config.trunk.cid_len.min(EDGE_TRUNK_CID_LEN),
            ..config.trunk
        };
        let trunk =
            Endpoint::new(trunk_config, None, now).map_err(|source| GatewayError::Config {
                which: "trunk",
                source,
            })?;
        let players_key = players.public_key().ok_or(GatewayError::Options(
            "the players' endpoint has no server key",
        ))?;
        let token_address = config.credential.token.addresses().first().copied();
        let server_gateway =
            config
                .server_gateway
                .or(token_address)
                .ok_or(GatewayError::Options(
                    "the credential lists no server gateway address",
                ))?;
        let mut edge = Self {
            relay: Relay::new(config.options, trunk, players),
            credential: config.credential,
            server_gateway,
            players_key,
            dial: Dial::Waiting(now),
            backoff: REDIAL_MIN,
            next_flow: 0,
            refused: Vec::new(),
        };
        edge.dial(now)?;
        Ok(edge)
    }

    fn dial(&mut self, now: Instant) -> Result<(), GatewayError> {
        let token = &self.credential.token;
        let h = self.relay.trunk.connect_with_token_via(
            now,
            token,
            self.server_gateway,
            &TRUNK_CHANNELS,
        )?;
        self.dial = Dial::Connecting(h);
        Ok(())
    }

    /// The id this edge's trunk carries (its credential's).
    pub fn peer(&self) -> u64 {
        self.credential.peer
    }

    /// Tells the edge the current unix time, which only the players' connect tokens need
    /// (`EdgeConfig::players_server.connect_tokens`): until it is set, every player token is
    /// refused. The runtime passes the wall clock, tests a fixed simulated time.
    pub fn set_unix_time(&mut self, now: Instant, unix: Duration) {
        self.relay.local.set_unix_time(now, unix);
    }

    /// The key players pin (the players' socket's static key).
    pub fn players_public_key(&self) -> PublicKey {
        self.players_key
    }

    /// Processes a datagram that arrived at the `side` socket from `from`.
    pub fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, datagram: &[u8]) {
        self.relay.handle_datagram(now, side, from, datagram);
        self.pump(now);
        self.relay.ride(now);
        self.pump(now);
    }

    /// Processes expired timers (the endpoints', the period tick, the trunk redial).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
        if let Dial::Waiting(t) = self.dial {
            if t <= now && self.dial(now).is_err() {
                self.dial = Dial::Waiting(now + self.backoff);
            }
        }
        self.pump(now);
        self.relay.flush(now);
        self.pump(now);
    }

    /// The earliest instant `handle_timeout` has work.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let redial = match self.dial {
            Dial::Waiting(t) => Some(t),
            _ => None,
        };
        self.relay.poll_timeout().into_iter().chain(redial).min()
    }

    /// The next datagram to send, from the `Side` socket, written into `buf`.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<(Side, Transmit)> {
        loop {
            if let Some(t) = self.relay.poll_transmit(now, buf) {
                return Some(t);
            }
            let refused = std::mem::take(&mut self.refused);
            for (h, code, reason) in &refused {
                self.relay.local.close(now, *h, *code, reason);
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

    /// Sends an opaque TCM bundle over the trunk (unreliable channel 2); the server gateway
    /// reports it as [`GatewayEvent::Bundle`].
    pub fn send_bundle(&mut self, now: Instant, bundle: &[u8]) -> Result<(), GatewayError> {
        let Dial::Up(h) = self.dial else {
            return Err(GatewayError::TrunkNotUp);
        };
        self.relay.send_bundle(now, h, bundle)?;
        self.pump(now);
        Ok(())
    }

    /// The flow of the player at `player` (as the players' socket sees it), if open.
    pub fn flow_of(&self, player: SocketAddr) -> Option<u32> {
        let keys = self.relay.flows.keys().into_iter();
        keys.map(|key| (key, self.relay.flows.get(key).map(|f| f.conn)))
            .find(|(_, conn)| conn.and_then(|c| self.relay.local.remote_address(c)) == Some(player))
            .map(|(key, _)| key.id)
    }

    /// The players' endpoint (read-only: statistics, connection details).
    pub fn players(&self) -> &Endpoint {
        &self.relay.local
    }

    /// The trunk endpoint (read-only: its connection statistics).
    pub fn trunk(&self) -> &Endpoint {
        &self.relay.trunk
    }

    /// Handles what the endpoints reported; true if there was anything.
    fn pump(&mut self, now: Instant) -> bool {
        pump(self, now, |g| &mut g.relay, Self::on_trunk, Self::on_player)
    }

    fn on_trunk(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        let peer = self.credential.peer;
        match (self.dial, e) {
            (Dial::Connecting(c), Event::Connected { .. }) if c == h => {
                let o = &self.relay.options;
                let link = TrunkLink::new(peer, o, o.max_flows, false);
                self.relay.links.insert(h, link);
                self.dial = Dial::Up(h);
                self.backoff = REDIAL_MIN;
                self.next_flow = 0;
                self.relay.event(GatewayEvent::TrunkUp { peer });
            }
            (Dial::Up(c), Event::Message(m)) if c == h => {
                match self.relay.take_trunk(now, h, m.data) {
                    Some(Control::Close { flow, code, reason }) => {
                        let key = FlowKey { trunk: h, id: flow };
                        self.relay
                            .close_flow(now, key, (code, &reason), Ended::ByTrunk);
                    }
                    Some(Control::Opened(flow))
                        if self
                            .relay
                            .flows
                            .get(FlowKey { trunk: h, id: flow })
                            .is_some() =>
                    {
                        self.relay.event(GatewayEvent::FlowOpened { peer, flow });
                    }
                    Some(_) => self.relay.stats.bad_frames += 1,
                    None => {}
                }
            }
            (Dial::Connecting(c) | Dial::Up(c), Event::Disconnected { reason }) if c == h => {
                self.trunk_lost(now, h, reason);
            }
            _ => {}
        }
    }

    /// The trunk ended or could not be opened: its flows end (the players read why), and the
    /// edge dials again after the backoff.
    fn trunk_lost(&mut self, now: Instant, h: ConnectionHandle, reason: DisconnectReason) {
        let mut text = format!("trunk down: {reason}").into_bytes();
        text.truncate(MAX_REASON);
        self.relay.trunk_down(now, h, (close::TRUNK_DOWN, &text));
        // A restarted edge finds its previous trunk still open at the server gateway (the
        // core refuses a second connection with the same id) until it times out there, one
        // idle timeout after the old process stopped answering: dial every REDIAL_MIN
        // meanwhile rather than backing off past the moment it clears.
        let wait = if reason == DisconnectReason::Refused(RefuseReason::AlreadyConnected) {
            REDIAL_MIN
        } else {
            let w = self.backoff;
            self.backoff = (w * 2).min(REDIAL_MAX);
            w
        };
        self.dial = Dial::Waiting(now + wait);
        self.relay.event(GatewayEvent::TrunkDown {
            peer: self.credential.peer,
            reason,
            redial_in: Some(wait),
        });
    }

    fn on_player(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        match e {
            Event::Connected { remote, .. } => self.open_flow(now, h, remote),
            Event::Message(m) => self.relay.take_local(now, h, m),
            Event::Disconnected { reason } => {
                if let Some(key) = self.relay.flows.of_conn(h) {
                    let (code, text) = close::of(&reason);
                    self.relay
                        .close_flow(now, key, (code, &text), Ended::ByLocal);
                }
            }
        }
    }

    fn open_flow(&mut self, now: Instant, h: ConnectionHandle, remote: SocketAddr) {
        let refuse = match self.dial {
            Dial::Up(t) if !self.relay.has_room(t) || self.next_flow == u32::MAX => {
                Some((close::GATEWAY_FULL, &b"gateway full"[..]))
            }
            Dial::Up(_) => None,
            _ => Some((close::TRUNK_DOWN, &b"trunk down"[..])),
        };
        let kinds = self.relay.local.channels(h).map(<[_]>::to_vec);
        let (Some(kinds), None, Dial::Up(trunk)) = (kinds, refuse, self.dial) else {
            let (code, reason) = refuse.unwrap_or((close::PROTOCOL, b"no channels"));
            self.relay.stats.flows_refused += 1;
            self.refused.push((h, code, reason));
            return;
        };
        let id = self.next_flow;
        self.next_flow += 1;
        let open = Frame::FlowOpen(FlowOpen {
            flow: id,
            channels: kinds.clone(),
            player: remote,
            claims: self.relay.local.token_claims(h).cloned(),
        });
        let key = FlowKey { trunk, id };
        self.relay
            .add_flow(key, Flow::new(h, kinds, FlowState::Open));
        self.relay.send_control(now, trunk, &open);
    }
}
