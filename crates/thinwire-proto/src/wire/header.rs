//! Packet headers: the short header of data packets and the long-header
//! handshake/control packets.

use super::packet_number::pn_truncate;
use super::{
    ConnectionId, DecodeError, Reader, HELLO_MIN_SIZE, MAX_CID_LEN, MAX_COOKIE_LEN,
    MAX_HANDSHAKE_LEN, RESET_TOKEN_LEN,
};

const FORM_BIT: u8 = 0x80;
const FIXED_BIT: u8 = 0x40;
const SHORT_PN_LEN_MASK: u8 = 0x30;
/// Short header bit 2: the key phase (which generation of packet keys sealed the packet).
pub const KEY_PHASE_BIT: u8 = 0x04;
const SHORT_RESERVED_MASK: u8 = 0x0B;
const LONG_RESERVED_MASK: u8 = 0x30;
const LONG_TYPE_MASK: u8 = 0x0F;

/// True when `datagram` starts with a long header (first bit set).
///
/// False for an empty datagram. Does not check the fixed bit; the decoders
/// do.
pub fn is_long_header(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|b| b & FORM_BIT != 0)
}

/// Check the fixed bit and the header form of `first`.
fn check_first_byte(first: u8, long: bool) -> Result<(), DecodeError> {
    if first & FIXED_BIT == 0 {
        return Err(DecodeError::FixedBitClear);
    }
    if (first & FORM_BIT != 0) != long {
        return Err(DecodeError::WrongHeaderForm);
    }
    Ok(())
}

/// The short header that starts every data packet.
///
/// Wire layout: `0 1 LL R K R R` (LL = packet-number length - 1, K = key phase, R = 0),
/// destination connection id (length known to the receiver, not on the
/// wire), then the low `LL + 1` bytes of the packet number, big-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ShortHeader {
    /// The receiver's connection id.
    pub dst_cid: ConnectionId,
    /// The low `pn_len` bytes of the packet number; expand with
    /// [`pn_decode`](super::pn_decode) (or [`ShortHeader::pn`]).
    pub pn_truncated: u64,
    /// Number of packet-number bytes on the wire (1..=4).
    pub pn_len: u8,
    /// The key phase bit ([`KEY_PHASE_BIT`]): flips at each key update.
    pub key_phase: bool,
}

impl ShortHeader {
    /// Append a short header for packet number `pn`, of which the low
    /// `pn_len` bytes are written (choose `pn_len` with
    /// [`pn_encode_len`](super::pn_encode_len); it is clamped to `1..=4`).
    /// The key phase bit is written 0; the sealing sets it.
    pub fn encode(dst_cid: &ConnectionId, pn: u64, pn_len: usize, out: &mut Vec<u8>) {
        debug_assert!((1..=4).contains(&pn_len), "pn_len {pn_len} not in 1..=4");
        let pn_len = pn_len.clamp(1, 4);
        out.push(FIXED_BIT | (((pn_len - 1) as u8) << 4));
        out.extend_from_slice(dst_cid.as_bytes());
        let pn = pn_truncate(pn, pn_len);
        out.extend_from_slice(&pn.to_be_bytes()[8 - pn_len..]);
    }

    /// Size of a short header: `1 + cid_len + pn_len`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn encoded_len(cid_len: usize, pn_len: usize) -> usize {
        1 + cid_len + pn_len
    }

    /// Parse the short header at the start of `datagram`, whose destination
    /// connection id is `local_cid_len` bytes long (the receiving
    /// endpoint's own cid length, 1..=8, else [`DecodeError::BadCid`]).
    ///
    /// Returns the header and the offset of the first frame.
    pub fn decode(
        datagram: &[u8],
        local_cid_len: usize,
    ) -> Result<(ShortHeader, usize), DecodeError> {
        if local_cid_len == 0 || local_cid_len > MAX_CID_LEN {
            return Err(DecodeError::BadCid);
        }
        let mut r = Reader::new(datagram);
        let first = r.u8()?;
        check_first_byte(first, false)?;
        if first & SHORT_RESERVED_MASK != 0 {
            return Err(DecodeError::ReservedBits);
        }
        let pn_len = usize::from((first & SHORT_PN_LEN_MASK) >> 4) + 1;
        let dst_cid = ConnectionId::read_raw(&mut r, local_cid_len)?;
        let pn_truncated = r.uint_n(pn_len)?;
        let header = ShortHeader {
            dst_cid,
            pn_truncated,
            pn_len: pn_len as u8,
            key_phase: first & KEY_PHASE_BIT != 0,
        };
        Ok((header, r.position()))
    }

    /// The full packet number, given the largest packet number received so
    /// far on this connection (see [`pn_decode`](super::pn_decode)).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn pn(&self, largest_received: Option<u64>) -> u64 {
        super::pn_decode(
            self.pn_truncated,
            usize::from(self.pn_len),
            largest_received,
        )
    }
}

