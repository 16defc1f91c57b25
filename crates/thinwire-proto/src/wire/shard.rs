//! The SHARD frame (`04`): one erasure-coded piece of a deadline message.
//!
//! ```text
//! 04 channel:u8 msg_id:varint k:u8 r:u8 index:u8 msg_len:varint deadline_ms:varint age_ms:varint len:varint shard
//! ```
//! A deadline message of `msg_len` bytes is cut into `k` data shards of `len` bytes (the last
//! zero-padded) and `r` Reed-Solomon recovery shards; shard `index < k` is data shard `index`,
//! `index >= k` is recovery shard `index - k`. Any `k` distinct shards rebuild the message.
//! `deadline_ms` is the message's deadline and `age_ms` how long ago the application sent it,
//! so the receiver can tell whether it arrived in time.

use super::{varint, ChannelKind, DecodeError, Reader};

/// Frame type byte of SHARD.
pub(crate) const SHARD_TYPE: u8 = 0x04;

/// Most data shards per deadline message.
pub const MAX_SHARDS_K: u8 = 64;

/// A decoded SHARD frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ShardFrame<'a> {
    /// Channel the message belongs to.
    pub channel: u8,
    /// Message id, per connection and direction, increasing.
    pub msg_id: u64,
    /// Data shards (1..=64).
    pub k: u8,
    /// Recovery shards the sender generated (the code's parameter; not all are sent).
    pub r: u8,
    /// Which shard this is (`0..k+r`).
    pub index: u8,
    /// Length of the whole message in bytes.
    pub msg_len: u64,
    /// The message's deadline in milliseconds.
    pub deadline_ms: u64,
    /// Milliseconds since the application sent the message, when this shard left.
    pub age_ms: u64,
    /// The shard's bytes.
    pub shard: &'a [u8],
}

impl ShardFrame<'_> {
    /// Encodes the frame.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(SHARD_TYPE);
        out.push(self.channel);
        varint::write(self.msg_id.min(varint::MAX), out);
        out.extend_from_slice(&[self.k, self.r, self.index]);
        varint::write(self.msg_len.min(varint::MAX), out);
        varint::write(self.deadline_ms.min(varint::MAX), out);
        varint::write(self.age_ms.min(varint::MAX), out);
        varint::write(self.shard.len() as u64, out);
        out.extend_from_slice(self.shard);
    }

    /// Exact encoded size.
    pub fn encoded_len(&self) -> usize {
        5 + varint::encoded_len(self.msg_id)
            + varint::encoded_len(self.msg_len)
            + varint::encoded_len(self.deadline_ms)
            + varint::encoded_len(self.age_ms)
            + varint::encoded_len(self.shard.len() as u64)
            + self.shard.len()
    }

    /// Decodes the body after the type byte.
    pub(crate) fn decode_body<'a>(
        r: &mut Reader<'a>,
        channels: &[ChannelKind],
    ) -> Result<ShardFrame<'a>, DecodeError> {
        let channel = r.u8()?;
        if usize::from(channel) >= channels.len() {
            return Err(DecodeError::UnknownChannel(channel));
        }
        let msg_id = r.varint()?;
        let k = r.u8()?;
        let rr = r.u8()?;
        let index = r.u8()?;
        let msg_len = r.varint()?;
        let deadline_ms = r.varint()?;
        let age_ms = r.varint()?;
        let len = r.varint()?;
        let shard = r.bytes(usize::try_from(len).map_err(|_| DecodeError::Truncated)?)?;
        let total = u16::from(k) + u16::from(rr);
        let fits = (msg_len as u128) <= (k as u128) * (shard.len() as u128);
        if k == 0 || k > MAX_SHARDS_K || u16::from(index) >= total || shard.is_empty() || !fits {
            return Err(DecodeError::BadShard);
        }
        Ok(ShardFrame {
            channel,
            msg_id,
            k,
            r: rr,
            index,
            msg_len,
            deadline_ms,
            age_ms,
            shard,
        })
    }
}
