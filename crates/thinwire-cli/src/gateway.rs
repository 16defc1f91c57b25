//! `thinwire gateway`: runs an edge or a server gateway (or a TCM pair: `tcm.rs`) until
//! SIGTERM, SIGINT (Ctrl-C) or `--for`, printing its statistics as it goes and its final
//! statistics at the end; `keygen` writes a key file, `credential` an edge's trunk
//! credential (`credential.rs`).
//!
//! Every value comes from a flag or from the role's configuration file (`--config`,
//! `config.rs`); addresses are `host:port`, resolved at start (`addr.rs`); `ops.rs` has what
//! every process does around its gateway (key, signals, report, Prometheus endpoint).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use thinwire_gateway::run::{
    fresh_nonce, load_token_key, EdgeProcess, Metrics, Runner, ServerProcess,
};
use thinwire_gateway::trunk::{
    GatewayStats, TrunkCredential, TrunkOptions, TrunkPeer, UpstreamTokens,
};
use thinwire_proto::{PublicKey, TokenKey, TokenPolicy, TransportConfig};

use self::config::{load, Admission, EdgeFile, Limits, Loaded, ServerFile};
use self::ops::{prepare, serve, StatsOut};

mod addr;
mod config;
mod credential;
mod keygen;
mod ops;
mod tcm;

/// The gateway processes.
#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// The edge gateway near the players: players connect here as to the game server; all of
    /// them travel to the server gateway over one trunk.
    Edge(Box<EdgeArgs>),
    /// The server gateway near the game server: accepts trunks and opens one ordinary thinwire
    /// connection per player to the game server.
    Server(Box<ServerArgs>),
    /// TCM near the players, for unmodified games: IP packets routed into a TUN device (the
    /// game server's address) have their headers compressed, are bundled every period and
    /// tunneled to tcm-remote; the replies are restored into the TUN device.
    TcmLocal(tcm::TcmLocalArgs),
    /// TCM near the game server: restores the bundles from tcm-local into a TUN device (the
    /// game server sees the players' own addresses) and tunnels the replies routed into it
    /// (the players' addresses) back.
    TcmRemote(tcm::TcmRemoteArgs),
    /// Writes a new static key file (64 hex digits, mode 0600) and prints its public key.
    Keygen(keygen::KeygenArgs),
    /// Mints the trunk credential of an edge or tcm-local with the operator key (written to
    /// a new file, mode 0600): the server gateway admits its trunk if its id is a peer.
    Credential(credential::CredentialArgs),
}

/// Options every gateway process has.
#[derive(Debug, Args)]
pub(crate) struct Ops {
    /// The configuration file (TOML; commented examples in docs/examples/gateway/). Flags
    /// override its values.
    #[arg(long)]
    config: Option<PathBuf>,
    /// This gateway's key file (64 hex digits of secret; created when missing, or with
    /// `thinwire gateway keygen`). Its public half is printed at start: the peers connect
    /// with it.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Period T in milliseconds: messages toward the trunk are held and sent together every
    /// T [default: 10 for edge and server (0: at once), 25 for TCM].
    #[arg(long)]
    period_ms: Option<u64>,
    /// Stop after this many seconds (default: run until SIGTERM or SIGINT / Ctrl-C).
    #[arg(long = "for")]
    run_for: Option<f64>,
    /// Print statistics every this many seconds (0: only at the end) [default: 10].
    #[arg(long)]
    report_every: Option<f64>,
    /// Serve the statistics for Prometheus at http://ADDR/metrics (e.g. 127.0.0.1:9100; no
    /// authentication: bind a private address).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
}

/// Bounds of an edge or server gateway.
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// Most flows (players) at once [default: 4096].
    #[arg(long)]
    max_flows: Option<usize>,
    /// Bytes held for one flow before it is closed [default: 262144].
    #[arg(long)]
    max_flow_backlog: Option<usize>,
    /// Bytes held for all flows together [default: 33554432].
    #[arg(long)]
    max_held: Option<usize>,
    /// Edge: most players from one source address (IPv4, or IPv6 /64) [default: 1024].
    #[arg(long)]
    players_per_source: Option<usize>,
}

