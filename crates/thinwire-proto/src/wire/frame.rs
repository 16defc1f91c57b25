//! Frames: the contents of a data packet, back to back after the short
//! header until the end of the datagram.

use std::iter::FusedIterator;

use super::ack::{ACK_SHORT_TYPE, ACK_TYPE};
use super::{
    varint, AckFrame, ChannelKind, DecodeError, Reader, SeqField, MAX_CHANNELS, MAX_FRAGMENT_COUNT,
    MAX_REASON_LEN, PATH_DATA_LEN,
};

const PADDING_TYPE: u8 = 0x00;
const PING_TYPE: u8 = 0x01;
const CLOSE_TYPE: u8 = 0x03;
const PATH_CHALLENGE_TYPE: u8 = 0x05;
const PATH_RESPONSE_TYPE: u8 = 0x06;
const COPIES_TYPE: u8 = 0x07;
/// `01cccccc`: compact message.
const COMPACT_MSG: u8 = 0x40;
/// `10cccccc`: full message.
const FULL_MSG: u8 = 0x80;
/// `11cccccc`: compact message whose payload runs to the end of the packet (the last frame).
const LAST_MSG: u8 = 0xC0;
const MSG_FORM_MASK: u8 = 0xC0;
const CHANNEL_MASK: u8 = 0x3F;
/// Full-form flags bit 0: the message is one fragment of a larger one.
const FLAG_FRAGMENT: u8 = 0x01;

/// Largest payload of a compact message frame (its length is one byte).
pub const COMPACT_MAX_PAYLOAD: usize = 255;

/// Position of a fragment in a fragmented message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Fragment {
    /// Index of this fragment, `0..count`.
    pub index: u32,
    /// Number of fragments in the message, `2..=1024`.
    pub count: u32,
}

impl Fragment {
    fn is_valid(&self) -> bool {
        (2..=MAX_FRAGMENT_COUNT).contains(&self.count) && self.index < self.count
    }
}

/// An application message (or one fragment of one) on a channel.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MessageFrame<'a> {
    /// Channel index (0..64) into the connection's channel table.
    pub channel: u8,
    /// Sequence number, present iff the channel kind
    /// [`has_seq`](ChannelKind::has_seq); 8 bits in the compact form.
    pub seq: Option<SeqField>,
    /// Key, present iff the channel kind [`has_key`](ChannelKind::has_key).
    pub key: Option<u64>,
    /// Fragment position, only in the full form.
    pub fragment: Option<Fragment>,
    /// The message bytes (borrowed from the datagram).
    pub payload: &'a [u8],
}

impl MessageFrame<'_> {
    /// Re-encode a (decoded) message frame on a channel of kind `kind`.
    ///
    /// An 8-bit seq selects the compact form when the frame allows it,
    /// a full seq the full form (see [`encode_message`]). Fields the kind
    /// does not carry are ignored.
    pub fn encode(&self, kind: ChannelKind, out: &mut Vec<u8>) {
        let (seq, compact_seq) = match self.seq {
            Some(f) => (f.value, f.is_truncated()),
            None => (0, true),
        };
        let header = MessageHeader {
            channel: self.channel,
            kind,
            seq,
            compact_seq,
            key: self.key,
            fragment: self.fragment,
        };
        encode_message(&header, self.payload, out);
    }
}

/// One decoded frame.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Frame<'a> {
    /// `count` consecutive padding (zero) bytes.
    Padding(usize),
    /// A ping: no body, elicits an ack (keepalive, probes).
    Ping,
    /// Acknowledgements.
    Ack(AckFrame),
    /// The sender closes the connection.
    Close {
        /// Application or transport close code.
        code: u64,
        /// Human-readable reason, at most [`MAX_REASON_LEN`] bytes.
        reason: &'a [u8],
    },
    /// An application message.
    Message(MessageFrame<'a>),
    /// One erasure-coded piece of a deadline message.
    Shard(super::ShardFrame<'a>),
    /// "Echo this back": proves the peer receives at the address this packet went to.
    PathChallenge([u8; PATH_DATA_LEN]),
    /// The echo of a PATH_CHALLENGE's data.
    PathResponse([u8; PATH_DATA_LEN]),
    /// "The messages of this packet are repair copies": a packet whose messages the receiver
    /// already has does not elicit an ACK by itself (it rides with the next one).
    Copies,
}

impl Frame<'_> {
    /// True when receiving this frame obliges the receiver to send an ack
    /// (every frame but Padding, Ack and Copies).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(self, Frame::Padding(_) | Frame::Ack(_) | Frame::Copies)
    }
}

