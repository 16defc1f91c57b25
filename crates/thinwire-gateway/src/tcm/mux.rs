//! The multiplexer (local side): compress, gather per period, emit bundles or natives.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::bundle::{BUNDLE_VERSION, MAX_RECORD};
use super::compress::{Compressor, RecordKind};
use super::config::{BufferPolicy, TcmConfig};
use super::error::TcmError;
use super::stats::TcmStats;

/// What [`Multiplexer::poll_output`] wrote into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A bundle, for the trunk (`send_bundle`).
    Bundle,
    /// A native packet, byte for byte as pushed, for the ordinary network.
    Native,
}

#[derive(Debug)]
struct Item {
    arrived: Instant,
    /// The record (length prefix included), then the native packet.
    data: Vec<u8>,
    split: usize,
    kind: RecordKind,
    batch: u64,
    native: bool,
}

/// The local TCM side. Call order: [`push`](Self::push) each native packet and
/// [`handle_timeout`](Self::handle_timeout) at [`poll_timeout`](Self::poll_timeout); after
/// either, call [`poll_output`](Self::poll_output) until it returns `None`.
#[derive(Debug)]
pub struct Multiplexer {
    config: TcmConfig,
    comp: Compressor,
    queue: VecDeque<Item>,
    spare: Vec<Vec<u8>>,
    origin: Option<Instant>,
    period_end: Option<Instant>,
    open_batch: u64,
    open_count: usize,
    open_bytes: usize,
    held_bytes: usize,
    stats: TcmStats,
}

