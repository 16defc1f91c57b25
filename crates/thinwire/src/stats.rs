//! Endpoint-wide counters: the protocol's (drops by reason), the socket's and the fault
//! injector's.

use thinwire_netmodel::LinkStats;

/// A snapshot of an endpoint's counters, from [`Endpoint::stats`](crate::Endpoint::stats) or
/// [`Host::stats`](crate::Host::stats).
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EndpointStats {
    /// The protocol core's counters: datagrams it dropped, by reason (malformed, unknown
    /// connection, bad cookie, wrong version, unexpected, connection limit, rate limited, bad
    /// handshake, unauthenticated, bad reset, reply queue full), challenges, resets and
    /// refusals sent, connections accepted.
    pub protocol: thinwire_proto::EndpointStats,
    /// Connections held now, in any state.
    pub connections: usize,
    /// Socket I/O counters.
    pub io: IoStats,
    /// Fault-injection counters (`None` without fault injection).
    pub faults: Option<FaultStats>,
}

/// Socket I/O counters of one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IoStats {
    /// Receive system calls that returned data (each may carry a batch).
    pub recv_calls: u64,
    /// Datagrams read from the socket (before inbound fault injection).
    pub datagrams_received: u64,
    /// Bytes read from the socket.
    pub bytes_received: u64,
    /// Send system calls that went through. On Linux one `sendmmsg` carries up to 64 messages
    /// to any destinations, each message a GSO train of one or more datagrams to one
    /// destination; elsewhere one `sendmsg` carries one train. `datagrams_sent / send_calls`
    /// is the batching achieved.
    pub send_calls: u64,
    /// Datagrams handed to the socket (after outbound fault injection).
    pub datagrams_sent: u64,
    /// Bytes handed to the socket.
    pub bytes_sent: u64,
    /// Sends the operating system refused (the datagrams are lost; the protocol recovers).
    pub send_errors: u64,
    /// `sendmmsg` calls refused for another reason than a full socket buffer, after which the
    /// first message went alone through `sendmsg` (its error, if any, is in `send_errors`).
    /// Always 0 off Linux.
    pub send_fallbacks: u64,
    /// Receives that failed with something other than "nothing to read".
    pub recv_errors: u64,
    /// Times the driver woke up (socket, timer or application); a measure of idle cost.
    pub wakeups: u64,
    /// Most datagrams the socket sends in one GSO call (1: no segmentation offload).
    pub gso_segments: usize,
    /// Most datagrams the socket receives coalesced by GRO (1: no receive offload).
    pub gro_segments: usize,
}

/// Counters of the fault-injection links.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FaultStats {
    /// Datagrams this endpoint sent: how many were dropped, delayed, duplicated.
    pub outbound: LinkStats,
    /// Datagrams this endpoint received.
    pub inbound: LinkStats,
}
