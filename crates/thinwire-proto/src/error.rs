//! Errors, split by who is at fault: the caller ([`SendError`], [`ConnectError`],
//! [`ConfigError`]) or the peer ([`PeerError`], reported in [`DisconnectReason`]).

use thiserror::Error;

/// A configuration value is unusable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The datagram size must be between 256 and 65 527 bytes.
    #[error("max_datagram_size {0} is outside 256..=65527")]
    DatagramSize(usize),
    /// The minimum RTO must be positive and not above the maximum.
    #[error("min_rto must be positive and at most max_rto")]
    RtoBounds,
    /// Keepalives must be more frequent than the idle timeout.
    #[error("keepalive_interval must be below idle_timeout")]
    KeepaliveNotBelowIdle,
    /// A count or divisor that must be positive is zero.
    #[error(
        "thin_reorder_divisor, max_ack_ranges, ack_frame_ranges and min_window must be positive"
    )]
    Zero,
    /// A repair target needs `rtts` above zero, a target strictly between 0 and 1 and
    /// `max_copies` in `1..=4`.
    #[error("repair target: rtts must be positive, target strictly between 0 and 1, max_copies in 1..=4")]
    Repair,
    /// Connection ids are 1 to 8 bytes long.
    #[error("cid_len {0} is outside 1..=8")]
    CidLen(usize),
    /// The cipher-suite list must hold 1 to 8 suites.
    #[error("cipher_suites must list 1 to 8 suites")]
    CipherSuites,
    /// The largest message would need more than 1024 fragments.
    #[error("max_message_size {0} needs more than 1024 fragments at this datagram size")]
    MessageSize(usize),
    /// Keys must last at least [`MIN_KEY_UPDATE_PACKETS`](crate::MIN_KEY_UPDATE_PACKETS)
    /// packets.
    #[error("key_update_packets {0} is below the minimum of {min}", min = crate::MIN_KEY_UPDATE_PACKETS)]
    KeyUpdatePackets(u64),
    /// The ACK delay must be at most [`MAX_ACK_DELAY`](crate::MAX_ACK_DELAY) (10 s):
    /// a peer allows no more.
    #[error("max_ack_delay {0:?} is above 10 s")]
    AckDelay(std::time::Duration),
    /// A memory budget's total and per-source bytes must be positive.
    #[error("memory budget: total and per_source must be positive")]
    MemoryBudget,
}

/// The caller asked for something a connection cannot do (local misuse).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SendError {
    /// No such connection (never existed, or already gone).
    #[error("unknown connection")]
    UnknownConnection,
    /// The connection is closing or closed.
    #[error("connection is closed")]
    ConnectionClosed,
    /// The channel index is not one negotiated for this connection.
    #[error("unknown channel {0}")]
    UnknownChannel(u8),
    /// A latest-value key ([`SendMode::Latest`](crate::SendMode::Latest)) on a channel that is
    /// not latest-value, none on one that is, or a setting the channel's class does not take.
    #[error("channel {channel} is {kind:?}; use {expected}")]
    WrongChannelKind {
        /// The channel.
        channel: u8,
        /// Its class.
        kind: crate::wire::ChannelKind,
        /// What to use instead (a send mode, or the class the setting needs).
        expected: &'static str,
    },
    /// The message is larger than the channel class allows.
    #[error("message of {size} bytes exceeds the limit of {max} bytes for this channel")]
    MessageTooLarge {
        /// The message size.
        size: usize,
        /// The limit (one datagram for unreliable classes, `max_message_size` otherwise).
        max: usize,
    },
    /// Latest-value keys are encoded as varints and must be below 2^62.
    #[error("key {0} is not below 2^62")]
    KeyOutOfRange(u64),
    /// A deadline must be positive and a target success rate inside (0, 1).
    #[error("invalid deadline options")]
    InvalidDeadline,
    /// A repair target needs `rtts` above zero, a target strictly between 0 and 1 and
    /// `max_copies` in `1..=4`.
    #[error("invalid repair target")]
    InvalidRepairTarget,
    /// The send buffer or the channel's window is full, or the endpoint's memory budget has no
    /// room left and this connection holds more than its fair share; try again after
    /// acknowledgements.
    #[error("send buffer full")]
    BufferFull,
}

/// Opening a connection failed before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConnectError {
    /// A connection needs 1 to 64 channels.
    #[error("a connection needs 1 to 64 channels, got {0}")]
    ChannelCount(usize),
    /// No free connection id (the endpoint holds as many connections as its id length allows).
    #[error("no free connection id")]
    NoConnectionId,
    /// The connect token lists no server address.
    #[error("the connect token lists no server address")]
    TokenWithoutAddress,
}

