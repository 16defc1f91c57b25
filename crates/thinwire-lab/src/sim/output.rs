//! [`RunOutput`]: what one simulation gives back.

use thinwire_netmodel::LinkStats;

use crate::metrics::WireCounters;
use crate::protocol::{Counters, ThinwireCounters};
use crate::workload::Direction;

/// What happened to one application message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageOutcome {
    /// Send time, µs since the start.
    pub sent_us: u64,
    /// Delivery time, µs since the start.
    pub delivered_us: Option<u64>,
    /// Payload size.
    pub size: u32,
    /// Class index.
    pub class: u16,
    /// Deadline in µs.
    pub deadline_us: Option<u64>,
    /// Client whose flow carried it.
    pub client: u32,
    /// Direction.
    pub dir: Direction,
}

/// Counters of a group of links.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkSummary {
    /// Summed counters.
    pub stats: LinkStats,
}

impl LinkSummary {
    /// Fraction of packets dropped (loss model plus queue).
    pub fn drop_rate(&self) -> f64 {
        if self.stats.sent == 0 {
            0.0
        } else {
            (self.stats.lost + self.stats.dropped_queue) as f64 / self.stats.sent as f64
        }
    }
}

/// Result of one simulation.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Protocol name.
    pub protocol: String,
    /// Whether the protocol is a model.
    pub model: bool,
    /// Class names by index.
    pub classes: Vec<String>,
    /// Every application message.
    pub messages: Vec<MessageOutcome>,
    /// Wire counters of the protocol's packets (cross traffic excluded).
    pub wire: WireCounters,
    /// Access links.
    pub access: LinkSummary,
    /// Bottleneck links.
    pub bottleneck: LinkSummary,
    /// Events processed.
    pub events: u64,
    /// thinwire's connection counters, by side, summed over every endpoint
    /// (thinwire configurations only).
    pub thinwire: Option<ThinwireCounters>,
    /// Named protocol counters summed over every endpoint (see
    /// [`crate::protocol::SimEndpoint::add_counters`]).
    pub counters: Counters,
}
