//! `thinwire gateway`: runs an edge or a server gateway (or a TCM pair: `tcm.rs`) until
//! Ctrl-C (or `--for`), printing its statistics as it goes.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use thinwire_gateway::run::{
    fresh_nonce, load_credential, load_or_create_key, load_or_create_operator_key, save_credential,
    EdgeProcess, Report, Runner, ServerProcess, Stop,
};
use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, GatewayStats, TrunkOptions, TrunkPeer,
};
use thinwire_proto::{PublicKey, ServerKey, TokenKey, TransportConfig};
use tokio::sync::watch;

mod tcm;

/// The gateway processes.
#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// The edge gateway near the players: players connect here as to the game server; all of
    /// them travel to the server gateway over one trunk.
    Edge(EdgeArgs),
    /// The server gateway near the game server: accepts trunks and opens one ordinary thinwire
    /// connection per player to the game server.
    Server(ServerArgs),
    /// TCM near the players, for unmodified games: IP packets routed into a TUN device (the
    /// game server's address) have their headers compressed, are bundled every period and
    /// tunneled to tcm-remote; the replies are restored into the TUN device.
    TcmLocal(tcm::TcmLocalArgs),
    /// TCM near the game server: restores the bundles from tcm-local into a TUN device (the
    /// game server sees the players' own addresses) and tunnels the replies routed into it
    /// (the players' addresses) back.
    TcmRemote(tcm::TcmRemoteArgs),
    /// Mints the trunk credential of an edge or tcm-local with the operator key.
    Credential(CredentialArgs),
}

/// Options both processes have.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// This gateway's key file (64 hex digits of secret; created when missing). Its public
    /// half is printed at start: the peers connect with it.
    #[arg(long)]
    key_file: PathBuf,
    /// Period T in milliseconds: messages toward the trunk are held and sent together every
    /// T (0: at once).
    #[arg(long, default_value_t = 10)]
    period_ms: u64,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long = "for")]
    run_for: Option<f64>,
    /// Print statistics every this many seconds (0: only at the end).
    #[arg(long, default_value_t = 10.0)]
    report_every: f64,
}

/// `thinwire gateway edge`.
#[derive(Debug, Args)]
pub(crate) struct EdgeArgs {
    /// Where players connect.
    #[arg(long)]
    listen: SocketAddr,
    /// This edge's trunk credential file (from `thinwire gateway credential`): the server
    /// gateway's address and key, and the peer id it admits.
    #[arg(long)]
    credential: PathBuf,
    /// Local address of the trunk socket.
    #[arg(long, default_value = "0.0.0.0:0")]
    trunk_bind: SocketAddr,
    #[command(flatten)]
    common: Common,
}

/// `thinwire gateway server`.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Where edge gateways connect their trunks.
    #[arg(long)]
    listen: SocketAddr,
    /// The game server's address.
    #[arg(long)]
    game_server: SocketAddr,
    /// The game server's public key (hex).
    #[arg(long)]
    game_server_key: PublicKey,
    /// Local address of the socket toward the game server (the game server lists its IP in
    /// `ServerConfig::trusted_sources`).
    #[arg(long, default_value = "0.0.0.0:0")]
    upstream_bind: SocketAddr,
    #[command(flatten)]
    admission: Admission,
    #[command(flatten)]
    common: Common,
}

/// Who a server gateway (or tcm-remote) admits.
#[derive(Debug, Args)]
pub(crate) struct Admission {
    /// The operator key file (64 hex digits; created when missing) the trunk credentials are
    /// minted with.
    #[arg(long)]
    operator_key_file: PathBuf,
    /// An admitted peer, `ID:NAME` or (TCM) `ID:NAME:PREFIX,PREFIX...` (repeatable).
    #[arg(long = "peer")]
    peers: Vec<TrunkPeer>,
}

impl Admission {
    fn operator_key(&self) -> Result<TokenKey, String> {
        load_or_create_operator_key(&self.operator_key_file).map_err(|e| e.to_string())
    }
}

/// `thinwire gateway credential`: mints an edge's (or tcm-local's) trunk credential.
#[derive(Debug, Args)]
pub(crate) struct CredentialArgs {
    /// The operator key file (64 hex digits; created when missing).
    #[arg(long)]
    operator_key_file: PathBuf,
    /// The peer's id (listed with `--peer` at the server gateway).
    #[arg(long)]
    peer_id: u64,
    /// The peer's name (at most 64 bytes).
    #[arg(long)]
    name: String,
    /// The server gateway's trunk address, as the edge reaches it.
    #[arg(long)]
    server_gateway: SocketAddr,
    /// The server gateway's public key (hex; printed at its start).
    #[arg(long)]
    server_gateway_key: PublicKey,
    /// Validity in days.
    #[arg(long, default_value_t = 365)]
    days: u64,
    /// Where to write the credential (a new file, mode 0600).
    #[arg(long)]
    out: PathBuf,
}

