//! The four transports on loopback, so that every measurement is written once: a
//! [`BenchHost`] is a [`PeerHost`] of `thinwire-peers` (a socket with any number of
//! connections, driven by the calling thread like ENet's `enet_host_service`), opened on
//! 127.0.0.1 with the bench's two channels and each stack's bench settings.

use std::net::{Ipv4Addr, SocketAddrV4};

use serde::{Deserialize, Serialize};
use thinwire::{ChannelKind, Config, ServerConfig};
use thinwire_peers::{
    EnetHost, GnsHost, GnsWait, HostSpec, KcpHost, KcpMode, PeerHost, Role, ThinwireHost,
    ENET_MAX_PEERS,
};

/// The four transports compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// thinwire's blocking `Host` (encrypted unless `--insecure-cleartext`).
    Thinwire,
    /// ENet 1.3 (Debian's libenet), through `thinwire-enet`.
    Enet,
    /// KCP (the `kcp` crate) over UDP, fast mode.
    Kcp,
    /// Valve's GameNetworkingSockets (encrypted, its default), loaded at run time through
    /// `thinwire-gns` from the library `tools/build-gns.sh` builds.
    Gns,
}

impl Protocol {
    /// All four, in the order they run and are shown.
    pub const ALL: [Protocol; 4] = [
        Protocol::Thinwire,
        Protocol::Enet,
        Protocol::Kcp,
        Protocol::Gns,
    ];

    /// The name shown in tables and plots.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Thinwire => "thinwire",
            Protocol::Enet => "ENet",
            Protocol::Kcp => "KCP",
            Protocol::Gns => "GNS",
        }
    }

    /// The transport named `name` (its label, any case), if there is one.
    pub fn from_label(name: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.label().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether an idle host of this stack polls instead of blocking, with the settings
    /// `opts`: GNS has no call that blocks until something arrives, and in each `service`
    /// call its hosts poll back to back for 500 µs, then every 50 µs (`GnsWait`); thinwire's
    /// spin in its low-latency mode (`busy_poll`) before they block. Such a host keeps a core
    /// from sleeping, which can change the other stacks' wake-ups.
    pub(crate) fn polls_when_idle(self, opts: &HostOptions) -> bool {
        match self {
            Protocol::Gns => true,
            Protocol::Thinwire => !opts.busy_poll.is_zero(),
            Protocol::Enet | Protocol::Kcp => false,
        }
    }

    /// Why this transport cannot run a measurement, if it cannot: KCP has no unreliable
    /// delivery, ENet may be missing from the build, an ENet host holds at most 4095 peers,
    /// and GNS may not be built (asking loads and initialises it, once per process, so its
    /// global set-up is never counted in a measurement).
    pub(crate) fn not_applicable(self, reliable: bool, peers: usize) -> Option<String> {
        match self {
            Protocol::Kcp if !reliable => Some("KCP is reliable-only".into()),
            Protocol::Enet if !thinwire_enet::available() => {
                Some("built without libenet (apt-get install libenet-dev)".into())
            }
            Protocol::Enet if peers > ENET_MAX_PEERS => Some(format!(
                "an ENet 1.3 host holds at most {ENET_MAX_PEERS} peers (ENET_PROTOCOL_MAXIMUM_PEER_ID)"
            )),
            Protocol::Gns => thinwire_gns::unavailable_reason().map(|why| {
                match thinwire_gns::library_path() {
                    Some(p) if p.exists() => format!("GNS did not load: {why}"),
                    _ => "GNS not built (tools/build-gns.sh SRC_DIR; THINWIRE_GNS_LIB)".into(),
                }
            }),
            _ => None,
        }
    }
}

/// Settings every host of a run shares.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct HostOptions {
    /// thinwire: both ends use the INSECURE cleartext opt-out.
    pub(crate) cleartext: bool,
    /// thinwire: every `Host` spins this long on its socket before it blocks (its
    /// low-latency mode, `Config::busy_poll`); zero: off.
    #[serde(default)]
    pub(crate) busy_poll: std::time::Duration,
    /// thinwire: ACKs ride the traffic of a game loop of this period
    /// (`TransportConfig::with_tick_acks`) instead of going at once; `None`: the default.
    /// Only the sweep sets it (`--thinwire-tick-acks`).
    #[serde(default)]
    pub(crate) tick: Option<std::time::Duration>,
}

