//! Trunk frames: the payload of one trunk thinwire message, parsed into a [`Frame`] (a
//! borrowed representation, smoltcp style) and emitted back byte-exact.
//!
//! ```text
//! FlowOpen    0x01 flow:varint count:u8 kind:u8×count family:u8(4|6) ip:4|16 port:u16
//!                  [client_id:u64 len:u16(≤256) user_data:len]   (the player's token claims)
//! FlowOpened  0x02 flow:varint
//! FlowClose   0x03 flow:varint code:varint len:u8(≤64) reason:len
//! Bundle      0x04 bytes…
//! FlowFin     0x05 flow:varint sent:varint
//! Batch       0x40+count-2 (count 2..=64) (count-1)×(len:u8(1..=255) Data frame of len bytes)
//!                  Data frame (the rest)                (Data frames without a deadline)
//! Data        0x10|S|K|E|D flow:varint channel:u8 [seq if S=1: u8 if E=4, else varint]
//!             [key:varint if K=2] [deadline left, µs: varint if D=8] payload…
//! Data short  1Ef(6) f(8): flow < 2^14, channel 0, seq (u8 if E, else varint), no key; payload…
//! ```
//! Lengths are checked once while parsing; nothing after that can panic. `docs/GATEWAY.md` §2
//! has the same table with the reasons.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thinwire_proto::codec::varint;
use thinwire_proto::{ChannelKind, TokenClaims, MAX_USER_DATA};

use super::error::FrameError;

/// The trunk frames' reader: the core's bounds-checked cursor, failing with [`FrameError`].
type Reader<'a> = thinwire_proto::codec::Reader<'a, FrameError>;

mod batch;

pub use batch::{Batch, BatchEntries, BatchWriter, BATCH, MAX_BATCH, MAX_ENTRY};

/// Type byte of a FlowOpen.
pub const FLOW_OPEN: u8 = 0x01;
/// Type byte of a FlowOpened.
pub const FLOW_OPENED: u8 = 0x02;
/// Type byte of a FlowClose.
pub const FLOW_CLOSE: u8 = 0x03;
/// Type byte of a Bundle.
pub const BUNDLE: u8 = 0x04;
/// Type byte of a FlowFin.
pub const FLOW_FIN: u8 = 0x05;
/// Type byte of a Data frame; bit 0 says a seq follows, bit 1 a key, bit 2 that the seq is
/// its low 8 bits only.
pub const DATA: u8 = 0x10;
const DATA_SEQ: u8 = 0x01;
const DATA_KEY: u8 = 0x02;
const DATA_SEQ8: u8 = 0x04;
const DATA_DEADLINE: u8 = 0x08;
/// Top bit of the type byte of a short Data frame (channel 0, a seq, no key): the low 6 bits
/// and the next byte are the flow id; bit 6 says the seq is its low 8 bits only.
pub const DATA_SHORT: u8 = 0x80;
const SHORT_SEQ8: u8 = 0x40;
/// Flow ids below this fit a short Data frame.
pub const SHORT_FLOWS: u32 = 1 << 14;
/// Longest FlowClose reason (bytes); longer reasons are cut when emitted.
pub const MAX_REASON: usize = 64;
/// Most channels of one flow (thinwire's own limit).
pub const MAX_CHANNELS: usize = 64;

