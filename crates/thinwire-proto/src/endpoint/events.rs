//! The application's events, in the order they happened across connections.
//!
//! A connection keeps its own events until the application takes them; the endpoint keeps
//! only their order: one handle per event. So an event is moved twice (into its connection's
//! queue when it happens, out of it when [`Endpoint::poll_event`] returns it) rather than
//! also into a queue of the endpoint's, which for a busy receiver was a large share of the
//! work per message (an event is over 100 bytes). A connection that is forgotten (closed)
//! while holding events leaves them here, with its handle.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use super::{ConnectionHandle, Endpoint};
use crate::connection::Connection;
use crate::event::Event;

/// The order of the events waiting for the application, and those of forgotten connections.
#[derive(Debug, Default)]
pub(super) struct EventOrder {
    /// One entry per waiting event, oldest first: whose it is.
    order: VecDeque<ConnectionHandle>,
    /// The waiting events of connections already forgotten, per connection, in order (a
    /// map: however many connections were forgotten with however many events, each is
    /// found at once).
    orphans: HashMap<ConnectionHandle, VecDeque<Event>>,
}

impl Endpoint {
    /// The next application event.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        let h = self.events.order.pop_front()?;
        let event = match self.conns.get_mut(h) {
            Some(conn) => conn.pop_event(),
            None => match self.events.orphans.entry(h) {
                Entry::Occupied(mut left) => {
                    let e = left.get_mut().pop_front();
                    if left.get().is_empty() {
                        left.remove();
                    }
                    e
                }
                Entry::Vacant(_) => None,
            },
        };
        debug_assert!(event.is_some(), "an event is kept per entry");
        event.map(|e| (h, e))
    }

    /// Events waiting for [`poll_event`](Self::poll_event).
    pub fn pending_events(&self) -> usize {
        self.events.order.len()
    }

    /// Forgotten connections whose events are still kept (tests: none once all are taken).
    #[cfg(test)]
    pub(crate) fn orphaned_connections(&self) -> usize {
        self.events.orphans.len()
    }

    /// The room connection `h`'s event queue holds (tests).
    #[cfg(test)]
    pub(crate) fn event_room(&self, h: ConnectionHandle) -> Option<usize> {
        self.conns.get(h).map(|c| c.event_room())
    }
}

impl EventOrder {
    /// Queues connection `h`'s events produced since the last call (its handle once each).
    pub(super) fn announce(&mut self, h: ConnectionHandle, conn: &mut Connection) {
        let (new, newest) = conn.announce_events();
        if let Some(Event::Disconnected { reason }) = newest {
            tracing::debug!(conn = %h, by = reason.closed_by(), %reason, "connection closed");
        }
        self.order.extend(std::iter::repeat_n(h, new));
    }

    /// Keeps the events connection `h` still holds as it is forgotten.
    pub(super) fn keep_orphans(&mut self, h: ConnectionHandle, conn: &mut Connection) {
        let events = conn.take_events();
        if !events.is_empty() {
            self.orphans.insert(h, events);
        }
    }
}