fn credential(a: CredentialArgs) -> Result<(), String> {
    let key = load_or_create_operator_key(&a.operator_key_file).map_err(|e| e.to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?;
    let expires = now.as_secs() + a.days.saturating_mul(86_400);
    let c = mint_trunk_credential(
        &key,
        &CredentialSpec {
            peer_id: a.peer_id,
            name: &a.name,
            server_gateway_key: &a.server_gateway_key,
            addresses: &[a.server_gateway],
            expires_unix_s: expires,
        },
        fresh_nonce(),
    )
    .map_err(|e| e.to_string())?;
    save_credential(&a.out, &c).map_err(|e| e.to_string())?;
    println!(
        "credential of peer {} ({}) written to {}",
        c.peer,
        c.name,
        a.out.display()
    );
    Ok(())
}

fn seconds(s: f64, what: &str) -> Result<Option<Duration>, String> {
    if s == 0.0 {
        return Ok(None);
    }
    if !(s.is_finite() && s > 0.0 && s < 1e7) {
        return Err(format!("{what} {s}: must be a positive number of seconds"));
    }
    Ok(Some(Duration::from_secs_f64(s)))
}

/// One line of statistics: flows, bytes and packets on each side (and what the trunk saved),
/// the delay added by holding messages for the period.
fn stats_line(s: &GatewayStats) -> String {
    let local = s.local.bytes_sent + s.local.bytes_received;
    let trunk = s.trunk.bytes_sent + s.trunk.bytes_received;
    let local_p = s.local.packets_sent + s.local.packets_received;
    let trunk_p = s.trunk.packets_sent + s.trunk.packets_received;
    let saved = |a: u64, b: u64| {
        if a == 0 {
            0.0
        } else {
            100.0 * (1.0 - b as f64 / a as f64)
        }
    };
    let held_mean = s
        .held_delay_total
        .checked_div(s.held_messages.max(1) as u32)
        .unwrap_or_default();
    format!(
        "flows {} open / {} total; local {local} B {local_p} pkts, trunk {trunk} B {trunk_p} pkts \
         (bytes {:+.1}%, packets {:+.1}% saved); messages to trunk {} from trunk {}; \
         added delay mean {:.2} ms max {:.2} ms; dropped {}",
        s.flows_open,
        s.flows_total,
        saved(local, trunk),
        saved(local_p, trunk_p),
        s.messages_to_trunk,
        s.messages_from_trunk,
        held_mean.as_secs_f64() * 1e3,
        s.held_delay_max.as_secs_f64() * 1e3,
        s.dropped_messages,
    )
}

/// Runs the command.
pub(crate) fn run(cmd: GatewayCommand) -> Result<(), String> {
    match cmd {
        GatewayCommand::Edge(a) => edge(a),
        GatewayCommand::Server(a) => server(a),
        GatewayCommand::TcmLocal(a) => tcm::local(a),
        GatewayCommand::TcmRemote(a) => tcm::remote(a),
        GatewayCommand::Credential(a) => credential(a),
    }
}

/// What every process reads from its options: its key, how long to run, how often to
/// report.
pub(super) struct Prepared {
    pub(super) key: ServerKey,
    pub(super) run_for: Option<Duration>,
    pub(super) every: Option<Duration>,
}

/// Loads (or creates) the key file, prints its public half, checks the durations.
pub(super) fn prepare(
    key_file: &Path,
    run_for: Option<f64>,
    report_every: f64,
) -> Result<Prepared, String> {
    let key = load_or_create_key(key_file).map_err(|e| e.to_string())?;
    println!("public key: {}", key.public());
    let run_for = match run_for {
        Some(s) => seconds(s, "--for")?,
        None => None,
    };
    let every = seconds(report_every, "--report-every")?;
    Ok(Prepared {
        key,
        run_for,
        every,
    })
}

/// Runs `process` on a current-thread runtime until `run_for` has passed or Ctrl-C.
pub(super) fn until_stopped<T, E: std::fmt::Display, F>(
    run_for: Option<Duration>,
    process: impl FnOnce(watch::Receiver<bool>) -> F,
) -> Result<T, String>
where
    F: Future<Output = Result<T, E>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    rt.block_on(async move {
        tokio::spawn(async move {
            match run_for {
                Some(d) => tokio::time::sleep(d).await,
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            stop.stop();
        });
        process(rx).await
    })
    .map_err(|e| e.to_string())
}

fn report(every: Option<Duration>) -> Option<Report> {
    every.map(|d| {
        let print = |s: &GatewayStats| eprintln!("{}", stats_line(s));
        (d, Box::new(print) as Box<dyn FnMut(&GatewayStats) + Send>)
    })
}

fn options(common: &Common) -> TrunkOptions {
    TrunkOptions {
        period: Duration::from_millis(common.period_ms),
        ..TrunkOptions::default()
    }
}

fn edge(a: EdgeArgs) -> Result<(), String> {
    let c = &a.common;
    let ready = prepare(&c.key_file, c.run_for, c.report_every)?;
    let p = EdgeProcess {
        listen: a.listen,
        trunk_bind: a.trunk_bind,
        credential: load_credential(&a.credential).map_err(|e| e.to_string())?,
        key: ready.key,
        options: options(c),
        transport: TransportConfig::default(),
        insecure_cleartext: false,
    };
    let report = report(ready.every);
    let stats = until_stopped(ready.run_for, |rx| async move {
        Runner::edge(p).await?.run(rx, report).await
    })?;
    println!("{}", stats_line(&stats));
    Ok(())
}

fn server(a: ServerArgs) -> Result<(), String> {
    let c = &a.common;
    let ready = prepare(&c.key_file, c.run_for, c.report_every)?;
    let p = ServerProcess {
        listen: a.listen,
        upstream_bind: a.upstream_bind,
        game_server: a.game_server,
        game_server_key: a.game_server_key,
        key: ready.key,
        operator_key: a.admission.operator_key()?,
        peers: a.admission.peers,
        options: options(c),
        transport: TransportConfig::default(),
    };
    let report = report(ready.every);
    let stats = until_stopped(ready.run_for, |rx| async move {
        Runner::server(p).await?.run(rx, report).await
    })?;
    println!("{}", stats_line(&stats));
    Ok(())
}