/// What a sender writes ahead of a message frame's payload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MessageHeader {
    /// Channel index (0..64).
    pub channel: u8,
    /// The channel's kind: which of `seq` and `key` are written.
    pub kind: ChannelKind,
    /// Sequence number (ignored when the kind has none).
    pub seq: u64,
    /// The 8-bit compact seq is enough (decide with [`seq_compact_ok`](super::seq_compact_ok)).
    pub compact_seq: bool,
    /// Key (ignored when the kind has none).
    pub key: Option<u64>,
    /// Fragment position, if the message is fragmented.
    pub fragment: Option<Fragment>,
}

impl MessageHeader {
    /// True when [`encode_message`] uses the compact form for this header and payload length.
    fn is_compact(&self, payload_len: usize) -> bool {
        (self.compact_seq || !self.kind.has_seq())
            && self.fragment.is_none()
            && payload_len <= COMPACT_MAX_PAYLOAD
    }
}

/// Append a message frame.
///
/// Uses the compact form (`01cccccc`, 8-bit seq, 1-byte length) iff
/// `compact_seq` (ignored for kinds without seq), `fragment` is `None` and
/// the payload is at most 255 bytes; otherwise the full form (`10cccccc`,
/// flags, varint seq, varint length).
///
/// Caller bugs trip a debug assertion and are patched in release builds:
/// `channel >= 64` is masked to 6 bits, a missing key on a keyed channel is
/// written as 0, an invalid fragment is written as is (the peer rejects it).
pub fn encode_message(header: &MessageHeader, payload: &[u8], out: &mut Vec<u8>) {
    let MessageHeader {
        channel,
        kind,
        seq,
        key,
        fragment,
        ..
    } = *header;
    debug_assert!(
        usize::from(channel) < MAX_CHANNELS,
        "channel {channel} >= 64"
    );
    debug_assert!(
        !kind.has_key() || key.is_some(),
        "keyed channel without key"
    );
    debug_assert!(
        fragment.iter().all(Fragment::is_valid),
        "bad fragment {fragment:?}"
    );
    let channel = channel & CHANNEL_MASK;
    if header.is_compact(payload.len()) {
        out.push(COMPACT_MSG | channel);
        if kind.has_seq() {
            out.push(seq as u8);
        }
        if kind.has_key() {
            varint::write(key.unwrap_or(0), out);
        }
        out.push(payload.len() as u8);
    } else {
        out.push(FULL_MSG | channel);
        out.push(if fragment.is_some() { FLAG_FRAGMENT } else { 0 });
        if kind.has_seq() {
            varint::write(seq, out);
        }
        if kind.has_key() {
            varint::write(key.unwrap_or(0), out);
        }
        if let Some(f) = fragment {
            varint::write(u64::from(f.index), out);
            varint::write(u64::from(f.count), out);
        }
        varint::write(payload.len() as u64, out);
    }
    out.extend_from_slice(payload);
}

/// Exact number of bytes [`encode_message`] writes for these arguments.
pub fn message_frame_len(header: &MessageHeader, payload_len: usize) -> usize {
    let MessageHeader {
        kind,
        seq,
        key,
        fragment,
        ..
    } = *header;
    let key_len = if kind.has_key() {
        varint::encoded_len(key.unwrap_or(0))
    } else {
        0
    };
    let framing = if header.is_compact(payload_len) {
        1 + usize::from(kind.has_seq()) + key_len + 1
    } else {
        let seq_len = if kind.has_seq() {
            varint::encoded_len(seq)
        } else {
            0
        };
        let frag_len = fragment.map_or(0, |f| {
            varint::encoded_len(u64::from(f.index)) + varint::encoded_len(u64::from(f.count))
        });
        2 + seq_len + key_len + frag_len + varint::encoded_len(payload_len as u64)
    };
    framing + payload_len
}