/// One trunk frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Edge → server gateway: a player connected; open a flow for it.
    FlowOpen(FlowOpen),
    /// Server gateway → edge: the flow's upstream connection is up.
    FlowOpened {
        /// The flow.
        flow: u32,
    },
    /// Either way: the flow ended, with the close code and reason to pass on.
    FlowClose(FlowClose<'a>),
    /// A player message, either way.
    Data(Data<'a>),
    /// An opaque TCM bundle.
    Bundle(&'a [u8]),
    /// Several player messages in one trunk message: Data frames without a deadline, checked
    /// when parsed, handled as if they had arrived one by one in order.
    Batch(Batch<'a>),
    /// Either way, just before a FlowClose: how many reliable Data frames of the flow were
    /// pushed into the trunk in all, so that the receiving gateway closes the flow only once
    /// they are in (a FlowClose on channel 0 can overtake data on channel 1).
    FlowFin {
        /// The flow.
        flow: u32,
        /// Reliable Data frames of the flow pushed into the trunk.
        sent: u64,
    },
}

/// A FlowOpen frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowOpen {
    /// The new flow's id: larger than every earlier one of this trunk.
    pub flow: u32,
    /// The player's channel kinds (1 to 64).
    pub channels: Vec<ChannelKind>,
    /// The player's address as the edge sees it (IPv6 flow info and scope are not carried).
    pub player: SocketAddr,
    /// What the player's connect token said, when the edge requires tokens (user data at
    /// most [`MAX_USER_DATA`] bytes; longer is cut when emitted).
    pub claims: Option<TokenClaims>,
}

/// A FlowClose frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowClose<'a> {
    /// The flow.
    pub flow: u32,
    /// Application close code (below 2^62).
    pub code: u64,
    /// Close reason (at most [`MAX_REASON`] bytes are carried).
    pub reason: &'a [u8],
}

/// A Data frame: one player message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data<'a> {
    /// The flow.
    pub flow: u32,
    /// The player's channel index.
    pub channel: u8,
    /// The per-(flow, channel) sequence number, on every kind but Unreliable.
    pub seq: Option<u64>,
    /// `seq` is only its low 8 bits (`0..=255`), to be expanded by the receiving gateway
    /// from the next seq it expects (ReliableOrdered channels, `docs/GATEWAY.md` §2). Only
    /// with a seq; a larger `seq` is emitted as its low 8 bits.
    pub seq8: bool,
    /// A deadline message: the time it has left, in microseconds (no seq then: it is
    /// delivered whenever it arrives, as thinwire delivers deadline messages).
    pub deadline_us: Option<u64>,
    /// The key, on LatestReliable channels.
    pub key: Option<u64>,
    /// The message.
    pub payload: &'a [u8],
}

impl Data<'_> {
    /// Whether the frame takes the short form: channel 0, a seq, no key, a flow below
    /// [`SHORT_FLOWS`].
    fn is_short(&self) -> bool {
        self.channel == 0
            && self.seq.is_some()
            && self.key.is_none()
            && self.deadline_us.is_none()
            && self.flow < SHORT_FLOWS
    }

    /// Appends the frame's header (everything but the payload), in the short form when it
    /// can be.
    pub fn emit_header(&self, out: &mut Vec<u8>) {
        let seq8 = self.seq8 && self.seq.is_some();
        if self.is_short() {
            let f = self.flow;
            out.push(DATA_SHORT | if seq8 { SHORT_SEQ8 } else { 0 } | (f >> 8) as u8);
            out.push(f as u8);
        } else {
            let mut ty = DATA;
            if self.seq.is_some() {
                ty |= DATA_SEQ;
            }
            if self.key.is_some() {
                ty |= DATA_KEY;
            }
            if seq8 {
                ty |= DATA_SEQ8;
            }
            if self.deadline_us.is_some() {
                ty |= DATA_DEADLINE;
            }
            out.push(ty);
            varint::write(u64::from(self.flow), out);
            out.push(self.channel);
        }
        match self.seq {
            Some(s) if seq8 => out.push(s as u8),
            Some(s) => varint::write(s.min(varint::MAX), out),
            None => {}
        }
        if let Some(k) = self.key {
            varint::write(k.min(varint::MAX), out);
        }
        if let Some(d) = self.deadline_us {
            varint::write(d.min(varint::MAX), out);
        }
    }

    /// Appends the whole frame (header and payload).
    pub fn emit(&self, out: &mut Vec<u8>) {
        self.emit_header(out);
        out.extend_from_slice(self.payload);
    }

    /// Length of the whole frame [`emit`](Self::emit) writes.
    pub fn encoded_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Length of the header [`emit_header`](Self::emit_header) writes.
    pub fn header_len(&self) -> usize {
        let head = if self.is_short() {
            2
        } else {
            2 + varint::encoded_len(u64::from(self.flow))
        };
        let seq = match self.seq {
            Some(_) if self.seq8 => 1,
            Some(s) => varint::encoded_len(s),
            None => 0,
        };
        head + seq
            + self.key.map_or(0, varint::encoded_len)
            + self.deadline_us.map_or(0, varint::encoded_len)
    }
}

