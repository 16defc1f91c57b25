//! The client's side of the handshake after its Hello: the Challenge (write the Connect with
//! Noise message 1), the Accept (read Noise message 2, take the keys), a Refuse, and version
//! negotiation.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tracing::debug;

use super::{Connection, State};
use crate::crypto::{self, CipherSuite, Initiator, PacketKeys, PublicKey};
use crate::error::{DisconnectReason, PeerError, RefuseReason};
use crate::event::Event;
use crate::stamp::Stamp;
use crate::wire::{self, AcceptParams, ConnectParams, LongPacket};

/// The peer's advertised max ack delay, capped at 10 s so that a hostile value cannot stall our
/// retransmission timer.
pub(crate) fn peer_max_ack_delay(us: u64) -> Duration {
    Duration::from_micros(us.min(crate::MAX_ACK_DELAY.as_micros() as u64))
}

/// Handshake parameters a client remembers (and a server echoes in its Accept).
#[derive(Debug)]
pub(super) struct HandshakeInfo {
    /// The peer's address when the connection started.
    pub(super) origin: SocketAddr,
    pub(super) instance: u64,
    pub(super) nonce: u64,
    /// When the connection was made.
    pub(super) started: Stamp,
    /// Client: what it needs to write its Connect (and, once written, the Connect itself,
    /// resent unchanged, and the Noise state that reads the Accept). Boxed: a server's
    /// connection has none, and a client's drops it once the Accept is read.
    pub(super) client: Option<Box<ClientHandshake>>,
}

/// What a client brings to its handshake.
#[derive(Debug)]
pub(crate) struct ClientHandshake {
    /// The server's static key, which the handshake authenticates.
    pub(crate) server_key: PublicKey,
    /// The private part of a connect token, or empty.
    pub(crate) token: Vec<u8>,
    /// The cipher suites offered, preferred first.
    pub(crate) suites: Vec<CipherSuite>,
    /// The Connect datagram, once the Challenge came (resent as is).
    pub(crate) connect: Option<Vec<u8>>,
    /// The Noise state between Connect and Accept.
    pub(crate) initiator: Option<Initiator>,
    /// The randomness its ephemeral key is made from ([`Setup::seed`](super::Setup)).
    pub(crate) seed: [u8; 32],
    /// When the last Hello/Connect was sent, and whether it was a retransmission (Karn's rule:
    /// no RTT sample from a retransmitted handshake packet). Here, not inline in the
    /// connection: only a client's handshake sends them.
    pub(crate) sent_at: Option<Instant>,
    pub(crate) retransmitted: bool,
}

impl Connection {
    /// The server's Challenge arrived (client): write the Connect, which is resent unchanged
    /// until the Accept comes.
    pub(crate) fn on_challenge(
        &mut self,
        now: Instant,
        from: SocketAddr,
        nonce: u64,
        cookie: Vec<u8>,
    ) -> bool {
        if self.state != State::AwaitingChallenge
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        let Some(connect) = self.write_connect(cookie) else {
            return false;
        };
        debug!(remote = %from, cid = %self.local_cid, "Challenge received: Connect sent");
        self.handshake_rtt_sample(now);
        self.state = State::AwaitingAccept;
        self.due.handshake = true;
        if let Some(c) = self.handshake.client.as_mut() {
            c.retransmitted = false;
            c.connect = Some(connect);
        }
        self.update_timers();
        true
    }

    /// The Connect datagram: the cookie, and Noise message 1 with our parameters.
    fn write_connect(&mut self, cookie: Vec<u8>) -> Option<Vec<u8>> {
        let hs = &self.handshake;
        let client = hs.client.as_ref()?;
        let params = ConnectParams {
            max_ack_delay_us: self.config.max_ack_delay.as_micros() as u64,
            channels: self.channels.to_vec(),
            suites: client.suites.iter().map(|s| s.code()).collect(),
            token: client.token.clone(),
        };
        let mut payload = Vec::new();
        params.encode(&mut payload);
        let prologue = crypto::prologue(wire::VERSION, &self.local_cid, hs.instance, hs.nonce);
        let (initiator, msg) =
            Initiator::start(&client.server_key, &prologue, client.seed, &payload).ok()?;
        let mut out = Vec::new();
        LongPacket::Connect {
            version: wire::VERSION,
            src_cid: self.local_cid,
            instance: hs.instance,
            nonce: hs.nonce,
            cookie,
            handshake: msg,
        }
        .encode(&mut out);
        if let Some(c) = self.handshake.client.as_mut() {
            c.initiator = Some(initiator);
        }
        Some(out)
    }

