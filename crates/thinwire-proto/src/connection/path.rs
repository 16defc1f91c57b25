//! Path validation: the peer's address moves only to an address that has proven it receives.
//!
//! An authenticated packet from a new address (the newest packet received, not a reordered
//! old one) starts a probe: a PATH_CHALLENGE with 8 bytes nobody but this endpoint can predict
//! ([`PathKey`]: not even the peer, which holds the connection's packet keys) goes to the new
//! address, while everything else still goes to the old one. Only a PATH_RESPONSE echoing those
//! bytes (which only the peer can seal, and only after receiving at the new address) moves the
//! connection. Toward the unvalidated address at most three times the bytes received from it
//! are sent (RFC 9000 §8 and §9 do the same). So a replayed or rewritten packet cannot
//! redirect a connection, and NAT rebinding still works within a round trip.

use std::net::SocketAddr;
use std::time::Instant;

use tracing::debug;

use super::Connection;
use crate::crypto::PathKey;
use crate::wire::{self, PATH_DATA_LEN};

/// Challenges sent for one new address before it is given up.
const MAX_TRIES: u8 = 3;

/// Bytes sent toward an unvalidated address may be at most this many times those received.
const AMPLIFICATION: usize = 3;

/// One address being validated.
#[derive(Debug)]
struct Probe {
    addr: SocketAddr,
    data: [u8; PATH_DATA_LEN],
    bytes_in: usize,
    bytes_out: usize,
    sent_at: Option<Instant>,
    tries: u8,
}

/// The connection's path-validation state.
#[derive(Debug, Default)]
pub(super) struct PathState {
    /// Boxed: most connections never move.
    probe: Option<Box<Probe>>,
    /// A PATH_RESPONSE to send, and where. Boxed: it waits only until the next transmit.
    response: Option<Box<(SocketAddr, [u8; PATH_DATA_LEN])>>,
    challenges: u64,
}

impl Connection {
    /// An authenticated packet arrived from `from`, not the peer's current address. `newest`:
    /// it is the highest packet number received so far.
    pub(super) fn on_packet_from_new_address(
        &mut self,
        key: &PathKey,
        from: SocketAddr,
        len: usize,
        newest: bool,
    ) {
        if let Some(p) = self.path.probe.as_mut().filter(|p| p.addr == from) {
            p.bytes_in += len;
            return;
        }
        if !newest {
            return;
        }
        self.path.challenges += 1;
        debug!(cid = %self.local_cid, from = %self.remote, to = %from, "path validation started");
        let data = key.challenge(
            self.local_cid,
            (self.handshake.instance, self.handshake.nonce),
            self.path.challenges,
        );
        self.path.probe = Some(Box::new(Probe {
            addr: from,
            data,
            bytes_in: len,
            bytes_out: 0,
            sent_at: None,
            tries: 0,
        }));
    }

    /// The peer challenges the path a packet came on: echo it there.
    pub(super) fn on_path_challenge(&mut self, from: SocketAddr, data: [u8; PATH_DATA_LEN]) {
        self.path.response = Some(Box::new((from, data)));
    }

    /// A PATH_RESPONSE arrived: if it echoes our challenge, the probed address is the peer's.
    pub(super) fn on_path_response(&mut self, data: [u8; PATH_DATA_LEN]) {
        if let Some(p) = self.path.probe.take_if(|p| p.data == data) {
            debug!(cid = %self.local_cid, from = %self.remote, to = %p.addr, "path validated: peer migrated");
            self.remote = p.addr;
            self.stats.live().security.migrations += 1;
        }
    }

    /// When the probe's challenge is to be sent again, if one is waiting for its answer.
    pub(super) fn path_timeout(&self) -> Option<Instant> {
        let p = self.path.probe.as_ref()?;
        p.sent_at.map(|t| t + self.rto())
    }

    /// The probe's challenge went unanswered for an RTO: try again, or give the address up.
    pub(super) fn on_path_timeout(&mut self) {
        if let Some(p) = self.path.probe.as_mut() {
            if p.tries >= MAX_TRIES {
                debug!(cid = %self.local_cid, to = %p.addr, "path validation failed: address given up");
                self.path.probe = None;
            } else {
                p.sent_at = None;
            }
        }
    }

    /// Writes a path packet (a PATH_RESPONSE, else a due PATH_CHALLENGE within the
    /// amplification limit) into `buf`; returns where it goes.
    pub(super) fn write_path_packet(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<SocketAddr> {
        if let Some(&(to, data)) = self.path.response.as_deref() {
            let pn = self.write_header(buf)?;
            let header_len = buf.len();
            wire::encode_path_response(&data, buf);
            self.path.response = None;
            self.flow.next_pn += 1;
            self.seal(pn, header_len, buf);
            return Some(to);
        }
        let tag = self.cipher_suite().map_or(0, |s| s.overhead());
        let p = self.path.probe.as_ref()?;
        // header at most 13 bytes, the frame 9, then the tag
        let size = 13 + 1 + PATH_DATA_LEN + tag;
        if p.sent_at.is_some() || p.bytes_out + size > AMPLIFICATION * p.bytes_in {
            return None;
        }
        let (to, data) = (p.addr, p.data);
        let pn = self.write_header(buf)?;
        let header_len = buf.len();
        wire::encode_path_challenge(&data, buf);
        self.flow.next_pn += 1;
        self.seal(pn, header_len, buf);
        let p = self.path.probe.as_mut()?;
        p.bytes_out += buf.len();
        p.tries += 1;
        p.sent_at = Some(now);
        self.stats.live().security.path_challenges_sent += 1;
        Some(to)
    }
}
