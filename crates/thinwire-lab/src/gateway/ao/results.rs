//! What a run reports: the server's link counters, latency, delivery and the byte breakdown
//! of each mode, the savings, and the published Table 1 beside them.

use serde::Serialize;

use crate::metrics::LatencyMs;

/// IPv4 + UDP header bytes of every datagram.
pub(super) const IP_UDP: u64 = 28;

/// Datagrams offered to one direction of the server's link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirCount {
    /// Datagrams (data and acks alike), lost ones included.
    pub packets: u64,
    /// Bytes above IP: UDP payload (thinwire), TCP header and payload (the TCP modes).
    pub udp_bytes: u64,
    /// IP-level bytes: UDP payload + 28 B of IPv4 and UDP header per datagram (thinwire),
    /// the TCP model's 40 B IPv4 + TCP header, SACK option and payload (TCP).
    pub ip_bytes: u64,
    /// Datagrams the link lost.
    pub lost: u64,
}

impl DirCount {
    /// Counts one datagram of `udp` payload bytes.
    pub(super) fn count(&mut self, udp: u64, delivered: bool) {
        self.packets += 1;
        self.udp_bytes += udp;
        self.ip_bytes += udp + IP_UDP;
        self.lost += u64::from(!delivered);
    }

    /// Counts one packet of `ip` bytes at IP level, `above_ip` of them above the IP header.
    pub(super) fn count_ip(&mut self, ip: u64, above_ip: u64, delivered: bool) {
        self.packets += 1;
        self.udp_bytes += above_ip;
        self.ip_bytes += ip;
        self.lost += u64::from(!delivered);
    }

    fn plus(self, o: DirCount) -> DirCount {
        DirCount {
            packets: self.packets + o.packets,
            udp_bytes: self.udp_bytes + o.udp_bytes,
            ip_bytes: self.ip_bytes + o.ip_bytes,
            lost: self.lost + o.lost,
        }
    }
}

/// The server's link, both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WanCount {
    /// Server to players (game data, and in the multiplexed mode the trunk's data).
    pub down: DirCount,
    /// Players to server (mostly acknowledgements).
    pub up: DirCount,
    /// Both directions.
    pub total: DirCount,
}

impl WanCount {
    /// Fills in [`WanCount::total`].
    pub(super) fn finish(&mut self) {
        self.total = self.down.plus(self.up);
    }
}

/// Where the IP bytes on the server's link (both directions) go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ByteBreakdown {
    /// IPv4 + UDP headers: 28 B per datagram.
    pub ip_udp_headers: u64,
    /// The game's payload, each message once.
    pub app_payload: u64,
    /// Payload the connections crossing the link sent beyond first transmissions:
    /// retransmissions, redundant bundling, repair copies and parity (both directions).
    pub redundant_payload: u64,
    /// Payload of first transmissions beyond the game's bytes: the logins and, over the
    /// trunk, the per-message trunk framing (type, flow id, channel, sequence).
    pub framing_payload: u64,
    /// Everything else: thinwire packet headers, frame headers, acknowledgements, AEAD tags,
    /// keepalives.
    pub thinwire_overhead: u64,
}

/// Payload counters of the connections that cross the server's link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PayloadCount {
    /// Payload bytes in first transmissions.
    pub(super) first: u64,
    /// Payload bytes retransmitted, bundled again, copied by the repair policy, or sent as
    /// parity.
    pub(super) redundant: u64,
}

impl PayloadCount {
    /// Adds a connection's counters.
    pub(super) fn add(&mut self, s: &thinwire_proto::ConnectionStats) {
        self.first += s.payload_bytes.first;
        self.redundant += s.payload_bytes.total() - s.payload_bytes.first;
    }

    /// `self - earlier`, saturating.
    pub(super) fn since(self, earlier: PayloadCount) -> PayloadCount {
        PayloadCount {
            first: self.first.saturating_sub(earlier.first),
            redundant: self.redundant.saturating_sub(earlier.redundant),
        }
    }
}

impl ByteBreakdown {
    /// The breakdown of `wan` given the game's payload and the connections' counters over
    /// the same window.
    pub(super) fn of(wan: &WanCount, app_payload: u64, payload: PayloadCount) -> Self {
        let headers = wan.total.packets * IP_UDP;
        let framing = payload.first.saturating_sub(app_payload);
        let known = headers + app_payload + payload.redundant + framing;
        ByteBreakdown {
            ip_udp_headers: headers,
            app_payload,
            redundant_payload: payload.redundant,
            framing_payload: framing,
            thinwire_overhead: wan.total.ip_bytes.saturating_sub(known),
        }
    }
}

