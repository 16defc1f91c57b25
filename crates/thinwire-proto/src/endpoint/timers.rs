//! The endpoint's timers: when `handle_timeout` next has work (the connections' timers, worked
//! out for those the calls since changed, a queued Connect's read, the memory sweep) and
//! handling what expired.

use std::time::Instant;

use super::Endpoint;

impl Endpoint {
    /// Processes expired timers, then reads up to `handshakes_per_turn` waiting Connects
    /// ([`handle_handshakes`](Self::handle_handshakes)).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clock = now;
        while let Some(h) = self.conns.pop_expired(now) {
            if let Some(c) = self.conns.get_mut(h) {
                c.handle_timeout(now);
            }
            self.touched(h);
        }
        if self.memory.sweep_at().is_some_and(|t| t <= now) {
            self.sweep_memory(now);
        }
        let per_turn = self.queue.per_turn;
        self.handle_handshakes(now, per_turn);
    }

    /// The earliest instant at which `handle_timeout` has work (a timer, or a queued Connect).
    ///
    /// The connections' timers are worked out here (and in `handle_timeout`) for every
    /// connection the calls since the last one changed, rather than after each call: a
    /// runtime that asks after its send system call keeps that work off the path from a
    /// datagram's arrival to the answer's departure.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.conns.settle_timers();
        let timer = self.conns.next_timer();
        timer.into_iter().chain(self.own_work()).min()
    }

    /// When the endpoint's own entries have work: a queued Connect's read, the memory sweep.
    fn own_work(&self) -> impl Iterator<Item = Instant> {
        let reads = (self.queue.per_turn > 0)
            .then(|| self.queue.next_read(self.epoch, self.clock))
            .flatten();
        reads.into_iter().chain(self.memory.sweep_at())
    }

    /// Whether `handle_timeout` may have work at `now`, without working out the timers of the
    /// connections changed since the last `poll_timeout` (or since `handle_timeout` worked
    /// them out): a timer armed then that expired (a connection changed since counts with its
    /// old deadline; one whose timer fired since counts with none), a queued Connect's read,
    /// or the memory sweep. Cheap where `poll_timeout` works the timers out. A runtime that
    /// sends what the application queued before it handles timers asks this first, right
    /// after a `poll_timeout`: a timer that expired in between then goes first, as
    /// `handle_timeout` then `poll_transmit` would send it.
    pub fn timer_expired(&self, now: Instant) -> bool {
        self.conns.armed_expired(now) || self.own_work().any(|t| t <= now)
    }
}