/// The trunk's far end, for an edge or tcm-local.
#[derive(Debug, Args)]
pub(crate) struct TrunkPeerArgs {
    /// This gateway's trunk credential file (from `thinwire gateway credential`; required):
    /// the server gateway's (or tcm-remote's) address and key, and the peer id it admits.
    #[arg(long)]
    credential: Option<PathBuf>,
    /// The server gateway's trunk address (host:port) to dial instead of the credential's
    /// (e.g. a name, resolved at start).
    #[arg(long)]
    server_gateway: Option<String>,
    /// Its public key (hex): checked against the credential's, if given.
    #[arg(long)]
    server_gateway_key: Option<PublicKey>,
    /// Local address of the trunk socket [default: any address of the server gateway's
    /// family, any port].
    #[arg(long)]
    trunk_bind: Option<String>,
}

/// Who a server gateway (or tcm-remote) admits; added to the file's settings.
#[derive(Debug, Args)]
pub(crate) struct AdmissionArgs {
    /// The operator key file (64 hex digits; created when missing) the trunk credentials are
    /// minted with (`thinwire gateway credential`).
    #[arg(long)]
    operator_key_file: Option<PathBuf>,
    /// An admitted peer, `ID:NAME` or (TCM) `ID:NAME:PREFIX,PREFIX...` (repeatable; added to
    /// the file's `[[peer]]`s).
    #[arg(long = "peer")]
    peers: Vec<TrunkPeer>,
}

/// `thinwire gateway edge`.
#[derive(Debug, Args)]
pub(crate) struct EdgeArgs {
    /// Where players connect (host:port).
    #[arg(long)]
    listen: Option<String>,
    /// The game backend's token key file (64 hex digits): players then need a connect token
    /// minted for this edge with it, and their claims travel to the game server [default:
    /// players connect with the edge's key alone].
    #[arg(long)]
    players_token_key_file: Option<PathBuf>,
    #[command(flatten)]
    peer: TrunkPeerArgs,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    ops: Ops,
}

/// `thinwire gateway server`.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Where edge gateways connect their trunks (host:port).
    #[arg(long)]
    listen: Option<String>,
    /// The game server's address (host:port).
    #[arg(long)]
    game_server: Option<String>,
    /// The game server's public key (hex).
    #[arg(long)]
    game_server_key: Option<PublicKey>,
    /// Local address of the socket toward the game server (the game server lists its IP in
    /// `ServerConfig::trusted_sources`) [default: any address of the game server's family].
    #[arg(long)]
    upstream_bind: Option<String>,
    /// The game server's token key file (64 hex digits): each connection to the game server
    /// presents a connect token minted with it, carrying the player's claims [default: none].
    #[arg(long)]
    upstream_token_key_file: Option<PathBuf>,
    /// Lifetime in seconds of those tokens (they only have to outlive the handshake)
    /// [default: 60].
    #[arg(long)]
    upstream_token_lifetime_s: Option<f64>,
    #[command(flatten)]
    admission: AdmissionArgs,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    ops: Ops,
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

/// How an edge's or server gateway's statistics are exported and printed.
const STATS: StatsOut<GatewayStats> = (Metrics::gateway, Metrics::set_gateway, stats_line);

/// Runs the command.
pub(crate) fn run(cmd: GatewayCommand) -> Result<(), String> {
    match cmd {
        GatewayCommand::Edge(a) => edge(*a),
        GatewayCommand::Server(a) => server(*a),
        GatewayCommand::TcmLocal(a) => tcm::local(a),
        GatewayCommand::TcmRemote(a) => tcm::remote(a),
        GatewayCommand::Keygen(a) => keygen::run(a),
        GatewayCommand::Credential(a) => credential::run(a),
    }
}

fn options(period: Duration, flags: &LimitArgs, file: &Limits) -> TrunkOptions {
    let d = TrunkOptions::default();
    TrunkOptions {
        period,
        max_flows: flags.max_flows.or(file.max_flows).unwrap_or(d.max_flows),
        max_flow_backlog: (flags.max_flow_backlog.or(file.max_flow_backlog))
            .unwrap_or(d.max_flow_backlog),
        max_held: flags.max_held.or(file.max_held).unwrap_or(d.max_held),
        players_per_source: (flags.players_per_source.or(file.players_per_source))
            .unwrap_or(d.players_per_source),
        ..d
    }
}

/// A token key file (never created): the flag's, else the file's.
fn token_key<T>(
    l: &Loaded<T>,
    flag: Option<&PathBuf>,
    file: Option<&PathBuf>,
) -> Result<Option<TokenKey>, String> {
    let path = match (flag, file) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => l.path(p),
        (None, None) => return Ok(None),
    };
    load_token_key(&path).map(Some).map_err(|e| e.to_string())
}

