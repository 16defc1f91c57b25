//! The simulator endpoint around a `thinwire_proto::Endpoint`: sending,
//! receiving, connection events and the counters of what it sent.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionCounters, ConnectionHandle, DeadlineOptions, Endpoint, Event, SendError,
    SendMode,
};

use super::counters::ThinwireCounters;
use super::{client_addr, client_of, server_addr, server_key, ThinwireProtocol, ID_BYTES, IP_UDP};
use crate::protocol::{
    add_counter, ChannelSemantics, Counters, DeadlineParity, OutMessage, SimEndpoint, Transmit,
};
use crate::workload::ClassSpec;

impl ThinwireProtocol {
    /// A client or server endpoint around `ep`, not connected yet.
    pub(super) fn endpoint(
        &self,
        ep: Endpoint,
        is_server: bool,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        let (channels, class_channel) = self.channels(classes);
        ThinwireEndpoint {
            ep,
            is_server,
            deadline: self.deadline,
            deadline_shards: self.deadline_shards,
            channels,
            class_channel,
            conn: None,
            by_client: HashMap::new(),
            by_conn: HashMap::new(),
            waiting: HashMap::new(),
            buf: Vec::with_capacity(1500),
            delivered: VecDeque::new(),
            payload: HashMap::new(),
            established: false,
            sent: SentCounts::default(),
        }
    }
}

/// One thinwire endpoint (a client's, or the server's).
#[derive(Debug)]
pub struct ThinwireEndpoint {
    ep: Endpoint,
    is_server: bool,
    deadline: Option<DeadlineParity>,
    deadline_shards: Option<u8>,
    channels: Vec<ChannelKind>,
    class_channel: Vec<(u8, ChannelSemantics)>,
    /// Client side: the connection to the server.
    conn: Option<ConnectionHandle>,
    /// Server side: connections by client, and clients by connection.
    by_client: HashMap<u32, ConnectionHandle>,
    by_conn: HashMap<ConnectionHandle, u32>,
    /// Server side: messages for clients not connected yet, with the time
    /// the application sent them.
    waiting: HashMap<u32, VecDeque<(Instant, OutMessage)>>,
    buf: Vec<u8>,
    delivered: VecDeque<(u32, u64)>,
    /// Last seen counters per connection, and datagrams sent to that
    /// connection's peer since they were read.
    payload: HashMap<ConnectionHandle, (ConnectionCounters, u32)>,
    /// Client side: whether the connection to the server was established
    /// (datagrams before it are handshake, not counted in [`Self::sent`]).
    established: bool,
    /// What this endpoint sent on established connections, for the named
    /// counters (see [`SimEndpoint::add_counters`]).
    sent: SentCounts,
}

/// Datagrams with payload and their bytes that one endpoint sent on
/// established connections, and the message bytes its application handed
/// over: the sending side's own view, as Pangolin counts overhead (every byte
/// the sender transmits, headers included, over the message bytes; Zhang et
/// al., CoNEXT 2011, Sec. 7.3.2). The handshake, keepalives, acknowledgement-
/// only packets and the peer's acknowledgements are not in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SentCounts {
    /// Datagrams that carried payload, on established connections.
    datagrams: u64,
    /// Their bytes on the wire (IPv4 and UDP headers included).
    wire_bytes: u64,
    /// Bytes of the messages the application sent (each counted once).
    message_bytes: u64,
    /// Payload bytes sent per connection when last looked at.
    payload_seen: HashMap<ConnectionHandle, u64>,
}

/// Header bytes per packet of Pangolin (12 B) with IPv4 and UDP (28 B), for
/// the counter that prices thinwire's payload at Pangolin's header size.
const PANGOLIN_HEADER_BYTES: u64 = 40;

impl ThinwireEndpoint {
    /// Connects (or reconnects) a client to the server.
    pub(super) fn connect(&mut self, now: Instant) {
        self.conn = self
            .ep
            .connect(now, server_addr(), &server_key(), &self.channels)
            .ok();
    }