/// Whether `ty` is the type byte of a Data frame (short form, or a long form whose seq8 bit
/// comes with a seq).
fn is_data(ty: u8) -> bool {
    ty & DATA_SHORT != 0
        || (ty & !(DATA_SEQ | DATA_KEY | DATA_SEQ8 | DATA_DEADLINE) == DATA
            && (ty & DATA_SEQ8 == 0 || ty & DATA_SEQ != 0))
}

/// Parses `buf` as one Data frame and nothing else (a Batch entry).
fn data_frame(buf: &[u8]) -> Result<Data<'_>, FrameError> {
    let mut r = Reader::new(buf);
    let ty = r.u8()?;
    if !is_data(ty) {
        return Err(FrameError::UnknownType(ty));
    }
    parse_data(ty, &mut r)
}

/// Parses a Data frame's fields after its type byte.
fn parse_data<'a>(ty: u8, r: &mut Reader<'a>) -> Result<Data<'a>, FrameError> {
    let (flow, channel, has_seq, seq8, has_key) = if ty & DATA_SHORT != 0 {
        let low = r.u8()?;
        let flow = u32::from(ty & 0x3f) << 8 | u32::from(low);
        (flow, 0, true, ty & SHORT_SEQ8 != 0, false)
    } else {
        let flow = flow_id(r)?;
        let channel = r.u8()?;
        (
            flow,
            channel,
            ty & DATA_SEQ != 0,
            ty & DATA_SEQ8 != 0,
            ty & DATA_KEY != 0,
        )
    };
    let seq = match (has_seq, seq8) {
        (false, _) => None,
        (true, true) => Some(u64::from(r.u8()?)),
        (true, false) => Some(r.varint()?),
    };
    let mut field = |present: bool| match present {
        true => r.varint().map(Some),
        false => Ok(None),
    };
    let key = field(has_key)?;
    let deadline_us = field(ty & DATA_SHORT == 0 && ty & DATA_DEADLINE != 0)?;
    Ok(Data {
        flow,
        channel,
        seq,
        seq8,
        deadline_us,
        key,
        payload: r.rest(),
    })
}

impl<'a> Frame<'a> {
    /// Parses one frame (the whole of `buf`).
    pub fn parse(buf: &'a [u8]) -> Result<Self, FrameError> {
        let mut r = Reader::new(buf);
        let ty = r.u8()?;
        let frame = match ty {
            FLOW_OPEN => Frame::FlowOpen(parse_open(&mut r)?),
            FLOW_OPENED => Frame::FlowOpened {
                flow: flow_id(&mut r)?,
            },
            FLOW_CLOSE => {
                let flow = flow_id(&mut r)?;
                let code = r.varint()?;
                let n = r.u8()?;
                if usize::from(n) > MAX_REASON {
                    return Err(FrameError::ReasonTooLong(n));
                }
                let reason = r.bytes(usize::from(n))?;
                Frame::FlowClose(FlowClose { flow, code, reason })
            }
            BUNDLE => return Ok(Frame::Bundle(r.rest())),
            FLOW_FIN => Frame::FlowFin {
                flow: flow_id(&mut r)?,
                sent: r.varint()?,
            },
            t if batch::is_batch(t) => return Batch::parse(t, r.rest()).map(Frame::Batch),
            t if is_data(t) => return parse_data(t, &mut r).map(Frame::Data),
            t => return Err(FrameError::UnknownType(t)),
        };
        if !r.rest().is_empty() {
            return Err(FrameError::Trailing);
        }
        Ok(frame)
    }

    /// Appends the frame's bytes to `out`. Values that cannot be carried are clamped, as
    /// documented on each field: varints at 2^62 − 1, reasons at 64 bytes, channel lists at 64.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Frame::FlowOpen(o) => emit_open(o, out),
            Frame::FlowOpened { flow } => {
                out.push(FLOW_OPENED);
                varint::write(u64::from(*flow), out);
            }
            Frame::FlowClose(c) => {
                out.push(FLOW_CLOSE);
                varint::write(u64::from(c.flow), out);
                varint::write(c.code.min(varint::MAX), out);
                let reason = &c.reason[..c.reason.len().min(MAX_REASON)];
                out.push(reason.len() as u8);
                out.extend_from_slice(reason);
            }
            Frame::Data(d) => d.emit(out),
            Frame::Bundle(b) => {
                out.push(BUNDLE);
                out.extend_from_slice(b);
            }
            Frame::Batch(b) => b.emit(out),
            Frame::FlowFin { flow, sent } => {
                out.push(FLOW_FIN);
                varint::write(u64::from(*flow), out);
                varint::write((*sent).min(varint::MAX), out);
            }
        }
    }

    /// The frame's bytes in a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.emit(&mut out);
        out
    }
}

