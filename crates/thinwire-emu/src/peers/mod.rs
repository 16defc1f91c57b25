//! Real transport peers driven by the lab's workloads.
//!
//! Every peer runs as threads inside the hosts' namespaces (see
//! [`crate::EmuNet::spawn_in`]). thinwire, KCP and ENet are `thinwire-peers`' adapters
//! (the ones the bench runs on loopback), run by one [`driver`]; the lab's thinwire
//! configurations are mapped in [`thinwire`]. Kernel TCP ([`tcp`]), QUIC ([`quic`], quinn
//! on tokio) and thinwire through gateways ([`gateway`]: gateway processes and the async
//! runtime) are the emulator's own. Messages carry their index in the run's event list, and
//! the [`Book`] stamps send and delivery `Instant`s of the one process clock ([`book`]).

mod book;
mod driver;
mod gateway;
mod quic;
mod tcp;
mod thinwire;

use std::sync::Arc;

pub(crate) use book::{Book, Plan};

use self::book::{merge_counters, HostReport};
use self::driver::{drive, Lanes, Stack};
use self::quic::QuicCert;
use crate::{EmuError, EmuNet};
use thinwire_lab::protocol::ProtocolSpec;
use thinwire_peers::{EnetHost, GnsHost, GnsWait, KcpHost, KcpMode, ThinwireHost};

/// The port of every KCP host.
const KCP_PORT: u16 = 7200;
/// The port of every ENet host.
const ENET_PORT: u16 = 7500;
/// The port of every GameNetworkingSockets server.
const GNS_PORT: u16 = 7600;
/// How a GNS host waits for arrivals here: no spinning and 1 ms naps. A hundred hosts
/// polling every 50 µs (the bench's default) would take both cores from every peer of the
/// run; GNS's own thread receives meanwhile, so a message waits at most 1 ms more in its
/// queue, against the scenario's 100 ms one-way delay.
const GNS_WAIT: GnsWait = GnsWait {
    spin: std::time::Duration::ZERO,
    nap: std::time::Duration::from_millis(1),
};

/// A real transport stack run by the emulator.
#[derive(Debug, Clone, PartialEq)]
pub enum RealPeer {
    /// Kernel TCP with `TCP_NODELAY` and CUBIC congestion control (where the
    /// kernel has it); with `thin`, also `TCP_THIN_LINEAR_TIMEOUTS`.
    Tcp {
        /// Set `TCP_THIN_LINEAR_TIMEOUTS`.
        thin: bool,
    },
    /// KCP (`kcp` crate, the original protocol) over UDP; `fast`:
    /// `nodelay(true, 10, 2, true)` with windows of 1024 packets (as in the bench),
    /// otherwise KCP's defaults ([`KcpMode`]).
    Kcp {
        /// Fast mode.
        fast: bool,
    },
    /// thinwire over real UDP (the `thinwire` runtime's blocking `Host`) in a lab
    /// configuration.
    Thinwire(thinwire_lab::protocol::ThinwireProtocol),
    /// thinwire through multiplexing gateways (`thinwire-gateway`): the scenario's
    /// `gateway_edges` edge gateways on hosts 1..=N, each with its share of the clients
    /// beside it, the server gateway and the unmodified game server on host 0, one trunk per
    /// edge over the emulated links.
    Gateway(thinwire_lab::protocol::ThinwireProtocol),
    /// QUIC (`quinn`, rustls with `ring`, a self-signed certificate): one
    /// unidirectional stream per reliable class, datagrams for classes that
    /// allow loss (latest-value classes).
    QuicStreams,
    /// ENet (Debian's C library through `thinwire-enet`), one channel per class; with
    /// `unsequenced`, latest-value classes are unreliable channels (unsequenced packets),
    /// otherwise everything is reliable.
    Enet {
        /// Unsequenced packets for latest-value classes.
        unsequenced: bool,
    },
    /// Valve's GameNetworkingSockets (loaded at run time through `thinwire-gns`; built by
    /// `tools/build-gns.sh`), encrypted as GNS is by default: reliable messages for every
    /// class, or with `unreliable` unreliable messages for latest-value classes (as ENet's
    /// `unsequenced`).
    Gns {
        /// Unreliable messages for latest-value classes.
        unreliable: bool,
    },
}

impl RealPeer {
    /// Emulated hosts a run of `plan` needs: the server and one per client, or for the
    /// gateway peer the server and one per edge gateway (its clients beside it).
    pub(crate) fn hosts(&self, plan: &Plan) -> usize {
        match self {
            RealPeer::Gateway(_) => plan.gateway_edges.max(1) as usize + 1,
            _ => plan.clients as usize + 1,
        }
    }

