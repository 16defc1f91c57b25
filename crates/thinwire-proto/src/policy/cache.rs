//! The one cache of solved policies, for both models, keyed by the parameters each was solved
//! for; the owner of an endpoint holds it and may share it between endpoints.
//!
//! A policy depends only on its model's parameters, so sharing it is invisible to behaviour
//! (deterministic) and lets ten thousand connections share one copy:
//! - deadline policies, by target: one set of [`PolicyTables`] per target success rate, whose
//!   cells (`k`, stages, loss bucket) are solved on first use (milliseconds) and are an O(1)
//!   array read after;
//! - repair policies, by the whole [`RepairModel`] (its rates already rounded by the caller):
//!   solved on first use (microseconds), a map read after.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::deadline::PolicyTables;
use super::repair::{RepairError, RepairModel, RepairPolicy};

/// Repair policies kept at most; past that the map starts over (the same model always gives
/// the same policy, so a forgotten one is only solved again).
const MAX_REPAIR_POLICIES: usize = 4096;

/// The solved policies of one or more endpoints, for both models, solved lazily. Cheap to
/// clone: clones share the same policies.
///
/// Every endpoint gets a fresh cache from [`EndpointConfig::new`](crate::EndpointConfig::new);
/// give endpoints the same cache (as a simulator running many of them does) to solve each
/// policy once.
#[derive(Clone, Default)]
pub struct PolicyCache {
    solved: Arc<Mutex<Solved>>,
}

/// What the cache holds.
#[derive(Default)]
struct Solved {
    /// The deadline model's tables, by the bits of their target.
    deadline: HashMap<u64, Arc<PolicyTables>>,
    /// Repair policies, by the model they were solved for.
    repair: HashMap<RepairKey, RepairPolicy>,
}

/// A [`RepairModel`] as a map key (its probabilities by their bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RepairKey {
    stages: u8,
    rates: [u64; 3],
    target: u64,
    max_copies: u8,
    max_first_copies: u8,
}

impl From<&RepairModel> for RepairKey {
    fn from(m: &RepairModel) -> Self {
        Self {
            stages: m.stages,
            rates: [m.loss, m.repeat_loss, m.ack_loss].map(f64::to_bits),
            target: m.target.to_bits(),
            max_copies: m.max_copies,
            max_first_copies: m.max_first_copies,
        }
    }
}

impl fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (targets, repair) = self
            .solved
            .lock()
            .map_or((0, 0), |s| (s.deadline.len(), s.repair.len()));
        f.debug_struct("PolicyCache")
            .field("deadline_targets", &targets)
            .field("repair_policies", &repair)
            .finish()
    }
}

impl PolicyCache {
    fn solved(&self) -> std::sync::MutexGuard<'_, Solved> {
        self.solved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The deadline tables for `target`, solved cells and all; `None` for a target the tables
    /// refuse.
    fn deadline_tables(&self, target: f64) -> Option<Arc<PolicyTables>> {
        let mut solved = self.solved();
        let key = target.to_bits();
        if let Some(t) = solved.deadline.get(&key) {
            return Some(t.clone());
        }
        let t = Arc::new(PolicyTables::new(target).ok()?);
        solved.deadline.insert(key, t.clone());
        Some(t)
    }

    /// Shards to send in `stage` of `stages` for a `k`-shard deadline message with `missing`
    /// shards missing, at loss rate `loss`, for success rate `target` (`missing` for a target
    /// the tables refuse).
    pub(crate) fn deadline_send(
        &self,
        (k, stages): (u8, u16),
        loss: f64,
        target: f64,
        stage: u16,
        missing: u8,
    ) -> u16 {
        match self.deadline_tables(target) {
            Some(t) => t.lookup(u16::from(k), stages, loss, stage, u16::from(missing)),
            None => u16::from(missing),
        }
    }

    /// The repair policy of `model` ([`RepairPolicy::solve`]), solved on first use.
    ///
    /// # Errors
    /// The model's [`RepairError`] when a parameter is out of range (not cached).
    pub(crate) fn repair(&self, model: &RepairModel) -> Result<RepairPolicy, RepairError> {
        let key = RepairKey::from(model);
        if let Some(p) = self.solved().repair.get(&key) {
            return Ok(*p);
        }
        let policy = RepairPolicy::solve(model)?;
        let mut solved = self.solved();
        if solved.repair.len() >= MAX_REPAIR_POLICIES {
            solved.repair.clear();
        }
        solved.repair.insert(key, policy);
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_example_through_the_send_path() {
        // k = 4, 2% loss, two stages, 99.9%: 4 in stage 1, q + 1 in stage 2
        let cache = PolicyCache::default();
        assert_eq!(cache.deadline_send((4, 2), 0.02, 0.999, 1, 4), 4);
        for q in 1..=4 {
            assert_eq!(
                cache.deadline_send((4, 2), 0.02, 0.999, 2, q),
                u16::from(q) + 1
            );
        }
        // a target the tables refuse sends what is missing
        assert_eq!(cache.deadline_send((4, 2), 0.02, 1.0, 2, 3), 3);
    }

    #[test]
    fn clones_share_tables() {
        let a = PolicyCache::default();
        let b = a.clone();
        a.deadline_send((4, 2), 0.02, 0.999, 1, 4);
        let t1 = a.deadline_tables(0.999).expect("tables");
        let t2 = b.deadline_tables(0.999).expect("tables");
        assert!(Arc::ptr_eq(&t1, &t2));
        assert!(!Arc::ptr_eq(
            &t1,
            &PolicyCache::default()
                .deadline_tables(0.999)
                .expect("tables")
        ));
    }

    fn repair_model(loss: f64) -> RepairModel {
        RepairModel {
            stages: 2,
            loss,
            repeat_loss: loss,
            ack_loss: loss,
            target: 0.999,
            max_copies: 3,
            max_first_copies: 1,
        }
    }

    #[test]
    fn repair_policies_are_solved_once_and_shared() {
        let a = PolicyCache::default();
        let b = a.clone();
        let m = repair_model(0.05);
        let p = a.repair(&m).expect("valid");
        assert_eq!(p, RepairPolicy::solve(&m).expect("valid"));
        assert_eq!(p.plan(), &[1, 2]);
        assert_eq!(b.solved().repair.len(), 1);
        assert_eq!(b.repair(&m), Ok(p));
        assert_eq!(
            a.repair(&repair_model(0.02)).expect("valid").plan(),
            &[1, 1]
        );
        assert_eq!(b.solved().repair.len(), 2);
        assert!(format!("{a:?}").contains("repair_policies: 2"));
    }

    #[test]
    fn invalid_repair_models_are_errors_and_not_kept() {
        let cache = PolicyCache::default();
        let bad = RepairModel {
            stages: 0,
            ..repair_model(0.05)
        };
        assert_eq!(cache.repair(&bad), Err(RepairError::Stages(0)));
        assert!(cache.solved().repair.is_empty());
    }

    #[test]
    fn a_full_repair_map_starts_over() {
        let cache = PolicyCache::default();
        for i in 0..MAX_REPAIR_POLICIES {
            let loss = i as f64 / MAX_REPAIR_POLICIES as f64 * 0.5;
            cache.repair(&repair_model(loss)).expect("valid");
        }
        assert_eq!(cache.solved().repair.len(), MAX_REPAIR_POLICIES);
        let m = repair_model(0.6);
        assert_eq!(cache.repair(&m), RepairPolicy::solve(&m));
        assert_eq!(cache.solved().repair.len(), 1);
    }
}