/// Append a ping frame (one byte, `0x01`).
pub fn encode_ping(out: &mut Vec<u8>) {
    out.push(PING_TYPE);
}

/// Turns the compact message frame that starts at `start` and ends `buf` (its payload is the
/// last `payload_len` bytes) into the last-frame form `11cccccc`, whose payload runs to the
/// end of the packet: its length byte goes. Returns false, changing nothing, when the bytes
/// there are not such a frame.
pub fn compact_to_last(buf: &mut Vec<u8>, start: usize, payload_len: usize) -> bool {
    let Some(len_at) = buf.len().checked_sub(payload_len + 1) else {
        return false;
    };
    let is_compact = buf
        .get(start)
        .is_some_and(|t| t & MSG_FORM_MASK == COMPACT_MSG);
    if !is_compact || len_at <= start || usize::from(buf[len_at]) != payload_len {
        return false;
    }
    buf[start] |= LAST_MSG;
    buf.remove(len_at);
    true
}

/// Append a COPIES marker (one byte, `0x07`): the packet's messages are repair copies.
pub fn encode_copies(out: &mut Vec<u8>) {
    out.push(COPIES_TYPE);
}

/// Insert a COPIES marker at `at` (between two frames), so that the frame that ends the packet
/// stays last.
pub fn insert_copies(buf: &mut Vec<u8>, at: usize) {
    buf.insert(at.min(buf.len()), COPIES_TYPE);
}

/// Append a PATH_CHALLENGE frame (`05` + 8 bytes of data).
pub fn encode_path_challenge(data: &[u8; PATH_DATA_LEN], out: &mut Vec<u8>) {
    out.push(PATH_CHALLENGE_TYPE);
    out.extend_from_slice(data);
}

/// Append a PATH_RESPONSE frame (`06` + the challenge's 8 bytes).
pub fn encode_path_response(data: &[u8; PATH_DATA_LEN], out: &mut Vec<u8>) {
    out.push(PATH_RESPONSE_TYPE);
    out.extend_from_slice(data);
}

/// Append `len` padding bytes (zeros); they decode as one
/// `Frame::Padding(len)` (merged with adjacent padding).
pub fn encode_padding(len: usize, out: &mut Vec<u8>) {
    out.resize(out.len() + len, PADDING_TYPE);
}

/// Append a close frame. A reason longer than [`MAX_REASON_LEN`] bytes is
/// cut to that length.
pub fn encode_close(code: u64, reason: &[u8], out: &mut Vec<u8>) {
    let reason = &reason[..reason.len().min(MAX_REASON_LEN)];
    out.push(CLOSE_TYPE);
    varint::write(code, out);
    varint::write(reason.len() as u64, out);
    out.extend_from_slice(reason);
}

/// Exact number of bytes [`encode_close`] writes.
pub fn close_frame_len(code: u64, reason_len: usize) -> usize {
    let reason_len = reason_len.min(MAX_REASON_LEN);
    1 + varint::encoded_len(code) + varint::encoded_len(reason_len as u64) + reason_len
}

/// Iterator over the frames of a packet payload; see [`frames`].
///
/// Yields `Ok(frame)` for each frame in order; on malformed input it yields
/// one `Err` and then `None` forever.
#[derive(Clone, Debug)]
pub struct FrameIter<'a, 'c> {
    r: Reader<'a>,
    channels: &'c [ChannelKind],
    failed: bool,
}

