//! Building outgoing segments: new data (with redundant data bundling),
//! retransmissions (with collapsing), pure acknowledgements and the SACK
//! blocks they carry.

use std::time::Instant;

use super::rtx::Part;
use super::{Seg, TcpConn, TcpSegment};

/// SACK blocks a receiver reports at most (RFC 2018 with timestamps: 3).
const MAX_SACK_BLOCKS: usize = 3;

impl TcpConn {
    /// The receiver's SACK blocks: a pending DSACK block first (RFC 2883),
    /// then the merged out-of-order ranges, lowest first.
    fn sack_blocks(&mut self) -> Vec<(u64, u64)> {
        if !self.cfg.sack_dupacks {
            return Vec::new();
        }
        let mut blocks: Vec<(u64, u64)> = self.dsack.take().into_iter().collect();
        let dsack = blocks.len();
        for (&s, &e) in &self.ooo {
            let merge = blocks.len() > dsack;
            match blocks.last_mut() {
                Some(last) if merge && s <= last.1 => last.1 = last.1.max(e),
                _ => {
                    if blocks.len() == MAX_SACK_BLOCKS {
                        break;
                    }
                    blocks.push((s, e));
                }
            }
        }
        blocks
    }

    /// A data segment carrying stream bytes `[start, end)` and the current
    /// acknowledgement.
    fn build(&mut self, now: Instant, start: u64, end: u64, fresh: bool) -> TcpSegment {
        let prefix = u64::from(self.cfg.prefix_bytes);
        let first = self.msgs.partition_point(|m| m.end <= start);
        let mut ends = Vec::new();
        let mut prefix_overlap = 0u64;
        for m in self.msgs.iter().skip(first) {
            if m.start >= end {
                break;
            }
            let p_end = m.start + prefix;
            let lo = m.start.max(start);
            let hi = p_end.min(end);
            if hi > lo {
                prefix_overlap += hi - lo;
            }
            if m.end > start && m.end <= end {
                ends.push((m.end, m.id));
            }
        }
        let len = end - start;
        self.stats.data_segments += 1;
        self.stats.payload_bytes += len - prefix_overlap;
        // The acknowledgement rides along.
        self.clear_ack_state();
        TcpSegment {
            seq: start,
            len: len as u32,
            ack: self.rcv_nxt,
            sack: self.sack_blocks(),
            ends,
            fresh,
            corrupted: false,
            ts_val: self.cfg.timestamps.then_some(now),
            ts_ecr: self.ts_recent,
        }
    }

    /// A pure acknowledgement.
    pub(super) fn pure_ack(&mut self, now: Instant) -> TcpSegment {
        self.clear_ack_state();
        self.stats.pure_acks += 1;
        TcpSegment {
            seq: self.snd_max,
            len: 0,
            ack: self.rcv_nxt,
            sack: self.sack_blocks(),
            ends: Vec::new(),
            fresh: false,
            corrupted: false,
            ts_val: self.cfg.timestamps.then_some(now),
            ts_ecr: self.ts_recent,
        }
    }

    fn clear_ack_state(&mut self) {
        self.rcv_wup = self.rcv_nxt;
        self.ack_pending = false;
        self.unacked_segments = 0;
        self.unacked_bytes = 0;
        self.delack_at = None;
    }