/// The server gateway's upstream tokens: the key (flag over file), their lifetime, a fresh
/// nonce prefix.
fn upstream_tokens(
    l: &Loaded<ServerFile>,
    flag: Option<&PathBuf>,
    lifetime_s: Option<f64>,
) -> Result<Option<UpstreamTokens>, String> {
    let f = &l.file;
    let Some(key) = token_key(l, flag, f.upstream_token_key_file.as_ref())? else {
        return Ok(None);
    };
    let s = lifetime_s.or(f.upstream_token_lifetime_s).unwrap_or(60.0);
    if !(s.is_finite() && (1.0..=86_400.0).contains(&s)) {
        return Err(format!(
            "upstream_token_lifetime_s {s}: must be 1 to 86400 seconds"
        ));
    }
    let mut nonce_prefix = [0; 16];
    nonce_prefix.copy_from_slice(&fresh_nonce()[..16]);
    Ok(Some(UpstreamTokens {
        key,
        lifetime: Duration::from_secs_f64(s),
        nonce_prefix,
    }))
}

/// Prints who the trunk credential says this gateway is, and where it dials.
pub(crate) fn print_credential(c: &TrunkCredential) {
    println!(
        "trunk credential: peer {} ({}), server gateway key {}, expires at unix {}",
        c.peer,
        c.name,
        PublicKey(c.token.server_key()),
        c.token.expires_unix_s()
    );
}

fn edge(a: EdgeArgs) -> Result<(), String> {
    let l = load::<EdgeFile>(a.ops.config.as_deref())?;
    let f = &l.file;
    let listen = l.address(a.listen.as_deref(), "listen", f.listen.as_ref())?;
    let trunk = l.trunk_peer(&a.peer, f.peer())?;
    let players_tokens = token_key(
        &l,
        a.players_token_key_file.as_ref(),
        f.players_token_key_file.as_ref(),
    )?
    .map(|key| TokenPolicy {
        key,
        public_addresses: Vec::new(),
    });
    let ready = prepare(&a.ops, &l, f.ops(), 10)?;
    print_credential(&trunk.credential);
    let p = EdgeProcess {
        listen,
        trunk_bind: trunk.bind,
        credential: trunk.credential,
        server_gateway: trunk.server_gateway,
        players_tokens,
        key: ready.key.clone(),
        options: options(ready.period, &a.limits, &f.limits),
        transport: TransportConfig::default(),
        insecure_cleartext: false,
    };
    serve(&ready, "edge", STATS, |rx, report| async move {
        let runner = Runner::edge(p).await?;
        println!("edge: {runner:?}");
        runner.run(rx, report).await
    })
}

fn server(a: ServerArgs) -> Result<(), String> {
    let l = load::<ServerFile>(a.ops.config.as_deref())?;
    let f = &l.file;
    let listen = l.address(a.listen.as_deref(), "listen", f.listen.as_ref())?;
    let (upstream_bind, game_server) = l.toward(
        (
            a.upstream_bind.as_deref(),
            "upstream-bind",
            f.upstream_bind.as_ref(),
        ),
        (
            a.game_server.as_deref(),
            "game-server",
            f.game_server.as_ref(),
        ),
    )?;
    let game_server_key = l.key(
        a.game_server_key,
        "game-server-key",
        f.game_server_key.as_ref(),
    )?;
    let admission = Admission::read(&l, &a.admission, f.admission())?;
    let upstream_tokens = upstream_tokens(
        &l,
        a.upstream_token_key_file.as_ref(),
        a.upstream_token_lifetime_s,
    )?;
    let ready = prepare(&a.ops, &l, f.ops(), 10)?;
    let p = ServerProcess {
        listen,
        upstream_bind,
        game_server,
        game_server_key,
        key: ready.key.clone(),
        operator_key: admission.operator_key()?,
        peers: admission.peers,
        upstream_tokens,
        options: options(ready.period, &a.limits, &f.limits),
        transport: TransportConfig::default(),
    };
    serve(&ready, "server", STATS, |rx, report| async move {
        let runner = Runner::server(p).await?;
        println!("server: {runner:?}");
        runner.run(rx, report).await
    })
}
