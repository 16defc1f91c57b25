//! The C-visible types: status codes, channel kinds, the configuration, events and statistics,
//! and their conversions from the Rust API.

use std::time::Duration;

use thinwire::proto::{ConnectionStats, DisconnectReason, RefuseReason};
use thinwire::ChannelKind;

/// What every call returns: `THINWIRE_STATUS_OK`, or who is at fault and why.
/// `thinwire_error_string` gives a static English description of each.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_status {
    /// Success.
    Ok = 0,
    /// The caller passed a null pointer where an object was required.
    NullPointer = 1,
    /// The caller passed an argument out of range (a bad enum value, an empty channel list, a
    /// non-UTF-8 or unparsable string).
    InvalidArgument = 2,
    /// The host was closed by `thinwire_host_close`; only `thinwire_host_destroy` is left.
    HostClosed = 3,
    /// No connection with this id (it never existed, or it ended and was reported).
    UnknownConnection = 4,
    /// The channel number is not one of the connection's channels.
    UnknownChannel = 5,
    /// The send mode does not fit the channel's class (a plain send on a latest-value channel,
    /// `THINWIRE_SEND_MODE_LATEST` on any other).
    WrongChannelKind = 6,
    /// The message is larger than the channel's class allows.
    MessageTooLarge = 7,
    /// The connection's send buffer is full: send less often, or wait for acknowledgements.
    BufferFull = 8,
    /// The connection is closing or closed.
    ConnectionClosed = 9,
    /// A deadline of zero or a target outside (0, 1).
    InvalidDeadline = 10,
    /// A latest-value key above 2^62 - 1.
    KeyOutOfRange = 11,
    /// The configuration was refused (see the arguments of `thinwire_host_create`).
    Config = 12,
    /// The operating system refused a socket call (bind, send, receive).
    Io = 13,
    /// No connection id was free (the endpoint holds too many connections).
    NoConnectionId = 14,
    /// A bug inside thinwire was caught at the boundary; the host may be inconsistent.
    Panic = 15,
    /// The call needs a server host (`thinwire_host_public_key` on a client).
    NotServer = 16,
    /// The connect token's bytes do not decode (wrong magic, truncated, trailing bytes, too
    /// long, a bad address list): not a token from `thinwire_token_mint` or the backend.
    BadToken = 17,
    /// The connection has no connect-token claims: it is an outgoing one, or the server
    /// admitted it without a token (`has_token_key` was not set).
    NoClaims = 18,
    /// The caller's output buffer is too small; the length needed was written to the call's
    /// `inout_len`, and nothing else was written.
    BufferTooSmall = 19,
}

/// The delivery class of a channel (see the README's table).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_channel_kind {
    /// Every message, in send order.
    ReliableOrdered = 0,
    /// Every message, as soon as it arrives.
    ReliableUnordered = 1,
    /// At most once, no retransmission.
    Unreliable = 2,
    /// At most once, never older than what was delivered.
    UnreliableSequenced = 3,
    /// The newest value per key, reliably; superseded values are not retransmitted.
    LatestReliable = 4,
}

impl From<thinwire_channel_kind> for ChannelKind {
    fn from(k: thinwire_channel_kind) -> Self {
        match k {
            thinwire_channel_kind::ReliableOrdered => ChannelKind::ReliableOrdered,
            thinwire_channel_kind::ReliableUnordered => ChannelKind::ReliableUnordered,
            thinwire_channel_kind::Unreliable => ChannelKind::Unreliable,
            thinwire_channel_kind::UnreliableSequenced => ChannelKind::UnreliableSequenced,
            thinwire_channel_kind::LatestReliable => ChannelKind::LatestReliable,
        }
    }
}

/// A channel kind from its C value; `None` for a value outside the enum (C does not stop a
/// caller from passing one, and a Rust enum must never hold it).
pub(crate) fn channel_kind(raw: u32) -> Option<ChannelKind> {
    let k = match raw {
        0 => thinwire_channel_kind::ReliableOrdered,
        1 => thinwire_channel_kind::ReliableUnordered,
        2 => thinwire_channel_kind::Unreliable,
        3 => thinwire_channel_kind::UnreliableSequenced,
        4 => thinwire_channel_kind::LatestReliable,
        _ => return None,
    };
    Some(k.into())
}

