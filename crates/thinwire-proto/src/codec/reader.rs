//! A bounds-checked big-endian cursor over a byte slice.

use std::fmt;
use std::marker::PhantomData;

/// The input ended before a field was complete: the one way a [`Reader`] read fails.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
#[error("truncated input")]
pub struct Truncated;

/// A read cursor over a borrowed byte slice.
///
/// Every read is length-checked: reading past the end returns `E::from(`[`Truncated`]`)` and
/// leaves the cursor where it was. Fixed-size integers are big-endian.
///
/// `E` is the error type reads return, so a decoder gets its own error from `?`; the core's
/// wire format reads with its `DecodeError`, the gateway's trunk frames with their
/// `FrameError`.
pub struct Reader<'a, E = Truncated> {
    buf: &'a [u8],
    pos: usize,
    error: PhantomData<fn() -> E>,
}

impl<E> Clone for Reader<'_, E> {
    fn clone(&self) -> Self {
        Reader {
            buf: self.buf,
            pos: self.pos,
            error: PhantomData,
        }
    }
}

impl<E> fmt::Debug for Reader<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("buf", &self.buf)
            .field("pos", &self.pos)
            .finish()
    }
}

impl<'a, E: From<Truncated>> Reader<'a, E> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            error: PhantomData,
        }
    }

    /// Number of bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Number of bytes read so far (offset of the cursor in the slice).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The unread bytes, without consuming them.
    pub fn peek_rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// The next byte, without consuming it.
    pub fn peek_u8(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consume the next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], E> {
        if n > self.remaining() {
            return Err(Truncated.into());
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Consume every remaining byte.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Read exactly `N` bytes into an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], E> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Consume one byte.
    pub fn u8(&mut self) -> Result<u8, E> {
        Ok(self.array::<1>()?[0])
    }

    /// Consume a big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, E> {
        self.array().map(u16::from_be_bytes)
    }

    /// Consume a big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, E> {
        self.array().map(u32::from_be_bytes)
    }

    /// Consume a big-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, E> {
        self.array().map(u64::from_be_bytes)
    }

    /// Consume an unsigned big-endian integer of `n` bytes (`n` in `0..=8`).
    ///
    /// `n > 8` returns [`Truncated`] without consuming anything (no such field exists in
    /// the protocol).
    pub fn uint_n(&mut self, n: usize) -> Result<u64, E> {
        if n > 8 {
            return Err(Truncated.into());
        }
        Ok(self
            .bytes(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Consume a QUIC variable-length integer of any length form (see
    /// [`varint`](super::varint)).
    pub fn varint(&mut self) -> Result<u64, E> {
        let first = self.peek_u8().ok_or(Truncated)?;
        let len = 1usize << (first >> 6);
        let raw = self.uint_n(len)?;
        // Strip the two length bits from the top of the `len`-byte value.
        Ok(raw & (u64::MAX >> (64 - (8 * len as u32 - 2))))
    }
}
