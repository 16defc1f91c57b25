//! TCM mode as gateway processes, for unmodified games: a TUN device on each side, a
//! [`Multiplexer`] and a [`Demultiplexer`] between it and the trunk.
//!
//! ```text
//!  tcm-local (near the players)                        tcm-remote (near the game server)
//!  TUN ─read─► Multiplexer ─Bundle─► EdgeGateway ══ trunk ══► ServerGateway ─Bundle event─► Demultiplexer ─write─► TUN
//!  TUN ◄write─ Demultiplexer ◄─Bundle event─ EdgeGateway ◄══ ServerGateway ◄─Bundle─ Multiplexer ◄─read─ TUN
//! ```
//!
//! The routes decide what enters a TUN device: at tcm-local the game server's address is
//! routed into it, at tcm-remote the players' addresses; a restored packet written to the TUN
//! device is routed by the kernel as if it had arrived on a network card, with the players'
//! original addresses.
//!
//! Two departures from the library's defaults, both made here:
//! - **No native packets.** TCM sends a packet that is alone in its period native, untouched.
//!   Here the destination of such a packet is routed into the TUN device itself (that is how
//!   it got here), so sending it "as is" from this host would loop it back into the device
//!   unless the operator set up policy routing (a firewall mark and a second table). The
//!   process therefore turns `single_native` off: a lone packet travels as a one-record
//!   bundle (encrypted, like the rest). Packets too large for a bundle cannot occur either:
//!   the TUN device's MTU is [`tun_mtu`] of the bundle size, so every packet fits; should one
//!   come out native anyway it is dropped and counted ([`TunCounters::natives_dropped`]).
//! - **The bundle size** is what one unreliable trunk message carries
//!   ([`TransportConfig::max_unfragmented`] of the trunk, less the frame's type byte).
//!
//! Packets read while the trunk is down are dropped before the multiplexer (counted), so the
//! compression contexts never run ahead of what the far side saw. A bundle lost on the way
//! costs context losses until the next FULL record (every `refresh_every` packets of a flow).
//!
//! Neither gateway opens flows in this mode: the edge has no players (its players' socket is
//! bound to loopback and unused) and the server gateway's side toward a game server is
//! configured with a placeholder (`127.0.0.1:9` and a throwaway key) that is never dialled,
//! because only an edge's FlowOpen makes it connect.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use thinwire_proto::{
    EndpointConfig, PublicKey, ServerConfig, ServerKey, TokenKey, TransportConfig,
};
use tokio::net::UdpSocket;
use tokio::sync::watch;

use self::device::open_tun;
pub use self::device::{Cidr, TunSpec};
use self::path::{Sources, TcmPath, Tunnel};
use super::drive::{drive_with, Sockets};
use super::process::RunError;
use crate::tcm::{Demultiplexer, Multiplexer, TcmConfig, TcmError, TcmStats};
use crate::trunk::{
    EdgeConfig, EdgeGateway, GatewayStats, ServerGateway, ServerGatewayConfig, TrunkCredential,
    TrunkOptions, TrunkPeer,
};

mod device;
mod path;

/// Bytes a record adds to a packet at most (2 length, type, context, generation, 2 base id,
/// 8 TCP base; `docs/GATEWAY.md` §3), plus the bundle's version byte.
const RECORD_HEADROOM: usize = 16;

/// Why a TCM process could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum TcmRunError {
    /// The gateway part failed (sockets, trunk configuration).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The TCM configuration was refused (the caller's).
    #[error(transparent)]
    Tcm(#[from] TcmError),
    /// The TUN device could not be created or configured (the system's: root, `/dev/net/tun`).
    #[error("TUN device {name}: {reason}")]
    Tun {
        /// The device.
        name: String,
        /// What failed.
        reason: String,
    },
    /// A tcm-remote peer has no prefix and the process was not told to accept any source
    /// (the caller's).
    #[error("peer {0} has no prefix: give each tcm-local the prefixes of its players, or accept any source explicitly")]
    NoPrefix(u64),
    /// A route could not be installed (the system's, or a route that clashes).
    #[error("route {route}: {reason}")]
    Route {
        /// The route.
        route: Cidr,
        /// What `ip route` said.
        reason: String,
    },
}

