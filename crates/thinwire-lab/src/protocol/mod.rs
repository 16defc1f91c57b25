//! Transports the simulator drives: the TCP, UDP, SCTP and DCCP models, Wu
//! et al.'s strategies on TCP streams, and thinwire.
//!
//! Every transport implements [`Protocol`], a factory of [`SimEndpoint`]s.
//! A client has one endpoint; the server has either one endpoint per client
//! (independent connections, as for the TCP and UDP models) or one endpoint
//! for all clients (one socket, as for thinwire). Endpoints are sans-IO: the
//! simulator hands them application messages, packets and timeouts, and polls
//! them for packets to transmit and messages delivered to the application.

/// Implements [`Corruptible`] for a model's packet type with a `corrupted`
/// flag: any flipped bit fails the packet's checksum, so the receiver drops
/// it whole (the models carry no real bytes to damage).
macro_rules! dropped_when_corrupted {
    ($packet:ty) => {
        impl thinwire_netmodel::Corruptible for $packet {
            fn bit_len(&self) -> usize {
                8
            }
            fn flip_bit(&mut self, _bit: usize) {
                self.corrupted = true;
            }
        }
    };
}

mod dccp;
mod rtt;
mod sctp;
mod spec;
mod tcp;
mod tcp_streams;
mod thinwire;
mod udp;

use std::time::{Duration, Instant};

use thinwire_netmodel::Corruptible;

pub use dccp::{DccpConfig, DccpConn, DccpModel, DccpPacket};
pub use rtt::RttEstimator;
pub use sctp::{Sack, SctpAssoc, SctpConfig, SctpModel, SctpPacket};
pub use spec::{ProtocolSpec, MAX_FIXED_PARITY};
pub use tcp::{
    AckStyle, Congestion, RtoStyle, RtxCounters, TcpConfig, TcpConn, TcpModel, TcpSegment,
    TcpStats, TcpVariant, MAX_RTX_TRACKED,
};
pub use tcp_streams::{StreamPacket, StreamsConn, TcpStreams};
pub use thinwire::{
    lab_server_key, ThinwireCounters, ThinwireEndpoint, ThinwireProtocol, COPY_FIRST_TARGET,
};
pub use udp::{UdpDatagram, UdpEndpoint, UdpModel, UDP_HEADER};

use crate::workload::{ClassId, ClassSpec, Semantics};

/// An application message handed to a transport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutMessage {
    /// Unique id (the simulator's side table maps it to send time, class...).
    pub id: u64,
    /// Class.
    pub class: ClassId,
    /// Payload size in bytes.
    pub size: u32,
    /// Key for latest-value classes.
    pub key: u64,
    /// Deadline relative to the send call, if the message has one.
    pub deadline: Option<Duration>,
    /// Wanted probability of meeting the deadline (only used with a deadline,
    /// and only by transports with deadline delivery).
    pub target: f64,
}

/// How a thinwire configuration sends messages that carry a deadline (with
/// `thinwire_proto::SendMode::Deadline`: erasure-coded shards sent in
/// stages of one round trip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineParity {
    /// The CMDP policy: the fewest parity shards that meet the message's
    /// target (`ParityMode::Adaptive`).
    Adaptive,
    /// No parity: each stage resends exactly the missing shards
    /// (`ParityMode::None`), i.e. retransmission only.
    RetransmitOnly,
    /// Always this many parity shards beyond the missing ones, every stage
    /// (`ParityMode::Fixed`): fixed FEC.
    Fixed(u8),
}

impl DeadlineParity {
    /// The core's parity mode.
    pub fn mode(self) -> thinwire_proto::ParityMode {
        match self {
            DeadlineParity::Adaptive => thinwire_proto::ParityMode::Adaptive,
            DeadlineParity::RetransmitOnly => thinwire_proto::ParityMode::None,
            DeadlineParity::Fixed(n) => thinwire_proto::ParityMode::Fixed(n),
        }
    }

