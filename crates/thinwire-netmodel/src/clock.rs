//! The event loop of a simulated-time harness: whatever holds endpoints and [`Link`]s
//! (thinwire-proto's `Pair`, the gateway's `Harness`) says how to flush its endpoints, when its
//! next event is and how to process what is due; these functions advance its time.
//!
//! [`Link`]: crate::Link

use std::time::{Duration, Instant};

/// A harness whose time only moves when told.
pub trait SimClock {
    /// The current simulated time (moved forward by the functions below).
    fn time_mut(&mut self) -> &mut Instant;
    /// Drains every endpoint's transmits and events.
    fn flush(&mut self);
    /// The earliest pending event: a datagram arriving or a timer expiring.
    fn next_event(&mut self) -> Option<Instant>;
    /// Processes everything due at the current time.
    fn process_due(&mut self);
}

fn advance_to<S: SimClock>(s: &mut S, t: Instant) {
    let time = s.time_mut();
    *time = (*time).max(t);
    s.process_due();
}

/// Runs every event up to `until`, then sets the time to `until`.
pub fn run_until<S: SimClock>(s: &mut S, until: Instant) {
    loop {
        s.flush();
        match s.next_event() {
            Some(t) if t <= until => advance_to(s, t),
            _ => break,
        }
    }
    advance_to(s, until);
}

/// Runs for `d` of simulated time.
pub fn run_for<S: SimClock>(s: &mut S, d: Duration) {
    let until = *s.time_mut() + d;
    run_until(s, until);
}

/// Runs until `done` holds or `limit` of simulated time passes; returns whether it held.
pub fn run_while<S: SimClock>(
    s: &mut S,
    limit: Duration,
    mut done: impl FnMut(&S) -> bool,
) -> bool {
    let until = *s.time_mut() + limit;
    while !done(s) {
        s.flush();
        match s.next_event() {
            Some(t) if t <= until => advance_to(s, t),
            _ => return done(s),
        }
    }
    true
}
