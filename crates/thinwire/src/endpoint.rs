//! The async [`Endpoint`]: one UDP socket, any number of connections, and a driver task.
//!
//! ```text
//!  application ── send(.., mode)/close ────► ┌──────────── Mutex<State> ────────────┐
//!      ▲                                     │ thinwire_proto::Endpoint + fault links │
//!      │  recv() ◄── per-connection queue ◄──│ events dispatched to connection slots  │
//!      │  accept() ◄── incoming queue    ◄───└──────────────────▲─────────────────────┘
//!      │                                                        │ lock, feed, drain
//!      └── Notify (wake) ──────────────────────────────► driver task: select! {
//!                                                         socket readable → recvmmsg/GRO
//!                                                         wake from the application
//!                                                         sleep until next_wakeup() }
//!                                                       → sendmmsg/GSO of what the core produced
//! ```
//!
//! [`Connection`] (`connection.rs`) is the per-peer handle, `shared.rs` holds the state behind
//! the lock, and `driver.rs` the task. The driver never spins: it sleeps until the socket is
//! readable, the application has queued something, or the earliest timer of the core (or of the
//! fault-injection links) falls due.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use thinwire_proto::{ChannelKind, ConnectToken, ConnectionCounters, ConnectionHandle, PublicKey};
use tokio::sync::Notify;

use crate::config::Config;
use crate::connection::Connection;
use crate::driver::drive;
use crate::engine::Engine;
use crate::error::{BindError, ConnectError, ConnectionError};
use crate::shared::{release_drained, EndpointRef, Shared, Slot, Slots, State};
use crate::stats::EndpointStats;

/// A thinwire endpoint: one UDP socket, any number of connections, and a driver task on the
/// current tokio runtime. Cheap to clone; the endpoint shuts down (gracefully closing its
/// connections) when the last clone and the last [`Connection`] are dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use thinwire::{ChannelKind, Config, Endpoint, SendMode};
/// let server = Endpoint::bind("[::1]:0".parse()?, Config::server())?;
/// let key = server.public_key().expect("a server has a key"); // clients get it in advance
/// let client = Endpoint::bind("[::1]:0".parse()?, Config::client())?;
/// let conn = client.connect(server.local_addr(), key, &[ChannelKind::ReliableOrdered]).await?;
/// conn.send(0, &b"hello"[..], SendMode::Plain)?;
/// let incoming = server.accept().await.expect("server is running");
/// let msg = incoming.recv().await?;
/// assert_eq!((msg.channel, &msg.data[..]), (0, &b"hello"[..]));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<EndpointRef>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("local_addr", &self.inner.0.local_addr)
            .finish()
    }
}

impl Endpoint {
    /// What this endpoint's connections and batches hold of it.
    pub(crate) fn endpoint_ref(&self) -> &Arc<EndpointRef> {
        &self.inner
    }