    /// Name of the protocol configuration using this mode: `thinwire-deadline`,
    /// `thinwire-rtx-only` or `thinwire-fec+N`.
    pub fn protocol_name(self) -> String {
        match self {
            DeadlineParity::Adaptive => "thinwire-deadline".into(),
            DeadlineParity::RetransmitOnly => "thinwire-rtx-only".into(),
            DeadlineParity::Fixed(n) => format!("thinwire-fec+{n}"),
        }
    }
}

/// A packet an endpoint wants to put on the wire.
#[derive(Debug, Clone)]
pub struct Transmit<P> {
    /// Destination peer: for a client endpoint always 0; for a shared server
    /// endpoint the client index.
    pub peer: u32,
    /// The packet.
    pub packet: P,
    /// Size on the wire including IP and transport headers.
    pub wire_bytes: usize,
    /// Application payload bytes carried (retransmissions and redundant copies
    /// included); `None` when the endpoint reports it through
    /// [`SimEndpoint::payload_bytes_sent`] instead.
    pub payload_bytes: Option<usize>,
}

/// One endpoint of a transport, driven by the simulator.
pub trait SimEndpoint {
    /// Packet type on the simulated wire.
    type Packet: Clone + Corruptible;

    /// The application sends `msg` to `peer`.
    fn send(&mut self, now: Instant, peer: u32, msg: &OutMessage);
    /// A packet from `peer` arrived.
    fn receive(&mut self, now: Instant, peer: u32, packet: Self::Packet);
    /// Next packet to transmit, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Self::Packet>>;
    /// Earliest time [`SimEndpoint::handle_timeout`] must be called.
    fn poll_timeout(&mut self) -> Option<Instant>;
    /// Timers due at `now` fire.
    fn handle_timeout(&mut self, now: Instant);
    /// Next message delivered to the application: `(peer, message id)`.
    fn poll_delivered(&mut self) -> Option<(u32, u64)>;
    /// Next message whose last byte has just gone on the wire for the first
    /// time (what a packet trace sees as the message's send time). Endpoints
    /// that do not report it leave the application's send time standing.
    fn poll_first_sent(&mut self) -> Option<u64> {
        None
    }
    /// Total payload bytes sent, for endpoints that count it themselves.
    fn payload_bytes_sent(&self) -> Option<u64> {
        None
    }
    /// thinwire's connection counters of this endpoint, on its side (thinwire
    /// endpoints only).
    fn thinwire_counters(&self) -> Option<ThinwireCounters> {
        None
    }
    /// Adds this endpoint's named protocol counters to `out` (summed over
    /// every endpoint of a simulation; see [`Counters`]). Models add what a
    /// paper measures inside the transport, e.g. retransmissions by count;
    /// thinwire's own counters are typed ([`SimEndpoint::thinwire_counters`]).
    fn add_counters(&self, _out: &mut Counters) {}
}

/// Named, additive protocol counters of one simulation (sums and counts, so
/// that endpoints add up; ratios are taken when the figures are computed).
/// Keys are `snake_case`, e.g. `tcp_segments`, `tcp_rtx1_delay_sum_ms`.
pub type Counters = std::collections::BTreeMap<String, f64>;

/// A message for the models' unit tests: class 0, no deadline.
#[cfg(test)]
pub(crate) fn test_message(id: u64, size: u32) -> OutMessage {
    OutMessage {
        id,
        class: 0,
        size,
        key: 0,
        deadline: None,
        target: crate::workload::DEFAULT_DEADLINE_TARGET,
    }
}

/// Adds `v` to counter `name` of `out`.
pub fn add_counter(out: &mut Counters, name: &str, v: f64) {
    *out.entry(name.to_owned()).or_insert(0.0) += v;
}

/// A transport: a factory of endpoints plus labels.
pub trait Protocol: Sync {
    /// Packet type on the simulated wire.
    type Packet: Clone + Corruptible + Send;
    /// Endpoint type.
    type Endpoint: SimEndpoint<Packet = Self::Packet>;

