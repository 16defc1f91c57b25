//! The server's Noise reads: the Connects waiting in the handshake queue (`queue.rs`) are
//! read within the endpoint's global budget, round-robin by source; each read (one X25519)
//! spends the Connect's cookie; an admitted one becomes a connection and its Accept.
//!
//! Established connections come first: a runtime handles the datagrams of a turn, then
//! `handle_timeout`, which reads at most `handshakes_per_turn` waiting Connects.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tracing::{debug, trace};

use super::limits::Source;
use super::queue::{Client, PendingConnect};
use super::{ConnectionHandle, Endpoint};
use crate::connection::{peer_max_ack_delay, ClientParams, Connection};
use crate::crypto::{self, token, CipherSuite, PacketKeys, Responder, TokenClaims};
use crate::error::RefuseReason;
use crate::wire::{self, AcceptParams, ConnectParams, LongPacket};

/// What the server decided to admit, from a Connect's authenticated contents.
struct Admission {
    params: ConnectParams,
    suite: CipherSuite,
    claims: Option<TokenClaims>,
    responder: Responder,
}

impl Endpoint {
    /// Reads the Noise message 1 of up to `max` waiting Connects (one X25519 operation each),
    /// within the endpoint's budget of `handshake_reads_per_second`, one per source in turn;
    /// returns how many were read. `handle_timeout` calls it with `handshakes_per_turn`; a
    /// runtime that wants another split calls it itself, after the datagrams of its turn.
    /// Drain `poll_transmit` and `poll_event` afterwards, as after any `handle_*`.
    pub fn handle_handshakes(&mut self, now: Instant, max: usize) -> usize {
        self.clock = now;
        let now_ms = self.now_ms(now);
        let lifetime = self
            .server
            .as_ref()
            .map_or(0, |s| s.cookie_lifetime.as_millis() as u64);
        let mut read = 0;
        while read < max && self.queue.len() > 0 && self.queue.can_read(now_ms) {
            let Some(p) = self.queue.pop() else {
                break;
            };
            if now_ms.saturating_sub(p.issued_ms) > lifetime {
                // waited past its cookie: its client has sent a new Hello by now
                self.stats.dropped_handshake_queue += 1;
                trace!(remote = %p.from, "queued Connect dropped: it waited past its cookie");
                continue;
            }
            // the table may have filled while it waited
            if let Some(reason) = self.capacity_refusal(&p.from) {
                self.refuse_capacity(p.from, &p.client, reason);
                continue;
            }
            if !self.queue.spent.spend(now_ms, p.cookie_id) || !self.queue.take_read(now_ms) {
                self.stats.dropped_handshake_queue += 1;
                continue;
            }
            read += 1;
            self.read_connect(now, p);
        }
        read
    }

    /// Connects waiting for their Noise read.
    pub fn pending_handshakes(&self) -> usize {
        self.queue.len()
    }