impl Multiplexer {
    /// A multiplexer with a validated configuration.
    pub fn new(config: TcmConfig) -> Result<Multiplexer, TcmError> {
        config.validate()?;
        Ok(Multiplexer {
            comp: Compressor::new(config.max_contexts, config.refresh_every),
            config,
            queue: VecDeque::new(),
            spare: Vec::new(),
            origin: None,
            period_end: None,
            open_batch: 0,
            open_count: 0,
            open_bytes: 1,
            held_bytes: 0,
            stats: TcmStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TcmConfig {
        &self.config
    }

    /// Counters so far.
    pub fn stats(&self) -> &TcmStats {
        &self.stats
    }

    /// Takes a native IP packet that arrived at `now`.
    ///
    /// A packet the buffer policy refuses is dropped and counted (`buffer_drops`), not an error.
    pub fn push(&mut self, now: Instant, packet: &[u8]) -> Result<(), TcmError> {
        if packet.is_empty() {
            return Err(TcmError::EmptyPacket);
        }
        if packet.len() > MAX_RECORD - 3 {
            return Err(TcmError::PacketTooLong(packet.len()));
        }
        self.advance(now);
        self.stats.packets_in += 1;
        self.stats.bytes_in += packet.len() as u64;
        if let BufferPolicy::Large { max_bytes } = self.config.buffer {
            if self.held_bytes + packet.len() > max_bytes {
                self.stats.buffer_drops += 1;
                return Ok(());
            }
        }
        let mut data = self.spare.pop().unwrap_or_default();
        let kind = self.comp.compress(packet, &mut data);
        let split = data.len();
        data.extend_from_slice(packet);
        self.held_bytes += packet.len();
        if 1 + split > self.config.mtu {
            // Too large for any bundle: it goes native in a batch of its own.
            self.close_open();
            self.enqueue(now, data, split, kind);
            self.close_open();
            self.mark_native_back();
            return Ok(());
        }
        if self.open_count > 0 && self.open_bytes + split > self.config.mtu {
            self.close_open(); // flush early: the bundle is full
        }
        self.enqueue(now, data, split, kind);
        if self.period_end.is_none() {
            let origin = *self.origin.get_or_insert(now);
            let t = self.config.period.as_nanos();
            let n = now.duration_since(origin).as_nanos() / t + 1;
            self.period_end = Some(origin + Duration::from_nanos((n * t) as u64));
        }
        Ok(())
    }

    /// When [`handle_timeout`](Self::handle_timeout) is due: the end of the current period.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.period_end
    }

    /// Closes the period if it has ended and applies the time-limited buffer policy.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// Writes the next bundle or native packet into `buf` (cleared first).
    pub fn poll_output(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Output> {
        self.advance(now);
        let front = self.queue.front()?;
        if front.batch >= self.open_batch {
            return None;
        }
        buf.clear();
        if front.native {
            let item = self.queue.pop_front()?;
            buf.extend_from_slice(&item.data[item.split..]);
            self.stats.natives_out += 1;
            self.stats.native_bytes_out += buf.len() as u64;
            self.retire(now, item);
            return Some(Output::Native);
        }
        let batch = front.batch;
        buf.push(BUNDLE_VERSION);
        while let Some(item) = self.queue.pop_front_when(|i| i.batch == batch && !i.native) {
            buf.extend_from_slice(&item.data[..item.split]);
            match item.kind {
                RecordKind::Compressed => self.stats.compressed_records += 1,
                RecordKind::Full { .. } => self.stats.full_records += 1,
                RecordKind::Uncompressed => self.stats.uncompressed_records += 1,
            }
            self.retire(now, item);
        }
        self.stats.bundles_out += 1;
        self.stats.bundle_bytes_out += buf.len() as u64;
        Some(Output::Bundle)
    }

    fn enqueue(&mut self, now: Instant, data: Vec<u8>, split: usize, kind: RecordKind) {
        self.queue.push_back(Item {
            arrived: now,
            data,
            split,
            kind,
            batch: self.open_batch,
            native: false,
        });
        self.open_count += 1;
        self.open_bytes += split;
    }

    /// Marks the newest item native; a FULL that goes native leaves the remote's context stale.
    fn mark_native_back(&mut self) {
        if let Some(item) = self.queue.back_mut() {
            item.native = true;
            if let RecordKind::Full { ctx } = item.kind {
                self.comp.force_full(ctx);
            }
        }
    }

    /// Ends the open batch: it becomes ready for [`poll_output`](Self::poll_output).
    fn close_open(&mut self) {
        if self.open_count == 0 {
            return;
        }
        if self.open_count == 1 && self.config.single_native {
            self.mark_native_back();
        }
        self.open_batch += 1;
        self.open_count = 0;
        self.open_bytes = 1;
    }

    fn advance(&mut self, now: Instant) {
        if self.period_end.is_some_and(|end| end <= now) {
            self.close_open();
            self.period_end = None;
        }
        if let BufferPolicy::TimeLimited(limit) = self.config.buffer {
            while let Some(item) = self
                .queue
                .pop_front_when(|i| now.saturating_duration_since(i.arrived) > limit)
            {
                self.stats.buffer_drops += 1;
                if item.batch == self.open_batch {
                    self.open_count -= 1;
                    self.open_bytes -= item.split;
                }
                if let RecordKind::Full { ctx } = item.kind {
                    self.comp.force_full(ctx);
                }
                self.recycle(item);
            }
            if self.open_count == 0 && self.queue.is_empty() {
                self.period_end = None;
            }
        }
    }

    fn retire(&mut self, now: Instant, item: Item) {
        let held = now.saturating_duration_since(item.arrived);
        self.stats.hold_total += held;
        self.stats.hold_max = self.stats.hold_max.max(held);
        self.recycle(item);
    }

    fn recycle(&mut self, mut item: Item) {
        self.held_bytes -= item.data.len() - item.split;
        if self.spare.len() < 256 {
            item.data.clear();
            self.spare.push(item.data);
        }
    }
}

/// `VecDeque::pop_front_when` for the MSRV.
trait PopFrontIf<T> {
    fn pop_front_when(&mut self, f: impl FnOnce(&T) -> bool) -> Option<T>;
}

impl<T> PopFrontIf<T> for VecDeque<T> {
    fn pop_front_when(&mut self, f: impl FnOnce(&T) -> bool) -> Option<T> {
        if f(self.front()?) {
            self.pop_front()
        } else {
            None
        }
    }
}
