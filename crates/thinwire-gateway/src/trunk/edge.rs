//! The edge gateway: players connect to it as to the game server; each becomes a flow on the
//! trunk it keeps to the server gateway.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_proto::{ConnectionHandle, Endpoint, Event, PublicKey, Transmit};

use super::close;
use super::config::{check, EdgeConfig};
use super::error::GatewayError;
use super::flow::{Flow, FlowState};
use super::frame::{FlowOpen, Frame, TRUNK_CHANNELS};
use super::relay::{pump, Control, Ended, Link, Relay};
use super::stats::GatewayStats;
use super::{GatewayEvent, Side};

/// Wait before the edge dials the trunk again after it went down.
pub const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// The gateway near the players. Sans-IO, with the call order of a thinwire
/// [`Endpoint`]: feed datagrams (saying which socket they came to) and timeouts, then drain
/// [`poll_transmit`](Self::poll_transmit) (which says which socket to send from) and
/// [`poll_event`](Self::poll_event), then sleep until [`poll_timeout`](Self::poll_timeout).
#[derive(Debug)]
pub struct EdgeGateway {
    relay: Relay,
    server_gateway: SocketAddr,
    server_gateway_key: PublicKey,
    players_key: PublicKey,
    next_flow: u32,
    /// Players to turn away once their handshake answer is out (`poll_transmit` drained it):
    /// closing a connection in the step that accepted it would leave the player without an
    /// answer, to time out instead of reading the close code.
    refused: Vec<(ConnectionHandle, u64, &'static [u8])>,
}

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
        let trunk =
            Endpoint::new(config.trunk, None, now).map_err(|source| GatewayError::Config {
                which: "trunk",
                source,
            })?;
        let players_key = players.public_key().ok_or(GatewayError::Options(
            "the players' endpoint has no server key",
        ))?;
        let mut edge = Self {
            relay: Relay::new(config.options, trunk, players),
            server_gateway: config.server_gateway,
            server_gateway_key: config.server_gateway_key,
            players_key,
            next_flow: 0,
            refused: Vec::new(),
        };
        edge.dial(now)?;
        Ok(edge)
    }

    fn dial(&mut self, now: Instant) -> Result<(), GatewayError> {
        let h = self.relay.trunk.connect(
            now,
            self.server_gateway,
            &self.server_gateway_key,
            &TRUNK_CHANNELS,
        )?;
        self.relay.link = Link::Connecting(h);
        Ok(())
    }

    /// The key players pin (the players' socket's static key).
    pub fn players_public_key(&self) -> PublicKey {
        self.players_key
    }

    /// Processes a datagram that arrived at the `side` socket from `from`.
    pub fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, datagram: &[u8]) {
        self.relay.handle_datagram(now, side, from, datagram);
        self.pump(now);
    }

    /// Processes expired timers (the endpoints', the period tick, the trunk redial).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
        if let Link::Down { retry: Some(t) } = self.relay.link {
            if t <= now && self.dial(now).is_err() {
                self.relay.link = Link::Down {
                    retry: Some(now + RECONNECT_DELAY),
                };
            }
        }
        self.pump(now);
        self.relay.flush(now);
        self.pump(now);
    }

    /// The earliest instant `handle_timeout` has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.relay.poll_timeout()
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
        self.relay.send_bundle(now, bundle)?;
        self.pump(now);
        Ok(())
    }

    /// The flow of the player at `player` (as the players' socket sees it), if open.
    pub fn flow_of(&self, player: SocketAddr) -> Option<u32> {
        self.relay.flows.ids().into_iter().find(|&id| {
            let conn = self.relay.flows.get(id).map(|f| f.conn);
            conn.and_then(|c| self.relay.local.remote_address(c)) == Some(player)
        })
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
        if self.relay.trunk_conn() != Some(h) {
            return;
        }
        match e {
            Event::Connected { .. } => {
                self.relay.link = Link::Up(h);
                self.relay.event(GatewayEvent::TrunkUp);
            }
            Event::Message(m) => match self.relay.take_trunk(now, m.data) {
                Some(Control::Close { flow, code, reason }) => {
                    self.relay
                        .close_flow(now, flow, (code, &reason), Ended::ByTrunk);
                }
                Some(Control::Opened(flow)) if self.relay.flows.get(flow).is_some() => {
                    self.relay.event(GatewayEvent::FlowOpened { flow });
                }
                Some(_) => self.relay.stats.bad_frames += 1,
                None => {}
            },
            Event::Disconnected { reason } => {
                let retry = Some(now + RECONNECT_DELAY);
                self.relay.trunk_down(now, reason.to_string(), retry);
            }
        }
    }

    fn on_player(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        match e {
            Event::Connected { remote, .. } => self.open_flow(now, h, remote),
            Event::Message(m) => self.relay.take_local(now, h, m),
            Event::Disconnected { reason } => {
                if let Some(id) = self.relay.flows.of_conn(h) {
                    let (code, text) = close::of(&reason);
                    self.relay
                        .close_flow(now, id, (code, &text), Ended::ByLocal);
                }
            }
        }
    }

    fn open_flow(&mut self, now: Instant, h: ConnectionHandle, remote: SocketAddr) {
        let refuse = if self.relay.trunk_conn().is_none() {
            Some((close::TRUNK_DOWN, &b"trunk down"[..]))
        } else if self.relay.flows.len() >= self.relay.options.max_flows
            || self.next_flow == u32::MAX
        {
            Some((close::GATEWAY_FULL, &b"gateway full"[..]))
        } else {
            None
        };
        let kinds = self.relay.local.channels(h).map(<[_]>::to_vec);
        let (Some(kinds), None) = (kinds, refuse) else {
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
        });
        self.relay
            .add_flow(id, Flow::new(h, kinds, FlowState::Open));
        self.relay.send_control(now, &open);
    }
}
