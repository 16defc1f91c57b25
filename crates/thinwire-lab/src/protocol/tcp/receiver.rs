//! The receiver half: reassembly of the byte stream, in-order message
//! delivery and the acknowledgement policy (delayed or immediate ACKs).

use std::time::Instant;

use super::config::LINUX_RCV_MSS;
use super::{AckStyle, TcpConn, TcpSegment};

impl TcpConn {
    /// Takes in the payload of an arriving segment: reassembly, in-order
    /// delivery and the acknowledgement decision.
    pub(super) fn on_data(&mut self, now: Instant, seg: &TcpSegment) {
        let start = seg.seq;
        let end = seg.seq + u64::from(seg.len);
        if seg.fresh {
            self.stats.fresh_received += 1;
        }
        // RFC 1323 (Linux's `tcp_replace_ts_recent`): echo the clock of the
        // segment that starts at or before the last acknowledged point.
        if let Some(v) = seg.ts_val {
            if start <= self.rcv_wup && self.ts_recent.is_none_or(|r| v >= r) {
                self.ts_recent = Some(v);
            }
        }
        // Linux leaves delayed-ACK mode when data arrives after an idle gap
        // longer than its RTO (`tcp_event_data_recv`).
        let idle = self
            .last_data_rx
            .is_none_or(|t| now.saturating_duration_since(t) > self.rto);
        self.last_data_rx = Some(now);
        for &(e, id) in &seg.ends {
            if e > self.rcv_nxt {
                self.bounds.insert(e, id);
            }
        }
        if self.cfg.dsack_undo && start < self.rcv_nxt {
            // Duplicate data (all or the head of the segment): report it.
            self.dsack = Some((start, end.min(self.rcv_nxt)));
        }
        if end <= self.rcv_nxt {
            // Entirely duplicate: acknowledge at once.
            self.ack_pending = true;
            return;
        }
        if start > self.rcv_nxt {
            // Out of order: keep it and send a duplicate acknowledgement.
            let e = self.ooo.entry(start).or_insert(end);
            *e = (*e).max(end);
            self.ack_pending = true;
            return;
        }
        let had_hole = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.pop_first();
        }
        while let Some((&e, &id)) = self.bounds.first_key_value() {
            if e > self.rcv_nxt {
                break;
            }
            self.delivered.push_back(id);
            self.bounds.pop_first();
        }
        if had_hole {
            self.ack_pending = true;
            return;
        }
        self.unacked_segments += 1;
        self.unacked_bytes += self.rcv_nxt - before;
        let now_ack = match self.cfg.ack_style {
            AckStyle::EverySecond => self.unacked_segments >= 2,
            AckStyle::Linux => idle || self.unacked_bytes > LINUX_RCV_MSS,
        };
        if now_ack {
            self.ack_pending = true;
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + self.cfg.delayed_ack);
        }
    }
}
