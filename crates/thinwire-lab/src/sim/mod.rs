//! Deterministic discrete-event simulator.
//!
//! Events are kept in a priority queue keyed by `(time, sequence number)` on
//! simulated [`Instant`](std::time::Instant)s (`base + offset`, with `base` captured once per
//! run); every output is expressed as offsets from `base`, so results never
//! depend on the wall clock. Topology: one server, `N` clients, each client
//! with an access link pair (up/down, [`thinwire_netmodel::Link`]) and
//! optionally a shared bottleneck link pair (a dumbbell) loaded by cross
//! traffic. Each protocol runs in its own simulation with identical
//! application traffic and link seeds.

mod cross;
mod engine;

pub use cross::{calibrate_rate, cross_loss, Background, CrossGen, CrossShape, CrossTraffic};
pub use engine::{run, LinkSummary, MessageOutcome, RunOutput, SimSetup};

#[cfg(test)]
mod tests;
