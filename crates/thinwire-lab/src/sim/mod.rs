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
mod output;
mod setup;

pub use cross::{
    calibrate_rate, cross_loss, Background, CrossGen, CrossShape, CrossTraffic, Expoo,
};
pub use output::{LinkSummary, MessageOutcome, NetworkCounters, RunOutput};
pub use setup::SimSetup;

use crate::protocol::Protocol;
use crate::workload::WorkloadSpec;
use engine::Sim;

/// Runs one protocol through the scenario's network and workload.
///
/// `progress` is called now and then with the fraction of simulated time done.
pub fn run<P: Protocol>(
    proto: &P,
    setup: &SimSetup,
    workload: &[WorkloadSpec],
    progress: &mut dyn FnMut(f64),
) -> RunOutput {
    let mut sim = Sim::new(proto, setup, workload);
    while let Some(done) = sim.step() {
        if sim.events() % 8192 == 0 {
            progress(done);
        }
    }
    progress(1.0);
    sim.finish()
}

#[cfg(test)]
mod tests;