    /// Binds a UDP socket to `addr` (IPv4 or IPv6; port 0 picks a free port) and starts the
    /// endpoint's driver on the current tokio runtime.
    pub fn bind(addr: SocketAddr, config: Config) -> Result<Self, BindError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BindError::NoRuntime)?;
        let (std_socket, udp) = crate::io::bind(addr, config.socket_buffer)?;
        let local_addr = std_socket.local_addr()?;
        let engine = Engine::new(&config, Instant::now(), local_addr)?;
        let socket = {
            let _guard = runtime.enter();
            tokio::net::UdpSocket::from_std(std_socket)?
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                engine,
                conns: Slots::default(),
                incoming: VecDeque::new(),
                stopped: None,
                shutdown: None,
                wake_pending: false,
            }),
            socket,
            udp,
            local_addr,
            is_server: config.server.is_some(),
            wake: Notify::new(),
            accept: Notify::new(),
            idle: Notify::new(),
        });
        runtime.spawn(drive(shared.clone()));
        Ok(Self {
            inner: Arc::new(EndpointRef(shared)),
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.inner.0
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared().local_addr
    }

    /// Opens a connection to the server at `remote` whose static public key is `server_key`
    /// (from [`public_key`](Self::public_key) on the server, shipped with the game or printed
    /// by the server), with the given channel classes (channel `i` is `channels[i]`, 1 to 64
    /// of them), and waits for the handshake to complete. The handshake proves the server
    /// holds the key: an impostor cannot complete it. An IPv6 endpoint reaches IPv4 peers
    /// too (dual-stack sockets).
    pub async fn connect(
        &self,
        remote: SocketAddr,
        server_key: PublicKey,
        channels: &[ChannelKind],
    ) -> Result<Connection, ConnectError> {
        let remote = crate::engine::canonical(remote);
        self.open(channels, |core| {
            core.connect(Instant::now(), remote, &server_key, channels)
        })
        .await
    }

    /// Opens a connection with a connect token from a matchmaking backend (see
    /// [`ConnectToken`]): to the token's first server address, authenticating the server by
    /// the key inside the token, and presenting the token's sealed claims, which the server
    /// checks before it admits the client. Waits for the handshake like
    /// [`connect`](Self::connect).
    pub async fn connect_with_token(
        &self,
        token: &ConnectToken,
        channels: &[ChannelKind],
    ) -> Result<Connection, ConnectError> {
        self.open(channels, |core| {
            core.connect_with_token(Instant::now(), token, channels)
        })
        .await
    }

    /// Starts a connection with `start` and waits for its handshake.
    async fn open(
        &self,
        channels: &[ChannelKind],
        start: impl FnOnce(
            &mut thinwire_proto::Endpoint,
        ) -> Result<ConnectionHandle, thinwire_proto::ConnectError>,
    ) -> Result<Connection, ConnectError> {
        let shared = self.shared();
        let conn = {
            let mut st = shared.lock();
            if let Some(e) = &st.stopped {
                return Err(ConnectError::Endpoint(e.clone()));
            }
            if st.shutdown.is_some() {
                return Err(ConnectError::Endpoint(ConnectionError::EndpointClosed));
            }
            let h = start(&mut st.engine.core)?;
            let remote = st
                .engine
                .core
                .remote_address(h)
                .expect("the connection was just opened");
            let slot = Slot::new(false);
            let conn = Connection::new(
                self.inner.clone(),
                h,
                remote,
                slot.notify.clone(),
                channels.into(),
            );
            st.conns.insert(h, slot);
            shared.dispatch(&mut st);
            shared.wake_driver(st);
            conn
        };
        // `conn` closes the half-open connection if this future is dropped.
        conn.established().await
    }

    /// The server's static public key, which its clients pass to [`connect`](Self::connect);
    /// `None` for an endpoint that is not a server.
    pub fn public_key(&self) -> Option<PublicKey> {
        self.shared().lock().engine.core.public_key()
    }

    /// The next incoming connection, already established. `None` when this endpoint is not a
    /// server (no [`ServerConfig`](thinwire_proto::ServerConfig)) or has stopped.
    ///
    /// The endpoint accepts connections (up to `ServerConfig::max_connections`) whether or not
    /// this is called; their messages wait in their queues until the application takes them.
    pub async fn accept(&self) -> Option<Connection> {
        let shared = self.shared();
        if !shared.is_server {
            return None;
        }
        loop {
            let notified = shared.accept.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = shared.lock();
                while let Some((h, remote)) = st.incoming.pop_front() {
                    release_drained(&mut st.incoming);
                    if let Some(s) = st.conns.get(&h) {
                        let channels = st.engine.core.channels(h).unwrap_or_default().into();
                        return Some(Connection::new(
                            self.inner.clone(),
                            h,
                            remote,
                            s.notify.clone(),
                            channels,
                        ));
                    }
                }
                if st.stopped.is_some() || st.shutdown.is_some() {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// The endpoint's counters: protocol drops by reason, socket I/O, fault injection.
    pub fn stats(&self) -> EndpointStats {
        let shared = self.shared();
        let mut stats = shared.lock().engine.stats();
        stats.io.gso_segments = shared.udp.max_gso_segments();
        stats.io.gro_segments = shared.udp.gro_segments();
        stats
    }

    /// Every connection's counters summed, those already closed included: each only grows
    /// (what a metrics export wants; see [`ConnectionCounters`]).
    pub fn connection_counters(&self) -> ConnectionCounters {
        self.shared().lock().engine.core.connection_counters()
    }

    /// Connections held now, in any state (handshaking, open, closing, draining).
    pub fn connection_count(&self) -> usize {
        self.shared().lock().engine.core.connection_count()
    }

    /// Closes every connection gracefully with `code` and `reason` (queued reliable data is
    /// delivered first). The endpoint keeps running and may accept new connections.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let shared = self.shared();
        let mut st = shared.lock();
        st.close_open(Instant::now(), code, reason);
        shared.dispatch(&mut st);
        shared.wake_driver(st);
    }

    /// Waits until the endpoint holds no connection (e.g. after [`close`](Self::close), to let
    /// the closes reach the peers before the program exits).
    pub async fn wait_idle(&self) {
        let shared = self.shared();
        loop {
            let notified = shared.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = shared.lock();
                if st.engine.core.connection_count() == 0 || st.stopped.is_some() {
                    return;
                }
            }
            notified.await;
        }
    }
}