/// How a host is set up. Start from `thinwire_config_default` and change what you need.
///
/// Connections are encrypted: clients authenticate the server by its static public key
/// (`thinwire_host_public_key`), and every packet is sealed (ChaCha20-Poly1305 or
/// AES-256-GCM). A server without `has_server_secret_key` draws a new key pair at every start.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct thinwire_config {
    /// Accept incoming connections (a server). A client only connects.
    pub server: bool,
    /// A server's most concurrent connections (handshaking ones included).
    pub max_connections: u32,
    /// A server's most concurrent connections from one source (an IPv4 address or an IPv6
    /// /64). Default 64; raise it for tests that connect many clients from one machine.
    pub max_connections_per_source: u32,
    /// Connects (the handshake's second, expensive step) a server processes per second from one
    /// source (after a burst of twice as many). Default 32; raise it for tests that connect
    /// many clients from one machine.
    pub handshakes_per_second_per_source: u32,
    /// A server's static secret key (any 32 bytes from a cryptographic random source, kept
    /// across restarts so that clients can pin the public half). Used when
    /// `has_server_secret_key` is set.
    pub server_secret_key: [u8; 32],
    /// Use `server_secret_key`; otherwise a server draws a fresh key pair at start.
    pub has_server_secret_key: bool,
    /// **Turns packet encryption off**: packets travel in cleartext, and anyone on the path can
    /// read, forge, close or hijack the connection. Trusted networks and measurements only;
    /// both ends must set it (otherwise the connection is refused).
    pub insecure_cleartext: bool,
    /// Fault injection for testing a game: probability of dropping each datagram, both ways.
    pub fault_drop_rate: f64,
    /// Fault injection: one-way delay added to each datagram, both ways (milliseconds).
    pub fault_delay_ms: u32,
    /// Fault injection: random jitter added to the delay (milliseconds).
    pub fault_jitter_ms: u32,
    /// Fault injection: seed of the random drops and jitter (0: drawn from the OS).
    pub fault_seed: u64,
    /// A server's connect-token key: the 32-byte secret it shares with the matchmaking backend
    /// that mints the tokens (`thinwire_token_mint`). Used when `has_token_key` is set.
    pub token_key: [u8; 32],
    /// Require a connect token minted with `token_key` from every client: a client without
    /// one, or with an expired, forged or foreign one, is refused with
    /// `THINWIRE_REFUSE_REASON_INVALID_TOKEN` before anything is allocated for it. The token's
    /// claims are read with `thinwire_connection_token_claims`. The token's address list is
    /// not checked against the server's addresses (the seal binds the token to this server's
    /// static key already). Servers only: a client with it set is refused with
    /// `THINWIRE_STATUS_INVALID_ARGUMENT`.
    pub has_token_key: bool,
    /// ACKs on the tick: the period, in microseconds, at which this host sends on each of its
    /// connections (a server's tick, a client's input rate; 33333 for 30 Hz). An ACK then
    /// waits up to 1.5 periods to ride the host's next datagram instead of going alone, so a
    /// 30 Hz exchange takes two datagrams per tick instead of four; the peer's timeout path
    /// (the last message before a pause) is slower by as much. 0, the default: ACKs at once.
    /// At most 1000000 (1 s; more is refused with `THINWIRE_STATUS_INVALID_ARGUMENT`).
    pub tick_ack_period_us: u32,
}

/// What `thinwire_host_service` found.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_event_type {
    /// Nothing happened before the timeout.
    None = 0,
    /// A connection completed its handshake (`incoming`: the peer opened it).
    Connected = 1,
    /// A message arrived: `message` holds it and must be freed with `thinwire_message_free`.
    Message = 2,
    /// A connection ended (`reason`, `close_code`); its id is no longer valid.
    Disconnected = 3,
}

/// Why a connection ended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_disconnect_reason {
    /// Not a disconnect event.
    None = 0,
    /// This side closed it (`thinwire_disconnect`).
    LocallyClosed = 1,
    /// The peer closed it, with `close_code`.
    ClosedByPeer = 2,
    /// Nothing arrived for the idle timeout.
    TimedOut = 3,
    /// The handshake did not complete in time.
    HandshakeTimedOut = 4,
    /// The peer no longer knew the connection (it restarted).
    PeerReset = 5,
    /// The peer broke the protocol or speaks another version.
    PeerError = 6,
    /// The server refused the connection (`refuse_reason` says why).
    Refused = 7,
}