/// What a tcm-local process (near the players) needs.
#[derive(Debug, Clone)]
pub struct TcmLocalProcess {
    /// The TUN device the players' packets to the game server are routed into.
    pub tun: TunSpec,
    /// The local address of the trunk socket (port 0: any).
    pub trunk_bind: SocketAddr,
    /// This tcm-local's trunk credential for tcm-remote (its address and key, and the id
    /// tcm-remote admits).
    pub credential: TrunkCredential,
    /// tcm-remote's address to dial instead of the credential's first; `None`: the
    /// credential's.
    pub server_gateway: Option<SocketAddr>,
    /// This gateway's key (of its unused players' socket).
    pub key: ServerKey,
    /// Period T, buffer and contexts; `mtu` and `single_native` are set by the process.
    pub tcm: TcmConfig,
    /// The trunk's transport settings (its `max_datagram_size` bounds the bundles).
    pub transport: TransportConfig,
}

/// What a tcm-remote process (near the game server) needs.
#[derive(Debug, Clone)]
pub struct TcmRemoteProcess {
    /// The TUN device the game server's packets to the players are routed into.
    pub tun: TunSpec,
    /// Where the tcm-local process connects its trunk (UDP).
    pub listen: SocketAddr,
    /// This gateway's key, which tcm-local connects with.
    pub key: ServerKey,
    /// The operator key the tcm-locals' credentials are minted with.
    pub operator_key: TokenKey,
    /// The tcm-locals admitted, each with the prefixes its players' packets may come from
    /// (and the game server's replies to which go to it).
    pub peers: Vec<TrunkPeer>,
    /// Write restored packets whatever their source: without it, the process refuses to
    /// start while a peer has no prefix. A warning is printed when set.
    pub accept_any_source: bool,
    /// Period T, buffer and contexts; `mtu` and `single_native` are set by the process.
    pub tcm: TcmConfig,
    /// The trunk's transport settings.
    pub transport: TransportConfig,
}

/// Counters of the TUN side of a TCM process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunCounters {
    /// Packets read from the TUN device.
    pub packets_read: u64,
    /// Bytes of those packets.
    pub bytes_read: u64,
    /// Restored packets written to the TUN device.
    pub packets_written: u64,
    /// Restored packets the TUN device refused (its queue full).
    pub write_errors: u64,
    /// Packets read while no trunk could take them (dropped before the multiplexer): the
    /// trunk was down, or (tcm-remote) no peer's prefixes hold their destination.
    pub trunk_down_drops: u64,
    /// Bundles the trunk refused (it went down, or its buffer was full).
    pub bundles_lost: u64,
    /// Packets the multiplexer emitted native (should not happen: see the module doc).
    pub natives_dropped: u64,
    /// Packets the multiplexer refused (empty or too long).
    pub refused: u64,
    /// Bundles the demultiplexer rejected as malformed.
    pub bad_bundles: u64,
    /// Restored packets not written because their source is outside the prefixes of the peer
    /// that sent them (tcm-remote: [`TrunkPeer::prefixes`]; tcm-local: [`TunSpec::routes`]).
    pub foreign_sources: u64,
}

/// Statistics of a TCM process: the trunk's, both TCM directions' and the TUN device's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcmProcessStats {
    /// The gateway (trunk socket counters).
    pub gateway: GatewayStats,
    /// The multiplexer: packets read from the TUN device toward the trunk.
    pub mux: TcmStats,
    /// The demultiplexer: bundles from the trunk restored to the TUN device.
    pub demux: TcmStats,
    /// The TUN device.
    pub tun: TunCounters,
}

impl TcmProcessStats {
    /// Fraction of the native bytes and packets toward the trunk that TCM saved, counting the
    /// bundles alone (`mux.bundle_bytes_out` against `mux.bytes_in`).
    pub fn saved(&self) -> (f64, f64) {
        let m = &self.mux;
        let bytes = m.bundle_bytes_out + m.native_bytes_out;
        let packets = m.bundles_out + m.natives_out;
        (saving(m.bytes_in, bytes), saving(m.packets_in, packets))
    }

