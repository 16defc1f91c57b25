//! Prefetch hints ([`crate::prefetch`]): the connections of the datagrams coming in, and of
//! those going out.

use super::Endpoint;
use crate::prefetch::Hint;
use crate::wire::{self, ShortHeader};
use crate::{ConnectionHandle, Prefetcher};

impl Endpoint {
    /// Gives the function prefetch hints go to (`None`: no hints, the default), and the
    /// number of connections from which on the endpoint makes them
    /// ([`PREFETCH_FROM_CONNECTIONS`](crate::PREFETCH_FROM_CONNECTIONS) is what `thinwire`'s
    /// runtime uses; with fewer, the caches hold more of the connections and hints gain
    /// little or cost).
    /// Hints only change timing: an endpoint behaves the same with or without them. A runtime
    /// gives a prefetcher that issues the CPU's prefetch instruction (`thinwire`'s `Host` and
    /// async endpoint do, on x86-64).
    pub fn set_prefetcher(&mut self, prefetcher: Option<Prefetcher>, from_connections: usize) {
        self.prefetcher = prefetcher.map(|p| (p, from_connections));
    }

    /// Where hints go now: nowhere without a prefetcher, or below its number of connections.
    fn hint(&self) -> Option<Hint> {
        self.prefetcher
            .filter(|&(_, from)| self.conns.len() >= from)
            .map(|(p, _)| Hint(p))
    }

    /// Whether hints are being made: a runtime that looks ahead in its batch of datagrams
    /// only to call [`prefetch_datagram`](Self::prefetch_datagram) can skip that when not.
    pub fn prefetching(&self) -> bool {
        self.hint().is_some()
    }

    /// Hints the memory that [`handle_datagram`](Self::handle_datagram) will read for
    /// `datagram` at `stage` (below [`PREFETCH_STAGES`](crate::PREFETCH_STAGES)): stage 0
    /// for the datagram three ahead of the one handled next, 1 for two ahead, 2 for the
    /// next. Nothing for a datagram of no connection here (a handshake, a stray); nothing
    /// changes either way. Each call finds the datagram's connection again: a runtime that
    /// hints every datagram at every stage finds it once
    /// ([`datagram_connection`](Self::datagram_connection)) and hints that
    /// ([`prefetch_connection`](Self::prefetch_connection), `receiving`).
    pub fn prefetch_datagram(&self, datagram: &[u8], stage: u8) {
        if !self.prefetching() {
            return;
        }
        if let Some(conn) = self.datagram_connection(datagram) {
            self.prefetch_connection(conn, stage, true);
        }
    }

    /// The connection of this endpoint that a short-header `datagram` names by its id, if any
    /// (whether the packet is authentic is not known until it is handled).
    pub fn datagram_connection(&self, datagram: &[u8]) -> Option<ConnectionHandle> {
        if wire::is_long_header(datagram) {
            return None;
        }
        let (hdr, _) = ShortHeader::decode(datagram, self.config.cid_len).ok()?;
        self.by_cid.get(&hdr.dst_cid)
    }

    /// Hints connection `conn` at `stage`, as [`prefetch_datagram`](Self::prefetch_datagram)
    /// does, for a datagram coming in on it (`receiving`: the opening key) or for a call that
    /// sends on it (the sealing key): an application that sends to many connections in turn
    /// (a server's tick) hints the one three ahead at stage 0, and so on. A handle that is
    /// gone is hinted harmlessly or not at all.
    pub fn prefetch_connection(&self, conn: ConnectionHandle, stage: u8, receiving: bool) {
        if let Some(hint) = self.hint() {
            self.prefetch_at(hint, conn, stage, receiving);
        }
    }

    fn prefetch_at(&self, hint: Hint, h: ConnectionHandle, stage: u8, receiving: bool) {
        if stage == 0 {
            self.conns.prefetch(h, hint);
        } else if let Some(c) = self.conns.get(h) {
            c.prefetch(hint, stage, receiving);
        }
    }

    /// Hints the connections queued to send after the one `poll_transmit` turns to next.
    pub(super) fn prefetch_dirty(&self) {
        let Some(hint) = self.hint() else {
            return;
        };
        for (k, stage) in [(3, 0), (2, 1), (1, 2)] {
            if let Some(h) = self.conns.dirty_after_first(k) {
                self.prefetch_at(hint, h, stage, false);
            }
        }
    }
}
