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
    /// a full seq the full form (see [`encode_message`]). An 8-bit seq with a
    /// payload over 255 bytes only comes from the last-frame form, and is written
    /// in it ([`encode_message_last`]): such a frame must end the packet. Fields
    /// the kind does not carry are ignored.
    #[cfg(any(test, feature = "testing", feature = "fuzzing"))]
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
        let truncated = self.seq.is_some_and(|f| f.is_truncated());
        if truncated && self.fragment.is_none() && self.payload.len() > COMPACT_MAX_PAYLOAD {
            encode_message_last(&header, self.payload, out);
        } else {
            encode_message(&header, self.payload, out);
        }
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
    /// True when a frame with this header may take the last-frame form `11cccccc` (of any
    /// payload length) if it ends its packet: it is not a fragment, and its seq may go in 8
    /// bits (`compact_seq`) or its kind has none.
    pub fn may_be_last(&self) -> bool {
        (self.compact_seq || !self.kind.has_seq()) && self.fragment.is_none()
    }

    /// True when [`encode_message`] uses the compact form for this header and payload length.
    fn is_compact(&self, payload_len: usize) -> bool {
        self.may_be_last() && payload_len <= COMPACT_MAX_PAYLOAD
    }

    /// Bytes of the last-frame form ahead of the payload: type, seq8, key.
    fn last_prefix_len(&self) -> usize {
        let key_len = if self.kind.has_key() {
            varint::encoded_len(self.key.unwrap_or(0))
        } else {
            0
        };
        1 + usize::from(self.kind.has_seq()) + key_len
    }

    /// Appends what the last-frame form writes ahead of the payload (the compact form's
    /// fields up to, without, `payload_len`), with the given form bits in the type byte.
    fn write_short_prefix(&self, form: u8, out: &mut Vec<u8>) {
        out.push(form | (self.channel & CHANNEL_MASK));
        if self.kind.has_seq() {
            out.push(self.seq as u8);
        }
        if self.kind.has_key() {
            varint::write(self.key.unwrap_or(0), out);
        }
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
        header.write_short_prefix(COMPACT_MSG, out);
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
        header.last_prefix_len() + 1
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

/// Append a message frame in the last-frame form `11cccccc` (type, seq8, key, payload: no
/// length, the payload runs to the end of the packet), of any payload length. The frame must
/// be the packet's last.
///
/// A header that may not take that form ([`MessageHeader::may_be_last`] false: a fragment, or
/// a seq that needs the full form) is a caller bug: it trips a debug assertion and is written
/// by [`encode_message`] in release builds.
#[cfg(any(test, feature = "testing", feature = "fuzzing"))]
pub fn encode_message_last(header: &MessageHeader, payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(header.may_be_last(), "no last-frame form for {header:?}");
    if !header.may_be_last() {
        return encode_message(header, payload, out);
    }
    header.write_short_prefix(LAST_MSG, out);
    out.extend_from_slice(payload);
}

/// Exact number of bytes [`encode_message_last`] writes for these arguments (never more than
/// [`message_frame_len`]: the last-frame form is at least one byte shorter).
#[cfg(any(test, feature = "fuzzing"))]
pub fn last_message_frame_len(header: &MessageHeader, payload_len: usize) -> usize {
    if header.may_be_last() {
        header.last_prefix_len() + payload_len
    } else {
        message_frame_len(header, payload_len)
    }
}

/// Turns the message frame that [`encode_message`] wrote at `start` for `header` and a payload
/// of `payload_len` bytes, and that ends `buf`, into the last-frame form `11cccccc` (whatever
/// its length, compact or full form): its header is rewritten in place, the payload moves forward.
/// Returns false, changing nothing, when the header may not take that form
/// ([`MessageHeader::may_be_last`]) or the bytes from `start` to the end are not such a frame.
pub fn message_to_last(
    buf: &mut Vec<u8>,
    start: usize,
    header: &MessageHeader,
    payload_len: usize,
) -> bool {
    let ends_buf = buf.len().checked_sub(start) == Some(message_frame_len(header, payload_len));
    let type_ok = buf.get(start).is_some_and(|&t| {
        let form = if header.is_compact(payload_len) {
            COMPACT_MSG
        } else {
            FULL_MSG
        };
        t == form | (header.channel & CHANNEL_MASK)
    });
    if !header.may_be_last() || !ends_buf || !type_ok {
        return false;
    }
    let old_prefix = buf.len() - start - payload_len;
    // the new prefix (at most 10 bytes: the type, an 8-bit seq and a key's varint) is written
    // after the payload, set aside, and put in front of the payload, which moves once
    let end = buf.len();
    header.write_short_prefix(LAST_MSG, buf);
    let new_prefix = buf.len() - end;
    let mut prefix = [0u8; 16];
    prefix[..new_prefix].copy_from_slice(&buf[end..]);
    // the buffer is `end + new_prefix` long, so the payload's new place is inside it
    buf.copy_within(start + old_prefix..end, start + new_prefix);
    buf[start..start + new_prefix].copy_from_slice(&prefix[..new_prefix]);
    buf.truncate(end - old_prefix + new_prefix);
    true
}

/// Append a COPIES marker (one byte, `0x07`): the packet's messages are repair copies.
#[cfg(any(test, feature = "testing", feature = "fuzzing"))]
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
#[cfg(any(test, feature = "testing", feature = "fuzzing"))]
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
#[cfg(any(test, feature = "fuzzing"))]
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
