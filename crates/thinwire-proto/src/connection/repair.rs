//! The connection's side of proactive repair ([`crate::policy::repair`]): which policy a
//! reliable channel follows now, the copies it schedules, and how its repairs fared.

use std::time::{Duration, Instant};

use super::loss::Recovery;
use super::Connection;
use crate::error::SendError;
use crate::policy::repair::{
    copy_spacing, RepairModel, RepairPolicy, RepairTarget, MAX_LOSS, MAX_STAGES,
};
use crate::recovery::ChunkRef;

/// Loss estimates are rounded up to this step before a policy is solved: the policy assumes
/// at least the estimated loss, and the policy cache holds one policy per step, not one per
/// estimate.
const RATE_STEP: f64 = 0.005;

fn step_up(rate: f64) -> u16 {
    let max = (MAX_LOSS / RATE_STEP).round() as u16;
    ((rate / RATE_STEP - 1e-9).ceil().max(0.0) as u16).min(max)
}

impl Connection {
    /// Sets (or clears) the repair target of reliable `channel`.
    pub(crate) fn set_channel_repair(
        &mut self,
        channel: u8,
        target: Option<RepairTarget>,
    ) -> Result<(), SendError> {
        let kind = *self
            .channels
            .get(channel as usize)
            .ok_or(SendError::UnknownChannel(channel))?;
        if !kind.is_reliable() {
            return Err(SendError::WrongChannelKind {
                channel,
                kind,
                expected: "a reliable channel",
            });
        }
        if target.is_some_and(|t| !t.is_valid()) {
            return Err(SendError::InvalidRepairTarget);
        }
        self.ensure_send();
        self.send[channel as usize].repair = target;
        Ok(())
    }

    /// The model for `target` at the estimates and timers of loss recovery `r` (the
    /// connection's own, `self.flow.recovery`, but for a look at a resting connection's).
    pub(super) fn repair_model(&self, target: &RepairTarget, r: &Recovery) -> RepairModel {
        let rate = |p: f64| (f64::from(step_up(p)) * RATE_STEP).min(MAX_LOSS);
        RepairModel {
            stages: target.stages(r.rtt.srtt(), self.rto_with(r)),
            loss: rate(r.estimates.planning_loss()),
            repeat_loss: rate(r.estimates.repeat_loss()),
            ack_loss: rate(r.estimates.ack_loss()),
            target: target.target,
            max_copies: target.max_copies,
            max_first_copies: if target.copy_first {
                target.max_copies
            } else {
                1
            },
        }
    }

    /// Copies the policy of `channel` sends in `stage`, while the connection is thin (1 when
    /// the channel has no target or the connection is not thin).
    pub(super) fn repair_copies(&self, channel: u8, stage: u8) -> u8 {
        let Some(target) = self.send.get(channel as usize).and_then(|c| c.repair) else {
            return 1;
        };
        // the common case, every first transmission: nothing to solve
        if (stage <= 1 && !target.copy_first) || !self.is_thin() {
            return 1;
        }
        let model = self.repair_model(&target, &self.flow.recovery);
        self.policies
            .repair(&model)
            .unwrap_or_else(|_| RepairPolicy::plain(&model))
            .copies(stage)
    }

    /// Schedules the extra copies the policy wants for chunk `c`, which just went out in its
    /// stage `stage`: they leave one [`copy_spacing`] later, unless a packet in between
    /// carries them (bundling).
    pub(super) fn schedule_copies(&mut self, now: Instant, c: ChunkRef, stage: u8) {
        let extra = self.repair_copies(c.channel, stage).saturating_sub(1);
        if extra == 0 {
            return;
        }
        let Some(f) = self.send[c.channel as usize]
            .msgs
            .get_mut(c.seq)
            .and_then(|m| m.frags.get_mut(c.frag as usize))
        else {
            return;
        };
        f.copies_due = extra;
        let at = now + copy_spacing(self.flow.recovery.rtt.srtt());
        for _ in 0..extra {
            self.active.get_mut().queues.copies.push_back((Some(at), c));
        }
    }