    /// Label in `results.json`.
    pub fn name(&self) -> String {
        match self {
            RealPeer::Tcp { thin: false } => "tcp-nodelay".into(),
            RealPeer::Tcp { thin: true } => "tcp-thin-linear".into(),
            RealPeer::Kcp { fast: false } => "kcp".into(),
            RealPeer::Kcp { fast: true } => "kcp-fast".into(),
            RealPeer::Thinwire(t) => ProtocolSpec::Thinwire(*t).name(),
            RealPeer::Gateway(t) => format!("{}-gateway", ProtocolSpec::Thinwire(*t).name()),
            RealPeer::QuicStreams => "quic-streams".into(),
            RealPeer::Enet { unsequenced: false } => "enet-reliable".into(),
            RealPeer::Enet { unsequenced: true } => "enet-unsequenced".into(),
            RealPeer::Gns { unreliable: false } => "gns-reliable".into(),
            RealPeer::Gns { unreliable: true } => "gns-unreliable".into(),
        }
    }
}

fn perr(peer: &str, e: impl std::fmt::Display) -> EmuError {
    EmuError::Peer {
        peer: peer.into(),
        msg: e.to_string(),
    }
}

/// Runs host `client` (`None`: the server) of `peer`; the calling thread is
/// in that host's namespace.
fn run_host(
    peer: &RealPeer,
    cert: Option<&QuicCert>,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    match peer {
        RealPeer::Tcp { thin } => tcp::tcp_host(*thin, client, plan, book),
        RealPeer::Kcp { fast } => {
            let stack = Stack {
                settings: if *fast {
                    KcpMode::Fast
                } else {
                    KcpMode::Default
                },
                port: KCP_PORT,
                key: None,
                lanes: Lanes::single(&plan.classes),
            };
            drive::<KcpHost>(&stack, client, plan, book).map(|d| HostReport::sent(d.sent))
        }
        RealPeer::Thinwire(t) => {
            let stack = thinwire::stack(*t, client.is_none(), &plan.classes);
            drive::<ThinwireHost>(&stack, client, plan, book).map(|d| thinwire::report(&d.stats))
        }
        RealPeer::Gateway(t) => gateway::gateway_host(*t, client, plan, book),
        RealPeer::QuicStreams => match cert {
            Some(cert) => quic::quic_host(cert, client, plan, book),
            None => Err("no certificate".into()),
        },
        RealPeer::Enet { unsequenced } => {
            let stack = Stack {
                settings: (),
                port: ENET_PORT,
                key: None,
                lanes: Lanes::per_class(&plan.classes, *unsequenced),
            };
            drive::<EnetHost>(&stack, client, plan, book).map(|d| HostReport::sent(d.sent))
        }
        RealPeer::Gns { unreliable } => {
            let stack = Stack {
                settings: GNS_WAIT,
                port: GNS_PORT,
                key: None,
                lanes: Lanes::per_class(&plan.classes, *unreliable),
            };
            drive::<GnsHost>(&stack, client, plan, book).map(|d| HostReport::sent(d.sent))
        }
    }
}

/// Runs `peer` over `net` (host 0 server, host `c + 1` client `c`) until
/// `plan.end`; stamps go to `book`. Returns the payload bytes the peers
/// sent: for thinwire the transport's own count (`payload_bytes_sent`:
/// retransmissions and parity included); for TCP and KCP the bytes the
/// application handed over (retransmissions are not counted, so their
/// redundancy reads 0).
pub(crate) fn run_peer(
    peer: &RealPeer,
    net: &EmuNet,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, EmuError> {
    let cert = Arc::new(match peer {
        RealPeer::QuicStreams => Some(QuicCert::generate().map_err(|e| perr(&peer.name(), e))?),
        _ => None,
    });
    let mut handles = Vec::new();
    for host in 0..net.hosts() {
        let (peer2, plan, book, cert) = (peer.clone(), plan.clone(), book.clone(), cert.clone());
        handles.push(net.spawn_in(host, move || {
            let client = (host > 0).then(|| host as u32 - 1);
            run_host(&peer2, cert.as_ref().as_ref(), client, &plan, &book)
                .map_err(|e| perr(&peer2.name(), e))
        })?);
    }
    let mut first_err = None;
    let mut total = HostReport::default();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| perr(&peer.name(), "thread panicked"))
            .and_then(|r| r);
        match r {
            Ok(h) => {
                total.payload_bytes_sent += h.payload_bytes_sent;
                merge_counters(&mut total.counters, &h.counters);
                if let Some(t) = h.thinwire {
                    *total.thinwire.get_or_insert_with(Default::default) += t;
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(total), Err)
}
