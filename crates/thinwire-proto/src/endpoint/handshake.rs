//! The endpoint's long-header packets: the stateless cookie handshake on the server side
//! (Hello → Challenge, Connect → a new connection), the client's Challenge / Accept / version
//! negotiation routed to its connection, Resets, and the queue of stateless replies.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Endpoint;
use crate::connection::{ClientParams, Connection};
use crate::cookie::{self, CookieInput};
use crate::wire::{self, ChannelKind, ConnectionId, LongPacket};

/// The peer's advertised max ack delay, capped at 10 s so that a hostile value cannot stall our
/// retransmission timer.
fn peer_max_ack_delay(us: u64) -> Duration {
    Duration::from_micros(us.min(10_000_000))
}

/// Who a handshake packet says the client is: its connection id and the handshake's identity.
#[derive(Debug, Clone, Copy)]
struct Client {
    cid: ConnectionId,
    instance: u64,
    nonce: u64,
}

impl Client {
    fn cookie_input(&self, addr: SocketAddr) -> CookieInput<'_> {
        CookieInput {
            addr,
            cid: &self.cid,
            instance: self.instance,
            nonce: self.nonce,
        }
    }
}

/// A Connect's fields beyond who the client is.
#[derive(Debug)]
struct ConnectRequest {
    version: u32,
    cookie: Vec<u8>,
    max_ack_delay_us: u64,
    channels: Vec<ChannelKind>,
}

impl Endpoint {
    pub(super) fn queue_reply(&mut self, to: SocketAddr, bytes: Vec<u8>) -> bool {
        let max = self.server.as_ref().map_or(1024, |s| s.max_stateless_queue);
        if self.replies.len() >= max {
            self.stats.dropped_reply_queue_full += 1;
            return false;
        }
        self.replies.push_back((to, bytes));
        true
    }

    pub(super) fn send_reset(&mut self, to: SocketAddr, cid: ConnectionId, received_len: usize) {
        let mut out = Vec::new();
        LongPacket::Reset {
            version: wire::VERSION,
            cid,
        }
        .encode(&mut out);
        // A Reset (7-14 bytes) may exceed a tiny packet such as a keepalive; like QUIC's
        // stateless reset it is capped below three times the packet that triggered it, so a
        // spoofed flood gains an attacker little.
        if out.len() < 3 * received_len && self.queue_reply(to, out) {
            self.stats.resets_sent += 1;
        }
    }

    pub(super) fn handle_long(
        &mut self,
        now: Instant,
        from: SocketAddr,
        packet: LongPacket,
        len: usize,
    ) {
        match packet {
            LongPacket::Hello {
                version,
                src_cid,
                instance,
                nonce,
            } => {
                let client = Client {
                    cid: src_cid,
                    instance,
                    nonce,
                };
                self.on_hello(now, from, version, client, len);
            }
            LongPacket::Connect {
                version,
                src_cid,
                instance,
                nonce,
                cookie,
                max_ack_delay_us,
                channels,
            } => {
                let client = Client {
                    cid: src_cid,
                    instance,
                    nonce,
                };
                let request = ConnectRequest {
                    version,
                    cookie,
                    max_ack_delay_us,
                    channels,
                };
                self.on_connect(now, from, client, request);
            }
            LongPacket::Challenge {
                dst_cid,
                nonce,
                cookie,
                ..
            } => {
                let ok = self.with_conn(dst_cid, |c| c.on_challenge(now, from, nonce, cookie));
                if !ok {
                    self.stats.dropped_unexpected += 1;
                }
            }
            LongPacket::Accept {
                dst_cid,
                src_cid,
                nonce,
                max_ack_delay_us,
                ..
            } => {
                let delay = peer_max_ack_delay(max_ack_delay_us);
                let ok = self.with_conn(dst_cid, |c| c.on_accept(now, from, nonce, src_cid, delay));
                if ok {
                    if let Some(&h) = self.by_cid.get(&dst_cid) {
                        self.by_remote.insert((from, src_cid), h);
                    }
                } else {
                    self.stats.dropped_unexpected += 1;
                }
            }
            LongPacket::Reset { cid, .. } => match self.by_remote.get(&(from, cid)).copied() {
                Some(h) => {
                    if let Some(c) = self.conns.get_mut(&h) {
                        c.on_reset();
                    }
                    self.touched(h);
                }
                None => self.stats.dropped_unexpected += 1,
            },
            LongPacket::VersionNegotiation { dst_cid, supported } => {
                self.with_conn(dst_cid, |c| {
                    c.on_version_negotiation(from, supported);
                    true
                });
            }
        }
    }

