//! Precomputed policies for every `(k, I, loss bucket)`, with an O(1) lookup for the send path.
//!
//! [`PolicyTables`] covers `k` in `1..=64`, `I` in `1..=100` and loss quantised to 0 %, 1 %,
//! ..., 50 % (51 buckets), for one target. Trivial cells (where sending exactly what is missing
//! meets the target) are not stored: the smallest stage count at which a `(k, bucket)` becomes
//! trivial is known in closed form (`1 - (1 - p^I)^k <= 1 - target`), and every larger stage
//! count is trivial too. The other cells are solved lazily, each on its first lookup (once, even
//! under concurrent lookups), or all at once with [`PolicyTables::build_all`]. For several
//! targets, build one `PolicyTables` per target.

use std::sync::OnceLock;

use super::model::trivial_miss;
use super::policy::{Policy, PolicyError, PolicyParams, MAX_LOSS, MAX_PACKETS, MAX_STAGES};
use crate::policy::{is_target, miss_budget};

/// Number of loss buckets: 0 %, 1 %, ..., 50 %.
pub(crate) const LOSS_BUCKETS: u8 = 51;

/// The loss bucket for an estimate, rounded *up* to the next whole percent so the table used is
/// never more optimistic than the estimate: 0.0 -> 0, 0.001 -> 1, 0.02 -> 2, 0.0201 -> 3.
///
/// Estimates above 50 % (and NaN) use the 50 % bucket; negative estimates use bucket 0.
pub(crate) fn loss_bucket(loss: f64) -> u8 {
    if loss.is_nan() {
        return LOSS_BUCKETS - 1;
    }
    // The small slack keeps exact percentages (0.07 * 100 = 7.000000000000001) in their bucket.
    let percent = (loss * 100.0 - 1e-9).ceil();
    if percent <= 0.0 {
        0
    } else if percent >= f64::from(LOSS_BUCKETS - 1) {
        LOSS_BUCKETS - 1
    } else {
        percent as u8
    }
}

/// The loss probability a bucket stands for (`bucket / 100`, at most 0.5).
pub(crate) fn bucket_loss(bucket: u8) -> f64 {
    (f64::from(bucket.min(LOSS_BUCKETS - 1)) / 100.0).min(MAX_LOSS)
}

/// One stored (non-trivial) policy.
#[derive(Debug)]
struct Cell {
    /// `send - missing` per state, `(stage - 1) * k + (missing - 1)`.
    extra: Box<[u8]>,
    expected_packets: f64,
    miss_probability: f64,
    meets_target: bool,
}

/// What the tables hold for one `(k, I, loss bucket)`; see [`PolicyTables::entry`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TableEntry {
    /// Sending exactly what is missing meets the target; nothing is stored.
    Trivial,
    /// A stored policy.
    Stored {
        /// Expected packets per message under the model.
        expected_packets: f64,
        /// Miss probability under the model.
        miss_probability: f64,
        /// False when the target is unreachable within the per-stage cap; the stored policy is
        /// then the most reliable one (see [`Policy::solve_best_effort`]).
        meets_target: bool,
    },
}

/// Counts and sizes after [`PolicyTables::build_all`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildReport {
    /// `(k, I, bucket)` combinations covered: 64 * 100 * 51.
    pub cells: usize,
    /// Combinations whose policy is trivial (not stored).
    pub trivial: usize,
    /// Stored policies.
    pub stored: usize,
    /// Stored policies that are best effort (target unreachable within the cap).
    pub unreachable: usize,
    /// Bytes of stored actions (one per state of every stored policy).
    pub table_bytes: usize,
    /// All heap and inline bytes of the tables, index included.
    pub total_bytes: usize,
}

/// Decision policies for every `(k, I, loss bucket)` and one target, with an O(1) lookup.
///
/// ```
/// use thinwire_proto::policy::deadline::PolicyTables;
/// let tables = PolicyTables::new(0.999).unwrap();
/// // 4-packet message, two stages, 2 % loss: stage 1 sends the 4 data packets...
/// assert_eq!(tables.lookup(4, 2, 0.02, 1, 4), 4);
/// // ...and stage 2 adds one parity packet to whatever is missing.
/// assert_eq!(tables.lookup(4, 2, 0.02, 2, 1), 2);
/// ```
#[derive(Debug)]
pub struct PolicyTables {
    target: f64,
    /// Per `(k, bucket)`: the smallest stage count whose trivial policy meets the target
    /// (`MAX_STAGES + 1` if none), so stage counts `1..first_trivial` are stored.
    first_trivial: Box<[u8]>,
    /// Per `(k, bucket)`: index of its stage-count-1 cell in `cells`.
    offsets: Box<[u32]>,
    cells: Box<[OnceLock<Cell>]>,
}

