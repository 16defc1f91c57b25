//! The connection's timers: one table, `poll_timeout` is its earliest entry.

use std::time::Instant;

/// Every timer a connection has. See `docs/PROTOCOL.md` section "Timers" for what each does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Loss detection: the thin-stream reordering window or the standard time threshold ends,
    /// or the retransmission timeout expires.
    LossDetection = 0,
    /// A delayed ACK falls due.
    Ack = 1,
    /// Nothing ack-eliciting was sent for the keepalive interval: send a PING.
    Keepalive = 2,
    /// Nothing was received for the idle timeout: the connection is dead.
    Idle = 3,
    /// Retransmit the Hello or Connect.
    Handshake = 4,
    /// The handshake is abandoned.
    HandshakeTimeout = 5,
    /// A graceful close waited long enough for outstanding data: send CLOSE anyway.
    Close = 6,
    /// The draining period after CLOSE ends; the connection is forgotten.
    Drain = 7,
    /// A stage of a deadline message ends: count what arrived, send the next stage's shards.
    Deadline = 8,
}

const COUNT: usize = 9;

/// Deadlines of all timers.
#[derive(Debug, Default, Clone)]
pub(crate) struct TimerTable {
    at: [Option<Instant>; COUNT],
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Instant>) {
        self.at[timer as usize] = at;
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    /// Timers due at `now`, in table order; they are cleared at once (the iterator does not
    /// borrow the table, and allocates nothing).
    pub(crate) fn take_expired(&mut self, now: Instant) -> impl Iterator<Item = Timer> {
        const ALL: [Timer; COUNT] = [
            Timer::LossDetection,
            Timer::Ack,
            Timer::Keepalive,
            Timer::Idle,
            Timer::Handshake,
            Timer::HandshakeTimeout,
            Timer::Close,
            Timer::Drain,
            Timer::Deadline,
        ];
        let mut due = [false; COUNT];
        for t in ALL {
            if self.at[t as usize].is_some_and(|at| at <= now) {
                self.at[t as usize] = None;
                due[t as usize] = true;
            }
        }
        ALL.into_iter().filter(move |t| due[*t as usize])
    }
}
