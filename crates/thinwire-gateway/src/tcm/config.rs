//! TCM configuration.

use std::time::Duration;

use super::bundle::MAX_RECORD;
use super::error::TcmError;

/// How the multiplexer bounds the packets it holds (those of the open period and those whose
/// bundle the caller has not polled yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferPolicy {
    /// Drop-tail: a packet that would take the held native bytes past `max_bytes` is dropped.
    Large {
        /// Bound on the held packets' native bytes.
        max_bytes: usize,
    },
    /// Drop packets held longer than this (checked on every call that takes `now`).
    TimeLimited(Duration),
}

/// Configuration of a [`Multiplexer`](super::Multiplexer) / [`Demultiplexer`](super::Demultiplexer)
/// pair; both sides must agree on `max_contexts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcmConfig {
    /// The multiplexing period T: packets that arrive within one period leave as one bundle at
    /// its end (Saldaña et al. use 5 to 100 ms).
    pub period: Duration,
    /// Largest bundle in bytes (what the trunk accepts as one unreliable message).
    pub mtu: usize,
    /// How held packets are bounded.
    pub buffer: BufferPolicy,
    /// Send a packet that is alone in its period native, untouched (as in TCM).
    pub single_native: bool,
    /// A FULL record refreshes each context at least every this many packets.
    pub refresh_every: u32,
    /// Number of context slots (1..=256; the context id is one byte).
    pub max_contexts: usize,
}

impl Default for TcmConfig {
    fn default() -> Self {
        TcmConfig {
            period: Duration::from_millis(25),
            mtu: 1200,
            buffer: BufferPolicy::Large {
                max_bytes: 64 * 1024,
            },
            single_native: true,
            refresh_every: 32,
            max_contexts: 256,
        }
    }
}

impl TcmConfig {
    /// Checks the fields' ranges.
    pub fn validate(&self) -> Result<(), TcmError> {
        if self.period.is_zero() {
            return Err(TcmError::InvalidConfig("period must be > 0"));
        }
        if self.mtu < 64 || self.mtu > MAX_RECORD {
            return Err(TcmError::InvalidConfig("mtu must be in 64..=32767"));
        }
        if self.refresh_every == 0 {
            return Err(TcmError::InvalidConfig("refresh_every must be >= 1"));
        }
        if self.max_contexts == 0 || self.max_contexts > 256 {
            return Err(TcmError::InvalidConfig("max_contexts must be in 1..=256"));
        }
        match self.buffer {
            BufferPolicy::Large { max_bytes: 0 } => {
                Err(TcmError::InvalidConfig("buffer max_bytes must be > 0"))
            }
            BufferPolicy::TimeLimited(d) if d.is_zero() => {
                Err(TcmError::InvalidConfig("buffer time limit must be > 0"))
            }
            _ => Ok(()),
        }
    }
}
