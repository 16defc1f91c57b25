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

/// Derives an independent seed for a component (`tag`) and index from a run
/// seed (SplitMix64 finaliser over the combination).
pub fn derive_seed(seed: u64, tag: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(tag.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(index.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
