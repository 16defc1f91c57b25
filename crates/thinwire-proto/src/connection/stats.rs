//! Per-connection statistics: [`ConnectionStats`], made of named parts.
//!
//! [`PathStats`] holds gauges: what the connection estimates now (RTT, timeout, loss rates,
//! congestion window). They describe one path at one instant, so they do not add up and the
//! part has no `AddAssign`. Every other part holds counters (events since the connection
//! began): each is `Default + AddAssign`, and all of them together are a
//! [`ConnectionCounters`], which sums connections, endpoints and runs with `+=`.
//!
//! The counter parts are declared once, in the `counters!` invocation below: that one list
//! makes each part's struct, its `AddAssign`, its [`NAMES`](UdpStats::NAMES) and its
//! [`for_each`](UdpStats::for_each) visitor, and [`ConnectionCounters`] with its own names
//! (`part.counter`, e.g. `recovery.packets_lost`). Nothing else types a counter's name: a new
//! counter is one line there plus the line that increments it. With the `serde` feature every
//! part derives `Serialize` and `Deserialize`.

use std::ops::AddAssign;
use std::time::Duration;

use crate::wire::ChannelKind;

/// Declares the counter parts, [`ConnectionCounters`] and [`ConnectionStats`] from one list of
/// `field: Type { counters }`, so that the structs, the sums and the names cannot drift apart.
macro_rules! counters {
    ($(
        $(#[doc = $part_doc:literal])*
        $part:ident: $Part:ident {
            $($(#[doc = $doc:literal])* $field:ident,)*
        }
    )*) => {
        $(
            $(#[doc = $part_doc])*
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
            #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
            pub struct $Part {
                $($(#[doc = $doc])* pub $field: u64,)*
            }

            impl $Part {
                /// The counters' names, in declaration order.
                pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

                /// The counters' doc comments (each line after a space), in the order of
                /// [`Self::NAMES`]: help texts for an export.
                pub const DOCS: &'static [&'static str] = &[$(concat!($($doc),*)),*];

                /// Calls `f` with every counter's name and value, in the order of
                /// [`Self::NAMES`].
                pub fn for_each(&self, mut f: impl FnMut(&'static str, u64)) {
                    $(f(stringify!($field), self.$field);)*
                }
            }

            impl AddAssign for $Part {
                fn add_assign(&mut self, rhs: Self) {
                    $(self.$field += rhs.$field;)*
                }
            }
        )*

        /// Every counter of a connection, by part: the additive half of [`ConnectionStats`]
        /// (from [`ConnectionStats::counters`]), to sum over connections, endpoints or runs
        /// with `+=`.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct ConnectionCounters {
            $($(#[doc = $part_doc])* pub $part: $Part,)*
        }

        impl ConnectionCounters {
            /// Every counter's name, `part.counter`, in declaration order.
            pub const NAMES: &'static [&'static str] =
                &[$($(concat!(stringify!($part), ".", stringify!($field)),)*)*];

            /// Every counter's doc comment (each line after a space), in the order of
            /// [`Self::NAMES`]: help texts for an export.
            pub const DOCS: &'static [&'static str] = &[$($(concat!($($doc),*),)*)*];

            /// Calls `f` with every counter's name (`part.counter`) and value, in the order of
            /// [`Self::NAMES`].
            pub fn for_each(&self, mut f: impl FnMut(&'static str, u64)) {
                $($(f(concat!(stringify!($part), ".", stringify!($field)), self.$part.$field);)*)*
            }

            /// Calls `f` with every counter, in the order of [`Self::NAMES`], to change it.
            pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&mut u64)) {
                $($(f(&mut self.$part.$field);)*)*
            }
        }

        impl AddAssign for ConnectionCounters {
            fn add_assign(&mut self, rhs: Self) {
                $(self.$part += rhs.$part;)*
            }
        }

        /// A snapshot of one connection's statistics, from
        /// [`Endpoint::connection_stats`](crate::Endpoint::connection_stats): the path's gauges,
        /// the counters by part (see [`ConnectionCounters`]) and the channels' queues.
        #[derive(Debug, Clone, Default, PartialEq)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct ConnectionStats {
            /// What the connection estimates now: RTT, timeout, loss rates, window.
            pub path: PathStats,
            $($(#[doc = $part_doc])* pub $part: $Part,)*
            /// Per channel queue depths.
            pub channels: Vec<ChannelStats>,
        }

        impl ConnectionStats {
            /// The counters of this snapshot (every part but the gauges and the channels).
            pub fn counters(&self) -> ConnectionCounters {
                ConnectionCounters { $($part: self.$part,)* }
            }

            /// Replaces every counter part with those of `c`.
            pub(crate) fn set_counters(&mut self, c: ConnectionCounters) {
                $(self.$part = c.$part;)*
            }
        }
    };
}

counters! {
    /// Datagrams and their UDP payload bytes, sent and received, and received ones dropped.
    udp: UdpStats {
        /// Datagrams sent (handshake included).
        packets_sent,
        /// UDP payload bytes sent.
        bytes_sent,
        /// Datagrams received and accepted.
        packets_received,
        /// UDP payload bytes received and accepted.
        bytes_received,
        /// Received packets dropped as duplicates.
        duplicate_packets,
        /// Received packets dropped as malformed (they authenticated: the peer sent them).
        malformed_packets,
        /// Received packets dropped because the receive buffer was full.
        dropped_buffer_full,
    }
    /// Loss recovery: losses and timeouts, how they were found, the repair policy's copies and
    /// whether repairs came in time. The side that sends the messages counts them, except the
    /// ACK repeats, which the side that acknowledges counts.
    recovery: RecoveryStats {
        /// Packets declared lost.
        packets_lost,
        /// Losses declared after a single indication (thin-stream fast retransmit).
        thin_fast_losses,
        /// Retransmission timeouts that fired.
        rto_expirations,
        /// Packets declared lost that were acknowledged afterwards.
        spurious_losses,
        /// Retransmission timeouts found spurious because the acknowledgement was only late (it
        /// acknowledged nothing sent after the timeout): the RTT estimate is raised (RFC 4015).
        spurious_timeouts,
        /// Extra copies of message fragments sent by the repair policy (beyond one per stage).
        repair_copies,
        /// Fragments acknowledged through a retransmission within their channel's repair
        /// target (`(1 + rtts)` smoothed RTTs from the first transmission to the
        /// acknowledgement).
        repairs_in_time,
        /// Fragments acknowledged through a retransmission after that.
        repairs_late,
        /// ACK-only packets sent a second time (acknowledgement redundancy).
        ack_repeats,
    }
    /// Message frames sent, by cause, and received, by outcome; messages delivered.
    frames: FrameStats {
        /// Message frames sent for the first time.
        first,
        /// Message frames retransmitted after a loss.
        retransmitted,
        /// Message frames sent again by redundant bundling.
        bundled,
        /// Received message frames discarded as already delivered (bundled or retransmitted
        /// copies).
        duplicate,
        /// Received message frames refused (outside the window or impossible).
        refused,
        /// Messages delivered to the application.
        messages_delivered,
    }
    /// Payload bytes sent, by cause (see [`PayloadStats::total`]).
    payload_bytes: PayloadStats {
        /// Payload bytes in first transmissions.
        first,
        /// Payload bytes retransmitted.
        retransmitted,
        /// Payload bytes sent again by redundant bundling.
        bundled,
        /// Payload bytes of the repair policy's copies ([`RecoveryStats::repair_copies`]).
        copies,
        /// Payload bytes of recovery (parity) shards.
        parity,
    }
    /// Deadline delivery: messages sent with a deadline and what became of them.
    deadline: DeadlineStats {
        /// Deadline messages queued by the application.
        messages_sent,
        /// Deadline messages whose shards the peer acknowledged (k of them).
        completed,
        /// Deadline messages given up (four deadlines passed without completion).
        abandoned,
        /// Recovery (parity) shards sent.
        parity_shards,
        /// Deadline messages decoded by this side.
        delivered,
        /// Deadline messages decoded after their deadline (estimated).
        late,
    }
    /// Crypto and path security: packets that did not authenticate, key updates, path
    /// validation and migrations.
    security: SecurityStats {
        /// Received packets for this connection that did not authenticate (forged or
        /// damaged); nothing in them was used.
        unauthenticated_packets,
        /// Key updates this side made (every `key_update_packets` packets it sealed).
        key_updates_sent,
        /// Key updates of the peer this side followed.
        key_updates_received,
        /// PATH_CHALLENGEs sent to validate a new peer address.
        path_challenges_sent,
        /// Times the peer's address changed (NAT rebinding), each after path validation.
        migrations,
    }
}

impl PayloadStats {
    /// Every payload byte sent: first transmissions, retransmissions, bundled copies, repair
    /// copies and parity.
    pub fn total(&self) -> u64 {
        self.first + self.retransmitted + self.bundled + self.copies + self.parity
    }
}

/// The path's gauges: what the connection estimates at the moment of the snapshot. Unlike the
/// counter parts these do not add up (two RTTs or two windows have no meaningful sum), so this
/// part has no `AddAssign` and is not in [`ConnectionCounters`].
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PathStats {
    /// Smoothed RTT.
    pub srtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Smallest RTT sample, if any.
    pub min_rtt: Option<Duration>,
    /// Current retransmission timeout, backoff included.
    pub rto: Duration,
    /// Estimate of the packet loss rate (0..1): mean of the first 256 packet outcomes, then
    /// an exponentially weighted average over about the last 256. A loss found spurious
    /// later is taken back.
    pub loss_estimate: f64,
    /// Estimated loss rate of packets sent after a loss (retransmissions and copies), which
    /// loss bursts raise above `loss_estimate`: over about the last 32 such packets, shrunk
    /// towards `loss_estimate` while few were seen.
    pub repeat_loss_estimate: f64,
    /// Estimated rate at which the acknowledgement of a packet that arrived came only after
    /// the packet was declared lost (a lost or late ACK).
    pub ack_loss_estimate: f64,
    /// The repair policy of the transport's default target at the current estimates: copies
    /// per stage, first transmission first (empty when repair is off).
    pub repair_plan: Vec<u8>,
    /// Congestion window (packets).
    pub cwnd: u32,
    /// Ack-eliciting packets in flight.
    pub in_flight: usize,
    /// Whether the connection currently counts as thin.
    pub thin: bool,
}

/// Queue depths of one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChannelStats {
    /// The channel's class.
    pub kind: ChannelKind,
    /// Messages held by the sender (unsent or unacknowledged).
    pub send_queue_messages: usize,
    /// Payload bytes held by the sender.
    pub send_queue_bytes: usize,
    /// Messages held by the receiver waiting for an earlier one.
    pub recv_waiting_messages: usize,
    /// Payload bytes held by the receiver for ordering and reassembly.
    pub recv_buffered_bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_name_every_counter_once() {
        let mut a = ConnectionCounters::default();
        a.recovery.packets_lost = 2;
        a.payload_bytes.parity = 7;
        let mut b = a;
        b.udp.packets_sent = 1;
        a += b;
        assert_eq!(
            (
                a.recovery.packets_lost,
                a.payload_bytes.parity,
                a.udp.packets_sent
            ),
            (4, 14, 1)
        );
        let mut seen = Vec::new();
        a.for_each(|name, v| seen.push((name, v)));
        let names: Vec<_> = seen.iter().map(|s| s.0).collect();
        assert_eq!(names, ConnectionCounters::NAMES);
        assert!(seen.contains(&("recovery.packets_lost", 4)));
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        let parts = UdpStats::NAMES.len()
            + RecoveryStats::NAMES.len()
            + FrameStats::NAMES.len()
            + PayloadStats::NAMES.len()
            + DeadlineStats::NAMES.len()
            + SecurityStats::NAMES.len();
        assert_eq!(parts, names.len());
        assert_eq!(ConnectionCounters::DOCS.len(), names.len());
        assert_eq!(
            ConnectionCounters::DOCS[0],
            " Datagrams sent (handshake included)."
        );
    }

    #[test]
    fn payload_total_is_every_cause() {
        let p = PayloadStats {
            first: 1,
            retransmitted: 2,
            bundled: 4,
            copies: 8,
            parity: 16,
        };
        assert_eq!(p.total(), 31);
    }
}
