//! The endpoint's long-header packets: the stateless cookie handshake on the server side
//! (Hello → Challenge; Connect → Noise → a new connection, or a Refuse), the client's
//! Challenge / Accept / Refuse / version negotiation routed to its connection, authenticated
//! Resets, and the queue of stateless replies. A Connect that passes its checks waits in the
//! handshake queue (`queue.rs`); its Noise message is read in `admission.rs`.

use std::net::SocketAddr;
use std::time::Instant;

use tracing::{debug, trace};

use super::limits::Source;
use super::queue::{Client, PendingConnect, Queued};
use super::Endpoint;
use crate::connection::Connection;
use crate::cookie;
use crate::error::RefuseReason;
use crate::wire::{self, ConnectionId, LongPacket, RESET_TOKEN_LEN};

/// A Connect's fields beyond who the client is.
#[derive(Debug)]
struct ConnectRequest {
    version: u32,
    cookie: Vec<u8>,
    handshake: Vec<u8>,
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

    /// A Reset naming `cid`, sent to `to` (the datagram's source): with its real token for an
    /// unknown id, with the decoy for a live one (`decoy`); for an id shorter than 8 bytes both
    /// are those of the address `to`, so that probing every id from one's own address yields
    /// no token of anyone else. Only servers send Resets, each below three times the datagram
    /// that caused it (a keepalive is 27 bytes, a Reset 30 with an 8-byte id), within the
    /// budget of stateless replies. Every check comes before the token is computed.
    pub(super) fn send_reset(
        &mut self,
        now: Instant,
        to: SocketAddr,
        cid: ConnectionId,
        decoy: bool,
        received_len: usize,
    ) {
        // 1 + 4 + 1 + cid + token
        let size = 6 + cid.len() + RESET_TOKEN_LEN;
        if self.server.is_none() || size >= 3 * received_len || !self.allow_stateless(now) {
            return;
        }
        let token = if decoy {
            self.reset.decoy(&cid, &to)
        } else {
            self.reset.token(&cid, &to)
        };
        let mut out = Vec::with_capacity(size);
        LongPacket::Reset {
            version: wire::VERSION,
            cid,
            token,
        }
        .encode(&mut out);
        if self.queue_reply(to, out) {
            self.stats.resets_sent += 1;
        }
    }

    /// Takes one Connect from its (proven) source's budget; counts a refusal.
    fn allow_source(&mut self, now: Instant, from: &SocketAddr) -> bool {
        if self.is_trusted(from) {
            return true;
        }
        let now_ms = self.now_ms(now);
        let ok = self.limits.allow_handshake(&Source::of(from), now_ms);
        if !ok {
            self.stats.dropped_rate_limited += 1;
            trace!(remote = %from, "Connect dropped: its source spent its handshake budget");
        }
        ok
    }

    /// Whether `from` is one of the server's trusted sources (a gateway), exempt from the
    /// per-source budgets.
    pub(super) fn is_trusted(&self, from: &SocketAddr) -> bool {
        let ip = from.ip().to_canonical();
        self.server
            .as_ref()
            .is_some_and(|s| s.trusted_sources.iter().any(|t| t.to_canonical() == ip))
    }

    /// Takes one stateless reply (Challenge, version negotiation, Reset) from the endpoint's
    /// budget. It is global, not per source: before a cookie the source address may be
    /// spoofed, and a per-source budget would let anyone use up a victim's.
    fn allow_stateless(&mut self, now: Instant) -> bool {
        let now_ms = self.now_ms(now);
        let ok = self.limits.allow_stateless(now_ms);
        if !ok {
            self.stats.dropped_rate_limited += 1;
            trace!("stateless reply dropped: the endpoint's reply budget is spent");
        }
        ok
    }