fn flow_id(r: &mut Reader<'_>) -> Result<u32, FrameError> {
    let v = r.varint()?;
    u32::try_from(v).map_err(|_| FrameError::FlowOutOfRange)
}

fn parse_open(r: &mut Reader<'_>) -> Result<FlowOpen, FrameError> {
    let flow = flow_id(r)?;
    let count = r.u8()?;
    if count == 0 || usize::from(count) > MAX_CHANNELS {
        return Err(FrameError::ChannelCount(count));
    }
    let codes = r.bytes(usize::from(count))?;
    let channels = codes
        .iter()
        .map(|&c| ChannelKind::from_code(c).ok_or(FrameError::ChannelKind(c)))
        .collect::<Result<Vec<_>, _>>()?;
    let ip = match r.u8()? {
        4 => {
            let b = r.bytes(4)?;
            IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        }
        6 => {
            let b = r.bytes(16)?;
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            IpAddr::V6(Ipv6Addr::from(a))
        }
        f => return Err(FrameError::AddressFamily(f)),
    };
    let port = r.u16()?;
    let claims = match r.bytes(8) {
        Err(_) => None,
        Ok(id) => {
            let client_id = u64::from_be_bytes(id.try_into().map_err(|_| FrameError::Truncated)?);
            let n = r.u16()?;
            if usize::from(n) > MAX_USER_DATA {
                return Err(FrameError::UserDataTooLong(n));
            }
            let user_data = r.bytes(usize::from(n))?.to_vec();
            Some(TokenClaims {
                client_id,
                user_data,
            })
        }
    };
    Ok(FlowOpen {
        flow,
        channels,
        player: SocketAddr::new(ip, port),
        claims,
    })
}

fn emit_open(o: &FlowOpen, out: &mut Vec<u8>) {
    out.push(FLOW_OPEN);
    varint::write(u64::from(o.flow), out);
    let kinds = &o.channels[..o.channels.len().min(MAX_CHANNELS)];
    out.push(kinds.len() as u8);
    out.extend(kinds.iter().map(|k| k.code()));
    match o.player.ip() {
        IpAddr::V4(a) => {
            out.push(4);
            out.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            out.push(6);
            out.extend_from_slice(&a.octets());
        }
    }
    out.extend_from_slice(&o.player.port().to_be_bytes());
    if let Some(c) = &o.claims {
        out.extend_from_slice(&c.client_id.to_be_bytes());
        let data = &c.user_data[..c.user_data.len().min(MAX_USER_DATA)];
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(data);
    }
}

/// Trunk channel 0 (ReliableOrdered): control frames.
pub const CONTROL: u8 = 0;
/// Trunk channel 1 (ReliableUnordered): reliable player data, each flow reordered by the
/// receiving gateway.
pub const RELIABLE: u8 = 1;
/// Trunk channel 2 (Unreliable): unreliable player data and TCM bundles.
pub const UNRELIABLE: u8 = 2;
/// Trunk channel 3 (LatestReliable): values of LatestReliable player channels, keyed by
/// [`latest_key`], so that the trunk connection stops retransmitting a value once a newer one
/// for the same (flow, channel, key) is sent.
pub const LATEST: u8 = 3;
/// The trunk connection's channels, indexed by [`CONTROL`], [`RELIABLE`], [`UNRELIABLE`],
/// [`LATEST`].
pub const TRUNK_CHANNELS: [ChannelKind; 4] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::ReliableUnordered,
    ChannelKind::Unreliable,
    ChannelKind::LatestReliable,
];

/// The trunk key of a LatestReliable player value: flow (24 bits), channel (6 bits) and key
/// (34 bits) side by side; `None` when one does not fit (the value then travels on
/// [`RELIABLE`], superseded only at the receiving gateway).
pub fn latest_key(flow: u32, channel: u8, key: u64) -> Option<u64> {
    (flow < 1 << 24 && channel < 64 && key < 1 << 34)
        .then(|| u64::from(flow) << 40 | u64::from(channel) << 34 | key)
}