    /// Name in the results (e.g. `"tcp-model"`).
    fn name(&self) -> String;
    /// Whether this is a model of a transport rather than the real code.
    fn model(&self) -> bool;
    /// Whether the server has one endpoint per client (`true`) or one for all.
    fn server_per_client(&self) -> bool;
    /// Creates the endpoint of client `client`.
    fn new_client(
        &self,
        client: u32,
        clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> Self::Endpoint;
    /// Creates a server endpoint serving `clients` peers (1 when per client).
    fn new_server(
        &self,
        clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> Self::Endpoint;
}

/// How thinwire maps message classes to channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// All classes on one reliable-ordered channel (like one TCP stream).
    SingleOrdered,
    /// Every class reliable-ordered, each class on its own channel.
    AllOrdered,
    /// Reliable-ordered where order is needed, reliable-unordered elsewhere.
    ReliableUnordered,
    /// Latest-value classes on a keyed latest-reliable channel, unordered
    /// classes reliable-unordered, ordered classes reliable-ordered.
    FullMapping,
    /// Wu et al.'s P_MRO (MTAP 2009, Table 4): multi-streaming only, three
    /// reliable-ordered channels, one per kind of content (moves, attacks,
    /// talk; a server class shares the channel of the action it answers).
    Pmro,
    /// Wu et al.'s P_MR: moves and attacks reliable-unordered, talk
    /// reliable-ordered, on the three channels of [`Mapping::Pmro`].
    Pmr,
    /// Wu et al.'s P_M: moves UNRELIABLE and unordered, attacks
    /// reliable-unordered, talk reliable-ordered, on the three channels of
    /// [`Mapping::Pmro`].
    Pm,
}

/// Channel kind a class gets under a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelSemantics {
    /// Reliable, in order.
    ReliableOrdered,
    /// Reliable, any order.
    ReliableUnordered,
    /// Reliable delivery of the newest value per key.
    LatestReliable,
    /// No retransmission, no order: delivered on arrival or lost.
    Unreliable,
}

impl Mapping {
    /// Channel index and kind for each class.
    pub fn channels(self, classes: &[ClassSpec]) -> Vec<(u8, ChannelSemantics)> {
        classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let latest = matches!(c.semantics, Semantics::Latest | Semantics::Newest);
                let ch = match self {
                    Mapping::SingleOrdered => 0,
                    // One channel per kind of content: moves, attacks, talk.
                    Mapping::Pmro | Mapping::Pmr | Mapping::Pm => match c.semantics {
                        Semantics::Latest | Semantics::Newest => 0,
                        Semantics::Unordered => 1,
                        Semantics::Ordered => 2,
                    },
                    _ => i.min(250) as u8,
                };
                let kind = match (self, c.semantics) {
                    (Mapping::SingleOrdered | Mapping::AllOrdered, _) => {
                        ChannelSemantics::ReliableOrdered
                    }
                    (Mapping::ReliableUnordered, Semantics::Ordered) => {
                        ChannelSemantics::ReliableOrdered
                    }
                    (Mapping::ReliableUnordered, _) => ChannelSemantics::ReliableUnordered,
                    (Mapping::FullMapping, Semantics::Ordered) => ChannelSemantics::ReliableOrdered,
                    (Mapping::FullMapping, Semantics::Unordered) => {
                        ChannelSemantics::ReliableUnordered
                    }
                    (Mapping::FullMapping, Semantics::Latest | Semantics::Newest) => {
                        ChannelSemantics::LatestReliable
                    }
                    (Mapping::Pmro, _) | (Mapping::Pmr | Mapping::Pm, Semantics::Ordered) => {
                        ChannelSemantics::ReliableOrdered
                    }
                    (Mapping::Pm, _) if latest => ChannelSemantics::Unreliable,
                    (Mapping::Pmr | Mapping::Pm, _) => ChannelSemantics::ReliableUnordered,
                };
                (ch, kind)
            })
            .collect()
    }

    /// Name used in protocol labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Mapping::SingleOrdered => "single-ordered",
            Mapping::AllOrdered => "all-ordered",
            Mapping::ReliableUnordered => "reliable-unordered",
            Mapping::FullMapping => "full-mapping",
            Mapping::Pmro => "pmro",
            Mapping::Pmr => "pmr",
            Mapping::Pm => "pm",
        }
    }
}