    /// The same on the wire: the trunk socket's sent UDP payload (encryption, acks and
    /// handshakes included) against the native packets read from the TUN device.
    pub fn saved_on_wire(&self) -> (f64, f64) {
        let t = &self.gateway.trunk;
        (
            saving(self.mux.bytes_in, t.bytes_sent),
            saving(self.mux.packets_in, t.packets_sent),
        )
    }
}

fn saving(before: u64, after: u64) -> f64 {
    if before == 0 {
        0.0
    } else {
        1.0 - after as f64 / before as f64
    }
}

/// A periodic report of a TCM process: how often, and what to call with the statistics.
pub type TcmReport = (Duration, Box<dyn FnMut(&TcmProcessStats) + Send>);

/// The largest IP packet that always fits a bundle of `bundle_mtu` bytes: the MTU the TCM
/// processes give their TUN devices.
pub fn tun_mtu(bundle_mtu: usize) -> usize {
    bundle_mtu.saturating_sub(RECORD_HEADROOM)
}

/// The path's TCM configuration and TUN device, from the process's settings.
fn open_path(
    tun: &TunSpec,
    tcm: &TcmConfig,
    trunk: &TransportConfig,
    sources: Sources,
) -> Result<TcmPath, TcmRunError> {
    let tcm = TcmConfig {
        mtu: trunk.max_unfragmented().saturating_sub(1),
        single_native: false,
        ..tcm.clone()
    };
    // checked here, so that each peer's multiplexer can be made later
    Multiplexer::new(tcm.clone())?;
    Demultiplexer::new(&tcm)?;
    Ok(TcmPath::new(open_tun(tun, tun_mtu(tcm.mtu))?, tcm, sources))
}

fn stats(path: &TcmPath, gateway: &GatewayStats) -> TcmProcessStats {
    let (mux, demux) = path.tcm_stats();
    TcmProcessStats {
        gateway: gateway.clone(),
        mux,
        demux,
        tun: path.counters,
    }
}

fn endpoint_config(transport: &TransportConfig) -> EndpointConfig {
    EndpointConfig {
        transport: Arc::new(transport.clone()),
        ..EndpointConfig::new(rand::rng().random())
    }
}

fn server_config(key: &ServerKey) -> ServerConfig {
    ServerConfig {
        key: Some(key.clone()),
        ..ServerConfig::default()
    }
}

async fn bind(local: SocketAddr, trunk: SocketAddr) -> Result<Sockets, RunError> {
    Ok(Sockets {
        local: UdpSocket::bind(local).await?,
        trunk: UdpSocket::bind(trunk).await?,
    })
}

/// Loopback, any port: the unused local socket of a TCM gateway.
const UNUSED: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// A TCM gateway with its TUN device and sockets, ready to run: [`TcmRunner::run`].
pub struct TcmRunner<M> {
    machine: M,
    sockets: Sockets,
    path: TcmPath,
}

impl<M> fmt::Debug for TcmRunner<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcmRunner")
            .field("trunk", &self.trunk_addr().ok())
            .field("mtu", &self.path.tcm.mtu)
            .finish_non_exhaustive()
    }
}

impl<M> TcmRunner<M> {
    /// The address of the trunk socket.
    pub fn trunk_addr(&self) -> io::Result<SocketAddr> {
        self.sockets.trunk.local_addr()
    }

    /// The TCM configuration in force (with the process's `mtu` and `single_native`).
    pub fn tcm_config(&self) -> &TcmConfig {
        &self.path.tcm
    }
}

impl<M: Tunnel> TcmRunner<M> {
    /// Runs until `stop` turns true (or its [`Stop`](super::Stop) is dropped); returns the
    /// final statistics. `report` (if any) is called every period with the statistics so far.
    pub async fn run(
        mut self,
        stop: watch::Receiver<bool>,
        report: Option<TcmReport>,
    ) -> Result<TcmProcessStats, TcmRunError> {
        let report =
            report.map(|(every, mut f)| (every, move |m: &M, p: &TcmPath| f(&stats(p, m.stats()))));
        drive_with(
            &mut self.machine,
            &self.sockets,
            &mut self.path,
            stop,
            report,
        )
        .await
        .map_err(RunError::from)?;
        Ok(stats(&self.path, self.machine.stats()))
    }
}

