//! QUIC-style variable-length integers (RFC 9000 §16) and a bounds-checked reader.
//!
//! The two top bits of the first byte give the length (1, 2, 4 or 8 bytes); the rest is the
//! value, big-endian, so values up to 2^62 − 1 fit. thinwire-proto's codec is private, so the
//! gateway carries its own few lines.

/// The largest value a varint holds.
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// Bytes `value` takes (values above [`MAX`] are written as `MAX`).
pub(crate) fn len(value: u64) -> usize {
    match value {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `value` (saturated at [`MAX`]) in its shortest form.
pub(crate) fn write(out: &mut Vec<u8>, value: u64) {
    let v = value.min(MAX);
    match len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Reads from a byte slice front to back; every read checks the length first and returns
/// `None` past the end, so parsing never panics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.buf.split_first()?;
        self.buf = rest;
        Some(b)
    }

    /// `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }

    /// A big-endian `u16`.
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let b = self.bytes(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A varint (any of its encodings, not only the shortest).
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let first = *self.buf.first()?;
        let n = 1usize << (first >> 6);
        let b = self.bytes(n)?;
        let mut v = u64::from(first & 0x3f);
        for &x in &b[1..] {
            v = (v << 8) | u64::from(x);
        }
        Some(v)
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_examples() {
        // RFC 9000 appendix A.1
        for (bytes, value) in [
            (&[0x25][..], 37u64),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
        ] {
            assert_eq!(Reader::new(bytes).varint(), Some(value));
            let mut out = Vec::new();
            write(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(len(value), bytes.len());
        }
        // the non-shortest two-byte form of 37 reads too
        assert_eq!(Reader::new(&[0x40, 0x25]).varint(), Some(37));
        assert_eq!(Reader::new(&[0x40]).varint(), None);
    }
}