/// Long-header packet type codes (the `TTTT` nibble).
mod ty {
    pub(super) const HELLO: u8 = 0;
    pub(super) const CHALLENGE: u8 = 1;
    pub(super) const CONNECT: u8 = 2;
    pub(super) const ACCEPT: u8 = 3;
    pub(super) const RESET: u8 = 4;
    pub(super) const VERSION_NEGOTIATION: u8 = 5;
    pub(super) const REFUSE: u8 = 6;
}

/// A handshake or control packet (long header).
///
/// Wire layout: `1 1 0 0 TTTT`, `version: u32`, then a type-specific body
/// (see `docs/PROTOCOL.md` §2). Connection ids in long headers are
/// length-prefixed (`len: u8` in 1..=8, then the bytes).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum LongPacket {
    /// Client → server, opens a handshake. Padded to [`HELLO_MIN_SIZE`].
    Hello {
        /// Protocol version the client speaks.
        version: u32,
        /// The client's connection id (the server sends to it).
        src_cid: ConnectionId,
        /// Client instance id (distinguishes a restarted client).
        instance: u64,
        /// Client nonce, echoed in the Challenge.
        nonce: u64,
    },
    /// Server → client, answers a Hello with a stateless cookie.
    Challenge {
        /// Protocol version.
        version: u32,
        /// The client's connection id (from the Hello).
        dst_cid: ConnectionId,
        /// The Hello's nonce, echoed.
        nonce: u64,
        /// Opaque cookie (at most [`MAX_COOKIE_LEN`] bytes) the client
        /// must return in Connect.
        cookie: Vec<u8>,
    },
    /// Client → server, completes the handshake.
    Connect {
        /// Protocol version.
        version: u32,
        /// The client's connection id.
        src_cid: ConnectionId,
        /// Client instance id.
        instance: u64,
        /// Client nonce (same as in the Hello).
        nonce: u64,
        /// The cookie from the Challenge.
        cookie: Vec<u8>,
        /// Noise message 1 (at most [`MAX_HANDSHAKE_LEN`] bytes): the client's ephemeral key
        /// and its [`ConnectParams`](super::ConnectParams), encrypted to the server's key.
        handshake: Vec<u8>,
    },
    /// Server → client, the connection is established.
    Accept {
        /// Protocol version.
        version: u32,
        /// The client's connection id.
        dst_cid: ConnectionId,
        /// The client's nonce, echoed.
        nonce: u64,
        /// Noise message 2: the server's ephemeral key and its
        /// [`AcceptParams`](super::AcceptParams) (its connection id among them), encrypted.
        handshake: Vec<u8>,
    },
    /// Server → client: "I have no connection with this id", proven by the id's reset token.
    Reset {
        /// Protocol version.
        version: u32,
        /// The connection id that was received (the server's id of the lost connection).
        cid: ConnectionId,
        /// The stateless reset token of `cid` (see `docs/PROTOCOL.md`, Reset).
        token: [u8; RESET_TOKEN_LEN],
    },
    /// Server → client: the Connect was understood and refused (server full, too many
    /// connections from the source, a bad connect token).
    Refuse {
        /// Protocol version.
        version: u32,
        /// The client's connection id.
        dst_cid: ConnectionId,
        /// The client's nonce, echoed (an off-path attacker cannot forge a refusal).
        nonce: u64,
        /// Why, a [`RefuseReason`](crate::RefuseReason) code.
        reason: u8,
    },
    /// Server → client: the Hello's version is not supported.
    /// The version field on the wire is 0.
    VersionNegotiation {
        /// The Hello's source connection id.
        dst_cid: ConnectionId,
        /// Versions the server supports (at most 255).
        supported: Vec<u32>,
    },
}

