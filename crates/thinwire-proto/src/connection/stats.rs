//! Per-connection statistics.

use std::time::Duration;

use crate::wire::ChannelKind;

/// A snapshot of one connection's statistics, from
/// [`Endpoint::connection_stats`](crate::Endpoint::connection_stats).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionStats {
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
    /// Datagrams sent (handshake included).
    pub packets_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// UDP payload bytes received and accepted.
    pub bytes_received: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Losses declared after a single indication (thin-stream fast retransmit).
    pub thin_fast_losses: u64,
    /// Retransmission timeouts that fired.
    pub rto_expirations: u64,
    /// Packets declared lost that were acknowledged afterwards.
    pub spurious_losses: u64,
    /// Retransmission timeouts found spurious because the acknowledgement was only late (it
    /// acknowledged nothing sent after the timeout): the RTT estimate is raised (RFC 4015).
    pub spurious_timeouts: u64,
    /// Extra copies of message fragments sent by the repair policy (beyond one per stage).
    pub repair_copies: u64,
    /// Payload bytes of those copies.
    pub payload_bytes_copies: u64,
    /// Fragments acknowledged through a retransmission within their channel's repair target
    /// (`(1 + rtts)` smoothed RTTs from the first transmission to the acknowledgement).
    pub repairs_in_time: u64,
    /// Fragments acknowledged through a retransmission after that.
    pub repairs_late: u64,
    /// ACK-only packets sent a second time (acknowledgement redundancy).
    pub ack_repeats: u64,
    /// Message frames sent for the first time.
    pub frames_first: u64,
    /// Payload bytes in first transmissions.
    pub payload_bytes_first: u64,
    /// Message frames retransmitted after a loss.
    pub frames_retransmitted: u64,
    /// Payload bytes retransmitted.
    pub payload_bytes_retransmitted: u64,
    /// Message frames sent again by redundant bundling.
    pub frames_bundled: u64,
    /// Payload bytes sent again by redundant bundling.
    pub payload_bytes_bundled: u64,
    /// Received packets dropped as duplicates.
    pub duplicate_packets: u64,
    /// Received packets dropped as malformed (they authenticated: the peer sent them).
    pub malformed_packets: u64,
    /// Received packets for this connection that did not authenticate (forged or damaged);
    /// nothing in them was used.
    pub unauthenticated_packets: u64,
    /// PATH_CHALLENGEs sent to validate a new peer address.
    pub path_challenges_sent: u64,
    /// Key updates this side made (every `key_update_packets` packets it sealed).
    pub key_updates_sent: u64,
    /// Key updates of the peer this side followed.
    pub key_updates_received: u64,
    /// Received packets dropped because the receive buffer was full.
    pub dropped_buffer_full: u64,
    /// Received message frames discarded as already delivered (bundled or retransmitted copies).
    pub duplicate_frames: u64,
    /// Received message frames refused (outside the window or impossible).
    pub refused_frames: u64,
    /// Messages delivered to the application.
    pub messages_delivered: u64,
    /// Times the peer's address changed (NAT rebinding), each after path validation.
    pub migrations: u64,
    /// Deadline messages queued by the application.
    pub deadline_messages_sent: u64,
    /// Deadline messages whose shards the peer acknowledged (k of them).
    pub deadline_completed: u64,
    /// Deadline messages given up (four deadlines passed without completion).
    pub deadline_abandoned: u64,
    /// Recovery (parity) shards sent.
    pub parity_shards: u64,
    /// Payload bytes of recovery shards.
    pub payload_bytes_parity: u64,
    /// Deadline messages decoded by this side.
    pub deadline_delivered: u64,
    /// Deadline messages decoded after their deadline (estimated).
    pub deadline_late: u64,
    /// Per channel queue depths.
    pub channels: Vec<ChannelStats>,
}

impl ConnectionStats {
    /// Every payload byte sent: first transmissions, retransmissions, bundled copies, repair
    /// copies and parity.
    pub fn payload_bytes_sent(&self) -> u64 {
        self.payload_bytes_first
            + self.payload_bytes_retransmitted
            + self.payload_bytes_bundled
            + self.payload_bytes_copies
            + self.payload_bytes_parity
    }
}

/// Queue depths of one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
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
