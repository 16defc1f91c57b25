//! Retransmission bookkeeping per original packet, for the counters that
//! Griwodz & Halvorsen (NOSSDAV 2006) measure.
//!
//! A segment in the send queue can hold the data of several original packets
//! (after retransmission collapsing or redundant bundling); each such piece is
//! a [`Part`]. A part remembers when its packet was first sent and how often
//! (and when last) its data went out again in a retransmission, either as the
//! head of the retransmitted segment ("self" in the paper's Table 2) or
//! collapsed into the retransmission of an earlier packet ("incl.").
//!
//! Counters (see [`RtxCounters::add_to`]): `tcp_data_packets` (original data
//! packets), `tcp_rtxN_total` / `_self` / `_incl` (packets whose data was
//! retransmitted an N-th time), `tcp_rtxN_acked` and `tcp_rtxN_delay_sum_ms`
//! (packets acknowledged after exactly N retransmissions, and the summed time
//! from their first transmission to that N-th retransmission: the paper's
//! "retransmission delay"), for N = 1..=[`MAX_RTX_TRACKED`].

use std::time::Instant;

use crate::protocol::{add_counter, Counters};

/// Retransmission counts tracked one by one; more go into the last bucket.
pub const MAX_RTX_TRACKED: usize = 6;

/// The data of one original packet inside a queued segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    /// Stream offset just past this part.
    pub(crate) end: u64,
    /// First transmission of the original packet.
    pub(crate) first_sent: Instant,
    /// Latest retransmission carrying this data.
    pub(crate) last_rtx: Instant,
    /// Retransmissions that carried this data.
    pub(crate) rtx: u32,
}

impl Part {
    /// A packet first sent at `now`, ending at stream offset `end`.
    pub(crate) fn new(end: u64, now: Instant) -> Self {
        Part {
            end,
            first_sent: now,
            last_rtx: now,
            rtx: 0,
        }
    }
}

/// Additive retransmission counters of one sender.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RtxCounters {
    /// Original data packets sent.
    pub data_packets: u64,
    /// Index n-1: packets whose data was retransmitted an n-th time, as the
    /// segment's head ("self").
    pub rtx_self: [u64; MAX_RTX_TRACKED],
    /// Index n-1: the same, collapsed into another packet's retransmission.
    pub rtx_incl: [u64; MAX_RTX_TRACKED],
    /// Index n-1: packets acknowledged after exactly n retransmissions.
    pub acked: [u64; MAX_RTX_TRACKED],
    /// Index n-1: summed first-transmission-to-n-th-retransmission time of
    /// those packets, in ms.
    pub delay_sum_ms: [f64; MAX_RTX_TRACKED],
}

fn bucket(n: u32) -> usize {
    (n as usize).clamp(1, MAX_RTX_TRACKED) - 1
}

impl RtxCounters {
    /// The data of `parts` goes out again at `now`; the first part is the
    /// retransmitted packet itself.
    pub(crate) fn on_retransmit(&mut self, parts: &mut [Part], now: Instant) {
        for (i, p) in parts.iter_mut().enumerate() {
            p.rtx += 1;
            p.last_rtx = now;
            let b = bucket(p.rtx);
            if i == 0 {
                self.rtx_self[b] += 1;
            } else {
                self.rtx_incl[b] += 1;
            }
        }
    }

    /// `part` was cumulatively acknowledged.
    pub(crate) fn on_acked(&mut self, part: &Part) {
        if part.rtx == 0 {
            return;
        }
        let b = bucket(part.rtx);
        self.acked[b] += 1;
        self.delay_sum_ms[b] += (part.last_rtx - part.first_sent).as_secs_f64() * 1000.0;
    }

    /// Adds the counters to `out`.
    pub fn add_to(&self, out: &mut Counters) {
        add_counter(out, "tcp_data_packets", self.data_packets as f64);
        for i in 0..MAX_RTX_TRACKED {
            let n = i + 1;
            let (s, inc) = (self.rtx_self[i] as f64, self.rtx_incl[i] as f64);
            add_counter(out, &format!("tcp_rtx{n}_self"), s);
            add_counter(out, &format!("tcp_rtx{n}_incl"), inc);
            add_counter(out, &format!("tcp_rtx{n}_total"), s + inc);
            add_counter(out, &format!("tcp_rtx{n}_acked"), self.acked[i] as f64);
            add_counter(
                out,
                &format!("tcp_rtx{n}_delay_sum_ms"),
                self.delay_sum_ms[i],
            );
        }
    }
}