/// The channels of every bench connection: reliable (ordered, like ENet's reliable packets,
/// KCP and GNS's reliable messages), and unreliable (ENet's unsequenced packets, GNS's
/// unreliable messages; KCP refuses it).
const CHANNELS: [ChannelKind; 2] = [ChannelKind::ReliableOrdered, ChannelKind::Unreliable];

/// The channel of the reliable or the unreliable messages.
pub(crate) fn channel(reliable: bool) -> u8 {
    u8::from(!reliable)
}

/// A host of the bench: a [`PeerHost`] on 127.0.0.1 (any port) with the bench's channels.
pub(crate) trait BenchHost: PeerHost {
    /// The stack's settings for a server of `capacity` connections, or a client (`None`).
    fn settings(server: Option<usize>, opts: HostOptions) -> Self::Settings;

    /// A server for up to `capacity` connections.
    fn server(capacity: usize, opts: HostOptions) -> Result<Self, String> {
        Self::open(
            &loopback(Role::Server, capacity),
            &Self::settings(Some(capacity), opts),
        )
    }

    /// A client host for up to `capacity` connections.
    fn client(capacity: usize, opts: HostOptions) -> Result<Self, String> {
        Self::open(
            &loopback(Role::Client, capacity),
            &Self::settings(None, opts),
        )
    }
}

fn loopback(role: Role, capacity: usize) -> HostSpec {
    HostSpec {
        bind: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
        role,
        capacity,
        channels: CHANNELS.to_vec(),
    }
}

impl BenchHost for ThinwireHost {
    fn settings(server: Option<usize>, opts: HostOptions) -> Config {
        let config = match server {
            // Every client of the bench comes from 127.0.0.1, which a server counts as one
            // source: the per-source limits meant for the Internet are lifted, and the
            // connection limit fits the run.
            Some(capacity) => Config::server().with_server(ServerConfig {
                max_connections: capacity.max(16),
                max_connections_per_source: usize::MAX,
                handshakes_per_second_per_source: 1_000_000,
                stateless_replies_per_second: 1_000_000,
                max_stateless_queue: 65_536,
                ..ServerConfig::default()
            }),
            None => Config::client(),
        };
        let mut config = config.with_busy_poll(opts.busy_poll);
        if let Some(period) = opts.tick {
            config = config.with_tick_acks(period);
        }
        if opts.cleartext {
            config.insecure_cleartext()
        } else {
            config
        }
    }
}

impl BenchHost for EnetHost {
    fn settings(_server: Option<usize>, _opts: HostOptions) {}
}

impl BenchHost for GnsHost {
    fn settings(_server: Option<usize>, _opts: HostOptions) -> GnsWait {
        GnsWait::default()
    }
}

impl BenchHost for KcpHost {
    /// Fast mode, as the emulator's `kcp-fast` peer.
    fn settings(_server: Option<usize>, _opts: HostOptions) -> KcpMode {
        KcpMode::Fast
    }
}

/// Runs `$body` with `$h` bound to the host type of `$proto`.
macro_rules! with_host {
    ($proto:expr, $h:ident => $body:expr) => {
        match $proto {
            $crate::host::Protocol::Thinwire => {
                type $h = thinwire_peers::ThinwireHost;
                $body
            }
            $crate::host::Protocol::Enet => {
                type $h = thinwire_peers::EnetHost;
                $body
            }
            $crate::host::Protocol::Kcp => {
                type $h = thinwire_peers::KcpHost;
                $body
            }
            $crate::host::Protocol::Gns => {
                type $h = thinwire_peers::GnsHost;
                $body
            }
        }
    };
}
pub(crate) use with_host;

#[cfg(test)]
mod tests {
    use super::Protocol;

    #[test]
    fn a_stack_is_found_by_its_label_in_any_case() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::from_label(p.label()), Some(p));
            assert_eq!(Protocol::from_label(&p.label().to_uppercase()), Some(p));
        }
        assert_eq!(Protocol::from_label(" enet "), Some(Protocol::Enet));
        assert_eq!(Protocol::from_label("quic"), None);
        assert_eq!(Protocol::from_label(""), None);
    }
}
