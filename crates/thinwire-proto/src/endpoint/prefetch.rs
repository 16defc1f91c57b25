//! Prefetch hints ([`crate::prefetch`]): the connections of the datagrams coming in, and of
//! those going out.

use super::Endpoint;
use crate::prefetch::Hint;
use crate::wire::{self, ShortHeader};
use crate::{ConnectionHandle, Prefetcher, PREFETCH_STAGES};

/// The hints of a batch of datagrams as a runtime hands them to
/// [`Endpoint::handle_datagram`] one by one: before each, the connection of the datagram
/// three ahead is hinted at stage 0, two ahead at stage 1 and the next at stage 2, and each
/// datagram's connection is looked up once
/// ([`Endpoint::datagram_connection`]), as it comes within three of the one handled.
///
/// ```
/// # use std::time::Instant;
/// # use thinwire_proto::{Endpoint, EndpointConfig, Lookahead};
/// # let mut endpoint = Endpoint::new(EndpointConfig::new([1; 32]), None, Instant::now()).unwrap();
/// # let (now, from) = (Instant::now(), "127.0.0.1:4433".parse().unwrap());
/// let batch: Vec<Vec<u8>> = vec![vec![0x40; 30], vec![0x40; 30]];
/// let mut ahead = Lookahead::new(&endpoint, batch.iter().skip(1).map(|d| &d[..]));
/// for d in &batch {
///     ahead.hint(&endpoint);
///     endpoint.handle_datagram(now, from, d);
/// }
/// ```
#[derive(Debug)]
pub struct Lookahead<I> {
    /// The batch's datagrams not yet looked up.
    lead: I,
    /// The connections of the datagrams after the one handled next, nearest first (the first
    /// slot is shifted out before it is read).
    ahead: [Option<ConnectionHandle>; PREFETCH_STAGES as usize],
}

impl<'a, I: Iterator<Item = &'a [u8]>> Lookahead<I> {
    /// Before a batch; `lead` yields its datagrams after the first.
    pub fn new(endpoint: &Endpoint, lead: I) -> Self {
        let mut l = Lookahead {
            lead,
            ahead: [None; PREFETCH_STAGES as usize],
        };
        for _ in 1..PREFETCH_STAGES {
            l.shift(endpoint);
        }
        l
    }

    /// Before the next datagram of the batch is handled: hints the connections after it
    /// (nothing while the endpoint makes no hints, though the lookups go on).
    pub fn hint(&mut self, endpoint: &Endpoint) {
        self.shift(endpoint);
        let Some(hint) = endpoint.hint() else {
            return;
        };
        // three ahead at stage 0, two ahead at 1, the next at 2
        for (stage, conn) in (0..).zip(self.ahead.iter().rev()) {
            if let Some(conn) = *conn {
                endpoint.prefetch_at(hint, conn, stage, true);
            }
        }
    }

    /// Shifts the window by one datagram, looking up the connection of the one it takes in.
    fn shift(&mut self, endpoint: &Endpoint) {
        self.ahead.rotate_left(1);
        let next = self.lead.next();
        self.ahead[self.ahead.len() - 1] = next.and_then(|d| endpoint.datagram_connection(d));
    }
}

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
    /// changes either way. Each call finds the datagram's connection again: a runtime going
    /// through a batch uses [`Lookahead`], which finds it once.
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