/// The version-independent start of a long-header packet: what an endpoint
/// can read from a packet of a version it does not speak (type nibble,
/// version, and the first connection id, which every long packet carries
/// right after the version).
#[cfg(any(test, feature = "testing", feature = "fuzzing"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct LongHeaderPrefix {
    /// The `TTTT` type nibble (not validated).
    pub packet_type: u8,
    /// The version field.
    pub version: u32,
    /// The first connection id (Hello/Connect: src_cid; Challenge, Accept,
    /// VersionNegotiation: dst_cid; Reset: cid).
    pub cid: ConnectionId,
}

fn write_cookie(cookie: &[u8], out: &mut Vec<u8>) {
    debug_assert!(cookie.len() <= MAX_COOKIE_LEN, "cookie too long");
    let cookie = &cookie[..cookie.len().min(MAX_COOKIE_LEN)];
    out.push(cookie.len() as u8);
    out.extend_from_slice(cookie);
}

fn read_cookie(r: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    let len = usize::from(r.u8()?);
    if len > MAX_COOKIE_LEN {
        return Err(DecodeError::BadCookie);
    }
    Ok(r.bytes(len)?.to_vec())
}

fn write_handshake(msg: &[u8], out: &mut Vec<u8>) {
    debug_assert!(msg.len() <= MAX_HANDSHAKE_LEN, "handshake message too long");
    let msg = &msg[..msg.len().min(MAX_HANDSHAKE_LEN)];
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
}

fn read_handshake(r: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    let len = usize::from(r.u16()?);
    if len > MAX_HANDSHAKE_LEN {
        return Err(DecodeError::BadHandshake);
    }
    Ok(r.bytes(len)?.to_vec())
}

impl LongPacket {
    /// The `TTTT` type code of this packet.
    pub fn packet_type(&self) -> u8 {
        match self {
            LongPacket::Hello { .. } => ty::HELLO,
            LongPacket::Challenge { .. } => ty::CHALLENGE,
            LongPacket::Connect { .. } => ty::CONNECT,
            LongPacket::Accept { .. } => ty::ACCEPT,
            LongPacket::Reset { .. } => ty::RESET,
            LongPacket::VersionNegotiation { .. } => ty::VERSION_NEGOTIATION,
            LongPacket::Refuse { .. } => ty::REFUSE,
        }
    }

