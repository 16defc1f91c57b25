//! QUIC varints (RFC 9000 §16) and a bounds-checked reader: the primitives of thinwire's wire
//! format, for protocols built on it such as the gateway's trunk frames.
//!
//! The core's own (private) wire codec is written with these and nothing else, so a protocol
//! that uses them encodes integers exactly as thinwire packets do:
//!
//! * [`varint`]: [`varint::write`] appends the shortest encoding of a value up to
//!   [`varint::MAX`] (2^62 − 1), [`varint::encoded_len`] says how many bytes that takes;
//! * [`Reader`]: a cursor over a borrowed slice whose every read is length-checked. Reading
//!   past the end returns an error and moves nothing, so a parser built on it never panics,
//!   whatever bytes an attacker sends. [`Reader::varint`] accepts any of a varint's four
//!   length forms, not only the shortest.
//!
//! A reader's error type is the caller's: `Reader<'a, E>` returns `E` (built from
//! [`Truncated`]), so a protocol's decoder reads fields straight into its own error type with
//! `?`. The default, `Reader<'a>`, returns [`Truncated`] itself.
//!
//! ```
//! use thinwire_proto::codec::{varint, Reader, Truncated};
//!
//! let mut out = Vec::new();
//! varint::write(15_293, &mut out);
//! out.push(7);
//! assert_eq!(out, [0x7b, 0xbd, 7]);
//!
//! let mut r: Reader<'_> = Reader::new(&out);
//! assert_eq!(r.varint(), Ok(15_293));
//! assert_eq!(r.u8(), Ok(7));
//! assert_eq!(r.u8(), Err(Truncated));
//! ```

mod reader;
pub mod varint;

#[cfg(test)]
mod tests;

pub use reader::{Reader, Truncated};
