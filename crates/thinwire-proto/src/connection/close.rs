//! Ending a connection: the graceful close, draining, resets, and the one place the
//! application is told why it ended.

use std::time::Instant;

use super::state::{CloseFrame, Drain};
use super::{Connection, State};
use crate::crypto::{tokens_equal, RESET_TOKEN_LEN};
use crate::error::DisconnectReason;
use crate::event::Event;

impl Connection {
    /// Starts a graceful close: outstanding reliable data is delivered first (up to the close
    /// timeout), then CLOSE is sent.
    pub(crate) fn close(&mut self, now: Instant, code: u64, reason: Vec<u8>) {
        match self.state {
            State::Established => {
                self.state = State::Closing(Box::new(CloseFrame { code, reason }));
                self.close.started = self.timers.stamp(now);
                self.maybe_finish_close(now);
            }
            State::AwaitingChallenge | State::AwaitingAccept => {
                // nothing to tell a server that keeps no state yet
                self.finish(DisconnectReason::LocallyClosed);
            }
            _ => {}
        }
        self.update_timers();
    }

    pub(super) fn has_reliable_data(&self) -> bool {
        self.deadline.as_ref().is_some_and(|d| d.tx.len() > 0)
            || !self.active.get().queues.retransmit.is_empty()
            || self
                .send
                .iter()
                .any(|c| c.kind.is_reliable() && !c.msgs.is_empty())
    }

    /// A closing connection whose reliable data is all delivered sends its CLOSE.
    pub(super) fn maybe_finish_close(&mut self, now: Instant) {
        if matches!(self.state, State::Closing { .. }) && !self.has_reliable_data() {
            self.stop_closing(now);
        }
    }

    /// A closing connection stops waiting (data delivered, or the close timeout): it sends its
    /// CLOSE and drains.
    pub(super) fn stop_closing(&mut self, now: Instant) {
        if let State::Closing(c) = &self.state {
            let (code, reason) = (c.code, c.reason.clone());
            self.enter_draining(now, Some(DisconnectReason::LocallyClosed), code, reason);
        }
    }

    /// The draining period is over (or the peer's CLOSE answered ours): forget the connection,
    /// and tell the application why it ended if that is still to be said.
    pub(super) fn drained(&mut self) {
        if let State::Draining(d) = std::mem::replace(&mut self.state, State::Closed) {
            if let Some(r) = d.report {
                self.events.push_back(Event::Disconnected { reason: r });
            }
        }
    }

    pub(super) fn enter_draining(
        &mut self,
        now: Instant,
        report: Option<DisconnectReason>,
        code: u64,
        reason: Vec<u8>,
    ) {
        let until = now + self.rto() * 3;
        self.state = State::Draining(Box::new(Drain {
            report,
            close: CloseFrame { code, reason },
            until,
        }));
        self.due.close = true;
        if let Some(a) = self.active.made() {
            a.queues.pending.clear();
            a.queues.retransmit.clear();
        }
    }

    /// Ends the connection at once and tells the application why.
    pub(super) fn finish(&mut self, reason: DisconnectReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.events.push_back(Event::Disconnected { reason });
        }
    }

    /// A Reset names this connection: the peer's endpoint no longer knows it, if the token is
    /// the one the server gave us. Returns whether it was believed.
    pub(crate) fn on_reset(&mut self, token: &[u8; RESET_TOKEN_LEN]) -> bool {
        let Some(expected) = &self.peer_reset_token else {
            return false;
        };
        if !tokens_equal(expected, token) {
            return false;
        }
        match self.state {
            // the application still hears why it ended, if that was not said yet
            State::Draining { .. } => self.drained(),
            State::Closed => {}
            _ => self.finish(DisconnectReason::PeerReset),
        }
        true
    }
}