    /// Append the packet (a whole datagram) to `out`.
    ///
    /// A Hello is zero-padded so that the bytes written are at least
    /// [`HELLO_MIN_SIZE`]. Out-of-range contents are caller bugs that trip a
    /// debug assertion and are clamped in release builds: a cookie longer
    /// than 64 bytes is cut, a channel table is cut to 64 entries, a
    /// VersionNegotiation list to 255 versions.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(0xC0 | self.packet_type());
        match self {
            LongPacket::Hello {
                version,
                src_cid,
                instance,
                nonce,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                src_cid.write_prefixed(out);
                out.extend_from_slice(&instance.to_be_bytes());
                out.extend_from_slice(&nonce.to_be_bytes());
                let written = out.len() - start;
                if written < HELLO_MIN_SIZE {
                    out.resize(start + HELLO_MIN_SIZE, 0);
                }
            }
            LongPacket::Challenge {
                version,
                dst_cid,
                nonce,
                cookie,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                dst_cid.write_prefixed(out);
                out.extend_from_slice(&nonce.to_be_bytes());
                write_cookie(cookie, out);
            }
            LongPacket::Connect {
                version,
                src_cid,
                instance,
                nonce,
                cookie,
                handshake,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                src_cid.write_prefixed(out);
                out.extend_from_slice(&instance.to_be_bytes());
                out.extend_from_slice(&nonce.to_be_bytes());
                write_cookie(cookie, out);
                write_handshake(handshake, out);
            }
            LongPacket::Accept {
                version,
                dst_cid,
                nonce,
                handshake,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                dst_cid.write_prefixed(out);
                out.extend_from_slice(&nonce.to_be_bytes());
                write_handshake(handshake, out);
            }
            LongPacket::Reset {
                version,
                cid,
                token,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                cid.write_prefixed(out);
                out.extend_from_slice(token);
            }
            LongPacket::Refuse {
                version,
                dst_cid,
                nonce,
                reason,
            } => {
                out.extend_from_slice(&version.to_be_bytes());
                dst_cid.write_prefixed(out);
                out.extend_from_slice(&nonce.to_be_bytes());
                out.push(*reason);
            }
            LongPacket::VersionNegotiation { dst_cid, supported } => {
                out.extend_from_slice(&0u32.to_be_bytes());
                dst_cid.write_prefixed(out);
                debug_assert!(supported.len() <= 255, "too many versions");
                let supported = &supported[..supported.len().min(255)];
                out.push(supported.len() as u8);
                for v in supported {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
    }

    /// Read the first byte and version of a long header: (type, version).
    fn read_start(r: &mut Reader<'_>) -> Result<(u8, u32), DecodeError> {
        let first = r.u8()?;
        check_first_byte(first, true)?;
        if first & LONG_RESERVED_MASK != 0 {
            return Err(DecodeError::ReservedBits);
        }
        let version = r.u32()?;
        Ok((first & LONG_TYPE_MASK, version))
    }

    /// Read the type, version and first connection id of a long-header
    /// packet without interpreting the rest, so that an endpoint can answer
    /// a packet of an unknown version (with VersionNegotiation) or an
    /// unknown type.
    #[cfg(any(test, feature = "testing", feature = "fuzzing"))]
    pub fn peek(datagram: &[u8]) -> Result<LongHeaderPrefix, DecodeError> {
        let mut r = Reader::new(datagram);
        let (packet_type, version) = Self::read_start(&mut r)?;
        let cid = ConnectionId::read_prefixed(&mut r)?;
        Ok(LongHeaderPrefix {
            packet_type,
            version,
            cid,
        })
    }

    /// Parse a whole datagram holding a long-header packet.
    ///
    /// The body is parsed with this version's layout whatever the version
    /// field says; the caller checks `version` (use [`LongPacket::peek`]
    /// for packets of other versions).
    pub fn decode(datagram: &[u8]) -> Result<LongPacket, DecodeError> {
        let mut r = Reader::new(datagram);
        let (packet_type, version) = Self::read_start(&mut r)?;
        let packet = match packet_type {
            ty::HELLO => {
                if datagram.len() < HELLO_MIN_SIZE {
                    return Err(DecodeError::HelloTooShort);
                }
                let src_cid = ConnectionId::read_prefixed(&mut r)?;
                let instance = r.u64()?;
                let nonce = r.u64()?;
                if r.rest().iter().any(|&b| b != 0) {
                    return Err(DecodeError::TrailingBytes);
                }
                LongPacket::Hello {
                    version,
                    src_cid,
                    instance,
                    nonce,
                }
            }
            ty::CHALLENGE => {
                let dst_cid = ConnectionId::read_prefixed(&mut r)?;
                let nonce = r.u64()?;
                let cookie = read_cookie(&mut r)?;
                LongPacket::Challenge {
                    version,
                    dst_cid,
                    nonce,
                    cookie,
                }
            }
            ty::CONNECT => {
                let src_cid = ConnectionId::read_prefixed(&mut r)?;
                let instance = r.u64()?;
                let nonce = r.u64()?;
                let cookie = read_cookie(&mut r)?;
                let handshake = read_handshake(&mut r)?;
                LongPacket::Connect {
                    version,
                    src_cid,
                    instance,
                    nonce,
                    cookie,
                    handshake,
                }
            }
            ty::ACCEPT => {
                let dst_cid = ConnectionId::read_prefixed(&mut r)?;
                let nonce = r.u64()?;
                let handshake = read_handshake(&mut r)?;
                LongPacket::Accept {
                    version,
                    dst_cid,
                    nonce,
                    handshake,
                }
            }
            ty::RESET => {
                let cid = ConnectionId::read_prefixed(&mut r)?;
                let token = r.array()?;
                LongPacket::Reset {
                    version,
                    cid,
                    token,
                }
            }
            ty::REFUSE => {
                let dst_cid = ConnectionId::read_prefixed(&mut r)?;
                let nonce = r.u64()?;
                let reason = r.u8()?;
                LongPacket::Refuse {
                    version,
                    dst_cid,
                    nonce,
                    reason,
                }
            }
            ty::VERSION_NEGOTIATION => {
                if version != 0 {
                    return Err(DecodeError::BadVersionField);
                }
                let dst_cid = ConnectionId::read_prefixed(&mut r)?;
                let count = usize::from(r.u8()?);
                let mut supported = Vec::with_capacity(count);
                for _ in 0..count {
                    supported.push(r.u32()?);
                }
                LongPacket::VersionNegotiation { dst_cid, supported }
            }
            other => return Err(DecodeError::UnknownPacketType(other)),
        };
        if !r.is_empty() {
            return Err(DecodeError::TrailingBytes);
        }
        Ok(packet)
    }
}