    /// Drops scheduled copies no longer wanted (acknowledged, or already carried by bundling)
    /// from the front.
    pub(super) fn prune_copies(&mut self) {
        while let Some(&(_, c)) = self.active.get().queues.copies.front() {
            let wanted = self.send[c.channel as usize]
                .frag(c.seq, c.frag)
                .is_some_and(|f| !f.acked && f.copies_due > 0);
            if wanted {
                return;
            }
            if let Some(a) = self.active.made() {
                a.queues.copies.pop_front();
            }
        }
    }

    /// When the repair timer must fire: the due time of the first copy not yet released.
    pub(super) fn copy_timer(&mut self) -> Option<Instant> {
        self.prune_copies();
        self.active
            .get()
            .queues
            .copies
            .iter()
            .find_map(|(at, _)| *at)
    }

    /// The repair timer fired: the copies due by `now` are released (they no longer arm the
    /// timer) and go with the next datagrams that may carry data.
    pub(super) fn on_repair_timer(&mut self, now: Instant) {
        let Some(a) = self.active.made() else {
            return;
        };
        for (at, _) in a.queues.copies.iter_mut() {
            match at {
                Some(t) if *t <= now => *at = None,
                Some(_) => break,
                None => {}
            }
        }
    }

    /// Whether message data goes at the next transmit whatever the application sends: a
    /// retransmission is queued, or a wanted copy is due at `now`.
    pub(crate) fn repair_due(&self, now: Instant) -> bool {
        let wanted = |c: &ChunkRef| {
            self.send[c.channel as usize]
                .frag(c.seq, c.frag)
                .is_some_and(|f| !f.acked && f.copies_due > 0)
        };
        let queues = &self.active.get().queues;
        queues.retransmit.iter().any(|&c| self.chunk_unacked(c))
            || queues
                .copies
                .iter()
                .take_while(|(at, _)| at.is_none_or(|t| t <= now))
                .any(|(_, c)| wanted(c))
    }

    /// The first wanted copy, if it is due at `now` (released, or its time has come).
    pub(super) fn due_copy(&mut self, now: Instant) -> Option<ChunkRef> {
        self.prune_copies();
        self.active
            .get()
            .queues
            .copies
            .front()
            .filter(|(at, _)| at.is_none_or(|t| t <= now))
            .map(|&(_, c)| c)
    }

    /// Counts a repair (a fragment acknowledged through a retransmission, not through its
    /// first transmission) as in time or late against its channel's target: in time when the
    /// acknowledgement came within `(1 + rtts)` smoothed RTTs of the first transmission
    /// (delivery one-way delay before it, against a deadline of one-way delay + `rtts` RTTs).
    pub(super) fn note_repair_acked(&mut self, now: Instant, c: ChunkRef) {
        let srtt = self.flow.recovery.rtt.srtt();
        let Some(ch) = self.send.get(c.channel as usize) else {
            return;
        };
        let Some(msg) = ch.msgs.get(c.seq) else {
            return;
        };
        let repaired = msg
            .frags
            .get(c.frag as usize)
            .is_some_and(|f| !f.acked && f.stage >= 2);
        let (Some(first), true) = (msg.first_sent, repaired) else {
            return;
        };
        let rtts = ch.repair.unwrap_or_default().rtts;
        let allowed = Duration::from_secs_f64(srtt.as_secs_f64() * (1.0 + rtts));
        if now.saturating_duration_since(first) <= allowed {
            self.stats.live().recovery.repairs_in_time += 1;
        } else {
            self.stats.live().recovery.repairs_late += 1;
        }
    }

    /// The plan (copies per stage) of the transport's default target at the estimates of loss
    /// recovery `r`, for the statistics.
    pub(super) fn repair_plan(&self, r: &Recovery) -> Vec<u8> {
        let Some(target) = self.config.repair else {
            return Vec::new();
        };
        let model = self.repair_model(&target, r);
        let stages = model.stages.min(MAX_STAGES);
        self.policies
            .repair(&model)
            .map(|p| p.plan()[..usize::from(stages)].to_vec())
            .unwrap_or_default()
    }
}