    fn payload_of(&self, msg: &OutMessage) -> Bytes {
        let mut v = vec![0u8; (msg.size as usize).max(ID_BYTES)];
        v[..ID_BYTES].copy_from_slice(&msg.id.to_be_bytes());
        Bytes::from(v)
    }

    /// Sends `msg`, which the application sent `waited` ago.
    fn send_on(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        msg: &OutMessage,
        waited: Duration,
    ) {
        let Some(&(ch, sem)) = self.class_channel.get(usize::from(msg.class)) else {
            return;
        };
        let data = self.payload_of(msg);
        if let (Some(parity), Some(deadline)) = (self.deadline, msg.deadline) {
            let left = deadline.saturating_sub(waited);
            if !left.is_zero() {
                let opts = DeadlineOptions {
                    parity: parity.mode(),
                    shard_size: self
                        .deadline_shards
                        .map(|k| data.len().div_ceil(usize::from(k.max(1)))),
                    ..DeadlineOptions::new(left, msg.target)
                };
                match self
                    .ep
                    .send(now, conn, ch, data.clone(), SendMode::Deadline(opts))
                {
                    // Too large for 64 shards: an ordinary message below.
                    Err(SendError::MessageTooLarge { .. }) => {}
                    // Sent, or refused (connection gone): the message is lost.
                    _ => return,
                }
            }
        }
        // A refused send (connection gone, buffer full) means the message is lost.
        let mode = match sem {
            ChannelSemantics::LatestReliable => SendMode::Latest { key: msg.key },
            _ => SendMode::Plain,
        };
        let _ = self.ep.send(now, conn, ch, data, mode);
    }

    fn drain_events(&mut self, now: Instant) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Connected { remote, .. } => {
                    self.established |= !self.is_server;
                    if self.is_server {
                        if let Some(c) = client_of(remote) {
                            self.by_client.insert(c, h);
                            self.by_conn.insert(h, c);
                            if let Some(q) = self.waiting.remove(&c) {
                                for (at, m) in q {
                                    self.send_on(now, h, &m, now.saturating_duration_since(at));
                                }
                            }
                        }
                    }
                }
                Event::Message(m) => {
                    if m.data.len() >= ID_BYTES {
                        let mut id = [0u8; ID_BYTES];
                        id.copy_from_slice(&m.data[..ID_BYTES]);
                        let peer = if self.is_server {
                            self.by_conn.get(&h).copied()
                        } else {
                            Some(0)
                        };
                        if let Some(peer) = peer {
                            self.delivered.push_back((peer, u64::from_be_bytes(id)));
                        }
                    }
                }
                Event::Disconnected { .. } => {
                    if self.is_server {
                        if let Some(c) = self.by_conn.remove(&h) {
                            if self.by_client.get(&c) == Some(&h) {
                                self.by_client.remove(&c);
                            }
                        }
                    } else if self.conn == Some(h) {
                        // Reconnect, as a game client would.
                        self.connect(now);
                    }
                }
            }
        }
    }

    /// Re-reads the counters of `h` every 128 datagrams, so that a
    /// connection that later disappears still counts (almost) fully.
    fn note_transmit(&mut self, h: ConnectionHandle) {
        let entry = self
            .payload
            .entry(h)
            .or_insert((ConnectionCounters::default(), 127));
        entry.1 += 1;
        if entry.1 >= 128 {
            entry.1 = 0;
            if let Some(s) = self.ep.connection_stats(h) {
                entry.0 = s.counters();
            }
        }
    }

    /// Counts a datagram of `wire_bytes` just sent on `h` in [`Self::sent`]
    /// if it carried payload (keepalives and acknowledgements do not).
    fn count_data_datagram(&mut self, h: ConnectionHandle, wire_bytes: usize) {
        let Some(now) = self.ep.connection_stats(h).map(|s| s.payload_bytes.total()) else {
            return;
        };
        let before = self.sent.payload_seen.insert(h, now).unwrap_or(0);
        if now > before {
            self.sent.datagrams += 1;
            self.sent.wire_bytes += wire_bytes as u64;
        }
    }

    /// The latest counters of every connection this endpoint had.
    fn snapshots(&self) -> HashMap<ConnectionHandle, ConnectionCounters> {
        let mut seen: HashMap<ConnectionHandle, ConnectionCounters> =
            self.payload.iter().map(|(h, v)| (*h, v.0)).collect();
        let live: Vec<ConnectionHandle> = if self.is_server {
            self.by_conn.keys().copied().collect()
        } else {
            self.conn.into_iter().collect()
        };
        for h in live {
            if let Some(s) = self.ep.connection_stats(h) {
                seen.insert(h, s.counters());
            }
        }
        seen
    }
}