/// The trunk connection's state at the end of a multiplexed run, as the server gateway (the
/// sender of the game's data) sees it: why the trunk sends as often as it does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TrunkSummary {
    /// Mean time a message waited in the period-T hold, ms.
    pub hold_mean_ms: f64,
    /// Longest hold, ms.
    pub hold_max_ms: f64,
    /// Smoothed RTT at the end, ms.
    pub srtt_ms: f64,
    /// Congestion window at the end (packets).
    pub cwnd_end: u32,
    /// Datagrams the trunk connection sent (whole run).
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Of those, declared lost by a single indication (thin-stream fast retransmit).
    pub thin_fast_losses: u64,
    /// Retransmission timeouts that fired.
    pub rto_expirations: u64,
    /// Losses declared that were acknowledged afterwards.
    pub spurious_losses: u64,
}

impl TrunkSummary {
    /// The summary of the trunk connections' `stats` (one, unless the trunk came back).
    pub(super) fn of(stats: &[thinwire_proto::ConnectionStats]) -> Self {
        let mut t = TrunkSummary::default();
        for s in stats {
            t.srtt_ms = s.path.srtt.as_secs_f64() * 1000.0;
            t.cwnd_end = s.path.cwnd;
            t.packets_sent += s.udp.packets_sent;
            t.packets_lost += s.recovery.packets_lost;
            t.thin_fast_losses += s.recovery.thin_fast_losses;
            t.rto_expirations += s.recovery.rto_expirations;
            t.spurious_losses += s.recovery.spurious_losses;
        }
        t
    }
}

/// The paper's retransmission delay (Figs. 2-5): for the packets acknowledged after exactly
/// n retransmissions, the mean time from their first transmission to that n-th
/// retransmission, "the retransmission that is finally successfully acknowledged"
/// (sender side, the TCP modes only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RtxDelay {
    /// Original data packets the sender sent.
    pub data_packets: u64,
    /// Index n-1: packets acknowledged after exactly n retransmissions (n = 1..3).
    pub acked: [u64; 3],
    /// Index n-1: their mean delay in ms (`None`: no such packet).
    pub mean_ms: [Option<f64>; 3],
    /// Index n-1: packets whose data went out an n-th time (Table 2's "total").
    pub retransmitted: [u64; 3],
}

impl RtxDelay {
    /// The delays of a sender's counters.
    pub(super) fn of(c: &crate::protocol::RtxCounters) -> Self {
        let mut d = RtxDelay {
            data_packets: c.data_packets,
            ..RtxDelay::default()
        };
        for i in 0..3 {
            d.acked[i] = c.acked[i];
            d.mean_ms[i] = (c.acked[i] > 0).then(|| c.delay_sum_ms[i] / c.acked[i] as f64);
            d.retransmitted[i] = c.rtx_self[i] + c.rtx_incl[i];
        }
        d
    }
}

/// The messages a loss delayed, seen by the application: those delivered later than the
/// one-way delay plus the mode's own hold (thinwire's trunk period) plus 1 ms. Their mean
/// latency beyond the one-way delay is the application's view of the retransmission delay,
/// the same for every mode (thinwire's equivalent of Fig. 4; in the TCP modes it also
/// counts messages held behind a lost one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LateMessages {
    /// Delayed messages.
    pub messages: u64,
    /// Of all delivered messages, %.
    pub share_pct: f64,
    /// Their mean latency beyond the one-way delay, ms.
    pub mean_extra_ms: f64,
}

