//! The events the application has not taken yet: a connection keeps its own, and the
//! endpoint keeps their order across connections (`endpoint/events.rs`).

use std::collections::VecDeque;

use super::Connection;
use crate::event::Event;

/// Most events' room a connection gives back to once a larger burst's events were all taken,
/// about 115 KB: a busy receiver's bursts (a turn's datagrams, hundreds of messages) reuse
/// their room instead of growing it again each time, which would copy every event once more.
/// A larger burst's room (a reliable channel's gap filled at once can release thousands) is
/// kept while such bursts follow one another, and given back at the first announcement after
/// a round of events that stayed within this (or when the connection rests, `trim`), rather
/// than held by every connection that once had one.
pub(super) const EVENTS_KEPT: usize = 1024;

impl Connection {
    /// The events produced since the last call: how many, and the newest of them (a
    /// connection's `Disconnected` is its last event, so the newest tells whether it is among
    /// them). They stay here until [`pop_event`](Self::pop_event) takes them. When the
    /// application has taken every earlier event, room beyond [`EVENTS_KEPT`] is given back
    /// unless the round just taken went over it too (here, once per call, rather than in
    /// `pop_event`, once per event, where the check cost 50 instructions a message).
    #[inline]
    pub(crate) fn announce_events(&mut self) -> (usize, Option<&Event>) {
        let (from, len) = (self.announced as usize, self.events.len());
        if from == len {
            // most calls (every send and packet asks) find none
            return (0, None);
        }
        if from == 0 && self.events.capacity() > EVENTS_KEPT {
            // every event of an earlier round was taken
            self.settle_event_room();
        }
        self.events_burst |= len > EVENTS_KEPT;
        // a connection holds at most the events the application has not taken, each over 100
        // bytes: far fewer than u32::MAX
        self.announced = len as u32;
        debug_assert!(
            !self
                .events
                .range(from..len - 1)
                .any(|e| matches!(e, Event::Disconnected { .. })),
            "Disconnected is a connection's last event"
        );
        (len - from, self.events.back())
    }

    /// Takes the oldest event, which was announced.
    #[inline]
    pub(crate) fn pop_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        debug_assert!(self.announced > 0, "only announced events are taken");
        self.announced -= 1;
        Some(e)
    }

    /// A new round of events begins with a large room: kept if the round before went over
    /// [`EVENTS_KEPT`] (bursts that follow one another reuse it), else given back down to it
    /// (out of line: rare).
    #[cold]
    #[inline(never)]
    fn settle_event_room(&mut self) {
        if !std::mem::take(&mut self.events_burst) && self.events.len() <= EVENTS_KEPT {
            self.events.shrink_to(EVENTS_KEPT);
        }
    }

    /// The room of the event queue, in events (tests).
    #[cfg(test)]
    pub(crate) fn event_room(&self) -> usize {
        self.events.capacity()
    }

    /// Takes every event held, as the connection is forgotten.
    pub(crate) fn take_events(&mut self) -> VecDeque<Event> {
        std::mem::take(&mut self.events)
    }
}
