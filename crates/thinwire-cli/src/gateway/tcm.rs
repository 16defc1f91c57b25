//! `thinwire gateway tcm-local` / `tcm-remote`: the TCM pair for unmodified games, each with
//! a TUN device (`docs/GATEWAY.md` §1.1).

use std::time::Duration;

use clap::Args;
use thinwire_gateway::run::{
    Cidr, Metrics, TcmLocalProcess, TcmProcessStats, TcmRemoteProcess, TcmRunner, TunSpec,
};
use thinwire_gateway::tcm::TcmConfig;
use thinwire_proto::TransportConfig;

use super::config::{load, missing, Admission, Loaded, TcmLocalFile, TcmRemoteFile, TunFile};
use super::ops::{prepare, serve, StatsOut};
use super::{print_credential, AdmissionArgs, Ops, TrunkPeerArgs};

/// The TUN device of a TCM process.
#[derive(Debug, Args)]
pub(crate) struct TunArgs {
    /// Name of the TUN device to create (removed, with its routes, when the process ends)
    /// [default: tcm0].
    #[arg(long)]
    tun: Option<String>,
    /// The device's address and network, e.g. 10.1.0.1/24.
    #[arg(long)]
    tun_address: Option<Cidr>,
    /// A prefix routed into the device (repeatable; replaces the file's `routes`): the game
    /// server's address at tcm-local, the players' addresses at tcm-remote.
    #[arg(long = "route")]
    routes: Vec<Cidr>,
}

/// Options both TCM processes have.
#[derive(Debug, Args)]
pub(crate) struct TcmCommon {
    #[command(flatten)]
    ops: Ops,
    #[command(flatten)]
    tun: TunArgs,
}

/// `thinwire gateway tcm-local`.
#[derive(Debug, Args)]
pub(crate) struct TcmLocalArgs {
    #[command(flatten)]
    peer: TrunkPeerArgs,
    #[command(flatten)]
    common: TcmCommon,
}

/// `thinwire gateway tcm-remote`.
#[derive(Debug, Args)]
pub(crate) struct TcmRemoteArgs {
    /// Where tcm-local connects its trunk (host:port).
    #[arg(long)]
    listen: Option<String>,
    /// Restore packets from any source address (without it, every peer needs prefixes).
    #[arg(long)]
    accept_any_source: bool,
    #[command(flatten)]
    admission: AdmissionArgs,
    #[command(flatten)]
    common: TcmCommon,
}

/// The TUN device from the flags over the file's `[tun]`.
fn tun<T>(a: &TunArgs, l: &Loaded<T>, f: &TunFile) -> Result<TunSpec, String> {
    let address = match (a.tun_address, &f.address) {
        (Some(c), _) => c,
        (None, Some(c)) => l.parse(c, "address")?,
        (None, None) => return Err(missing("tun-address")),
    };
    let routes = match (&f.routes, a.routes.is_empty()) {
        (Some(r), true) => r
            .iter()
            .map(|c| l.parse(c, "routes"))
            .collect::<Result<_, _>>()?,
        _ => a.routes.clone(),
    };
    let name = a.tun.clone().or_else(|| f.name.clone());
    Ok(TunSpec {
        name: name.unwrap_or_else(|| "tcm0".into()),
        address,
        routes,
    })
}

fn tcm(period: Duration) -> Result<TcmConfig, String> {
    if period.is_zero() {
        return Err("--period-ms must be at least 1".into());
    }
    Ok(TcmConfig {
        period,
        ..TcmConfig::default()
    })
}

fn percent(x: f64) -> f64 {
    100.0 * x
}

/// One line of statistics: what TCM saved toward the trunk (bundles alone, and on the wire),
/// the delay it added, and what it restored into the TUN device.
fn tcm_line(s: &TcmProcessStats) -> String {
    let (m, d, t) = (&s.mux, &s.demux, &s.tun);
    let (bytes, packets) = s.saved();
    let (wire_bytes, wire_packets) = s.saved_on_wire();
    format!(
        "tun in {} pkts {} B -> {} bundles {} B (saved {:.1}% bytes {:.1}% packets; on the \
         trunk {:.1}% bytes {:.1}% packets); added delay mean {:.2} ms max {:.2} ms; \
         restored {} packets from {} bundles into the tun (context losses {}, check failures {}, \
         malformed {}); dropped: trunk down {}, bundles lost {}, buffer {}",
        m.packets_in,
        m.bytes_in,
        m.bundles_out,
        m.bundle_bytes_out,
        percent(bytes),
        percent(packets),
        percent(wire_bytes),
        percent(wire_packets),
        m.hold_mean().as_secs_f64() * 1e3,
        m.hold_max.as_secs_f64() * 1e3,
        d.restored,
        d.bundles_in,
        d.context_losses,
        d.check_failures,
        d.malformed_records + d.malformed_bundles,
        t.trunk_down_drops,
        t.bundles_lost,
        m.buffer_drops,
    )
}

/// How a TCM process's statistics are exported and printed.
const STATS: StatsOut<TcmProcessStats> = (Metrics::tcm, Metrics::set_tcm, tcm_line);

/// Runs tcm-local.
pub(super) fn local(a: TcmLocalArgs) -> Result<(), String> {
    let l = load::<TcmLocalFile>(a.common.ops.config.as_deref())?;
    let f = &l.file;
    let trunk = l.trunk_peer(&a.peer, f.peer())?;
    let tun = tun(&a.common.tun, &l, &f.tun)?;
    let ready = prepare(&a.common.ops, &l, f.ops(), 25)?;
    print_credential(&trunk.credential);
    let p = TcmLocalProcess {
        tun,
        trunk_bind: trunk.bind,
        credential: trunk.credential,
        server_gateway: trunk.server_gateway,
        key: ready.key.clone(),
        tcm: tcm(ready.period)?,
        transport: TransportConfig::default(),
    };
    serve(&ready, "tcm-local", STATS, |rx, report| async move {
        let runner = TcmRunner::local(p).await?;
        println!("tcm-local: {runner:?}");
        runner.run(rx, report).await
    })
}

/// Runs tcm-remote.
pub(super) fn remote(a: TcmRemoteArgs) -> Result<(), String> {
    let l = load::<TcmRemoteFile>(a.common.ops.config.as_deref())?;
    let f = &l.file;
    let listen = l.address(a.listen.as_deref(), "listen", f.listen.as_ref())?;
    let admission = Admission::read(&l, &a.admission, f.admission())?;
    let tun = tun(&a.common.tun, &l, &f.tun)?;
    let ready = prepare(&a.common.ops, &l, f.ops(), 25)?;
    let p = TcmRemoteProcess {
        tun,
        listen,
        key: ready.key.clone(),
        operator_key: admission.operator_key()?,
        peers: admission.peers,
        accept_any_source: a.accept_any_source || f.accept_any_source.unwrap_or(false),
        tcm: tcm(ready.period)?,
        transport: TransportConfig::default(),
    };
    serve(&ready, "tcm-remote", STATS, |rx, report| async move {
        let runner = TcmRunner::remote(p).await?;
        println!("tcm-remote: {runner:?}");
        runner.run(rx, report).await
    })
}