/// Why a server refused a connection.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_refuse_reason {
    /// Not a refusal.
    None = 0,
    /// The server holds its most connections.
    ServerFull = 1,
    /// The server holds its most connections from this client's address.
    TooManyFromSource = 2,
    /// The connect token was missing, forged, expired or for another server.
    InvalidToken = 3,
    /// A connection with the token's client id is open already.
    AlreadyConnected = 4,
    /// The two ends share no cipher suite (one of them set `insecure_cleartext`).
    NoCommonCipherSuite = 5,
    /// The server is nearly full and this client's network (IPv4 /24, IPv6 /48) holds more
    /// connections than most.
    BusyNetwork = 6,
    /// The server could not read the handshake: it was written to another server's key (a
    /// wrong or outdated key for this address). Not authenticated (`docs/PROTOCOL.md` §11.6).
    UnknownServerKey = 7,
    /// A reason this version does not know.
    Other = 255,
}

impl From<RefuseReason> for thinwire_refuse_reason {
    fn from(r: RefuseReason) -> Self {
        match r {
            RefuseReason::ServerFull => Self::ServerFull,
            RefuseReason::TooManyFromSource => Self::TooManyFromSource,
            RefuseReason::InvalidToken => Self::InvalidToken,
            RefuseReason::AlreadyConnected => Self::AlreadyConnected,
            RefuseReason::NoCommonCipherSuite => Self::NoCommonCipherSuite,
            RefuseReason::BusyNetwork => Self::BusyNetwork,
            RefuseReason::UnknownServerKey => Self::UnknownServerKey,
            RefuseReason::Other(_) => Self::Other,
        }
    }
}

impl thinwire_disconnect_reason {
    /// The C reason, close code and refusal reason of a Rust one.
    pub(crate) fn of(reason: &DisconnectReason) -> (Self, u64, thinwire_refuse_reason) {
        let none = thinwire_refuse_reason::None;
        match reason {
            DisconnectReason::LocallyClosed => (Self::LocallyClosed, 0, none),
            DisconnectReason::ClosedByPeer { code, .. } => (Self::ClosedByPeer, *code, none),
            DisconnectReason::TimedOut => (Self::TimedOut, 0, none),
            DisconnectReason::HandshakeTimedOut => (Self::HandshakeTimedOut, 0, none),
            DisconnectReason::PeerReset => (Self::PeerReset, 0, none),
            DisconnectReason::Refused(r) => (Self::Refused, 0, (*r).into()),
            DisconnectReason::Peer(_) => (Self::PeerError, 0, none),
        }
    }
}

/// A message received (opaque): read it with `thinwire_message_data` and
/// `thinwire_message_len`, free it with `thinwire_message_free`.
#[derive(Debug)]
pub struct thinwire_message {
    pub(crate) inner: thinwire::proto::Message,
}

/// One event of `thinwire_host_service`. Fields that do not apply to its `kind` are zero.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct thinwire_event {
    /// What happened.
    pub kind: thinwire_event_type,
    /// The connection it concerns.
    pub conn: u64,
    /// Connected: the peer opened the connection.
    pub incoming: bool,
    /// Message: the channel it arrived on.
    pub channel: u8,
    /// Message: the message, owned by the caller until `thinwire_message_free`.
    pub message: *mut thinwire_message,
    /// Message: it was sent with a deadline (`THINWIRE_SEND_MODE_DEADLINE`).
    pub has_deadline: bool,
    /// Message with a deadline: it arrived after its deadline.
    pub deadline_late: bool,
    /// Message with a deadline: estimated time from send to delivery (milliseconds).
    pub deadline_age_ms: u32,
    /// Disconnected: why.
    pub reason: thinwire_disconnect_reason,
    /// Disconnected by the peer: its close code.
    pub close_code: u64,
    /// Disconnected with `THINWIRE_DISCONNECT_REASON_REFUSED`: why the server refused.
    pub refuse_reason: thinwire_refuse_reason,
}

