//! The client's side of the handshake after its Hello: Challenge, Accept, version negotiation.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{Connection, State};
use crate::error::PeerError;
use crate::event::Event;
use crate::wire::{self, ConnectionId};

impl Connection {
    /// The server's Challenge arrived (client).
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
        self.handshake_rtt_sample(now);
        self.state = State::AwaitingAccept { cookie };
        self.handshake_due = true;
        self.handshake.retransmitted = false;
        self.update_timers();
        true
    }

    /// The server's Accept arrived (client).
    pub(crate) fn on_accept(
        &mut self,
        now: Instant,
        from: SocketAddr,
        nonce: u64,
        server_cid: ConnectionId,
        peer_max_ack_delay: Duration,
    ) -> bool {
        if !matches!(self.state, State::AwaitingAccept { .. })
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        self.handshake_rtt_sample(now);
        self.remote_cid = Some(server_cid);
        self.peer_max_ack_delay = peer_max_ack_delay;
        self.state = State::Established;
        self.handshake_due = false;
        self.last_rx = now;
        self.last_tx = now;
        self.events.push(Event::Connected {
            remote: self.remote,
            incoming: false,
        });
        self.update_timers();
        true
    }

    /// The peer supports none of our versions (client, before the Challenge).
    pub(crate) fn on_version_negotiation(&mut self, from: SocketAddr, supported: Vec<u32>) {
        if self.state == State::AwaitingChallenge
            && from == self.remote
            && !supported.contains(&wire::VERSION)
        {
            self.finish(PeerError::VersionMismatch(supported).into());
        }
    }

    pub(super) fn handshake_rtt_sample(&mut self, now: Instant) {
        if let (Some(sent), false) = (self.handshake.sent_at, self.handshake.retransmitted) {
            self.rtt
                .update(now.saturating_duration_since(sent), Duration::ZERO);
        }
    }
}
