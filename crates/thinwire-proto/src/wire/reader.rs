//! A bounds-checked big-endian cursor over a byte slice.

use super::DecodeError;

/// A read cursor over a borrowed byte slice.
///
/// Every read is length-checked: reading past the end returns
/// [`DecodeError::Truncated`] and leaves the cursor where it was.
/// Fixed-size integers are big-endian.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
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
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated);
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
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Consume one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// Consume a big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_be_bytes)
    }

    /// Consume a big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_be_bytes)
    }

    /// Consume a big-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_be_bytes)
    }

    /// Consume an unsigned big-endian integer of `n` bytes (`n` in `0..=8`).
    ///
    /// `n > 8` returns [`DecodeError::Truncated`] without consuming anything
    /// (no such field exists in the protocol).
    pub fn uint_n(&mut self, n: usize) -> Result<u64, DecodeError> {
        if n > 8 {
            return Err(DecodeError::Truncated);
        }
        Ok(self
            .bytes(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Consume a QUIC variable-length integer of any length form (see
    /// [`varint`](super::varint)).
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let first = self.peek_u8().ok_or(DecodeError::Truncated)?;
        let len = 1usize << (first >> 6);
        let raw = self.uint_n(len)?;
        // Strip the two length bits from the top of the `len`-byte value.
        Ok(raw & (u64::MAX >> (64 - (8 * len as u32 - 2))))
    }
}
