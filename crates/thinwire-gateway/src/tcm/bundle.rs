//! Bundle framing: the version byte, record length prefixes and record type bytes.
//!
//! ```text
//! bundle  = 0x10 record*                      (version 1, type 0 = bundle)
//! record  = len body                          len = length of body
//! len     = 0b0LLLLLLL                        (body < 128 B)
//!         | 0b1HHHHHHH LLLLLLLL               (body < 32768 B, big endian, top bit set)
//! body    = 0b0GGGGEAC ctx compressed-fields payload   COMPRESSED
//!         | 0x80 ctx 0b00TBGGGG [base-id] [base-seq base-ack] packet   FULL
//!         | 0x81 packet                                  UNCOMPRESSED
//! ```
//! See `docs/GATEWAY.md` §3 for every field.

use super::error::TcmError;

/// The first byte of every bundle: version 1 in the high nibble, type 0 (bundle) in the low.
pub const BUNDLE_VERSION: u8 = 0x10;
/// Record type byte of a FULL record.
pub(crate) const TYPE_FULL: u8 = 0x80;
/// Record type byte of an UNCOMPRESSED record.
pub(crate) const TYPE_UNCOMPRESSED: u8 = 0x81;
/// FULL generation-byte flag: the 2-byte base id of the generation precedes the packet (IPv4).
pub(crate) const FULL_HAS_BASE: u8 = 0x10;
/// FULL generation-byte flag: the generation's base TCP seq and ack (4 + 4 bytes) follow.
pub(crate) const FULL_HAS_TCP_BASE: u8 = 0x20;
/// COMPRESSED type-byte flag: an EXT byte follows, listing fields that differ from the template.
pub(crate) const FLAG_EXT: u8 = 0x04;
/// COMPRESSED type-byte flag: the IPv4 id follows as 2 absolute bytes instead of 1 low byte.
pub(crate) const FLAG_ID_ABS: u8 = 0x02;
/// COMPRESSED type-byte flag: a CRC-8 of the restored header follows the compressed fields.
pub(crate) const FLAG_CRC: u8 = 0x01;
/// Largest record body a 2-byte length can describe.
pub const MAX_RECORD: usize = 0x7fff;

/// Appends the length prefix of a body of `body` bytes (`body <= MAX_RECORD`).
pub(crate) fn put_len(out: &mut Vec<u8>, body: usize) {
    debug_assert!(body <= MAX_RECORD);
    if body < 128 {
        out.push(body as u8);
    } else {
        out.push(0x80 | (body >> 8) as u8);
        out.push(body as u8);
    }
}

/// Iterator over the record bodies of a bundle; checks the version byte first.
pub(crate) struct Records<'a> {
    rest: &'a [u8],
}

impl<'a> Records<'a> {
    /// Starts reading `bundle`.
    pub(crate) fn new(bundle: &'a [u8]) -> Result<Records<'a>, TcmError> {
        match bundle.split_first() {
            Some((&BUNDLE_VERSION, rest)) => Ok(Records { rest }),
            Some((&v, _)) => Err(TcmError::BadVersion(v)),
            None => Err(TcmError::Truncated),
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<&'a [u8], TcmError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&first, rest) = self.rest.split_first()?;
        let (len, rest) = if first & 0x80 == 0 {
            (first as usize, rest)
        } else {
            match rest.split_first() {
                Some((&lo, rest)) => ((((first & 0x7f) as usize) << 8) | lo as usize, rest),
                None => {
                    self.rest = &[];
                    return Some(Err(TcmError::Truncated));
                }
            }
        };
        if len == 0 || len > rest.len() {
            self.rest = &[];
            return Some(Err(TcmError::Truncated));
        }
        let (body, rest) = rest.split_at(len);
        self.rest = rest;
        Some(Ok(body))
    }
}