/// Iterate over the frames in `payload` (the datagram after the short
/// header), resolving message channels against `channels` (the channel
/// table agreed in the handshake; index = channel number).
pub fn frames<'a, 'c>(payload: &'a [u8], channels: &'c [ChannelKind]) -> FrameIter<'a, 'c> {
    FrameIter {
        r: Reader::new(payload),
        channels,
        failed: false,
    }
}

impl<'a> FrameIter<'a, '_> {
    fn parse(&mut self) -> Result<Frame<'a>, DecodeError> {
        let ty = self.r.u8()?;
        match ty {
            PADDING_TYPE => {
                let mut count = 1;
                while self.r.peek_u8() == Some(PADDING_TYPE) {
                    self.r.u8()?;
                    count += 1;
                }
                Ok(Frame::Padding(count))
            }
            PING_TYPE => Ok(Frame::Ping),
            COPIES_TYPE => Ok(Frame::Copies),
            ACK_TYPE => AckFrame::decode_body(&mut self.r).map(Frame::Ack),
            ACK_SHORT_TYPE => AckFrame::decode_short_body(&mut self.r).map(Frame::Ack),
            CLOSE_TYPE => {
                let code = self.r.varint()?;
                let len = self.r.varint()?;
                if len > MAX_REASON_LEN as u64 {
                    return Err(DecodeError::ReasonTooLong);
                }
                let reason = self.r.bytes(len as usize)?;
                Ok(Frame::Close { code, reason })
            }
            PATH_CHALLENGE_TYPE => self.r.array().map(Frame::PathChallenge),
            PATH_RESPONSE_TYPE => self.r.array().map(Frame::PathResponse),
            super::shard::SHARD_TYPE => {
                super::ShardFrame::decode_body(&mut self.r, self.channels).map(Frame::Shard)
            }
            _ if ty & MSG_FORM_MASK != 0 => self.parse_message(ty).map(Frame::Message),
            _ => Err(DecodeError::UnknownFrame(ty)),
        }
    }

    fn parse_message(&mut self, ty: u8) -> Result<MessageFrame<'a>, DecodeError> {
        let channel = ty & CHANNEL_MASK;
        let kind = *self
            .channels
            .get(usize::from(channel))
            .ok_or(DecodeError::UnknownChannel(channel))?;
        let r = &mut self.r;
        let form = ty & MSG_FORM_MASK;
        if form == COMPACT_MSG || form == LAST_MSG {
            let seq = if kind.has_seq() {
                Some(SeqField::compact(u64::from(r.u8()?)))
            } else {
                None
            };
            let key = if kind.has_key() {
                Some(r.varint()?)
            } else {
                None
            };
            let payload = if form == LAST_MSG {
                r.rest()
            } else {
                let len = usize::from(r.u8()?);
                r.bytes(len)?
            };
            return Ok(MessageFrame {
                channel,
                seq,
                key,
                fragment: None,
                payload,
            });
        }
        let flags = r.u8()?;
        if flags & !FLAG_FRAGMENT != 0 {
            return Err(DecodeError::ReservedBits);
        }
        let seq = if kind.has_seq() {
            Some(SeqField::full(r.varint()?))
        } else {
            None
        };
        let key = if kind.has_key() {
            Some(r.varint()?)
        } else {
            None
        };
        let fragment = if flags & FLAG_FRAGMENT != 0 {
            let index = r.varint()?;
            let count = r.varint()?;
            let (Ok(index), Ok(count)) = (u32::try_from(index), u32::try_from(count)) else {
                return Err(DecodeError::BadFragment);
            };
            let f = Fragment { index, count };
            if !f.is_valid() {
                return Err(DecodeError::BadFragment);
            }
            Some(f)
        } else {
            None
        };
        let len = r.varint()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::Truncated)?;
        let payload = r.bytes(len)?;
        Ok(MessageFrame {
            channel,
            seq,
            key,
            fragment,
            payload,
        })
    }
}

impl<'a> Iterator for FrameIter<'a, '_> {
    type Item = Result<Frame<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let res = self.parse();
        if res.is_err() {
            self.failed = true;
        }
        Some(res)
    }
}

impl FusedIterator for FrameIter<'_, '_> {}