impl TcmRunner<EdgeGateway> {
    /// tcm-local: creates the TUN device and its routes, binds the trunk socket and starts
    /// connecting the trunk. Must run in the network namespace the device belongs in.
    pub async fn local(p: TcmLocalProcess) -> Result<Self, TcmRunError> {
        let trunk = TrunkOptions::default().transport(&p.transport);
        let path = open_path(
            &p.tun,
            &p.tcm,
            &trunk,
            Sources::Routes(p.tun.routes.clone()),
        )?;
        let sockets = bind(UNUSED, p.trunk_bind).await?;
        let config = EdgeConfig {
            players: endpoint_config(&p.transport),
            players_server: server_config(&p.key),
            trunk: endpoint_config(&trunk),
            credential: p.credential,
            server_gateway: p.server_gateway,
            options: TrunkOptions::default(),
        };
        let machine = EdgeGateway::new(Instant::now(), config).map_err(RunError::from)?;
        Ok(Self {
            machine,
            sockets,
            path,
        })
    }
}

impl TcmRunner<ServerGateway> {
    /// tcm-remote: creates the TUN device and its routes and binds the trunk socket.
    pub async fn remote(p: TcmRemoteProcess) -> Result<Self, TcmRunError> {
        let trunk = TrunkOptions::default().transport(&p.transport);
        if let Some(bare) = p.peers.iter().find(|q| q.prefixes.is_empty()) {
            if !p.accept_any_source {
                return Err(TcmRunError::NoPrefix(bare.id));
            }
        }
        if p.accept_any_source {
            tracing::warn!(
                "tcm-remote accepts any source address from its peers: a tcm-local can inject \
                 packets from any address into the TUN device"
            );
        }
        let prefixes = p.peers.iter().map(|q| (q.id, q.prefixes.clone())).collect();
        let any = p.accept_any_source;
        let path = open_path(&p.tun, &p.tcm, &trunk, Sources::Peers { prefixes, any })?;
        let sockets = bind(UNUSED, p.listen).await?;
        let placeholder = ServerKey::generate(rand::rng().random()).public();
        let config = ServerGatewayConfig {
            trunk: endpoint_config(&trunk),
            trunk_server: server_config(&p.key),
            operator_key: p.operator_key,
            peers: p.peers,
            upstream: endpoint_config(&p.transport),
            game_server: SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 9),
            game_server_key: placeholder,
            upstream_tokens: None,
            options: TrunkOptions::default(),
        };
        let machine = ServerGateway::new(Instant::now(), config).map_err(RunError::from)?;
        Ok(Self {
            machine,
            sockets,
            path,
        })
    }

    /// The public key tcm-local connects with.
    pub fn public_key(&self) -> PublicKey {
        self.machine.trunk_public_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tcm::Output;

    #[test]
    fn every_tun_packet_fits_a_bundle() {
        let trunk = TrunkOptions::default().transport(&TransportConfig::default());
        let mtu = trunk.max_unfragmented() - 1;
        let mut mux = Multiplexer::new(TcmConfig {
            mtu,
            single_native: false,
            ..TcmConfig::default()
        })
        .expect("config");
        // an IPv4/TCP packet of the TUN MTU (the largest FULL record) still goes in a bundle
        let b = etherparse::PacketBuilder::ipv4([10, 1, 0, 1], [10, 2, 0, 1], 64)
            .tcp(4000, 27015, 1 << 20, 1000)
            .ack(1 << 24);
        let payload = vec![7u8; tun_mtu(mtu) - 40];
        let mut p = Vec::new();
        b.write(&mut p, &payload).expect("packet");
        assert_eq!(p.len(), tun_mtu(mtu));
        let now = Instant::now();
        mux.push(now, &p).expect("push");
        let later = now + Duration::from_secs(1);
        mux.handle_timeout(later);
        let mut out = Vec::new();
        assert_eq!(mux.poll_output(later, &mut out), Some(Output::Bundle));
        assert!(out.len() <= mtu, "{} > {mtu}", out.len());
        assert_eq!(mux.stats().full_records, 1);
    }
}