fn block(packets: u16, bucket: u8) -> usize {
    usize::from(packets - 1) * usize::from(LOSS_BUCKETS) + usize::from(bucket)
}

impl PolicyTables {
    /// Sets up empty (lazily filled) tables for `target`. Cheap: only the index is computed.
    ///
    /// # Errors
    /// [`PolicyError::Target`] unless `0 < target < 1`.
    pub fn new(target: f64) -> Result<Self, PolicyError> {
        if !is_target(target) {
            return Err(PolicyError::Target(target));
        }
        let budget = miss_budget(target);
        let blocks = usize::from(MAX_PACKETS) * usize::from(LOSS_BUCKETS);
        let mut first_trivial = Vec::with_capacity(blocks);
        let mut offsets = Vec::with_capacity(blocks);
        let mut total = 0u32;
        for packets in 1..=MAX_PACKETS {
            for bucket in 0..LOSS_BUCKETS {
                let loss = bucket_loss(bucket);
                let first = (1..=MAX_STAGES)
                    .find(|&stages| trivial_miss(packets, stages, loss) <= budget)
                    .unwrap_or(MAX_STAGES + 1);
                // first <= 101 fits in u8.
                first_trivial.push(u8::try_from(first).unwrap_or(u8::MAX));
                offsets.push(total);
                total += u32::from(first - 1);
            }
        }
        let cells = (0..total).map(|_| OnceLock::new()).collect();
        Ok(Self {
            target,
            first_trivial: first_trivial.into_boxed_slice(),
            offsets: offsets.into_boxed_slice(),
            cells,
        })
    }

    /// One set of (lazily filled) tables per target, in the order given.
    ///
    /// # Errors
    /// [`PolicyError::Target`] for the first target outside `(0, 1)`.
    pub fn for_targets(targets: &[f64]) -> Result<Vec<Self>, PolicyError> {
        targets.iter().map(|&target| Self::new(target)).collect()
    }

    /// The target every policy in these tables is solved for.
    pub fn target(&self) -> f64 {
        self.target
    }

    /// Where `(packets, stages, bucket)` lives in `cells`, or `None` if trivial. Inputs must be
    /// in range.
    fn cell_index(&self, packets: u16, stages: u16, bucket: u8) -> Option<usize> {
        let b = block(packets, bucket);
        let first = u16::from(*self.first_trivial.get(b)?);
        if stages >= first {
            return None;
        }
        let offset = usize::try_from(*self.offsets.get(b)?).ok()?;
        Some(offset + usize::from(stages - 1))
    }

    fn in_range(packets: u16, stages: u16) -> bool {
        (1..=MAX_PACKETS).contains(&packets) && (1..=MAX_STAGES).contains(&stages)
    }

    /// The stored cell, solving it on first use.
    fn cell(&self, index: usize, packets: u16, stages: u16, bucket: u8) -> Option<&Cell> {
        let slot = self.cells.get(index)?;
        Some(slot.get_or_init(|| {
            let params = PolicyParams {
                packets,
                stages,
                loss: bucket_loss(bucket),
                target: self.target,
            };
            match Policy::solve_best_effort(params) {
                Ok(policy) => Cell {
                    expected_packets: policy.expected_packets(),
                    miss_probability: policy.miss_probability(),
                    meets_target: policy.meets_target(),
                    extra: policy.into_extra(),
                },
                // Cannot happen (the caller checked the ranges); an empty cell reads as trivial.
                Err(_) => Cell {
                    extra: Box::new([]),
                    expected_packets: f64::NAN,
                    miss_probability: f64::NAN,
                    meets_target: false,
                },
            }
        }))
    }