    /// The server's Accept arrived (client). It counts only if it proves the server holds
    /// its key: anything else (forged, damaged, replayed from another handshake) is dropped and
    /// the genuine Accept can still come.
    pub(crate) fn on_accept(
        &mut self,
        now: Instant,
        from: SocketAddr,
        nonce: u64,
        handshake: &[u8],
    ) -> bool {
        if self.state != State::AwaitingAccept
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        let Some(client) = self.handshake.client.as_mut() else {
            return false;
        };
        let Some(initiator) = client.initiator.as_mut() else {
            return false;
        };
        let Some((payload, keys)) = initiator.finish(handshake) else {
            debug!(
                remote = %from,
                cid = %self.local_cid,
                "Accept dropped: it did not authenticate (not from the holder of the server key)"
            );
            return false;
        };
        // authenticated by the server's key from here on: a bad payload is a broken server
        let params = match AcceptParams::decode(&payload) {
            Ok(p) => p,
            Err(_) => {
                debug!(remote = %from, "Accept malformed: handshake failed");
                self.finish(PeerError::BadHandshake.into());
                return true;
            }
        };
        let suite = CipherSuite::from_code(params.suite).filter(|s| client.suites.contains(s));
        let Some(suite) = suite else {
            debug!(remote = %from, suite = params.suite, "Accept picks a suite not offered");
            self.finish(PeerError::BadHandshake.into());
            return true;
        };
        // the Connect's round trip, then what the handshake needed (server key, token,
        // offered suites, the Connect, the Noise state, when it was sent) is not needed again
        self.handshake_rtt_sample(now);
        self.handshake.client = None;
        let update_after = self.config.key_update_packets;
        self.keys = Some(PacketKeys::new(suite, &keys.tx, &keys.rx, update_after));
        self.peer_reset_token = Some(params.reset_token);
        self.remote_cid = Some(params.server_cid);
        self.flow.recovery.peer_max_ack_delay = peer_max_ack_delay(params.max_ack_delay_us);
        self.state = State::Established;
        self.due.handshake = false;
        self.last_rx = self.timers.stamp(now);
        self.last_tx = self.last_rx;
        debug!(
            remote = %self.remote,
            cid = %self.local_cid,
            server_cid = %params.server_cid,
            suite = ?suite,
            "Accept received: connection established"
        );
        self.events.push_back(Event::Connected {
            remote: self.remote,
            incoming: false,
        });
        self.update_timers();
        true
    }

    /// The server refused us (client, before the Accept).
    pub(crate) fn on_refuse(&mut self, from: SocketAddr, nonce: u64, reason: u8) -> bool {
        if !matches!(self.state, State::AwaitingChallenge | State::AwaitingAccept)
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        let reason = RefuseReason::from_code(reason);
        debug!(remote = %from, reason = ?reason, "Refuse received");
        self.finish(DisconnectReason::Refused(reason));
        true
    }

    /// The peer supports none of our versions (client, before the Challenge).
    pub(crate) fn on_version_negotiation(&mut self, from: SocketAddr, supported: Vec<u32>) {
        if self.state == State::AwaitingChallenge
            && from == self.remote
            && !supported.contains(&wire::VERSION)
        {
            debug!(remote = %from, ?supported, "version negotiation: no common version");
            self.finish(PeerError::VersionMismatch(supported).into());
        }
    }

    pub(super) fn handshake_rtt_sample(&mut self, now: Instant) {
        let client = self.handshake.client.as_deref();
        if let Some(sent) = client.filter(|c| !c.retransmitted).and_then(|c| c.sent_at) {
            self.flow
                .recovery
                .rtt
                .update(now.saturating_duration_since(sent), Duration::ZERO);
        }
    }
}
