//! [`RunOutput`]: what one simulation gives back.

use thinwire_netmodel::LinkStats;

use crate::metrics::WireCounters;
use crate::protocol::{add_counter, Counters, ThinwireCounters};
use crate::workload::Direction;

/// What happened to one application message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageOutcome {
    /// Send time, µs since the start.
    pub sent_us: u64,
    /// Delivery time, µs since the start.
    pub delivered_us: Option<u64>,
    /// When the message's last byte first went on the wire, µs since the
    /// start, for endpoints that report it
    /// ([`crate::protocol::SimEndpoint::poll_first_sent`]): the send time a
    /// packet trace sees, after any wait in the sender's buffer.
    pub wire_us: Option<u64>,
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

/// Packets that entered the network and packets dropped anywhere in it (any
/// link, any cause), by direction (`[up, down]`) and by kind: the game's
/// packets (counted once, when an endpoint sends them) and the cross
/// traffic's (counted when they reach the bottleneck; drops on a traffic
/// node's own access link happen before that and are not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetworkCounters {
    /// Game packets sent into the network.
    pub game_sent: [u64; 2],
    /// Game packets dropped on any link.
    pub game_dropped: [u64; 2],
    /// Cross-traffic packets offered to the bottleneck.
    pub cross_sent: [u64; 2],
    /// Cross-traffic packets dropped there.
    pub cross_dropped: [u64; 2],
}

impl NetworkCounters {
    /// Adds these counts to `out` as `net_{game,cross}_{sent,dropped}_{up,down}`
    /// and the totals `net_packets` and `net_dropped` (every packet, game and
    /// cross traffic, both directions), for paper figures such as the
    /// network's loss rate (`counter = "net_dropped", per = "net_packets"`).
    pub fn add_to(&self, out: &mut Counters) {
        for (d, dir) in ["up", "down"].iter().enumerate() {
            add_counter(
                out,
                &format!("net_game_sent_{dir}"),
                self.game_sent[d] as f64,
            );
            add_counter(
                out,
                &format!("net_game_dropped_{dir}"),
                self.game_dropped[d] as f64,
            );
            add_counter(
                out,
                &format!("net_cross_sent_{dir}"),
                self.cross_sent[d] as f64,
            );
            add_counter(
                out,
                &format!("net_cross_dropped_{dir}"),
                self.cross_dropped[d] as f64,
            );
        }
        let sum = |a: [u64; 2], b: [u64; 2]| (a[0] + a[1] + b[0] + b[1]) as f64;
        add_counter(out, "net_packets", sum(self.game_sent, self.cross_sent));
        add_counter(
            out,
            "net_dropped",
            sum(self.game_dropped, self.cross_dropped),
        );
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
    /// Packets into the network and drops, game and cross traffic.
    pub network: NetworkCounters,
}