/// The peer broke the protocol; the connection was closed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PeerError {
    /// The peer only speaks other protocol versions.
    #[error("no common protocol version (peer supports {0:?})")]
    VersionMismatch(Vec<u32>),
    /// The server's authenticated handshake answer is malformed or picks a cipher suite we did
    /// not offer.
    #[error("malformed handshake from the server")]
    BadHandshake,
    /// The peer made this side hold more than its fair share of the endpoint's memory budget
    /// for longer than the grace period (see [`MemoryBudget`](crate::MemoryBudget)); the peer
    /// was sent a CLOSE with [`CLOSE_MEMORY_BUDGET`].
    #[error("peer held {held} bytes, over its fair share of {share} bytes of the memory budget")]
    OverMemoryBudget {
        /// Bytes the connection held when it was closed.
        held: usize,
        /// Its fair share at that moment.
        share: usize,
    },
}

/// Close codes from `0x3fff_ffff_ffff_ff00` up are thinwire's own (an application's close
/// codes stay below): the code of a CLOSE sent because the peer held more than its fair
/// share of the endpoint's memory for longer than the grace period. The peer's application
/// sees it as [`DisconnectReason::ClosedByPeer`] with this code and the reason
/// `"memory budget"`.
pub const CLOSE_MEMORY_BUDGET: u64 = 0x3fff_ffff_ffff_ff01;

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DisconnectReason {
    /// This side closed it and the close completed.
    #[error("closed locally")]
    LocallyClosed,
    /// The peer closed it, with its code and reason.
    #[error("closed by peer (code {code})")]
    ClosedByPeer {
        /// Application close code.
        code: u64,
        /// Application close reason.
        reason: Vec<u8>,
    },
    /// Nothing was heard from the peer for the idle timeout.
    #[error("timed out")]
    TimedOut,
    /// The handshake got no answer within the handshake timeout: nothing listens at the
    /// address, or the path drops the packets.
    #[error("the server did not answer (handshake timed out)")]
    HandshakeTimedOut,
    /// The peer no longer knows this connection: it restarted or dropped its state.
    #[error("peer reset the connection (restarted?)")]
    PeerReset,
    /// The server refused the connection (full, too many from this source, bad token, not its
    /// key).
    #[error("refused by the server: {0}")]
    Refused(RefuseReason),
    /// The peer misbehaved.
    #[error("peer error: {0}")]
    Peer(#[from] PeerError),
}

impl DisconnectReason {
    /// Who ended the connection, for logs: `local` (this side closed it, or gave up on a
    /// misbehaving peer), `peer` (a CLOSE, Reset or Refuse) or `timeout`.
    pub(crate) fn closed_by(&self) -> &'static str {
        match self {
            DisconnectReason::LocallyClosed | DisconnectReason::Peer(_) => "local",
            DisconnectReason::ClosedByPeer { .. }
            | DisconnectReason::PeerReset
            | DisconnectReason::Refused(_) => "peer",
            DisconnectReason::TimedOut | DisconnectReason::HandshakeTimedOut => "timeout",
        }
    }
}

/// Why a server refused a connection (carried in a Refuse packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RefuseReason {
    /// The server holds `max_connections` already.
    #[error("server full")]
    ServerFull,
    /// The server holds `max_connections_per_source` from this client's address (its IPv4
    /// address or IPv6 /64) already; without connect tokens, players behind one NAT share it.
    #[error("too many connections from this address (the server's per-address limit)")]
    TooManyFromSource,
    /// The connect token was missing, forged, expired or minted for another server.
    #[error("invalid connect token")]
    InvalidToken,
    /// A connection with the token's client id is open already.
    #[error("this client id is connected already")]
    AlreadyConnected,
    /// The two ends share no cipher suite (e.g. one insists on cleartext).
    #[error("no common cipher suite")]
    NoCommonCipherSuite,
    /// A reason this version does not know.
    #[error("reason code {0}")]
    Other(u8),
    /// The server is nearly full and this client's network (its IPv4 /24 or IPv6 /48) holds
    /// more connections than most: the last places are kept for other networks.
    #[error("server nearly full: too many connections from this network")]
    BusyNetwork,
    /// The server could not read the handshake: it was written to another server's key (the
    /// client holds a wrong or outdated key for this address). Not authenticated: see
    /// `docs/PROTOCOL.md` §11.6.
    #[error("the server did not accept this server key (wrong key for this address?)")]
    UnknownServerKey,
}

impl RefuseReason {
    /// The code on the wire.
    pub fn code(self) -> u8 {
        match self {
            RefuseReason::ServerFull => 1,
            RefuseReason::TooManyFromSource => 2,
            RefuseReason::InvalidToken => 3,
            RefuseReason::AlreadyConnected => 4,
            RefuseReason::NoCommonCipherSuite => 5,
            RefuseReason::Other(c) => c,
            RefuseReason::BusyNetwork => 6,
            RefuseReason::UnknownServerKey => 7,
        }
    }

    /// The reason of a wire code.
    pub fn from_code(code: u8) -> Self {
        match code {
            1 => RefuseReason::ServerFull,
            2 => RefuseReason::TooManyFromSource,
            3 => RefuseReason::InvalidToken,
            4 => RefuseReason::AlreadyConnected,
            5 => RefuseReason::NoCommonCipherSuite,
            6 => RefuseReason::BusyNetwork,
            7 => RefuseReason::UnknownServerKey,
            c => RefuseReason::Other(c),
        }
    }
}
