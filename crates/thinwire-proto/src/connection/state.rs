//! Connection states, named by what each waits for. Transitions happen in the sibling files named by their job (see `connection/mod.rs`).
//!
//! | state | side | waits for | leaves to |
//! |---|---|---|---|
//! | `AwaitingChallenge` | client | the server's Challenge (cookie) | `AwaitingAccept`; closed on handshake timeout, version negotiation without our version, or a Refuse |
//! | `AwaitingAccept` | client | the server's Accept (Noise message 2) | `Established`; closed on handshake timeout or a Refuse |
//! | `Established` | both | application data | `Closing` (local close), `Draining` (peer CLOSE), closed (idle timeout, reset) |
//! | `Closing` | both | acknowledgement of all reliable data | `Draining` (data acked or close timeout) |
//! | `Draining` | both | the end of the drain period (answering stray packets with CLOSE) | `Closed` |
//! | `Closed` | both | nothing: the endpoint forgets the connection | - |

use std::time::Instant;

use crate::error::DisconnectReason;

/// The state of a connection. The closing states' data is boxed: most connections never
/// close, yet every one would carry its size inline (16 B instead of 80).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    AwaitingChallenge,
    AwaitingAccept,
    Established,
    Closing(Box<CloseFrame>),
    Draining(Box<Drain>),
    Closed,
}

/// What this side's CLOSE frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CloseFrame {
    /// The application's close code.
    pub(crate) code: u64,
    /// The application's close reason.
    pub(crate) reason: Vec<u8>,
}

/// A draining connection: the CLOSE it answers stray packets with, and when it is forgotten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Drain {
    /// What the application is told when draining ends (`None` when it was told already).
    pub(crate) report: Option<DisconnectReason>,
    pub(crate) close: CloseFrame,
    pub(crate) until: Instant,
}

impl State {
    /// Whether application data may flow (queued before the handshake ends, sent after).
    pub(crate) fn is_open(&self) -> bool {
        matches!(
            self,
            State::AwaitingChallenge | State::AwaitingAccept | State::Established
        )
    }

    /// Whether data packets are exchanged.
    pub(crate) fn is_data(&self) -> bool {
        matches!(self, State::Established | State::Closing { .. })
    }
}