    /// Retransmits segment `i` (collapsing the next one into it first when
    /// the configuration says so).
    pub(super) fn retransmit(&mut self, now: Instant, i: usize) -> TcpSegment {
        let mss = u64::from(self.cfg.mss);
        if self.cfg.retrans_collapse && i + 1 < self.segs.len() {
            let (a, b) = (&self.segs[i], &self.segs[i + 1]);
            if 2 * (a.end - a.start) < mss && b.end - a.start <= mss && !b.sacked {
                if let Some(b) = self.segs.remove(i + 1) {
                    let a = &mut self.segs[i];
                    a.end = b.end;
                    a.tx_count = a.tx_count.max(b.tx_count);
                    a.parts.extend(b.parts);
                }
            }
        }
        let s = &mut self.segs[i];
        s.lost = false;
        s.tx_count += 1;
        s.last_sent = now;
        self.rtx.on_retransmit(&mut s.parts, now);
        let (start, end) = (s.start, s.end);
        self.stats.retransmissions += 1;
        if self.cfg.dsack_undo && self.undo.armed {
            self.undo.retrans += 1;
            self.undo.ranges.push((start, end));
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto);
        }
        self.build(now, start, end, false)
    }

    /// Sends the next new data, bundling earlier unacknowledged data with it
    /// when redundant data bundling is on.
    pub(super) fn send_new(&mut self, now: Instant) -> TcpSegment {
        let mss = u64::from(self.cfg.mss);
        if self.cfg.linux_cwnd && self.segs.is_empty() {
            self.restart_after_idle(now);
        }
        self.last_new_send = Some(now);
        let start = self.snd_max;
        let end = (start + mss).min(self.stream_end);
        let mut seg = Seg {
            start,
            end,
            tx_count: 1,
            last_sent: now,
            lost: false,
            sacked: false,
            parts: vec![Part::new(end, now)],
        };
        self.rtx.data_packets += 1;
        if self.cfg.rdb {
            // Petlund et al., Sec. 3: the newest unacknowledged segments that fit
            // with the new data in one MSS ride along (the sequence number is the
            // oldest bundled byte; the packet replaces the segments it carries).
            let fits = self
                .segs
                .iter()
                .rev()
                .take_while(|s| end - s.start <= mss)
                .count();
            if fits > 0 {
                self.stats.rdb_bundles += 1;
                let mut parts = Vec::new();
                for s in self.segs.drain(self.segs.len() - fits..) {
                    seg.start = seg.start.min(s.start);
                    parts.extend(s.parts);
                }
                parts.append(&mut seg.parts);
                seg.parts = parts;
            }
        }
        let pkt_start = seg.start;
        self.segs.push_back(seg);
        self.snd_max = end;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto);
        }
        if self.cfg.linux_cwnd && self.cfg.cwnd_validation {
            self.validate_cwnd(now);
        }
        let out = self.build(now, pkt_start, end, true);
        if self.report_first_sent {
            // Messages ending in the new bytes leave for the first time
            // (bundled ones went out before).
            let new = out.ends.iter().filter(|&&(e, _)| e > start);
            self.first_sent.extend(new.map(|&(_, id)| id));
        }
        out
    }

    /// RFC 2861 as Linux 2.6.23 runs it after new data went out
    /// (`tcp_cwnd_validate`, `tcp_cwnd_application_limited`).
    fn validate_cwnd(&mut self, now: Instant) {
        let packets_out = self.segs.len();
        let cwnd = self.cwnd.floor();
        let stamp = *self.cwnd_stamp.get_or_insert(now);
        if packets_out as f64 >= cwnd {
            // The network is fed fully.
            self.cwnd_used = 0;
            self.cwnd_stamp = Some(now);
            return;
        }
        self.cwnd_used = self.cwnd_used.max(packets_out);
        if now.saturating_duration_since(stamp) < self.rto {
            return;
        }
        let open = !self.in_recovery && !self.segs.iter().any(|s| s.lost);
        if open {
            let used = (self.cwnd_used as f64).max(f64::from(self.cfg.initial_cwnd.max(1)));
            if used < cwnd {
                // `tcp_current_ssthresh`: at least 3/4 of the window.
                self.ssthresh = self.ssthresh.max((cwnd * 0.75).floor());
                self.cwnd = ((cwnd + used) / 2.0).floor();
            }
            self.cwnd_used = 0;
        }
        self.cwnd_stamp = Some(now);
    }

    /// Linux's `tcp_cwnd_restart` (slow start after idle): new data after
    /// more than one RTO with nothing in flight halves the window for each
    /// RTO of silence, down to the initial window.
    fn restart_after_idle(&mut self, now: Instant) {
        let Some(last) = self.last_new_send else {
            return;
        };
        let mut idle = now.saturating_duration_since(last);
        let restart = f64::from(self.cfg.initial_cwnd.max(1)).min(self.cwnd);
        if idle <= self.rto {
            return;
        }
        while idle > self.rto && self.cwnd > restart {
            idle -= self.rto;
            self.cwnd = (self.cwnd / 2.0).floor();
        }
        self.cwnd = self.cwnd.max(restart);
        if self.cfg.cwnd_validation {
            self.cwnd_stamp = Some(now);
            self.cwnd_used = 0;
        }
    }
}