impl SimEndpoint for ThinwireEndpoint {
    type Packet = Vec<u8>;

    fn send(&mut self, now: Instant, peer: u32, msg: &OutMessage) {
        self.sent.message_bytes += u64::from(msg.size);
        if self.is_server {
            match self.by_client.get(&peer) {
                Some(&h) => self.send_on(now, h, msg, Duration::ZERO),
                None => self.waiting.entry(peer).or_default().push_back((now, *msg)),
            }
        } else if let Some(h) = self.conn {
            self.send_on(now, h, msg, Duration::ZERO);
        }
        self.drain_events(now);
    }

    fn receive(&mut self, now: Instant, peer: u32, packet: Vec<u8>) {
        let from = if self.is_server {
            client_addr(peer)
        } else {
            server_addr()
        };
        self.ep.handle_datagram(now, from, &packet);
        self.drain_events(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Vec<u8>>> {
        let t = self.ep.poll_transmit(now, &mut self.buf)?;
        let (peer, conn) = if self.is_server {
            let c = client_of(t.destination).unwrap_or(u32::MAX);
            (c, self.by_client.get(&c).copied())
        } else {
            (0, self.conn)
        };
        if let Some(h) = conn {
            self.note_transmit(h);
            if self.is_server || self.established {
                self.count_data_datagram(h, t.size + IP_UDP);
            }
        }
        Some(Transmit {
            peer,
            packet: self.buf[..t.size].to_vec(),
            wire_bytes: t.size + IP_UDP,
            payload_bytes: None,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.ep.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
        self.drain_events(now);
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front()
    }

    fn payload_bytes_sent(&self) -> Option<u64> {
        // Includes retransmitted and parity shards (`payload_bytes.parity`).
        Some(
            self.snapshots()
                .values()
                .map(|s| s.payload_bytes.total())
                .sum(),
        )
    }

    /// `tw_{side}_datagrams`, `tw_{side}_wire_bytes`, `tw_{side}_message_bytes`,
    /// `tw_{side}_payload_bytes` (payload sent: copies, repairs and parity
    /// included) and `tw_{side}_bytes_at_40b_header` (that payload plus 40
    /// bytes per datagram: thinwire's traffic priced at Pangolin's header
    /// size), with `side` `server` or `client`: what this adapter measures
    /// of the traffic, for the paper tables. Datagrams count from the
    /// connection's establishment on and only those with payload (no
    /// handshake, keepalives or acknowledgement-only packets). The
    /// connections' own counters are in [`SimEndpoint::thinwire_counters`].
    fn add_counters(&self, out: &mut Counters) {
        let side = if self.is_server { "server" } else { "client" };
        let payload = self.payload_bytes_sent().unwrap_or(0);
        let s = &self.sent;
        for (name, v) in [
            ("datagrams", s.datagrams),
            ("wire_bytes", s.wire_bytes),
            ("message_bytes", s.message_bytes),
            ("payload_bytes", payload),
            (
                "bytes_at_40b_header",
                payload + PANGOLIN_HEADER_BYTES * s.datagrams,
            ),
        ] {
            add_counter(out, &format!("tw_{side}_{name}"), v as f64);
        }
    }

    /// The counters of every connection this endpoint had (closed ones
    /// included), on its side.
    fn thinwire_counters(&self) -> Option<ThinwireCounters> {
        let mut mine = ConnectionCounters::default();
        for s in self.snapshots().into_values() {
            mine += s;
        }
        let none = ConnectionCounters::default();
        Some(if self.is_server {
            ThinwireCounters {
                client: none,
                server: mine,
            }
        } else {
            ThinwireCounters {
                client: mine,
                server: none,
            }
        })
    }
}