    /// Packets to send in `stage` (1-based) of a `stages`-stage deadline for a `packets`-packet
    /// message with `missing` still missing, given the current loss estimate.
    ///
    /// O(1) once the cell is built (two index reads and an array read); the first lookup of a
    /// non-trivial `(packets, stages, bucket)` solves and stores it (milliseconds), unless
    /// [`PolicyTables::build_all`] ran. `loss` is rounded up to the next percent.
    ///
    /// Never panics. Outside the tables it falls back to plain retransmission (`missing`):
    /// `packets` outside `1..=64`, `missing > packets`, `stage` outside `1..=stages`; and for
    /// `stages > 100` the trivial policy is what the tables would hold anyway (at 100 stages it
    /// meets any target below 1). `missing == 0` gives 0.
    pub fn lookup(&self, packets: u16, stages: u16, loss: f64, stage: u16, missing: u16) -> u16 {
        if missing == 0
            || missing > packets
            || stage == 0
            || stage > stages
            || !Self::in_range(packets, stages)
        {
            return missing;
        }
        let bucket = loss_bucket(loss);
        let Some(index) = self.cell_index(packets, stages, bucket) else {
            return missing;
        };
        let extra = self
            .cell(index, packets, stages, bucket)
            .and_then(|cell| {
                let i = usize::from(stage - 1) * usize::from(packets) + usize::from(missing - 1);
                cell.extra.get(i).copied()
            })
            .unwrap_or(0);
        missing + u16::from(extra)
    }

    /// What the tables hold for `(packets, stages, bucket)` (solving it if needed), or `None`
    /// if the arguments are outside the tables.
    pub fn entry(&self, packets: u16, stages: u16, bucket: u8) -> Option<TableEntry> {
        if !Self::in_range(packets, stages) || bucket >= LOSS_BUCKETS {
            return None;
        }
        let Some(index) = self.cell_index(packets, stages, bucket) else {
            return Some(TableEntry::Trivial);
        };
        let cell = self.cell(index, packets, stages, bucket)?;
        Some(TableEntry::Stored {
            expected_packets: cell.expected_packets,
            miss_probability: cell.miss_probability,
            meets_target: cell.meets_target,
        })
    }

    /// Solves every non-trivial cell not yet built (single-threaded) and reports the totals.
    pub fn build_all(&self) -> BuildReport {
        for packets in 1..=MAX_PACKETS {
            self.build_packets(packets);
        }
        self.report()
    }

    /// Solves every non-trivial cell for one message size (all stage counts and buckets).
    /// Does nothing for `packets` outside `1..=64`.
    pub fn build_packets(&self, packets: u16) {
        if !(1..=MAX_PACKETS).contains(&packets) {
            return;
        }
        for bucket in 0..LOSS_BUCKETS {
            for stages in 1..=MAX_STAGES {
                match self.cell_index(packets, stages, bucket) {
                    Some(index) => {
                        self.cell(index, packets, stages, bucket);
                    }
                    None => break,
                }
            }
        }
    }

    /// Number of non-trivial cells (built or not).
    pub fn non_trivial_cells(&self) -> usize {
        self.cells.len()
    }

    /// Counts and sizes of what has been built so far.
    pub fn report(&self) -> BuildReport {
        let cells = usize::from(MAX_PACKETS) * usize::from(MAX_STAGES) * usize::from(LOSS_BUCKETS);
        let mut report = BuildReport {
            cells,
            trivial: cells - self.cells.len(),
            stored: 0,
            unreachable: 0,
            table_bytes: 0,
            total_bytes: 0,
        };
        for cell in self.cells.iter().filter_map(OnceLock::get) {
            report.stored += 1;
            report.unreachable += usize::from(!cell.meets_target);
            report.table_bytes += cell.extra.len();
        }
        report.total_bytes = self.memory_bytes();
        report
    }

    /// Bytes used by the tables now: the index, one slot per non-trivial cell, and the stored
    /// actions of the cells built so far.
    pub fn memory_bytes(&self) -> usize {
        let stored: usize = self
            .cells
            .iter()
            .filter_map(OnceLock::get)
            .map(|cell| cell.extra.len())
            .sum();
        std::mem::size_of::<Self>()
            + self.first_trivial.len()
            + std::mem::size_of_val(&*self.offsets)
            + std::mem::size_of_val(&*self.cells)
            + stored
    }
}