    pub(super) fn send_refuse(&mut self, to: SocketAddr, client: &Client, reason: RefuseReason) {
        let mut out = Vec::new();
        LongPacket::Refuse {
            version: wire::VERSION,
            dst_cid: client.cid,
            nonce: client.nonce,
            reason: reason.code(),
        }
        .encode(&mut out);
        if self.queue_reply(to, out) {
            self.stats.refusals_sent += 1;
            debug!(remote = %to, reason = ?reason, "connection refused: Refuse sent");
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
                handshake,
            } => {
                let client = Client {
                    cid: src_cid,
                    instance,
                    nonce,
                };
                let request = ConnectRequest {
                    version,
                    cookie,
                    handshake,
                };
                self.on_connect(now, from, client, request);
            }
            other => self.handle_long_for_client(now, from, other),
        }
    }

    /// The long packets a client's connection takes: Challenge, Accept, Refuse, Reset and
    /// version negotiation.
    fn handle_long_for_client(&mut self, now: Instant, from: SocketAddr, packet: LongPacket) {
        match packet {
            LongPacket::Challenge {
                dst_cid,
                nonce,
                cookie,
                ..
            } => {
                let ok = self.with_conn(dst_cid, |c| c.on_challenge(now, from, nonce, cookie));
                if !ok {
                    self.stats.dropped_unexpected += 1;
                    trace!(remote = %from, "Challenge dropped: unexpected");
                }
            }
            LongPacket::Accept {
                dst_cid,
                nonce,
                handshake,
                ..
            } => {
                let mut server_cid = None;
                let ok = self.with_conn(dst_cid, |c| {
                    let ok = c.on_accept(now, from, nonce, &handshake);
                    server_cid = c.remote_cid();
                    ok
                });
                match (ok, server_cid, self.by_cid.get(&dst_cid)) {
                    (true, Some(sc), Some(h)) => {
                        self.peers.insert(from, sc, h);
                    }
                    (true, ..) => {}
                    (false, ..) => {
                        self.stats.dropped_unexpected += 1;
                        trace!(remote = %from, "Accept dropped: unexpected or not authentic");
                    }
                }
            }
            LongPacket::Refuse {
                dst_cid,
                nonce,
                reason,
                ..
            } => {
                if !self.with_conn(dst_cid, |c| c.on_refuse(from, nonce, reason)) {
                    self.stats.dropped_unexpected += 1;
                    trace!(remote = %from, "Refuse dropped: unexpected");
                }
            }
            LongPacket::Reset { cid, token, .. } => {
                let believed = match self.by_peer(from, cid) {
                    Some(h) => {
                        let ok = self.conns.get_mut(h).is_some_and(|c| c.on_reset(&token));
                        self.touched(h);
                        ok
                    }
                    None => false,
                };
                if !believed {
                    self.stats.dropped_bad_reset += 1;
                    trace!(remote = %from, "Reset dropped: unknown connection or wrong token");
                }
            }
            LongPacket::VersionNegotiation { dst_cid, supported } => {
                self.with_conn(dst_cid, |c| {
                    c.on_version_negotiation(from, supported);
                    true
                });
            }
            // the server's packets, taken in `handle_long`
            LongPacket::Hello { .. } | LongPacket::Connect { .. } => {}
        }
    }

    /// A Hello: answer with a Challenge carrying a cookie, keeping no state (or with a version
    /// negotiation), never larger than the Hello, within the endpoint's stateless budget.
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
        if !self.allow_stateless(now) {
            return;
        }
        if version != wire::VERSION {
            self.stats.dropped_version += 1;
            trace!(remote = %from, version, "Hello of another version: version negotiation");
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
            trace!(remote = %from, "Hello received: Challenge sent");
        }
    }

    fn with_conn(&mut self, cid: ConnectionId, f: impl FnOnce(&mut Connection) -> bool) -> bool {
        let Some(h) = self.by_cid.get(&cid) else {
            return false;
        };
        let Some(c) = self.conns.get_mut(h) else {
            return false;
        };
        let r = f(c);
        self.touched(h);
        r
    }

    pub(super) fn now_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// A Connect: checked in the order of `docs/PROTOCOL.md` §5.6, cheapest first; one that
    /// passes waits in the handshake queue for its Noise read (`admission.rs`), the first state
    /// the server keeps for it.
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
        let now_ms = self.now_ms(now);
        let input = client.cookie_input(from);
        if cookie::verify(&self.cookie_key, &input, &req.cookie, now_ms, lifetime).is_err() {
            self.stats.dropped_bad_cookie += 1;
            trace!(remote = %from, "Connect dropped: bad or expired cookie");
            return;
        }
        // the address is proven from here on: refusals cannot be aimed at a victim
        let repeated = self.by_peer(from, client.cid).filter(|&h| {
            self.conns
                .get(h)
                .is_some_and(|c| c.handshake_is(client.instance, client.nonce))
        });
        if let Some(h) = repeated {
            // our Accept was lost: say it again, unchanged
            trace!(remote = %from, conn = %h, "Connect repeated: Accept sent again");
            if let Some(c) = self.conns.get_mut(h) {
                c.resend_accept();
            }
            self.touched(h);
            return;
        }
        // a cookie pays for one read: a failed message 1 cannot be retried with it
        let cookie_id = cookie::id(&req.cookie);
        if let Some(spent) = self.queue.spent.get(cookie_id) {
            self.stats.dropped_cookie_spent += 1;
            if spent != 0 {
                self.send_refuse(from, &client, RefuseReason::from_code(spent));
            }
            return;
        }
        if !self.allow_source(now, &from) {
            return;
        }
        if let Some(reason) = self.capacity_refusal(&from) {
            self.refuse_capacity(from, &client, reason);
            return;
        }
        // the cookie carries its issue time: Challenge -> Connect took one round trip
        let issued_ms = u64::from_be_bytes(req.cookie[..8].try_into().expect("verified length"));
        let pending = PendingConnect {
            from,
            client,
            handshake: req.handshake,
            cookie_id,
            issued_ms,
            arrived_ms: now_ms,
        };
        let queued = if self.is_trusted(&from) {
            self.queue.push_trusted(pending)
        } else {
            self.queue.push(Source::of(&from), pending)
        };
        trace!(remote = %from, outcome = ?queued, "Connect received: queued for its Noise read");
        match queued {
            Queued::Waiting => self.stats.handshakes_queued += 1,
            Queued::Evicted => {
                self.stats.handshakes_queued += 1;
                self.stats.dropped_handshake_queue += 1;
            }
            Queued::Dropped => self.stats.dropped_handshake_queue += 1,
        }
    }

    /// Sends a capacity refusal (decided before any read) and counts it.
    pub(super) fn refuse_capacity(
        &mut self,
        to: SocketAddr,
        client: &Client,
        reason: RefuseReason,
    ) {
        self.stats.dropped_connection_limit += 1;
        if reason == RefuseReason::BusyNetwork {
            self.stats.refused_busy_network += 1;
        }
        self.send_refuse(to, client, reason);
    }

    /// Refuses a client the server has no room for, before any cryptography is spent on it:
    /// a full table; without connect tokens (whose client ids are the admission) and for an
    /// untrusted source, a source at its cap, or a busy network prefix under table pressure.
    pub(super) fn capacity_refusal(&self, from: &SocketAddr) -> Option<RefuseReason> {
        let server = self.server.as_ref()?;
        let held = self.conns.len();
        if held >= server.max_connections {
            return Some(RefuseReason::ServerFull);
        }
        if self.is_trusted(from) || server.connect_tokens.is_some() {
            return None;
        }
        if self.memory.connections_of(&Source::of(from)) >= server.max_connections_per_source {
            return Some(RefuseReason::TooManyFromSource);
        }
        if self
            .limits
            .prefixes()
            .refuses(from, held, server.max_connections)
        {
            return Some(RefuseReason::BusyNetwork);
        }
        None
    }
}