/// One mode (direct or multiplexed) at one loss rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AoModeResult {
    /// Messages the game server sent.
    pub messages_sent: u64,
    /// Messages delivered to the players (each once).
    pub messages_delivered: u64,
    /// Deliveries out of order within a flow, or repeated.
    pub order_violations: u64,
    /// Deliveries to the wrong player, or of unknown messages.
    pub misdelivered: u64,
    /// The game's payload bytes (each message once).
    pub app_payload_bytes: u64,
    /// The server's link.
    pub wan: WanCount,
    /// Where the link's IP bytes go.
    pub breakdown: ByteBreakdown,
    /// Per-message latency, server application send to player application delivery.
    pub latency_ms: LatencyMs,
    /// Whether every player had logged in when the workload started (if not, the first
    /// messages of the late flows waited at the server).
    pub all_ready_at_start: bool,
    /// Player connections that ended and were opened again, while the workload ran (the
    /// setup's, players dialing before the trunk is up, are not counted).
    pub disconnects: u64,
    /// Sends an endpoint or gateway refused while the workload ran.
    pub refused_sends: u64,
    /// Datagrams addressed to no node of the network (a routing bug if not zero).
    pub unroutable: u64,
    /// Simulated seconds from the workload's start to the last delivery.
    pub simulated_s: f64,
    /// The trunk (thinwire's multiplexed mode only).
    pub trunk: Option<TrunkSummary>,
    /// The retransmission delay of the game server's side (the TCP modes only).
    pub rtx_delay: Option<RtxDelay>,
    /// The messages a loss delayed.
    pub late: LateMessages,
}

/// Multiplexed against direct: how much less the multiplexed mode carries on the server's
/// link, in percent of the direct mode's count (positive: multiplexed carries less).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Savings {
    /// IP-level bytes.
    pub ip_bytes_pct: f64,
    /// UDP payload bytes.
    pub udp_bytes_pct: f64,
    /// Datagrams.
    pub packets_pct: f64,
}

fn saving(direct: u64, mux: u64) -> f64 {
    if direct == 0 {
        return 0.0;
    }
    let pct = 100.0 * (direct as f64 - mux as f64) / direct as f64;
    (pct * 10.0).round() / 10.0
}

impl Savings {
    /// The savings of `mux` over `direct`.
    pub(super) fn of(direct: &WanCount, mux: &WanCount) -> Self {
        Savings {
            ip_bytes_pct: saving(direct.total.ip_bytes, mux.total.ip_bytes),
            udp_bytes_pct: saving(direct.total.udp_bytes, mux.total.udp_bytes),
            packets_pct: saving(direct.total.packets, mux.total.packets),
        }
    }
}

/// Every mode at one loss rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AoLossRun {
    /// Bernoulli loss rate of each direction of the server's link.
    pub loss: f64,
    /// One thinwire connection per player across the link.
    pub direct: AoModeResult,
    /// Every player on one thinwire trunk across the link.
    pub multiplexed: AoModeResult,
    /// Thinwire's trunk against thinwire's direct connections.
    pub savings: Savings,
    /// One TCP connection per player across the link (the paper's "simplex").
    pub tcp_direct: AoModeResult,
    /// Every player on one TCP connection to a proxy (the paper's "multiplex").
    pub tcp_trunk: AoModeResult,
    /// The TCP trunk against the TCP connections per player: what Table 1 measured.
    pub tcp_savings: Savings,
}

/// Griwodz & Halvorsen (NOSSDAV 2006), Table 1: the one-hour AO trace replayed over TCP
/// (New Reno + FACK) at 100 ms delay and 1% loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PublishedTable1 {
    /// Bytes with one TCP connection per client ("simplex").
    pub separate_bytes: u64,
    /// Packets with one TCP connection per client.
    pub separate_packets: u64,
    /// Bytes with all streams in one multiplexed TCP connection.
    pub multiplexed_bytes: u64,
    /// Packets with one multiplexed connection.
    pub multiplexed_packets: u64,
    /// Byte savings in percent (derived: 38.7).
    pub bytes_saving_pct: f64,
    /// Packet savings in percent (derived: 69.6).
    pub packets_saving_pct: f64,
}

/// The published Table 1 numbers.
pub const PUBLISHED_TABLE1: PublishedTable1 = PublishedTable1 {
    separate_bytes: 44_974_424,
    separate_packets: 372_711,
    multiplexed_bytes: 27_582_922,
    multiplexed_packets: 113_149,
    bytes_saving_pct: 38.7,
    packets_saving_pct: 69.6,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_savings_follow_from_the_table() {
        let t = PUBLISHED_TABLE1;
        assert_eq!(saving(t.separate_bytes, t.multiplexed_bytes), 38.7);
        assert_eq!(saving(t.separate_packets, t.multiplexed_packets), 69.6);
    }
}