impl thinwire_event {
    /// The "nothing happened" event.
    pub(crate) fn none() -> Self {
        Self {
            kind: thinwire_event_type::None,
            conn: 0,
            incoming: false,
            channel: 0,
            message: std::ptr::null_mut(),
            has_deadline: false,
            deadline_late: false,
            deadline_age_ms: 0,
            reason: thinwire_disconnect_reason::None,
            close_code: 0,
            refuse_reason: thinwire_refuse_reason::None,
        }
    }
}

/// A snapshot of one connection's statistics.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct thinwire_connection_stats {
    /// Smoothed round-trip time (microseconds).
    pub srtt_us: u64,
    /// Round-trip time variation (microseconds).
    pub rttvar_us: u64,
    /// Current retransmission timeout (microseconds).
    pub rto_us: u64,
    /// Estimated packet loss rate, 0 to 1.
    pub loss_estimate: f64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Packets received.
    pub packets_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Message frames retransmitted after a loss.
    pub frames_retransmitted: u64,
    /// Messages delivered to this side's application.
    pub messages_delivered: u64,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl From<&ConnectionStats> for thinwire_connection_stats {
    fn from(s: &ConnectionStats) -> Self {
        Self {
            srtt_us: micros(s.path.srtt),
            rttvar_us: micros(s.path.rttvar),
            rto_us: micros(s.path.rto),
            loss_estimate: s.path.loss_estimate,
            packets_sent: s.udp.packets_sent,
            bytes_sent: s.udp.bytes_sent,
            packets_received: s.udp.packets_received,
            bytes_received: s.udp.bytes_received,
            packets_lost: s.recovery.packets_lost,
            frames_retransmitted: s.frames.retransmitted,
            messages_delivered: s.frames.messages_delivered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_kinds_map_one_to_one_and_refuse_the_rest() {
        let all = [
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
            ChannelKind::Unreliable,
            ChannelKind::UnreliableSequenced,
            ChannelKind::LatestReliable,
        ];
        for (raw, kind) in all.iter().enumerate() {
            assert_eq!(channel_kind(raw as u32), Some(*kind));
        }
        for raw in [5, 6, 255, u32::MAX] {
            assert_eq!(channel_kind(raw), None);
        }
    }

    #[test]
    fn disconnect_reasons_keep_the_peer_close_code() {
        let by_peer = DisconnectReason::ClosedByPeer {
            code: 42,
            reason: b"bye".to_vec(),
        };
        let none = thinwire_refuse_reason::None;
        assert_eq!(
            thinwire_disconnect_reason::of(&by_peer),
            (thinwire_disconnect_reason::ClosedByPeer, 42, none)
        );
        assert_eq!(
            thinwire_disconnect_reason::of(&DisconnectReason::TimedOut),
            (thinwire_disconnect_reason::TimedOut, 0, none)
        );
    }

    #[test]
    fn refusals_keep_their_reason() {
        for (rust, c) in [
            (RefuseReason::ServerFull, thinwire_refuse_reason::ServerFull),
            (
                RefuseReason::TooManyFromSource,
                thinwire_refuse_reason::TooManyFromSource,
            ),
            (
                RefuseReason::InvalidToken,
                thinwire_refuse_reason::InvalidToken,
            ),
            (
                RefuseReason::AlreadyConnected,
                thinwire_refuse_reason::AlreadyConnected,
            ),
            (
                RefuseReason::NoCommonCipherSuite,
                thinwire_refuse_reason::NoCommonCipherSuite,
            ),
            (
                RefuseReason::BusyNetwork,
                thinwire_refuse_reason::BusyNetwork,
            ),
            (
                RefuseReason::UnknownServerKey,
                thinwire_refuse_reason::UnknownServerKey,
            ),
            (RefuseReason::Other(99), thinwire_refuse_reason::Other),
        ] {
            assert_eq!(
                thinwire_disconnect_reason::of(&DisconnectReason::Refused(rust)),
                (thinwire_disconnect_reason::Refused, 0, c)
            );
            if c != thinwire_refuse_reason::Other {
                assert_eq!(c as u8, rust.code(), "C values are the wire codes");
            }
        }
    }
}
