//! thinwire itself (the real `thinwire_proto::Endpoint`) in the simulator.
//!
//! Clients each own an endpoint with one connection to the server; the server
//! owns one endpoint (one socket) for all clients. Message identity travels
//! in the payload: the first 8 bytes carry the message id (payloads shorter
//! than 8 bytes are padded to 8; the padding counts as wire bytes only).
//! Connection setup (the cookie and Noise NK handshake) is part of the run; a
//! client whose connection ends reconnects.
//!
//! Packets are encrypted as in any thinwire deployment (AEAD, 16-byte tag per
//! packet, 8-byte connection ids), unless the configuration is the explicit
//! opt-out [`ThinwireProtocol::insecure_cleartext`]. Every run's server holds
//! the same static key ([`lab_server_key`]): its value changes nothing the lab
//! measures (sizes and timing are the same for every key, and the simulator
//! does not charge CPU time), while the handshakes' ephemeral keys still come
//! from each endpoint's seed.
//!
//! Configurations with deadline delivery ([`ThinwireProtocol::deadline`]) send
//! every message that carries a deadline as `SendMode::Deadline`
//! (erasure-coded shards in stages, parity by the configured
//! [`DeadlineParity`]), using the message's deadline and target; messages
//! without a deadline, and messages too large for 64 shards, go through the
//! ordinary channels. A deadline message that waited for the connection to
//! be established is sent with the time left to its deadline, or as an
//! ordinary message when none is left.

mod counters;
mod endpoint;
#[cfg(test)]
mod tests;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use thinwire_proto::{
    ChannelKind, Endpoint, EndpointConfig, PublicKey, RepairTarget, ServerConfig, ServerKey,
    TransportConfig,
};

pub use counters::ThinwireCounters;
pub use endpoint::ThinwireEndpoint;

use super::{ChannelSemantics, DeadlineParity, Mapping, Protocol};
use crate::workload::ClassSpec;

/// The suffix of the cleartext opt-out's protocol names.
pub(super) const INSECURE_SUFFIX: &str = "-insecure-cleartext";
/// The suffix of the configurations whose reliable channels may copy first transmissions
/// to meet a one-round-trip tail target ([`ThinwireProtocol::copy_first`]).
pub(super) const COPY_FIRST_SUFFIX: &str = "-copy-first";
/// What precedes `N` in the `-kN` suffix of a deadline configuration cutting
/// every deadline message into `N` data shards.
pub(super) const SHARDS_INFIX: &str = "-k";

/// IPv4 + UDP header bytes added to every datagram.
const IP_UDP: usize = 28;
/// Bytes of message id at the start of every payload.
const ID_BYTES: usize = 8;

fn server_addr() -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4433))
}

fn client_addr(c: u32) -> SocketAddr {
    let [_, b, cc, d] = c.to_be_bytes();
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 1 + b, cc, d), 5000))
}

fn client_of(addr: SocketAddr) -> Option<u32> {
    match addr {
        SocketAddr::V4(a) => {
            let [a0, b, c, d] = a.ip().octets();
            if a0 != 10 || b == 0 || a.port() != 5000 {
                return None;
            }
            Some(u32::from_be_bytes([0, b - 1, c, d]))
        }
        SocketAddr::V6(_) => None,
    }
}

/// The static key pair of every simulated thinwire server (derived from a
/// fixed seed, computed once).
pub fn lab_server_key() -> &'static ServerKey {
    static KEY: OnceLock<ServerKey> = OnceLock::new();
    KEY.get_or_init(|| {
        ServerKey::generate(crate::seed::bytes32(0, crate::seed::THINWIRE_SERVER_KEY))
    })
}

fn kind(s: ChannelSemantics) -> ChannelKind {
    match s {
        ChannelSemantics::ReliableOrdered => ChannelKind::ReliableOrdered,
        ChannelSemantics::ReliableUnordered => ChannelKind::ReliableUnordered,
        ChannelSemantics::LatestReliable => ChannelKind::LatestReliable,
        ChannelSemantics::Unreliable => ChannelKind::Unreliable,
    }
}

/// thinwire in a named configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinwireProtocol {
    /// Thin-stream features on (default transport) or off (TCP-like).
    pub thin: bool,
    /// Class-to-channel mapping.
    pub mapping: Mapping,
    /// Deadline delivery for messages that carry a deadline, with this
    /// parity mode; `None`: such messages are sent like any other.
    pub deadline: Option<DeadlineParity>,
    /// Data shards per deadline message (`-kN` in the name): every deadline
    /// message is cut into `N` data shards of `ceil(size / N)` bytes, as
    /// Pangolin's experiments cut a 2 KB message into `k` packets (Zhang et
    /// al., CoNEXT 2011, Sec. 7.3.2). `None`: the transport's
    /// `deadline_shard_size` (512 bytes). Only with [`Self::deadline`].
    pub deadline_shards: Option<u8>,
    /// **No packet encryption** (`EndpointConfig::insecure_cleartext` on
    /// both ends): for measuring what encryption costs, never what thinwire
    /// is. `false`: packets are AEAD-sealed, as in every deployment.
    pub insecure_cleartext: bool,
    /// Reliable channels target the one-way delay plus **one** smoothed RTT with
    /// probability 0.999 and may copy first transmissions to meet it
    /// ([`COPY_FIRST_TARGET`]; `-copy-first` in the name). `false`: the
    /// transport's default repair target (one-way delay plus 1.5 RTTs, copies
    /// of retransmissions only).
    pub copy_first: bool,
}