    /// A Hello: answer with a Challenge carrying a cookie, keeping no state (or with a version
    /// negotiation), never larger than the Hello.
    fn on_hello(
        &mut self,
        now: Instant,
        from: SocketAddr,
        version: u32,
        client: Client,
        len: usize,
    ) {
        if self.server.is_none() {
            self.stats.dropped_unexpected += 1;
            return;
        }
        if version != wire::VERSION {
            self.stats.dropped_version += 1;
            let mut out = Vec::new();
            LongPacket::VersionNegotiation {
                dst_cid: client.cid,
                supported: vec![wire::VERSION],
            }
            .encode(&mut out);
            if out.len() <= len {
                self.queue_reply(from, out);
            }
            return;
        }
        let cookie = cookie::mint(
            &self.cookie_key,
            &client.cookie_input(from),
            self.now_ms(now),
        );
        let mut out = Vec::new();
        LongPacket::Challenge {
            version: wire::VERSION,
            dst_cid: client.cid,
            nonce: client.nonce,
            cookie,
        }
        .encode(&mut out);
        if out.len() <= len && self.queue_reply(from, out) {
            self.stats.challenges_sent += 1;
        }
    }

    fn with_conn(&mut self, cid: ConnectionId, f: impl FnOnce(&mut Connection) -> bool) -> bool {
        let Some(&h) = self.by_cid.get(&cid) else {
            return false;
        };
        let Some(c) = self.conns.get_mut(&h) else {
            return false;
        };
        let r = f(c);
        self.touched(h);
        r
    }

    fn now_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// A Connect: the first state the server keeps, and only once its cookie checks out.
    fn on_connect(&mut self, now: Instant, from: SocketAddr, client: Client, req: ConnectRequest) {
        let Some(server) = &self.server else {
            self.stats.dropped_unexpected += 1;
            return;
        };
        if req.version != wire::VERSION {
            self.stats.dropped_version += 1;
            return;
        }
        let lifetime = server.cookie_lifetime.as_millis() as u64;
        let max_conns = server.max_connections;
        let now_ms = self.now_ms(now);
        let input = client.cookie_input(from);
        if cookie::verify(&self.cookie_key, &input, &req.cookie, now_ms, lifetime).is_err() {
            self.stats.dropped_bad_cookie += 1;
            return;
        }
        if let Some(&h) = self.handshakes.get(&(from, client.instance, client.nonce)) {
            // our Accept was lost: say it again
            if let Some(c) = self.conns.get_mut(&h) {
                c.resend_accept();
            }
            self.touched(h);
            return;
        }
        if self.conns.len() >= max_conns {
            self.stats.dropped_connection_limit += 1;
            return;
        }
        let Some(cid) = self.fresh_cid() else {
            self.stats.dropped_connection_limit += 1;
            return;
        };
        // the cookie carries its issue time: Challenge -> Connect took one round trip
        let issued = u64::from_be_bytes(req.cookie[..8].try_into().expect("verified length"));
        let rtt = Duration::from_millis(now_ms.saturating_sub(issued));
        let params = ClientParams {
            cid: client.cid,
            max_ack_delay: peer_max_ack_delay(req.max_ack_delay_us),
            handshake_rtt: (!rtt.is_zero()).then_some(rtt),
        };
        let setup = self.setup(from, cid, req.channels, (client.instance, client.nonce));
        let conn = Connection::new_server(now, setup, params);
        let h = self.new_handle();
        self.by_cid.insert(cid, h);
        self.by_remote.insert((from, client.cid), h);
        self.handshakes
            .insert((from, client.instance, client.nonce), h);
        self.conns.insert(h, conn);
        self.stats.connections_accepted += 1;
        self.touched(h);
    }
}
