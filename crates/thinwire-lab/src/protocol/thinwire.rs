//! thinwire itself (the real `thinwire_proto::Endpoint`) in the simulator.
//!
//! Clients each own an endpoint with one connection to the server; the server
//! owns one endpoint (one socket) for all clients. Message identity travels
//! in the payload: the first 8 bytes carry the message id (payloads shorter
//! than 8 bytes are padded to 8; the padding counts as wire bytes only).
//! Connection setup (the cookie handshake) is part of the run; a client whose
//! connection ends reconnects.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, ServerConfig, TransportConfig,
};

use super::{ChannelSemantics, Mapping, OutMessage, Protocol, SimEndpoint, Transmit};
use crate::workload::ClassSpec;

/// IPv4 + UDP header bytes added to every datagram.
const IP_UDP: usize = 28;
/// Bytes of message id at the start of every payload.
const ID_BYTES: usize = 8;

fn server_addr() -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4433))
}

fn client_addr(c: u32) -> SocketAddr {
    let [_, b, cc, d] = c.to_be_bytes();
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 1 + b, cc, d), 5000))
}

fn client_of(addr: SocketAddr) -> Option<u32> {
    match addr {
        SocketAddr::V4(a) => {
            let [a0, b, c, d] = a.ip().octets();
            if a0 != 10 || b == 0 || a.port() != 5000 {
                return None;
            }
            Some(u32::from_be_bytes([0, b - 1, c, d]))
        }
        SocketAddr::V6(_) => None,
    }
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&crate::sim::derive_seed(seed, 0x5457, i as u64).to_le_bytes());
    }
    out
}

fn kind(s: ChannelSemantics) -> ChannelKind {
    match s {
        ChannelSemantics::ReliableOrdered => ChannelKind::ReliableOrdered,
        ChannelSemantics::ReliableUnordered => ChannelKind::ReliableUnordered,
        ChannelSemantics::LatestReliable => ChannelKind::LatestReliable,
    }
}

/// thinwire in a named configuration.
#[derive(Debug, Clone)]
pub struct ThinwireProtocol {
    /// Thin-stream features on (default transport) or off (TCP-like).
    pub thin: bool,
    /// Class-to-channel mapping.
    pub mapping: Mapping,
}

impl ThinwireProtocol {
    fn transport(&self) -> Arc<TransportConfig> {
        Arc::new(if self.thin {
            TransportConfig::default()
        } else {
            TransportConfig::tcp_like()
        })
    }

    fn channels(&self, classes: &[ClassSpec]) -> (Vec<ChannelKind>, Vec<(u8, ChannelSemantics)>) {
        let per_class = self.mapping.channels(classes);
        let n = per_class
            .iter()
            .map(|(c, _)| usize::from(*c) + 1)
            .max()
            .unwrap_or(1);
        let mut kinds = vec![ChannelKind::ReliableOrdered; n];
        for (ch, s) in &per_class {
            kinds[usize::from(*ch)] = kind(*s);
        }
        (kinds, per_class)
    }
}

/// One thinwire endpoint (a client's, or the server's).
#[derive(Debug)]
pub struct ThinwireEndpoint {
    ep: Endpoint,
    is_server: bool,
    channels: Vec<ChannelKind>,
    class_channel: Vec<(u8, ChannelSemantics)>,
    /// Client side: the connection to the server.
    conn: Option<ConnectionHandle>,
    /// Server side: connections by client, and clients by connection.
    by_client: HashMap<u32, ConnectionHandle>,
    by_conn: HashMap<ConnectionHandle, u32>,
    /// Server side: messages for clients not connected yet.
    waiting: HashMap<u32, VecDeque<OutMessage>>,
    buf: Vec<u8>,
    delivered: VecDeque<(u32, u64)>,
    /// Last seen payload counter per connection, and datagrams sent to that
    /// connection's peer since it was read.
    payload: HashMap<ConnectionHandle, (u64, u32)>,
}

impl ThinwireEndpoint {
    fn payload_of(&self, msg: &OutMessage) -> Bytes {
        let mut v = vec![0u8; (msg.size as usize).max(ID_BYTES)];
        v[..ID_BYTES].copy_from_slice(&msg.id.to_be_bytes());
        Bytes::from(v)
    }

    fn send_on(&mut self, now: Instant, conn: ConnectionHandle, msg: &OutMessage) {
        let Some(&(ch, sem)) = self.class_channel.get(usize::from(msg.class)) else {
            return;
        };
        let data = self.payload_of(msg);
        // A refused send (connection gone, buffer full) means the message is lost.
        let _ = match sem {
            ChannelSemantics::LatestReliable => self.ep.send_latest(now, conn, ch, msg.key, data),
            _ => self.ep.send(now, conn, ch, data),
        };
    }

