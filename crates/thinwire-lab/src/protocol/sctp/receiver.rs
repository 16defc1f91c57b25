//! The receiver half of an association: in-order delivery of DATA chunks
//! (one stream) and the SACKs describing what arrived.

use std::time::Instant;

use super::{Sack, SctpAssoc};

impl SctpAssoc {
    pub(super) fn on_data(&mut self, now: Instant, data: &[(u64, u64, u32)]) {
        let mut gap_or_dup = false;
        for &(tsn, id, _) in data {
            let next = self.cum.map_or(0, |c| c + 1);
            if tsn < next || self.above.contains_key(&tsn) {
                gap_or_dup = true;
                continue;
            }
            self.above.insert(tsn, id);
        }
        // A gap: something above the cumulative TSN is still missing below it.
        // Deliver in order (one stream).
        while let Some((&tsn, &id)) = self.above.first_key_value() {
            if tsn != self.cum.map_or(0, |c| c + 1) {
                break;
            }
            self.above.pop_first();
            self.cum = Some(tsn);
            self.delivered.push_back(id);
        }
        if gap_or_dup || !self.above.is_empty() {
            self.sack_pending = true;
        } else {
            self.unsacked_packets += 1;
            if self.unsacked_packets >= 2 {
                self.sack_pending = true;
            } else if self.sack_at.is_none() {
                self.sack_at = Some(now + self.cfg.sack_delay);
            }
        }
    }

    pub(super) fn sack(&self) -> Sack {
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        for &tsn in self.above.keys() {
            match gaps.last_mut() {
                Some(g) if g.1 + 1 == tsn => g.1 = tsn,
                _ => gaps.push((tsn, tsn)),
            }
        }
        Sack {
            cum: self.cum,
            gaps,
        }
    }
}
