//! The server gateway: accepts the edge's trunk and opens one ordinary thinwire connection per
//! flow to the unmodified game server.

use std::net::SocketAddr;
use std::time::Instant;

use thinwire_proto::{ConnectionHandle, Endpoint, Event, PublicKey, Transmit};

use super::close;
use super::config::{check, ServerGatewayConfig};
use super::early::Early;
use super::error::GatewayError;
use super::flow::{Flow, FlowState};
use super::frame::{FlowClose, FlowOpen, Frame, TRUNK_CHANNELS};
use super::relay::{pump, Control, Ended, Link, Relay};
use super::stats::GatewayStats;
use super::{GatewayEvent, Side};

/// The gateway near the game server. Sans-IO, with the same call order as
/// [`EdgeGateway`](super::EdgeGateway). One trunk at a time: a second edge is turned away
/// (close code [`TRUNK_BUSY`](super::close::TRUNK_BUSY)) while one is connected.
#[derive(Debug)]
pub struct ServerGateway {
    relay: Relay,
    game_server: SocketAddr,
    game_server_key: PublicKey,
    trunk_key: PublicKey,
}

impl ServerGateway {
    /// A new server gateway, waiting for an edge.
    pub fn new(now: Instant, config: ServerGatewayConfig) -> Result<Self, GatewayError> {
        config.options.validate()?;
        check("trunk", &config.trunk)?;
        check("upstream", &config.upstream)?;
        let trunk =
            Endpoint::new(config.trunk, Some(config.trunk_server), now).map_err(|source| {
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
        let options = config.options;
        let early = Early::new(options.max_flow_backlog, options.max_flows);
        let mut relay = Relay::new(options, trunk, upstream);
        relay.early = Some(early);
        Ok(Self {
            relay,
            game_server: config.game_server,
            game_server_key: config.game_server_key,
            trunk_key,
        })
    }

    /// The key the edge pins (the trunk socket's static key).
    pub fn trunk_public_key(&self) -> PublicKey {
        self.trunk_key
    }

    /// Processes a datagram that arrived at the `side` socket from `from`.
    pub fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, datagram: &[u8]) {
        self.relay.handle_datagram(now, side, from, datagram);
        self.pump(now);
    }

    /// Processes expired timers (the endpoints' and the period tick).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
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
            if !self.pump(now) {
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

    /// Sends an opaque TCM bundle over the trunk (unreliable channel 2); the edge reports it
    /// as [`GatewayEvent::Bundle`].
    pub fn send_bundle(&mut self, now: Instant, bundle: &[u8]) -> Result<(), GatewayError> {
        self.relay.send_bundle(now, bundle)?;
        self.pump(now);
        Ok(())
    }

    /// The connection to the game server that carries `flow`, if open.
    pub fn upstream_connection(&self, flow: u32) -> Option<ConnectionHandle> {
        self.relay.flows.get(flow).map(|f| f.conn)
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
            return self.accept_trunk(now, h);
        }
        if self.relay.trunk_conn() != Some(h) {
            return;
        }
        match e {
            Event::Message(m) => match self.relay.take_trunk(now, m.data) {
                Some(Control::Open(o)) => self.open_flow(now, o),
                Some(Control::Close { flow, code, reason }) => {
                    self.relay
                        .close_flow(now, flow, (code, &reason), Ended::ByTrunk);
                }
                Some(Control::Opened(_)) => self.relay.stats.bad_frames += 1,
                None => {}
            },
            Event::Disconnected { reason } => {
                self.relay.trunk_down(now, reason.to_string(), None);
            }
            Event::Connected { .. } => {}
        }
    }

    fn accept_trunk(&mut self, now: Instant, h: ConnectionHandle) {
        let layout_ok = self.relay.trunk.channels(h) == Some(&TRUNK_CHANNELS[..]);
        if self.relay.trunk_conn().is_some() || !layout_ok {
            let (code, reason) = if layout_ok {
                (close::TRUNK_BUSY, &b"another trunk is up"[..])
            } else {
                (close::PROTOCOL, &b"not a trunk"[..])
            };
            self.relay.trunk.close(now, h, code, reason);
            return;
        }
        self.relay.link = Link::Up(h);
        if let Some(e) = self.relay.early.as_mut() {
            e.reset();
        }
        self.relay.event(GatewayEvent::TrunkUp);
    }

    fn open_flow(&mut self, now: Instant, o: FlowOpen) {
        let Some(early) = self.relay.early.as_mut().and_then(|e| e.open(o.flow)) else {
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
            relay.send_control(now, &frame);
        };
        if self.relay.flows.len() >= self.relay.options.max_flows {
            return refuse(&mut self.relay, close::GATEWAY_FULL, b"gateway full");
        }
        let conn =
            self.relay
                .local
                .connect(now, self.game_server, &self.game_server_key, &o.channels);
        let Ok(conn) = conn else {
            return refuse(&mut self.relay, close::PROTOCOL, b"cannot connect");
        };
        let flow = Flow::new(conn, o.channels, FlowState::AwaitingUpstream);
        self.relay.add_flow(o.flow, flow);
        self.relay.replay_early(now, early);
    }

    fn on_upstream(&mut self, now: Instant, h: ConnectionHandle, e: Event) {
        let Some(id) = self.relay.flows.of_conn(h) else {
            return;
        };
        match e {
            Event::Connected { .. } => {
                let pending = self
                    .relay
                    .flows
                    .get_mut(id)
                    .map(Flow::open)
                    .unwrap_or_default();
                self.relay.deliver(now, h, pending);
                self.relay
                    .send_control(now, &Frame::FlowOpened { flow: id });
                self.relay.event(GatewayEvent::FlowOpened { flow: id });
            }
            Event::Message(m) => self.relay.take_local(now, h, m),
            Event::Disconnected { reason } => {
                let (code, text) = close::of(&reason);
                self.relay
                    .close_flow(now, id, (code, &text), Ended::ByLocal);
            }
        }
    }
}
