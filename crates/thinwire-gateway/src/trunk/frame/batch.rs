//! Batch frames: several Data frames in one trunk message, so that a push of many players'
//! small reliable messages costs the trunk connection one message frame (about 3 bytes of
//! core framing) instead of one per player message.
//!
//! ```text
//! Batch  0x40 + count − 2 (count 2..=64: type bytes 0x40..=0x7e)
//!             (count − 1) × (len:u8 (1..=255) · a Data frame of exactly len bytes)
//!             a Data frame: every byte left
//! ```
//! Entries are Data frames in their usual forms (short or long), without a deadline. The count,
//! in the type byte, says which entry is the last, the one without a length: a length byte
//! could not say it itself, since every value it takes is also the type byte of some Data
//! frame. A Batch is checked whole when parsed (all or nothing); [`Batch::entries`] then walks
//! the checked bytes without allocating.

use super::{data_frame, Data};
use crate::trunk::error::FrameError;

/// Type byte of a Batch of 2 entries; one of `count` entries has `BATCH + count - 2`.
pub const BATCH: u8 = 0x40;
/// Most entries of one Batch.
pub const MAX_BATCH: usize = 64;

/// Whether `t` is the type byte of a Batch.
pub(super) fn is_batch(t: u8) -> bool {
    (BATCH..BATCH + MAX_BATCH as u8 - 1).contains(&t)
}

/// The type byte of a Batch of `count` entries (2 to [`MAX_BATCH`]).
fn batch_type(count: u8) -> u8 {
    BATCH + count - 2
}
/// Longest entry (a Data frame with its header) of a Batch but its last.
pub const MAX_ENTRY: usize = 255;

/// A Batch frame: at least 2 and at most [`MAX_BATCH`] Data frames without a deadline, all
/// checked when it was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    count: u8,
    /// The entries' bytes, after the type byte.
    entries: &'a [u8],
}

/// Splits the next entry off `rest`: the last one is everything left, the others carry their
/// length first.
fn split(rest: &[u8], last: bool) -> Result<(&[u8], &[u8]), FrameError> {
    if last {
        return Ok((rest, &[]));
    }
    let (&len, tail) = rest.split_first().ok_or(FrameError::Truncated)?;
    if len == 0 {
        return Err(FrameError::BatchEntry);
    }
    if tail.len() < usize::from(len) {
        return Err(FrameError::Truncated);
    }
    Ok(tail.split_at(usize::from(len)))
}

impl<'a> Batch<'a> {
    /// Checks a Batch of type byte `ty` ([`BATCH`] + count − 2) whose bytes after it are
    /// `entries`: every length, and that every entry is a Data frame without a deadline.
    pub fn parse(ty: u8, entries: &'a [u8]) -> Result<Self, FrameError> {
        if !is_batch(ty) {
            return Err(FrameError::UnknownType(ty));
        }
        let count = ty - BATCH + 2;
        let mut rest = entries;
        for left in (1..=count).rev() {
            let (entry, tail) = split(rest, left == 1)?;
            match data_frame(entry) {
                Ok(d) if d.deadline_us.is_none() => {}
                _ => return Err(FrameError::BatchEntry),
            }
            rest = tail;
        }
        Ok(Self { count, entries })
    }

    /// How many entries it has (2 to [`MAX_BATCH`]).
    pub fn count(&self) -> usize {
        usize::from(self.count)
    }

    /// The entries in order, each as its bytes (a Data frame on their own) and parsed.
    pub fn entries(&self) -> BatchEntries<'a> {
        BatchEntries {
            left: self.count,
            rest: self.entries,
        }
    }

    /// Appends the frame's bytes (as they were parsed).
    pub(super) fn emit(&self, out: &mut Vec<u8>) {
        out.push(batch_type(self.count));
        out.extend_from_slice(self.entries);
    }
}

/// The entries of a [`Batch`], from [`Batch::entries`].
#[derive(Debug, Clone)]
pub struct BatchEntries<'a> {
    left: u8,
    rest: &'a [u8],
}

impl<'a> Iterator for BatchEntries<'a> {
    /// An entry's bytes (a Data frame on their own) and the frame.
    type Item = (&'a [u8], Data<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        // the batch was checked when parsed: neither can fail
        let (entry, rest) = split(self.rest, self.left == 1).ok()?;
        let data = data_frame(entry).ok()?;
        self.left -= 1;
        self.rest = rest;
        Some((entry, data))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::from(self.left), Some(usize::from(self.left)))
    }
}

impl ExactSizeIterator for BatchEntries<'_> {}

/// Builds the trunk message for a run of Data frames: the frame alone for one, a Batch for
/// more (the sender's side).
#[derive(Debug, Clone)]
pub struct BatchWriter {
    /// Type, then every entry with a length byte (the last one's is removed at the end).
    buf: Vec<u8>,
    /// Where the last entry's length byte is.
    last: usize,
    count: usize,
}

impl Default for BatchWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl BatchWriter {
    /// No entry yet (nothing allocated until the first).
    pub fn new() -> Self {
        Self {
            buf: Vec::new(),
            last: 1,
            count: 0,
        }
    }

    /// Entries so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Length of the message [`finish`](Self::finish) would return with one more entry of
    /// `len` bytes.
    pub fn len_with(&self, len: usize) -> usize {
        match self.count {
            0 => len,
            _ => self.buf.len() + len,
        }
    }

    /// Adds `d` as the next entry; `false` (nothing added) if it has a deadline, is longer
    /// than [`MAX_ENTRY`] bytes, or the batch has [`MAX_BATCH`] entries already.
    pub fn push(&mut self, d: &Data<'_>) -> bool {
        let len = d.encoded_len();
        if self.count >= MAX_BATCH || len > MAX_ENTRY || d.deadline_us.is_some() {
            return false;
        }
        if self.buf.is_empty() {
            // room for a run of three such entries before the first growth
            self.buf.reserve(1 + 3 * (1 + len));
            self.buf.push(BATCH);
        }
        self.last = self.buf.len();
        self.buf.push(len as u8);
        d.emit(&mut self.buf);
        self.count += 1;
        true
    }

    /// The trunk message: empty without entries, the Data frame alone for one, a Batch for
    /// more.
    pub fn finish(mut self) -> Vec<u8> {
        match self.count {
            0 => Vec::new(),
            1 => {
                // the Data frame alone, in the same buffer
                self.buf.drain(..=self.last);
                self.buf
            }
            n => {
                self.buf[0] = batch_type(n as u8);
                self.buf.remove(self.last);
                self.buf
            }
        }
    }
}
