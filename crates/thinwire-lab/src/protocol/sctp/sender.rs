//! The sender half of an association: SACK processing, RTO and congestion
//! control, T3 expiry, and the building of outgoing packets.

use std::time::{Duration, Instant};

use super::{Chunk, Sack, SctpAssoc, SctpPacket, COMMON, IP, SACK_HDR};

impl SctpAssoc {
    fn flight(&self) -> u32 {
        self.chunks
            .iter()
            .filter(|c| c.in_flight())
            .map(Chunk::bytes)
            .sum()
    }

    fn rtt_sample(&mut self, r: Duration) {
        self.rtt.sample(r);
        let rto = self.rtt.rto().unwrap_or(r);
        self.rto = rto.clamp(self.cfg.rto_min, self.cfg.rto_max);
    }

    fn min_ssthresh(&self) -> u32 {
        4 * self.cfg.mtu
    }

    pub(super) fn on_sack(&mut self, now: Instant, sack: &Sack) {
        let flight_before = self.flight();
        let mut newly = 0u32;
        let mut sample = None;
        let cum_advanced = sack
            .cum
            .is_some_and(|c| self.chunks.front().is_some_and(|f| f.tsn <= c));
        if let Some(cum) = sack.cum {
            while self.chunks.front().is_some_and(|c| c.tsn <= cum) {
                if let Some(c) = self.chunks.pop_front() {
                    if !c.gap_acked {
                        newly += c.bytes();
                    }
                    if c.tx_count == 1 {
                        sample = c.sent.map(|t| now - t);
                    }
                }
            }
        }
        let mut highest_gap = None;
        for c in &mut self.chunks {
            let acked = sack.gaps.iter().any(|&(a, b)| (a..=b).contains(&c.tsn));
            if acked && !c.gap_acked {
                c.gap_acked = true;
                c.marked = false;
                newly += c.bytes();
                if c.tx_count == 1 && sample.is_none() {
                    sample = c.sent.map(|t| now - t);
                }
            }
            if acked {
                highest_gap = Some(c.tsn);
            }
        }
        if let Some(r) = sample {
            self.rtt_sample(r);
        }
        // Missing reports for TSNs below the highest gap-acked one.
        let mut fast = false;
        if let Some(h) = highest_gap {
            let threshold = self.cfg.fast_rtx_reports;
            for c in &mut self.chunks {
                if c.tsn >= h {
                    break;
                }
                if !c.gap_acked && c.sent.is_some() && !c.fast_done {
                    c.missing += 1;
                    if c.missing >= threshold {
                        c.fast_done = true;
                        c.marked = true;
                        fast = true;
                    }
                }
            }
        }
        if self
            .recover
            .is_some_and(|r| sack.cum.is_some_and(|c| c >= r))
        {
            self.recover = None;
        }
        if fast {
            self.fast_retransmits += 1;
            if self.recover.is_none() {
                self.ssthresh = (self.cwnd / 2).max(self.min_ssthresh());
                self.cwnd = self.ssthresh;
                self.partial_acked = 0;
                self.recover = self
                    .chunks
                    .iter()
                    .rev()
                    .find(|c| c.sent.is_some())
                    .map(|c| c.tsn);
            }
        } else if cum_advanced && flight_before >= self.cwnd {
            // Grow only while the window is fully used (RFC 4960 7.2.1-2).
            if self.cwnd <= self.ssthresh {
                self.cwnd += newly.min(self.cfg.mtu);
            } else {
                self.partial_acked += newly;
                if self.partial_acked >= self.cwnd {
                    self.partial_acked -= self.cwnd;
                    self.cwnd += self.cfg.mtu;
                }
            }
        }
        if cum_advanced {
            // The earliest outstanding TSN was acknowledged: restart T3.
            let any = self.chunks.iter().any(|c| c.sent.is_some() && !c.gap_acked);
            self.t3_at = any.then(|| now + self.rto);
        }
        if self.chunks.iter().all(|c| c.sent.is_none() || c.gap_acked) {
            self.t3_at = None;
        }
    }

    pub(super) fn on_t3(&mut self, now: Instant) {
        self.t3_at = None;
        if !self.chunks.iter().any(|c| c.sent.is_some() && !c.gap_acked) {
            return;
        }
        self.timeouts += 1;
        self.ssthresh = (self.cwnd / 2).max(self.min_ssthresh());
        self.cwnd = self.cfg.mtu;
        self.partial_acked = 0;
        self.recover = None;
        self.rto = (self.rto * 2).min(self.cfg.rto_max);
        for c in &mut self.chunks {
            if c.sent.is_some() && !c.gap_acked {
                c.marked = true;
            }
        }
        self.t3_at = Some(now + self.rto);
    }

    /// The next packet: due retransmissions and new chunks, with a SACK when
    /// one is pending (delayed or not); `None` when there is no data to send
    /// and `force_sack` is false.
    pub(super) fn build(&mut self, now: Instant, force_sack: bool) -> Option<(SctpPacket, u32)> {
        let room = self.cfg.mtu - IP - COMMON;
        let mut used = 0u32;
        let mut data = Vec::new();
        let sack = (force_sack || self.sack_at.is_some()).then(|| self.sack());
        if let Some(s) = &sack {
            used += SACK_HDR + 4 * s.gaps.len() as u32;
        }
        // Retransmissions first (a fast retransmit may exceed the window by
        // one packet), then new chunks while the window allows.
        let mut flight = self.flight();
        let rtx_any = self.chunks.iter().any(|c| c.marked);
        let fast_pending = self
            .chunks
            .iter()
            .any(|c| c.marked && c.fast_done && c.tx_count == 1);
        let allow_rtx = rtx_any && (flight < self.cwnd || fast_pending);
        for c in &mut self.chunks {
            let fits = used + c.bytes() <= room || data.is_empty();
            if !fits {
                break;
            }
            let send = if c.marked {
                allow_rtx
            } else {
                c.sent.is_none() && flight < self.cwnd
            };
            if !send {
                continue;
            }
            if c.sent.is_some() {
                self.retransmissions += 1;
            }
            c.marked = false;
            c.sent = Some(now);
            c.tx_count += 1;
            used += c.bytes();
            flight += c.bytes();
            data.push((c.tsn, c.id, c.size));
        }
        if data.is_empty() && !force_sack {
            return None;
        }
        if !data.is_empty() && self.t3_at.is_none() {
            self.t3_at = Some(now + self.rto);
        }
        if sack.is_some() {
            self.sack_pending = false;
            self.sack_at = None;
            self.unsacked_packets = 0;
        }
        self.packets += 1;
        Some((
            SctpPacket {
                data,
                sack,
                corrupted: false,
            },
            IP + COMMON + used,
        ))
    }
}