    /// Bytes the handshake queue and the spent-cookie filter hold (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn handshake_state_bytes(&self) -> usize {
        self.queue.held_bytes()
    }

    /// One read: a connection, a refusal (remembered with the spent cookie, to be repeated
    /// without a read), or a silent drop. A message 1 the server cannot read (refused
    /// `UnknownServerKey`) or whose parameters do not parse (dropped) costs the source more
    /// of its budget.
    fn read_connect(&mut self, now: Instant, p: PendingConnect) {
        self.stats.handshakes_attempted += 1;
        match self.admit(now, &p.client, &p.handshake) {
            Ok(admission) => {
                let rtt = Duration::from_millis(p.arrived_ms.saturating_sub(p.issued_ms));
                self.accept(now, p.from, p.client, admission, rtt);
            }
            Err(Some(reason)) => {
                if reason == RefuseReason::UnknownServerKey {
                    debug!(
                        remote = %p.from,
                        "Connect refused: its handshake message is not written to this server's key"
                    );
                    self.bad_handshake(&p.from);
                }
                self.queue.spent.set_refusal(p.cookie_id, reason.code());
                self.send_refuse(p.from, &p.client, reason);
            }
            Err(None) => {
                debug!(remote = %p.from, "Connect dropped: its parameters do not parse");
                self.bad_handshake(&p.from);
            }
        }
    }

    /// Counts a message 1 that could not be used and charges its (untrusted) source.
    fn bad_handshake(&mut self, from: &SocketAddr) {
        self.stats.dropped_bad_handshake += 1;
        if !self.is_trusted(from) {
            self.limits.penalise(&Source::of(from));
        }
    }

    /// Reads Noise message 1 and checks what it carries. `Err(None)`: parameters that do not
    /// parse (dropped silently); `Err(Some(r))`: refused, `UnknownServerKey` when the message
    /// was not written to this server's key (or was damaged) and does not decrypt.
    fn admit(
        &mut self,
        now: Instant,
        client: &Client,
        msg: &[u8],
    ) -> Result<Admission, Option<RefuseReason>> {
        let server_key = self.server_key.as_ref().ok_or(None)?;
        let prologue = crypto::prologue(wire::VERSION, &client.cid, client.instance, client.nonce);
        let seed: [u8; 32] = rand::Rng::random(&mut self.rng);
        let (responder, payload) = Responder::read(server_key, &prologue, seed, msg)
            .ok_or(Some(RefuseReason::UnknownServerKey))?;
        let params = ConnectParams::decode(&payload).map_err(|_| None)?;
        let suite = params
            .suites
            .iter()
            .filter_map(|&c| CipherSuite::from_code(c))
            .find(|s| self.config.cipher_suites.contains(s))
            .ok_or(Some(RefuseReason::NoCommonCipherSuite))?;
        let policy = self.server.as_ref().and_then(|s| s.connect_tokens.as_ref());
        let claims = match policy {
            None => None,
            Some(policy) => {
                let now_s = self
                    .unix_now_s(now)
                    .ok_or(Some(RefuseReason::InvalidToken))?;
                let opened = token::open(
                    &policy.key,
                    &params.token,
                    &server_key.public().0,
                    now_s,
                    &policy.public_addresses,
                )
                .map_err(|_| Some(RefuseReason::InvalidToken))?;
                if self.client_ids.contains_key(&opened.claims.client_id) {
                    return Err(Some(RefuseReason::AlreadyConnected));
                }
                Some(opened.claims)
            }
        };
        Ok(Admission {
            params,
            suite,
            claims,
            responder,
        })
    }

    /// Creates the server's connection and its Accept (Noise message 2).
    fn accept(
        &mut self,
        now: Instant,
        from: SocketAddr,
        client: Client,
        admission: Admission,
        rtt: Duration,
    ) {
        let Some(cid) = self.fresh_cid() else {
            self.stats.dropped_connection_limit += 1;
            self.send_refuse(from, &client, RefuseReason::ServerFull);
            return;
        };
        let Admission {
            params,
            suite,
            claims,
            responder,
        } = admission;
        let accept_params = AcceptParams {
            server_cid: cid,
            max_ack_delay_us: self.transport.max_ack_delay.as_micros() as u64,
            suite: suite.code(),
            // bound to the address the handshake came from when the id is short (2.7)
            reset_token: self.reset.token(&cid, &from),
        };
        let mut payload = Vec::new();
        accept_params.encode(&mut payload);
        let Ok((msg, keys)) = responder.finish(&payload) else {
            self.stats.dropped_bad_handshake += 1;
            debug!(remote = %from, "Connect dropped: the Noise answer could not be written");
            return;
        };
        let mut accept = Vec::new();
        LongPacket::Accept {
            version: wire::VERSION,
            dst_cid: client.cid,
            nonce: client.nonce,
            handshake: msg,
        }
        .encode(&mut accept);
        let client_params = ClientParams {
            cid: client.cid,
            max_ack_delay: peer_max_ack_delay(params.max_ack_delay_us),
            handshake_rtt: (!rtt.is_zero()).then_some(rtt),
            keys: PacketKeys::new(suite, &keys.tx, &keys.rx, self.transport.key_update_packets),
            accept,
        };
        let setup = self.setup(from, cid, params.channels, (client.instance, client.nonce));
        let conn = Connection::new_server(now, setup, client_params);
        let h = self.insert(conn);
        self.register_incoming(h, from, &client, claims);
        self.by_cid.insert(cid, h);
        self.stats.connections_accepted += 1;
        debug!(conn = %h, remote = %from, cid = %cid, suite = ?suite, "connection accepted: Accept sent");
        self.touched(h);
    }

    fn register_incoming(
        &mut self,
        h: ConnectionHandle,
        from: SocketAddr,
        client: &Client,
        claims: Option<TokenClaims>,
    ) {
        self.peers.insert(from, client.cid, h);
        self.limits.add_connection(&from);
        if let Some(claims) = claims {
            self.client_ids.insert(claims.client_id, h);
            self.claims.insert(h, claims);
        }
    }
}
