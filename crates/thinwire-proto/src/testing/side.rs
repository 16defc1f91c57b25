//! One side of a [`super::Pair`]: an endpoint, its outbound link and what it produced.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use thinwire_netmodel::{Link, LinkConfig};

use crate::{ConnectionHandle, Endpoint, Event};

/// What a [`Filter`] decides for one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the link model.
    Pass,
    /// Drop it.
    Drop,
}

/// A test's hook on every datagram one endpoint sends: sees the time, the sequence index of the
/// datagram on this path (0, 1, ...) and its bytes (which it may modify).
pub type Filter = Box<dyn FnMut(Instant, u64, &mut Vec<u8>) -> Verdict>;

/// A filter that drops the next datagram and passes every later one.
pub fn drop_next() -> Filter {
    let mut dropped = false;
    Box::new(move |_, _, _| {
        if dropped {
            Verdict::Pass
        } else {
            dropped = true;
            Verdict::Drop
        }
    })
}

/// A filter that drops the first datagram whose bytes contain `pattern` (visible only with
/// the cleartext cipher suite) and passes every other.
pub fn drop_first_containing(pattern: &'static [u8]) -> Filter {
    let mut armed = true;
    Box::new(move |_, _, d| {
        if armed && d.windows(pattern.len()).any(|w| w == pattern) {
            armed = false;
            return Verdict::Drop;
        }
        Verdict::Pass
    })
}

/// One side of a [`super::Pair`].
pub struct Side {
    endpoint: Endpoint,
    addr: SocketAddr,
    /// The link carrying datagrams *from* this side.
    outbound: Link<Vec<u8>>,
    events: VecDeque<(ConnectionHandle, Event)>,
    filter: Option<Filter>,
    sent_log: Vec<(Instant, Vec<u8>)>,
    log_sent: bool,
    elsewhere: Vec<(SocketAddr, Vec<u8>)>,
    sent_count: u64,
}

impl std::fmt::Debug for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Side")
            .field("addr", &self.addr)
            .field("events", &self.events.len())
            .finish()
    }
}

impl Side {
    pub(super) fn new(endpoint: Endpoint, addr: SocketAddr, link: LinkConfig, seed: u64) -> Self {
        Self {
            endpoint,
            addr,
            outbound: Link::new(link, seed),
            events: VecDeque::new(),
            filter: None,
            sent_log: Vec::new(),
            log_sent: false,
            elsewhere: Vec::new(),
            sent_count: 0,
        }
    }

    /// The endpoint under test.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The endpoint under test, to drive it directly (or to replace it).
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// This side's address, as the other side sees it.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Moves this side to `addr` (a NAT rebinding): the other side sees its datagrams come
    /// from there from now on.
    pub fn set_addr(&mut self, addr: SocketAddr) {
        self.addr = addr;
    }

    /// The link carrying datagrams *from* this side.
    pub fn outbound(&self) -> &Link<Vec<u8>> {
        &self.outbound
    }

    /// Events this side's endpoint produced, in order.
    pub fn events(&self) -> &VecDeque<(ConnectionHandle, Event)> {
        &self.events
    }

    /// Events this side's endpoint produced, to take or forget some.
    pub fn events_mut(&mut self) -> &mut VecDeque<(ConnectionHandle, Event)> {
        &mut self.events
    }

    /// Sets (or with `None` removes) the hook on this side's outgoing datagrams.
    pub fn set_filter(&mut self, filter: Option<Filter>) {
        self.filter = filter;
    }

    /// Datagrams sent so far while logging was on, with the time each was sent (before the
    /// filter and the link). See [`Side::set_log_sent`].
    pub fn sent_log(&self) -> &[(Instant, Vec<u8>)] {
        &self.sent_log
    }

    /// Forgets the datagrams logged so far.
    pub fn clear_sent_log(&mut self) {
        self.sent_log.clear();
    }

    /// Whether to log the datagrams this side sends (off by default to save memory in long
    /// runs). See [`Side::sent_log`].
    pub fn set_log_sent(&mut self, on: bool) {
        self.log_sent = on;
    }

    /// Datagrams this side sent to an address other than the other side's (a path probe to an
    /// address the other side never had, say): they reach no one.
    pub fn elsewhere(&self) -> &[(SocketAddr, Vec<u8>)] {
        &self.elsewhere
    }

    /// Removes and returns all messages received so far on `channel`, as payloads.
    pub fn take_messages(&mut self, channel: u8) -> Vec<crate::Message> {
        let mut out = Vec::new();
        self.events.retain(|(_, e)| match e {
            Event::Message(m) if m.channel == channel => {
                out.push(m.clone());
                false
            }
            _ => true,
        });
        out
    }

    /// The first disconnect reason seen, if any.
    pub fn disconnected(&self) -> Option<&crate::DisconnectReason> {
        self.events.iter().find_map(|(_, e)| match e {
            Event::Disconnected { reason } => Some(reason),
            _ => None,
        })
    }

    /// Sends everything the endpoint wants to send at `now` (to `to` over the link, anywhere
    /// else into `elsewhere`) and collects its events.
    pub(super) fn flush(&mut self, to: SocketAddr, now: Instant, buf: &mut Vec<u8>) {
        while let Some(t) = self.endpoint.poll_transmit(now, buf) {
            let mut bytes = buf[..t.size].to_vec();
            if t.destination != to {
                self.elsewhere.push((t.destination, bytes));
                continue;
            }
            let idx = self.sent_count;
            self.sent_count += 1;
            if self.log_sent {
                self.sent_log.push((now, bytes.clone()));
            }
            if let Some(f) = self.filter.as_mut() {
                if f(now, idx, &mut bytes) == Verdict::Drop {
                    continue;
                }
            }
            // 28 bytes of IPv4 + UDP headers count toward bandwidth and queues
            let size = bytes.len() + 28;
            self.outbound.send(now, bytes, size);
        }
        while let Some(e) = self.endpoint.poll_event() {
            self.events.push_back(e);
        }
    }

    /// Hands every datagram due at `now` on this side's link to `to`.
    pub(super) fn deliver(&mut self, now: Instant, to: &mut Endpoint) {
        while let Some(d) = self.outbound.poll_deliver(now) {
            to.handle_datagram(now, self.addr, &d);
        }
    }

    /// Runs the endpoint's timer if it is due at `now`.
    pub(super) fn handle_timeout(&mut self, now: Instant) {
        if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
            self.endpoint.handle_timeout(now);
        }
    }
}