    fn drain_events(&mut self, now: Instant) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Connected { remote, .. } => {
                    if self.is_server {
                        if let Some(c) = client_of(remote) {
                            self.by_client.insert(c, h);
                            self.by_conn.insert(h, c);
                            if let Some(q) = self.waiting.remove(&c) {
                                for m in q {
                                    self.send_on(now, h, &m);
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
                        self.conn = self.ep.connect(now, server_addr(), &self.channels).ok();
                    }
                }
            }
        }
    }

    /// Re-reads the payload counter of `h` every 128 datagrams, so that a
    /// connection that later disappears still counts (almost) fully.
    fn note_transmit(&mut self, h: ConnectionHandle) {
        let entry = self.payload.entry(h).or_insert((0, 127));
        entry.1 += 1;
        if entry.1 >= 128 {
            entry.1 = 0;
            if let Some(s) = self.ep.connection_stats(h) {
                entry.0 = s.payload_bytes_sent();
            }
        }
    }
}

impl SimEndpoint for ThinwireEndpoint {
    type Packet = Vec<u8>;

    fn send(&mut self, now: Instant, peer: u32, msg: &OutMessage) {
        if self.is_server {
            match self.by_client.get(&peer) {
                Some(&h) => self.send_on(now, h, msg),
                None => self.waiting.entry(peer).or_default().push_back(*msg),
            }
        } else if let Some(h) = self.conn {
            self.send_on(now, h, msg);
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
        }
        Some(Transmit {
            peer,
            packet: self.buf[..t.size].to_vec(),
            wire_bytes: t.size + IP_UDP,
            payload_bytes: None,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
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
        let mut seen: HashMap<ConnectionHandle, u64> =
            self.payload.iter().map(|(h, v)| (*h, v.0)).collect();
        let live: Vec<ConnectionHandle> = if self.is_server {
            self.by_conn.keys().copied().collect()
        } else {
            self.conn.into_iter().collect()
        };
        for h in live {
            if let Some(s) = self.ep.connection_stats(h) {
                seen.insert(h, s.payload_bytes_sent());
            }
        }
        Some(seen.values().sum())
    }
}

impl Protocol for ThinwireProtocol {
    type Packet = Vec<u8>;
    type Endpoint = ThinwireEndpoint;

    fn name(&self) -> String {
        crate::scenario::ProtocolSpec::Thinwire {
            thin: self.thin,
            mapping: self.mapping,
        }
        .name()
    }
    fn model(&self) -> bool {
        false
    }
    fn server_per_client(&self) -> bool {
        false
    }
    fn new_client(
        &self,
        _client: u32,
        _clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        let (channels, class_channel) = self.channels(classes);
        let mut cfg = EndpointConfig::new(seed_bytes(seed));
        cfg.transport = self.transport();
        let mut ep =
            Endpoint::new(cfg, None, now).expect("the default thinwire configuration is valid");
        let conn = ep.connect(now, server_addr(), &channels).ok();
        ThinwireEndpoint {
            ep,
            is_server: false,
            channels,
            class_channel,
            conn,
            by_client: HashMap::new(),
            by_conn: HashMap::new(),
            waiting: HashMap::new(),
            buf: Vec::with_capacity(1500),
            delivered: VecDeque::new(),
            payload: HashMap::new(),
        }
    }
    fn new_server(
        &self,
        clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        let (channels, class_channel) = self.channels(classes);
        let mut cfg = EndpointConfig::new(seed_bytes(seed));
        cfg.transport = self.transport();
        cfg.cid_len = if clients > 60_000 { 4 } else { 2 };
        let server = ServerConfig {
            max_connections: (clients as usize).saturating_mul(2).max(16),
            max_stateless_queue: (clients as usize).max(1024),
            ..ServerConfig::default()
        };
        let ep = Endpoint::new(cfg, Some(server), now)
            .expect("the default thinwire configuration is valid");
        ThinwireEndpoint {
            ep,
            is_server: true,
            channels,
            class_channel,
            conn: None,
            by_client: HashMap::new(),
            by_conn: HashMap::new(),
            waiting: HashMap::new(),
            buf: Vec::with_capacity(1500),
            delivered: VecDeque::new(),
            payload: HashMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_addresses_round_trip() {
        for c in [0u32, 1, 255, 256, 65_535, 100_000] {
            assert_eq!(client_of(client_addr(c)), Some(c));
        }
        assert_eq!(client_of(server_addr()), None);
    }
}