/// The repair target of every reliable channel of a `-copy-first` configuration: each
/// message within the one-way delay plus one smoothed RTT with probability 0.999, up to 3
/// copies of a first transmission. No retransmission can arrive within one RTT, so the
/// policy meets it with copies alone: two per message at up to about 3% of loss, three up to
/// 10% (the copies leave an eighth of a smoothed RTT apart).
pub const COPY_FIRST_TARGET: RepairTarget = RepairTarget {
    rtts: 1.0,
    target: 0.999,
    max_copies: 3,
    copy_first: true,
};

impl ThinwireProtocol {
    /// The transport configuration: thin-stream defaults, or TCP-like.
    pub fn transport(&self) -> TransportConfig {
        let mut transport = if self.thin {
            TransportConfig::default()
        } else {
            TransportConfig::tcp_like()
        };
        if self.copy_first {
            transport.repair = Some(COPY_FIRST_TARGET);
        }
        transport
    }

    /// The endpoint configuration of a client or server seeded with `seed`:
    /// the transport, and cleartext only for the opt-out.
    pub fn endpoint_config(&self, seed: u64) -> EndpointConfig {
        let mut cfg = EndpointConfig::new(crate::seed::bytes32(seed, crate::seed::THINWIRE_KEY));
        cfg.transport = Arc::new(self.transport());
        if self.insecure_cleartext {
            cfg = cfg.insecure_cleartext();
        }
        cfg
    }

    /// The security setting in words, for reports: `encrypted (AEAD, 16 B
    /// tag)` or `INSECURE cleartext`, with what it means on the wire.
    pub fn security(&self) -> &'static str {
        if self.insecure_cleartext {
            "INSECURE cleartext (packets neither encrypted nor authenticated; the Noise NK \
             handshake still runs; 8-byte connection ids)"
        } else {
            "encrypted (AEAD, 16 B tag per packet; Noise NK handshake; 8-byte connection ids)"
        }
    }

    /// The name without the security suffix.
    fn configuration_name(&self) -> String {
        let base = match (self.thin, self.mapping) {
            (true, Mapping::SingleOrdered) => "thinwire".into(),
            (false, Mapping::SingleOrdered) => "thinwire-thin-off".into(),
            (true, m) => format!("thinwire-{}", m.as_str()),
            (false, m) => format!("thinwire-thin-off-{}", m.as_str()),
        };
        let name = match self.deadline {
            None => base,
            Some(d) => {
                let full = d.protocol_name();
                if base == "thinwire" {
                    full
                } else {
                    let suffix = full.strip_prefix("thinwire-").unwrap_or(&full);
                    format!("{base}-{suffix}")
                }
            }
        };
        let name = match self.deadline_shards {
            Some(k) => format!("{name}{SHARDS_INFIX}{k}"),
            None => name,
        };
        if self.copy_first {
            format!("{name}{COPY_FIRST_SUFFIX}")
        } else {
            name
        }
    }

    /// The channels to open and, for each class, its channel and kind.
    pub fn channels(
        &self,
        classes: &[ClassSpec],
    ) -> (Vec<ChannelKind>, Vec<(u8, ChannelSemantics)>) {
        let per_class = self.mapping.channels(classes);
        let n = per_class
            .iter()
            .map(|(c, _)| usize::from(*c) + 1)
            .max()
            .unwrap_or(1);
        let mut kinds = vec![ChannelKind::ReliableOrdered; n];
        for (ch, s) in &per_class {
            kinds[usize::from(*ch)] = kind(*s);
        }
        (kinds, per_class)
    }
}

impl Protocol for ThinwireProtocol {
    type Packet = Vec<u8>;
    type Endpoint = ThinwireEndpoint;

    /// `thinwire`, `thinwire-thin-off`, `thinwire-{mapping}`, with the deadline
    /// configuration's suffix (`thinwire-deadline`, `thinwire-fec+2`, ...),
    /// `-copy-first` for [`Self::copy_first`], and `-insecure-cleartext` last
    /// for the opt-out.
    fn name(&self) -> String {
        let name = self.configuration_name();
        if self.insecure_cleartext {
            format!("{name}{INSECURE_SUFFIX}")
        } else {
            name
        }
    }
    fn model(&self) -> bool {
        false
    }
    fn server_per_client(&self) -> bool {
        false
    }
    fn new_client(
        &self,
        _client: u32,
        _clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        let ep = Endpoint::new(self.endpoint_config(seed), None, now)
            .expect("the default thinwire configuration is valid");
        let mut endpoint = self.endpoint(ep, false, classes);
        endpoint.connect(now);
        endpoint
    }
    fn new_server(
        &self,
        clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        // Connection ids: the default 8 bytes (random, unguessable, and the
        // length at which a server sends stateless resets).
        let cfg = self.endpoint_config(seed);
        // Every client has its own address: the per-source limits stay at
        // their defaults.
        let server = ServerConfig {
            key: Some(lab_server_key().clone()),
            max_connections: (clients as usize).saturating_mul(2).max(16),
            max_stateless_queue: (clients as usize).max(1024),
            ..ServerConfig::default()
        };
        let ep = Endpoint::new(cfg, Some(server), now)
            .expect("the default thinwire configuration is valid");
        self.endpoint(ep, true, classes)
    }
}

/// The public half of [`lab_server_key`], which every client connects with.
fn server_key() -> PublicKey {
    lab_server_key().public()
}
