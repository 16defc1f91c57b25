//! The handshake payloads: what each side says inside its (encrypted) Noise message.
//!
//! ConnectParams (client → server, in Noise message 1):
//!
//! | field | size | encoding |
//! |---|---|---|
//! | max_ack_delay_us | varint | the client's ack delay bound, µs |
//! | channel_count | `u8` | 1..=64, else `BadChannelCount` |
//! | channels | channel_count | one ChannelKind code each |
//! | suite_count | `u8` | 1..=8, else `BadSuites` |
//! | suites | suite_count | cipher-suite codes, in the client's order of preference (unknown codes are kept and ignored by the server) |
//! | token_len | `u16` | 0..=600, else `BadToken` |
//! | token | token_len | the private part of a connect token, or nothing |
//!
//! AcceptParams (server → client, in Noise message 2):
//!
//! | field | size | encoding |
//! |---|---|---|
//! | server_cid | 1 + 1..8 | length-prefixed: the id the client puts in its short headers |
//! | max_ack_delay_us | varint | the server's ack delay bound, µs |
//! | suite | `u8` | the chosen cipher suite (one the client listed) |
//! | reset_token | 16 | the stateless reset token of `server_cid` |

use super::{
    varint, ChannelKind, ConnectionId, DecodeError, Reader, MAX_CHANNELS, RESET_TOKEN_LEN,
};

/// Most cipher suites a client may list.
pub const MAX_SUITES: usize = 8;

/// Longest connect-token private part carried in ConnectParams.
pub const MAX_TOKEN_LEN: usize = 600;

/// What a client declares in its Connect (encrypted to the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectParams {
    /// Largest delay the client adds before acknowledging, µs.
    pub max_ack_delay_us: u64,
    /// The channel table (1..=64 channels); index = channel number.
    pub channels: Vec<ChannelKind>,
    /// Cipher-suite codes the client accepts, preferred first.
    pub suites: Vec<u8>,
    /// The private part of a connect token (empty without one).
    pub token: Vec<u8>,
}

impl ConnectParams {
    /// Appends the encoding. Out-of-range lists are cut (caller bugs, debug-asserted).
    pub fn encode(&self, out: &mut Vec<u8>) {
        varint::write(self.max_ack_delay_us, out);
        debug_assert!((1..=MAX_CHANNELS).contains(&self.channels.len()));
        let channels = &self.channels[..self.channels.len().min(MAX_CHANNELS)];
        out.push(channels.len() as u8);
        out.extend(channels.iter().map(|k| k.code()));
        debug_assert!((1..=MAX_SUITES).contains(&self.suites.len()));
        let suites = &self.suites[..self.suites.len().min(MAX_SUITES)];
        out.push(suites.len() as u8);
        out.extend_from_slice(suites);
        debug_assert!(self.token.len() <= MAX_TOKEN_LEN);
        let token = &self.token[..self.token.len().min(MAX_TOKEN_LEN)];
        out.extend_from_slice(&(token.len() as u16).to_be_bytes());
        out.extend_from_slice(token);
    }

    /// Parses a whole payload.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let max_ack_delay_us = r.varint()?;
        let count = usize::from(r.u8()?);
        if count == 0 || count > MAX_CHANNELS {
            return Err(DecodeError::BadChannelCount);
        }
        let channels = r
            .bytes(count)?
            .iter()
            .map(|&c| ChannelKind::from_code(c).ok_or(DecodeError::UnknownChannelKind(c)))
            .collect::<Result<Vec<_>, _>>()?;
        let count = usize::from(r.u8()?);
        if count == 0 || count > MAX_SUITES {
            return Err(DecodeError::BadSuites);
        }
        let suites = r.bytes(count)?.to_vec();
        let len = usize::from(r.u16()?);
        if len > MAX_TOKEN_LEN {
            return Err(DecodeError::BadToken);
        }
        let token = r.bytes(len)?.to_vec();
        if !r.is_empty() {
            return Err(DecodeError::TrailingBytes);
        }
        Ok(Self {
            max_ack_delay_us,
            channels,
            suites,
            token,
        })
    }
}

/// What a server answers in its Accept (encrypted to the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptParams {
    /// The server's connection id (the client sends to it).
    pub server_cid: ConnectionId,
    /// Largest delay the server adds before acknowledging, µs.
    pub max_ack_delay_us: u64,
    /// The chosen cipher-suite code.
    pub suite: u8,
    /// The stateless reset token of `server_cid`.
    pub reset_token: [u8; RESET_TOKEN_LEN],
}

impl AcceptParams {
    /// Appends the encoding.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.server_cid.write_prefixed(out);
        varint::write(self.max_ack_delay_us, out);
        out.push(self.suite);
        out.extend_from_slice(&self.reset_token);
    }

    /// Parses a whole payload.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let server_cid = ConnectionId::read_prefixed(&mut r)?;
        let max_ack_delay_us = r.varint()?;
        let suite = r.u8()?;
        let reset_token = r.array()?;
        if !r.is_empty() {
            return Err(DecodeError::TrailingBytes);
        }
        Ok(Self {
            server_cid,
            max_ack_delay_us,
            suite,
            reset_token,
        })
    }
}
