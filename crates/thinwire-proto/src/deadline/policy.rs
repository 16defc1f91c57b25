//! The policy lookup on the send path: one set of [`PolicyTables`] per target success rate,
//! shared by every connection of the process.
//!
//! Policies depend only on (packets, stages, loss bucket, target), so memoising them globally
//! is invisible to behaviour (deterministic) and lets ten thousand connections share one copy.
//! A table cell is solved on its first use (milliseconds) and is an O(1) array read after.

use std::sync::{Arc, Mutex, OnceLock};

use crate::fec::PolicyTables;

type Cache = Mutex<Vec<(u64, Arc<PolicyTables>)>>;

fn tables(target: f64) -> Option<Arc<PolicyTables>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    let key = target.to_bits();
    if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
        return Some(t.clone());
    }
    let t = Arc::new(PolicyTables::new(target).ok()?);
    cache.push((key, t.clone()));
    Some(t)
}

/// Shards to send in `stage` of `stages` for a `k`-shard message with `missing` shards missing.
pub(super) fn send_count(
    k: u8,
    stages: u16,
    loss: f64,
    target: f64,
    stage: u16,
    missing: u8,
) -> u16 {
    match tables(target) {
        Some(t) => t.lookup(u16::from(k), stages, loss, stage, u16::from(missing)),
        None => u16::from(missing),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn published_example_through_the_send_path() {
        // k = 4, 2% loss, two stages, 99.9%: 4 in stage 1, q + 1 in stage 2
        assert_eq!(super::send_count(4, 2, 0.02, 0.999, 1, 4), 4);
        for q in 1..=4 {
            assert_eq!(super::send_count(4, 2, 0.02, 0.999, 2, q), u16::from(q) + 1);
        }
    }
}
