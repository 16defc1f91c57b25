//! The policy lookup on the send path: one set of [`PolicyTables`] per target success rate, in a
//! [`PolicyCache`] that the owner of the endpoint holds and may share between endpoints.
//!
//! Policies depend only on (packets, stages, loss bucket, target), so sharing them is invisible
//! to behaviour (deterministic) and lets ten thousand connections share one copy. A table cell is
//! solved on its first use (milliseconds) and is an O(1) array read after.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::fec::PolicyTables;

/// The deadline policy tables of one or more endpoints, one set per target success rate, solved
/// lazily. Cheap to clone: clones share the same tables.
///
/// Every endpoint gets a fresh cache from [`EndpointConfig::new`](crate::EndpointConfig::new);
/// give endpoints the same cache (as a simulator running many of them does) to solve each
/// policy once.
#[derive(Clone, Default)]
pub struct PolicyCache {
    tables: Arc<Mutex<Targets>>,
}

/// The tables solved so far, by the bits of their target.
type Targets = Vec<(u64, Arc<PolicyTables>)>;

impl fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let targets = self.tables.lock().map_or(0, |t| t.len());
        f.debug_struct("PolicyCache")
            .field("targets", &targets)
            .finish()
    }
}

impl PolicyCache {
    /// The tables for `target`, solved cells and all; `None` for a target the tables refuse.
    fn tables(&self, target: f64) -> Option<Arc<PolicyTables>> {
        let mut cache = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let key = target.to_bits();
        if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
            return Some(t.clone());
        }
        let t = Arc::new(PolicyTables::new(target).ok()?);
        cache.push((key, t.clone()));
        Some(t)
    }

    /// Shards to send in `stage` of `stages` for a `k`-shard message with `missing` shards
    /// missing, at loss rate `loss`, for success rate `target`.
    pub(super) fn send_count(
        &self,
        (k, stages): (u8, u16),
        loss: f64,
        target: f64,
        stage: u16,
        missing: u8,
    ) -> u16 {
        match self.tables(target) {
            Some(t) => t.lookup(u16::from(k), stages, loss, stage, u16::from(missing)),
            None => u16::from(missing),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PolicyCache;

    #[test]
    fn published_example_through_the_send_path() {
        // k = 4, 2% loss, two stages, 99.9%: 4 in stage 1, q + 1 in stage 2
        let cache = PolicyCache::default();
        assert_eq!(cache.send_count((4, 2), 0.02, 0.999, 1, 4), 4);
        for q in 1..=4 {
            assert_eq!(
                cache.send_count((4, 2), 0.02, 0.999, 2, q),
                u16::from(q) + 1
            );
        }
    }

    #[test]
    fn clones_share_tables() {
        let a = PolicyCache::default();
        let b = a.clone();
        a.send_count((4, 2), 0.02, 0.999, 1, 4);
        let t1 = a.tables(0.999).expect("tables");
        let t2 = b.tables(0.999).expect("tables");
        assert!(std::sync::Arc::ptr_eq(&t1, &t2));
        assert!(!std::sync::Arc::ptr_eq(
            &t1,
            &PolicyCache::default().tables(0.999).expect("tables")
        ));
    }
}
