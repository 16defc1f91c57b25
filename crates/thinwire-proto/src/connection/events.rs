//! The events the application has not taken yet: a connection keeps its own, and the
//! endpoint keeps their order across connections (`endpoint/events.rs`).

use std::collections::VecDeque;

use super::Connection;
use crate::event::Event;

/// Most events' room a connection keeps once a larger burst's events were all taken, about
/// 115 KB: a busy receiver's bursts (a turn's datagrams, hundreds of messages) reuse their
/// room instead of growing it again each time, which would copy every event once more; a
/// larger burst's room (a reliable channel's gap filled at once can release thousands) is
/// given back at the connection's next events (or when it rests, `trim`), rather than held
/// by every connection that once had one.
const EVENTS_KEPT: usize = 1024;

impl Connection {
    /// The events produced since the last call, oldest first; they stay here until
    /// [`pop_event`](Self::pop_event) takes them. If the application took every earlier
    /// event, room beyond [`EVENTS_KEPT`] is given back first (here, once per call, rather
    /// than in `pop_event`, once per event, where the check cost 50 instructions a message).
    #[inline]
    pub(crate) fn announce_events(&mut self) -> impl Iterator<Item = &Event> {
        let from = self.announced as usize;
        if from == 0 && self.events.capacity() > EVENTS_KEPT && self.events.len() <= EVENTS_KEPT {
            // every event of an earlier, larger burst was taken
            self.release_events();
        }
        // u32: the events a connection holds are those the application has not taken, each
        // over 100 bytes; four billion of them would be 400 GB
        self.announced = u32::try_from(self.events.len()).unwrap_or(u32::MAX);
        self.events.range(from..)
    }

    /// Takes the oldest event, which was announced.
    #[inline]
    pub(crate) fn pop_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        debug_assert!(self.announced > 0, "only announced events are taken");
        self.announced = self.announced.saturating_sub(1);
        Some(e)
    }

    /// Gives back the room beyond [`EVENTS_KEPT`] (out of line: rare).
    #[cold]
    #[inline(never)]
    fn release_events(&mut self) {
        self.events.shrink_to(EVENTS_KEPT);
    }

    /// The room of the event queue, in events (tests).
    #[cfg(test)]
    pub(crate) fn event_room(&self) -> usize {
        self.events.capacity()
    }

    /// Takes every event held, as the connection is forgotten.
    pub(crate) fn take_events(&mut self) -> VecDeque<Event> {
        self.announced = 0;
        std::mem::take(&mut self.events)
    }
}
