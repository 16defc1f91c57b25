//! # thinwire-netmodel
//!
//! Deterministic, sans-IO network model, shared by thinwire's protocol tests, the runtime's fault
//! injection, the lab's simulator and the real-kernel emulator.
//!
//! A [`Link`] models one direction of a network path: a bandwidth-limited
//! queue (byte- or time-limited), random or bursty loss, propagation delay with
//! jitter (with or without reordering), duplication and bit corruption. Time is
//! passed in as [`std::time::Instant`] values, and all randomness comes from a
//! seeded ChaCha8 generator, so the same configuration, seed and input always
//! give the same output.
//!
//! The order of effects applied to every packet handed to [`Link::send`] is:
//!
//! 1. bandwidth queue: the packet waits for the packets ahead of it and is then
//!    serialized at `bandwidth_bps`; the [`QueueLimit`] may drop it (drop-tail);
//! 2. loss model ([`LossModel`]) — or the [`Trace`] when one is configured;
//! 3. propagation delay plus jitter (or the trace's delay), never negative and
//!    monotonic in send order unless `reorder` is set;
//! 4. duplication (the copy gets its own jitter sample);
//! 5. corruption: one random bit of the packet is flipped (see [`Corruptible`]).
//!
//! ```
//! use std::time::{Duration, Instant};
//! use thinwire_netmodel::{Link, LinkConfig, LossModel};
//!
//! let cfg = LinkConfig::default()
//!     .with_delay(Duration::from_millis(50))
//!     .with_loss(LossModel::Bernoulli { p: 0.0 });
//! let mut link: Link<Vec<u8>> = Link::new(cfg, 7);
//! let t0 = Instant::now();
//! link.send(t0, vec![1, 2, 3], 3);
//! assert_eq!(link.next_delivery(), Some(t0 + Duration::from_millis(50)));
//! assert_eq!(link.poll_deliver(t0 + Duration::from_millis(50)), Some(vec![1, 2, 3]));
//! ```

#![forbid(unsafe_code)]

pub mod clock;
mod config;
mod error;
mod link;
mod loss;
mod queue;
mod trace;

#[cfg(test)]
mod tests;

pub use config::{JitterDistribution, LinkConfig, QueueLimit};
pub use error::ConfigError;
pub use link::{Corruptible, Link, LinkStats, SendOutcome};
pub use loss::{GilbertElliott, LossModel};
pub use trace::{Trace, TraceEntry, TraceError, TraceLoadError};
