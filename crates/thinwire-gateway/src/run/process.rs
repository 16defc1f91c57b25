//! The two gateway processes: the edge (near the players) and the server gateway (near the
//! game server), each bound to two UDP sockets.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use rand::Rng;
use thinwire_proto::{
    EndpointConfig, PublicKey, ServerConfig, ServerKey, TokenKey, TokenPolicy, TransportConfig,
};
use tokio::net::UdpSocket;
use tokio::sync::watch;

use super::drive::{drive, Machine, Report, Sockets};
use crate::trunk::{
    EdgeConfig, EdgeGateway, GatewayError, GatewayStats, ServerGateway, ServerGatewayConfig,
    TrunkCredential, TrunkOptions, TrunkPeer, UpstreamTokens,
};

/// Why a gateway process could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A socket could not be bound or used.
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    /// The gateway's configuration was refused.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
}

/// Stops a running gateway: [`Stop::stop`], or drop it.
#[derive(Debug)]
pub struct Stop(watch::Sender<bool>);

impl Stop {
    /// A stop handle and the receiver a process watches.
    pub fn new() -> (Self, watch::Receiver<bool>) {
        let (tx, rx) = watch::channel(false);
        (Self(tx), rx)
    }

    /// Asks the process to stop; it returns its statistics.
    pub fn stop(&self) {
        let _ = self.0.send(true);
    }
}

/// What an edge gateway process needs.
#[derive(Debug, Clone)]
pub struct EdgeProcess {
    /// Where players connect (UDP).
    pub listen: SocketAddr,
    /// The local address of the trunk socket (port 0: any).
    pub trunk_bind: SocketAddr,
    /// This edge's trunk credential (the server gateway's address and key, and the id it
    /// admits).
    pub credential: TrunkCredential,
    /// The server gateway's address to dial instead of the credential's first (e.g. its name
    /// resolved at start); `None`: the credential's.
    pub server_gateway: Option<SocketAddr>,
    /// The players' connect tokens: `Some`, players need a token minted for this edge with
    /// the policy's key (the game backend's), and their claims travel to the game server;
    /// `None`: players connect with the edge's key alone.
    pub players_tokens: Option<TokenPolicy>,
    /// This gateway's key, which players connect with.
    pub key: ServerKey,
    /// Trunk options (period T, bounds).
    pub options: TrunkOptions,
    /// Transport settings of every connection (players' and the trunk).
    pub transport: TransportConfig,
    /// Players' connections without encryption (only if the players also opt out).
    pub insecure_cleartext: bool,
}

/// What a server gateway process needs.
#[derive(Debug, Clone)]
pub struct ServerProcess {
    /// Where edge gateways connect their trunks (UDP).
    pub listen: SocketAddr,
    /// The local address of the socket toward the game server (port 0: any).
    pub upstream_bind: SocketAddr,
    /// The game server.
    pub game_server: SocketAddr,
    /// The game server's public key.
    pub game_server_key: PublicKey,
    /// This gateway's key, which edge gateways connect with.
    pub key: ServerKey,
    /// The operator key the edges' credentials are minted with.
    pub operator_key: TokenKey,
    /// The edges admitted.
    pub peers: Vec<TrunkPeer>,
    /// How the connections to the game server present the players' claims (a connect token
    /// minted with the game server's token key); `None`: they present none.
    pub upstream_tokens: Option<UpstreamTokens>,
    /// Trunk options (period T, bounds).
    pub options: TrunkOptions,
    /// Transport settings of every connection (the trunk and the per-player ones).
    pub transport: TransportConfig,
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

async fn bind_pair(local: SocketAddr, trunk: SocketAddr) -> io::Result<Sockets> {
    Ok(Sockets {
        local: UdpSocket::bind(local).await?,
        trunk: UdpSocket::bind(trunk).await?,
    })
}

/// A gateway bound to its sockets, ready to run: [`Runner::run`].
pub struct Runner<M> {
    machine: M,
    sockets: Sockets,
}

impl<M> std::fmt::Debug for Runner<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("local", &self.local_addr().ok())
            .field("trunk", &self.trunk_addr().ok())
            .finish_non_exhaustive()
    }
}

impl<M> Runner<M> {
    /// The address of the local socket (players at the edge; toward the game server at the
    /// server gateway).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sockets.local.local_addr()
    }

    /// The address of the trunk socket.
    pub fn trunk_addr(&self) -> io::Result<SocketAddr> {
        self.sockets.trunk.local_addr()
    }
}

impl Runner<EdgeGateway> {
    /// Binds an edge gateway's sockets and starts connecting its trunk.
    pub async fn edge(p: EdgeProcess) -> Result<Self, RunError> {
        let sockets = bind_pair(p.listen, p.trunk_bind).await?;
        let mut players = endpoint_config(&p.transport);
        if p.insecure_cleartext {
            players = players.insecure_cleartext();
        }
        let config = EdgeConfig {
            players,
            players_server: ServerConfig {
                connect_tokens: p.players_tokens,
                max_connections_per_source: p.options.players_per_source,
                ..server_config(&p.key)
            },
            trunk: endpoint_config(&p.options.transport(&p.transport)),
            credential: p.credential,
            server_gateway: p.server_gateway,
            options: p.options,
        };
        let machine = EdgeGateway::new(Instant::now(), config)?;
        Ok(Self { machine, sockets })
    }

    /// The public key players connect with.
    pub fn public_key(&self) -> PublicKey {
        self.machine.players_public_key()
    }
}

impl Runner<ServerGateway> {
    /// Binds a server gateway's sockets.
    pub async fn server(p: ServerProcess) -> Result<Self, RunError> {
        let sockets = bind_pair(p.upstream_bind, p.listen).await?;
        let config = ServerGatewayConfig {
            trunk: endpoint_config(&p.options.transport(&p.transport)),
            trunk_server: server_config(&p.key),
            operator_key: p.operator_key,
            peers: p.peers,
            upstream: endpoint_config(&p.transport),
            game_server: p.game_server,
            game_server_key: p.game_server_key,
            upstream_tokens: p.upstream_tokens,
            options: p.options,
        };
        let machine = ServerGateway::new(Instant::now(), config)?;
        Ok(Self { machine, sockets })
    }

    /// The public key edge gateways connect with.
    pub fn public_key(&self) -> PublicKey {
        self.machine.trunk_public_key()
    }
}

impl<M: Machine> Runner<M> {
    /// Runs until `stop` turns true (or its [`Stop`] is dropped); returns the final
    /// statistics. `report` (if any) is called every period with the statistics so far.
    pub async fn run(
        mut self,
        stop: watch::Receiver<bool>,
        report: Option<Report>,
    ) -> Result<GatewayStats, RunError> {
        drive(&mut self.machine, &self.sockets, |_, _| {}, stop, report).await?;
        Ok(self.machine.stats().clone())
    }
}
