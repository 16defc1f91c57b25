//! The game's endpoints: the game server (one thinwire server endpoint) and the players
//! (one thinwire client endpoint each), the same code in both modes.
//!
//! The server cannot tell players apart by address (behind the gateways every connection
//! comes from the server gateway), so each player logs in, as a game client would: its
//! first message (upstream, channel 0) names its flow. Messages for a flow whose player has
//! not logged in yet wait at the server, their latency running.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle, Endpoint, Event, PublicKey, SendMode};

use super::ledger::Ledger;
use super::results::PayloadCount;

/// The login message: this tag, then the flow (4 bytes, big endian).
const LOGIN: &[u8; 5] = b"LOGIN";
/// The one channel of every connection: server-to-client game state, client logins.
const CHANNEL: u8 = 0;
/// The channel classes every player opens.
pub(super) const CHANNELS: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

/// Counters of connection trouble, summed over the endpoints of a run.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Trouble {
    /// Player connections that ended (each reconnects).
    pub(super) disconnects: u64,
    /// Sends the endpoint refused.
    pub(super) refused_sends: u64,
}

/// The game server: one endpoint, every player's connection on it.
pub(super) struct GameServer {
    pub(super) ep: Endpoint,
    by_flow: Vec<Option<ConnectionHandle>>,
    flow_of: HashMap<ConnectionHandle, usize>,
    waiting: Vec<Vec<Bytes>>,
    pub(super) trouble: Trouble,
}

impl GameServer {
    /// A server for `flows` players around `ep`.
    pub(super) fn new(ep: Endpoint, flows: usize) -> Self {
        GameServer {
            ep,
            by_flow: vec![None; flows],
            flow_of: HashMap::new(),
            waiting: vec![Vec::new(); flows],
            trouble: Trouble::default(),
        }
    }

    /// The application sends `data` to the player of `flow`.
    pub(super) fn send(&mut self, now: Instant, flow: usize, data: Bytes) {
        match self.by_flow[flow] {
            Some(h) => {
                if self
                    .ep
                    .send(now, h, CHANNEL, data, SendMode::Plain)
                    .is_err()
                {
                    self.trouble.refused_sends += 1;
                }
            }
            None => self.waiting[flow].push(data),
        }
    }

    /// Adds the payload counters of every connection to `total`.
    pub(super) fn payload(&self, total: &mut PayloadCount) {
        for h in self.flow_of.keys() {
            if let Some(s) = self.ep.connection_stats(*h) {
                total.add(&s);
            }
        }
    }

    /// Whether every player has logged in.
    pub(super) fn all_logged_in(&self) -> bool {
        self.by_flow.iter().all(Option::is_some)
    }

    /// Handles the endpoint's events: logins and ended connections.
    pub(super) fn drain_events(&mut self, now: Instant) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Message(m) => {
                    let Some(flow) = login_flow(&m.data) else {
                        continue;
                    };
                    if flow >= self.by_flow.len() {
                        continue;
                    }
                    self.by_flow[flow] = Some(h);
                    self.flow_of.insert(h, flow);
                    for data in std::mem::take(&mut self.waiting[flow]) {
                        self.send(now, flow, data);
                    }
                }
                Event::Disconnected { .. } => {
                    if let Some(flow) = self.flow_of.remove(&h) {
                        if self.by_flow[flow] == Some(h) {
                            self.by_flow[flow] = None;
                        }
                    }
                }
                Event::Connected { .. } => {}
            }
        }
    }
}

fn login_flow(data: &[u8]) -> Option<usize> {
    let rest = data.strip_prefix(LOGIN.as_slice())?;
    let b: [u8; 4] = rest.try_into().ok()?;
    Some(u32::from_be_bytes(b) as usize)
}

/// One player: a client endpoint with one connection to the game server (direct) or to the
/// edge gateway (multiplexed).
pub(super) struct Player {
    pub(super) ep: Endpoint,
    flow: usize,
    server: SocketAddr,
    key: PublicKey,
    conn: Option<ConnectionHandle>,
    pub(super) trouble: Trouble,
}

impl Player {
    /// The player of `flow` around `ep`, connecting at `now` to `server`, which holds `key`.
    pub(super) fn new(
        ep: Endpoint,
        flow: usize,
        now: Instant,
        server: SocketAddr,
        key: PublicKey,
    ) -> Self {
        let mut p = Player {
            ep,
            flow,
            server,
            key,
            conn: None,
            trouble: Trouble::default(),
        };
        p.connect(now);
        p
    }

    /// Connects and logs in (the login goes out when the handshake completes).
    fn connect(&mut self, now: Instant) {
        self.conn = self.ep.connect(now, self.server, &self.key, &CHANNELS).ok();
        if let Some(h) = self.conn {
            let mut login = LOGIN.to_vec();
            login.extend_from_slice(&(self.flow as u32).to_be_bytes());
            if self
                .ep
                .send(now, h, CHANNEL, Bytes::from(login), SendMode::Plain)
                .is_err()
            {
                self.trouble.refused_sends += 1;
            }
        }
    }

    /// Adds the payload counters of the connection to `total`.
    pub(super) fn payload(&self, total: &mut PayloadCount) {
        if let Some(s) = self.conn.and_then(|h| self.ep.connection_stats(h)) {
            total.add(&s);
        }
    }

    /// Handles the endpoint's events: messages go to the ledger, an ended connection is
    /// opened again.
    pub(super) fn drain_events(&mut self, now: Instant, ledger: &mut Ledger) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Message(m) => ledger.deliver(self.flow, &m.data, now),
                Event::Disconnected { .. } if self.conn == Some(h) => {
                    self.trouble.disconnects += 1;
                    self.connect(now);
                }
                _ => {}
            }
        }
    }
}
