//! Connection ids.

use std::fmt;
use std::num::NonZeroU8;

use super::{DecodeError, Reader, MAX_CID_LEN};

/// A connection id: 1 to [`MAX_CID_LEN`] opaque bytes chosen by the endpoint
/// that receives packets carrying it.
///
/// Stored inline (no allocation); bytes past `len` are always zero so the
/// derived comparisons and hash only depend on the visible bytes. The length is never zero,
/// so an `Option<ConnectionId>` takes no more room than the id (9 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ConnectionId {
    len: NonZeroU8,
    bytes: [u8; MAX_CID_LEN],
}

impl ConnectionId {
    /// A connection id holding `bytes`; `None` unless `1 <= bytes.len() <= 8`.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > MAX_CID_LEN {
            return None;
        }
        let len = NonZeroU8::new(bytes.len() as u8)?;
        let mut buf = [0u8; MAX_CID_LEN];
        buf[..bytes.len()].copy_from_slice(bytes);
        Some(ConnectionId { len, bytes: buf })
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len.get())]
    }

    /// The id's length in bytes (1..=8).
    pub fn len(&self) -> usize {
        usize::from(self.len.get())
    }

    /// Always false: a connection id has at least one byte.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Read `len` raw bytes (length known out of band, as in short headers).
    pub(crate) fn read_raw(r: &mut Reader<'_>, len: usize) -> Result<Self, DecodeError> {
        if len == 0 || len > MAX_CID_LEN {
            return Err(DecodeError::BadCid);
        }
        Self::new(r.bytes(len)?).ok_or(DecodeError::BadCid)
    }

    /// Read a length-prefixed id (`len: u8` then bytes, as in long headers).
    pub(crate) fn read_prefixed(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = r.u8()?;
        Self::read_raw(r, usize::from(len))
    }

    /// Append `len: u8` then the bytes.
    pub(crate) fn write_prefixed(&self, out: &mut Vec<u8>) {
        out.push(self.len.get());
        out.extend_from_slice(self.as_bytes());
    }
}

impl fmt::Display for ConnectionId {
    /// Lower-case hex, e.g. `abcd`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
