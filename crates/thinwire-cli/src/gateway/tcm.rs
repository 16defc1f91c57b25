//! `thinwire gateway tcm-local` / `tcm-remote`: the TCM pair for unmodified games, each with
//! a TUN device (`docs/GATEWAY.md` §1.1).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use thinwire_gateway::run::{
    load_credential, Cidr, TcmLocalProcess, TcmProcessStats, TcmRemoteProcess, TcmReport,
    TcmRunner, TunSpec,
};
use thinwire_gateway::tcm::TcmConfig;
use thinwire_proto::TransportConfig;

use super::{prepare, until_stopped, Admission};

/// The TUN device of a TCM process.
#[derive(Debug, Args)]
pub(crate) struct TunArgs {
    /// Name of the TUN device to create (removed, with its routes, when the process ends).
    #[arg(long, default_value = "tcm0")]
    tun: String,
    /// The device's address and network, e.g. 10.1.0.1/24.
    #[arg(long)]
    tun_address: Cidr,
    /// A prefix routed into the device (repeatable): the game server's address at tcm-local,
    /// the players' addresses at tcm-remote.
    #[arg(long = "route")]
    routes: Vec<Cidr>,
}

/// Options both TCM processes have.
#[derive(Debug, Args)]
pub(crate) struct TcmCommon {
    /// This gateway's key file (64 hex digits of secret; created when missing). Its public
    /// half is printed at start (tcm-local connects to tcm-remote with it).
    #[arg(long)]
    key_file: PathBuf,
    /// Period T in milliseconds: packets read from the TUN device within one period leave as
    /// one bundle at its end (added delay: at most T).
    #[arg(long, default_value_t = 25)]
    period_ms: u64,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long = "for")]
    run_for: Option<f64>,
    /// Print statistics every this many seconds (0: only at the end).
    #[arg(long, default_value_t = 10.0)]
    report_every: f64,
    #[command(flatten)]
    tun: TunArgs,
}

/// `thinwire gateway tcm-local`.
#[derive(Debug, Args)]
pub(crate) struct TcmLocalArgs {
    /// This tcm-local's trunk credential file (from `thinwire gateway credential`).
    #[arg(long)]
    credential: PathBuf,
    /// Local address of the trunk socket.
    #[arg(long, default_value = "0.0.0.0:0")]
    trunk_bind: SocketAddr,
    #[command(flatten)]
    common: TcmCommon,
}

/// `thinwire gateway tcm-remote`.
#[derive(Debug, Args)]
pub(crate) struct TcmRemoteArgs {
    /// Where tcm-local connects its trunk.
    #[arg(long)]
    listen: SocketAddr,
    /// Restore packets from any source address (without it, every `--peer` needs prefixes).
    #[arg(long)]
    accept_any_source: bool,
    #[command(flatten)]
    admission: Admission,
    #[command(flatten)]
    common: TcmCommon,
}

impl TcmCommon {
    fn tun(&self) -> TunSpec {
        TunSpec {
            name: self.tun.tun.clone(),
            address: self.tun.tun_address,
            routes: self.tun.routes.clone(),
        }
    }

    fn tcm(&self) -> Result<TcmConfig, String> {
        if self.period_ms == 0 {
            return Err("--period-ms must be at least 1".into());
        }
        Ok(TcmConfig {
            period: Duration::from_millis(self.period_ms),
            ..TcmConfig::default()
        })
    }
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

fn report(every: Option<Duration>) -> Option<TcmReport> {
    every.map(|d| {
        let print = |s: &TcmProcessStats| eprintln!("{}", tcm_line(s));
        (
            d,
            Box::new(print) as Box<dyn FnMut(&TcmProcessStats) + Send>,
        )
    })
}

/// Runs tcm-local.
pub(super) fn local(a: TcmLocalArgs) -> Result<(), String> {
    let c = &a.common;
    let ready = prepare(&c.key_file, c.run_for, c.report_every)?;
    let p = TcmLocalProcess {
        tun: c.tun(),
        trunk_bind: a.trunk_bind,
        credential: load_credential(&a.credential).map_err(|e| e.to_string())?,
        key: ready.key,
        tcm: c.tcm()?,
        transport: TransportConfig::default(),
    };
    let report = report(ready.every);
    let stats = until_stopped(ready.run_for, |rx| async move {
        let runner = TcmRunner::local(p).await?;
        println!("tcm-local: {runner:?}");
        runner.run(rx, report).await
    })?;
    println!("{}", tcm_line(&stats));
    Ok(())
}

/// Runs tcm-remote.
pub(super) fn remote(a: TcmRemoteArgs) -> Result<(), String> {
    let c = &a.common;
    let ready = prepare(&c.key_file, c.run_for, c.report_every)?;
    let p = TcmRemoteProcess {
        tun: c.tun(),
        listen: a.listen,
        key: ready.key,
        operator_key: a.admission.operator_key()?,
        peers: a.admission.peers,
        accept_any_source: a.accept_any_source,
        tcm: c.tcm()?,
        transport: TransportConfig::default(),
    };
    let report = report(ready.every);
    let stats = until_stopped(ready.run_for, |rx| async move {
        let runner = TcmRunner::remote(p).await?;
        println!("tcm-remote: {runner:?}");
        runner.run(rx, report).await
    })?;
    println!("{}", tcm_line(&stats));
    Ok(())
}
