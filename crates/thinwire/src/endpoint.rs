//! The async API: an [`Endpoint`] per UDP socket, a [`Connection`] per peer, and the driver
//! task that moves datagrams between the socket and the sans-IO core.
//!
//! ```text
//!  application ── send/send_latest/close ──► ┌──────────── Mutex<State> ────────────┐
//!      ▲                                     │ thinwire_proto::Endpoint + fault links │
//!      │  recv() ◄── per-connection queue ◄──│ events dispatched to connection slots  │
//!      │  accept() ◄── incoming queue    ◄───└──────────────────▲─────────────────────┘
//!      │                                                        │ lock, feed, drain
//!      └── Notify (wake) ──────────────────────────────► driver task: select! {
//!                                                         socket readable → recvmmsg/GRO
//!                                                         wake from the application
//!                                                         sleep until next_wakeup() }
//!                                                       → GSO/sendmsg of what the core produced
//! ```
//!
//! The driver never spins: it sleeps until the socket is readable, the application has queued
//! something, or the earliest timer of the core (or of the fault-injection links) falls due.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn_udp::{UdpSockRef, UdpSocketState};
use thinwire_proto::{
    ChannelKind, ConnectionHandle, ConnectionStats, DisconnectReason, Event, Message,
};
use tokio::io::Interest;
use tokio::sync::Notify;

use crate::config::Config;
use crate::engine::Engine;
use crate::error::{BindError, ConnectError, ConnectionError, SendError};
use crate::io::{RecvBuf, TxBatch};
use crate::stats::EndpointStats;

/// Most receive batches handled per wake-up before timers and transmits get a turn.
const RECV_BATCHES_PER_WAKE: usize = 16;
/// Consecutive failed receives after which the socket is considered broken.
const MAX_RECV_ERRORS: u32 = 64;
/// Close code used when a [`Connection`] is dropped without an explicit close.
pub const DROP_CLOSE_CODE: u64 = 0;

/// One connection's mailbox in the endpoint.
#[derive(Debug)]
struct Slot {
    messages: VecDeque<(u8, Message)>,
    end: Option<DisconnectReason>,
    connected: bool,
    remote: SocketAddr,
    notify: Arc<Notify>,
    /// A [`Connection`] exists for it (or will, once accepted); otherwise messages are dropped
    /// and the slot goes away when the connection ends.
    owned: bool,
}

impl Slot {
    fn new(remote: SocketAddr, connected: bool) -> Self {
        Self {
            messages: VecDeque::new(),
            end: None,
            connected,
            remote,
            notify: Arc::new(Notify::new()),
            owned: true,
        }
    }
}

#[derive(Debug)]
struct State {
    engine: Engine,
    conns: HashMap<ConnectionHandle, Slot>,
    incoming: VecDeque<ConnectionHandle>,
    /// Why the driver stopped, once it has.
    stopped: Option<ConnectionError>,
    /// Set when the last handle is gone: close everything, stop at the latest at this instant.
    shutdown: Option<Instant>,
}

impl State {
    /// Moves the core's events into the connection slots and wakes whoever waits for them.
    fn dispatch(&mut self, shared_accept: &Notify, idle: &Notify) {
        while let Some((h, ev)) = self.engine.core.poll_event() {
            match ev {
                Event::Connected {
                    remote,
                    incoming: true,
                } => {
                    let mut slot = Slot::new(remote, true);
                    if self.shutdown.is_some() {
                        // nobody will accept it: close it, forget it when it ends
                        slot.owned = false;
                        self.conns.insert(h, slot);
                        self.engine.core.close(
                            Instant::now(),
                            h,
                            DROP_CLOSE_CODE,
                            b"endpoint closed",
                        );
                    } else {
                        self.conns.insert(h, slot);
                        self.incoming.push_back(h);
                        shared_accept.notify_waiters();
                    }
                }
                Event::Connected {
                    incoming: false,
                    remote,
                } => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        s.connected = true;
                        s.remote = remote;
                        s.notify.notify_waiters();
                    }
                }
                Event::Message(m) => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        if s.owned {
                            s.messages.push_back((m.channel, m));
                            s.notify.notify_waiters();
                        }
                    }
                }
                Event::Disconnected { reason } => {
                    let orphan = match self.conns.get_mut(&h) {
                        Some(s) => {
                            s.end = Some(reason);
                            s.notify.notify_waiters();
                            !s.owned
                        }
                        None => false,
                    };
                    if orphan {
                        self.conns.remove(&h);
                    }
                }
            }
        }
        if self.engine.core.connection_count() == 0 {
            idle.notify_waiters();
        }
    }
}

struct Shared {
    state: Mutex<State>,
    socket: tokio::net::UdpSocket,
    udp: UdpSocketState,
    local_addr: SocketAddr,
    is_server: bool,
    /// Wakes the driver (permit semantics: a wake before the driver waits is not lost).
    wake: Notify,
    accept: Notify,
    idle: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn dispatch(&self, st: &mut State) {
        st.dispatch(&self.accept, &self.idle);
    }
}

/// Keeps the driver alive; the last one dropped shuts the endpoint down gracefully.
struct EndpointRef(Arc<Shared>);

impl Drop for EndpointRef {
    fn drop(&mut self) {
        let shared = &self.0;
        let mut st = shared.lock();
        if st.stopped.is_some() {
            return;
        }
        let now = Instant::now();
        let linger = st.engine.core.transport_config().close_timeout + Duration::from_secs(1);
        st.shutdown = Some(now + linger);
        let open: Vec<ConnectionHandle> = st
            .conns
            .iter()
            .filter(|(_, s)| s.end.is_none())
            .map(|(h, _)| *h)
            .collect();
        for h in open {
            st.engine
                .core
                .close(now, h, DROP_CLOSE_CODE, b"endpoint closed");
        }
        shared.dispatch(&mut st);
        drop(st);
        shared.wake.notify_one();
    }
}

/// A thinwire endpoint: one UDP socket, any number of connections, and a driver task on the
/// current tokio runtime. Cheap to clone; the endpoint shuts down (gracefully closing its
/// connections) when the last clone and the last [`Connection`] are dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use thinwire::{ChannelKind, Config, Endpoint};
/// let server = Endpoint::bind("[::1]:0".parse()?, Config::server())?;
/// let client = Endpoint::bind("[::1]:0".parse()?, Config::client())?;
/// let conn = client.connect(server.local_addr(), &[ChannelKind::ReliableOrdered]).await?;
/// conn.send(0, &b"hello"[..])?;
/// let incoming = server.accept().await.expect("server is running");
/// let (channel, msg) = incoming.recv().await?;
/// assert_eq!((channel, &msg.data[..]), (0, &b"hello"[..]));
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
    /// Binds a UDP socket to `addr` (IPv4 or IPv6; port 0 picks a free port) and starts the
    /// endpoint's driver on the current tokio runtime.
    pub fn bind(addr: SocketAddr, config: Config) -> Result<Self, BindError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BindError::NoRuntime)?;
        let engine = Engine::new(&config, Instant::now())?;
        let (std_socket, udp) = crate::io::bind(addr, config.socket_buffer)?;
        let local_addr = std_socket.local_addr()?;
        let socket = {
            let _guard = runtime.enter();
            tokio::net::UdpSocket::from_std(std_socket)?
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                engine,
                conns: HashMap::new(),
                incoming: VecDeque::new(),
                stopped: None,
                shutdown: None,
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

    /// Opens a connection to `remote` with the given channel classes (channel `i` is
    /// `channels[i]`, 1 to 64 of them) and waits for the handshake to complete. An IPv6
    /// endpoint reaches IPv4 peers through IPv4-mapped addresses (dual-stack sockets).
    pub async fn connect(
        &self,
        remote: SocketAddr,
        channels: &[ChannelKind],
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
            let remote = crate::io::peer_address(shared.local_addr, remote);
            let h = st.engine.core.connect(Instant::now(), remote, channels)?;
            let slot = Slot::new(remote, false);
            let conn = Connection::new(
                self.inner.clone(),
                h,
                remote,
                slot.notify.clone(),
                channels.to_vec(),
            );
            st.conns.insert(h, slot);
            shared.dispatch(&mut st);
            conn
        };
        shared.wake.notify_one();
        // `conn` closes the half-open connection if this future is dropped.
        let notify = conn.inner.notify.clone();
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // decide under the lock, act (and maybe drop `conn`, which locks) after it
            let outcome = {
                let st = shared.lock();
                match (st.conns.get(&conn.inner.handle), &st.stopped) {
                    (Some(s), _) if s.connected => Some(Ok(())),
                    (Some(Slot { end: Some(r), .. }), _) => {
                        Some(Err(ConnectError::Handshake(r.clone())))
                    }
                    (_, Some(e)) => Some(Err(ConnectError::Endpoint(e.clone()))),
                    (None, None) => {
                        Some(Err(ConnectError::Endpoint(ConnectionError::EndpointClosed)))
                    }
                    _ => None,
                }
            };
            match outcome {
                Some(Ok(())) => return Ok(conn),
                Some(Err(e)) => return Err(e),
                None => notified.await,
            }
        }
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
                while let Some(h) = st.incoming.pop_front() {
                    if let Some(s) = st.conns.get(&h) {
                        let channels = st
                            .engine
                            .core
                            .channels(h)
                            .map(<[_]>::to_vec)
                            .unwrap_or_default();
                        return Some(Connection::new(
                            self.inner.clone(),
                            h,
                            s.remote,
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

    /// Connections held now, in any state (handshaking, open, closing, draining).
    pub fn connection_count(&self) -> usize {
        self.shared().lock().engine.core.connection_count()
    }

    /// Closes every connection gracefully with `code` and `reason` (queued reliable data is
    /// delivered first). The endpoint keeps running and may accept new connections.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let shared = self.shared();
        let mut st = shared.lock();
        let now = Instant::now();
        let open: Vec<ConnectionHandle> = st
            .conns
            .iter()
            .filter(|(_, s)| s.end.is_none())
            .map(|(h, _)| *h)
            .collect();
        for h in open {
            st.engine.core.close(now, h, code, reason);
        }
        shared.dispatch(&mut st);
        drop(st);
        shared.wake.notify_one();
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

struct ConnInner {
    ep: Arc<EndpointRef>,
    handle: ConnectionHandle,
    remote: SocketAddr,
    notify: Arc<Notify>,
    channels: Vec<ChannelKind>,
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        let shared = &self.ep.0;
        let mut st = shared.lock();
        let ended = match st.conns.get_mut(&self.handle) {
            Some(s) => {
                s.owned = false;
                s.messages.clear();
                s.end.is_some()
            }
            None => return,
        };
        if ended {
            st.conns.remove(&self.handle);
        } else if st.stopped.is_none() {
            st.engine.core.close(
                Instant::now(),
                self.handle,
                DROP_CLOSE_CODE,
                b"connection dropped",
            );
            shared.dispatch(&mut st);
            drop(st);
            shared.wake.notify_one();
        }
    }
}

/// A connection to one peer. Cheap to clone (all clones are the same connection); closed
/// gracefully with code [`DROP_CLOSE_CODE`] when the last clone is dropped.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<ConnInner>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.inner.handle)
            .field("remote", &self.inner.remote)
            .finish()
    }
}

impl Connection {
    fn new(
        ep: Arc<EndpointRef>,
        handle: ConnectionHandle,
        remote: SocketAddr,
        notify: Arc<Notify>,
        channels: Vec<ChannelKind>,
    ) -> Self {
        Self {
            inner: Arc::new(ConnInner {
                ep,
                handle,
                remote,
                notify,
                channels,
            }),
        }
    }

    fn shared(&self) -> &Shared {
        &self.inner.ep.0
    }

    /// The connection's handle within its endpoint.
    pub fn handle(&self) -> ConnectionHandle {
        self.inner.handle
    }

    /// The peer's address when the connection was opened.
    pub fn remote_address(&self) -> SocketAddr {
        self.inner.remote
    }

    /// The channel classes, indexed by channel number.
    pub fn channels(&self) -> &[ChannelKind] {
        &self.inner.channels
    }

    fn queue(&self, channel: u8, key: Option<u64>, data: Bytes) -> Result<(), SendError> {
        self.queue_with(|core, now, h| match key {
            Some(k) => core.send_latest(now, h, channel, k, data),
            None => core.send(now, h, channel, data),
        })
    }

    /// Runs one send call of the core on this connection, then wakes the driver.
    fn queue_with<T>(
        &self,
        call: impl FnOnce(
            &mut thinwire_proto::Endpoint,
            Instant,
            thinwire_proto::ConnectionHandle,
        ) -> Result<T, thinwire_proto::SendError>,
    ) -> Result<T, SendError> {
        let shared = self.shared();
        let mut st = shared.lock();
        if let Some(reason) = st.conns.get(&self.inner.handle).and_then(|s| s.end.clone()) {
            return Err(ConnectionError::Disconnected(reason).into());
        }
        if let Some(e) = &st.stopped {
            return Err(e.clone().into());
        }
        let now = Instant::now();
        let h = self.inner.handle;
        let out = call(&mut st.engine.core, now, h)?;
        drop(st);
        shared.wake.notify_one();
        Ok(out)
    }

    /// Makes every later [`send`](Self::send) on `channel` a deadline message with `opts`
    /// (`None`: back to the channel's own class).
    pub fn set_channel_deadline(
        &self,
        channel: u8,
        opts: Option<thinwire_proto::DeadlineOptions>,
    ) -> Result<(), SendError> {
        self.queue_with(|core, _, h| core.set_channel_deadline(h, channel, opts))
    }

    /// Queues a deadline message: erasure-coded shards sent in stages so that it arrives
    /// within `opts.deadline` with probability `opts.target` (see
    /// [`thinwire_proto::DeadlineOptions`]). It is delivered whatever `channel`'s class, with
    /// [`Message::deadline`](thinwire_proto::Message::deadline) set. Returns the message id.
    pub fn send_deadline(
        &self,
        channel: u8,
        data: impl Into<Bytes>,
        opts: thinwire_proto::DeadlineOptions,
    ) -> Result<u64, SendError> {
        let data = data.into();
        self.queue_with(|core, now, h| core.send_deadline(now, h, channel, data, opts))
    }

    /// Queues a message on `channel` (any class but LatestReliable). It leaves with the next
    /// datagram the driver sends, bundled with whatever else is queued.
    pub fn send(&self, channel: u8, data: impl Into<Bytes>) -> Result<(), SendError> {
        self.queue(channel, None, data.into())
    }

    /// Queues the newest value for `key` on a LatestReliable `channel`; an older value for the
    /// same key that the peer has not acknowledged is superseded, not retransmitted.
    pub fn send_latest(
        &self,
        channel: u8,
        key: u64,
        data: impl Into<Bytes>,
    ) -> Result<(), SendError> {
        self.queue(channel, Some(key), data.into())
    }

    /// The next message (its channel and the message). Messages already received are returned
    /// even after the connection ended; then the error says why it ended.
    ///
    /// Delivered messages wait in a per-connection queue without bound until read: read
    /// continuously (a task per connection, or [`try_recv`](Self::try_recv) every tick).
    pub async fn recv(&self) -> Result<(u8, Message), ConnectionError> {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(m) = self.try_recv()? {
                return Ok(m);
            }
            notified.await;
        }
    }

    /// The next message if one is waiting, without waiting.
    pub fn try_recv(&self) -> Result<Option<(u8, Message)>, ConnectionError> {
        let mut st = self.shared().lock();
        let stopped = st.stopped.clone();
        match st.conns.get_mut(&self.inner.handle) {
            Some(s) => {
                if let Some(m) = s.messages.pop_front() {
                    return Ok(Some(m));
                }
                if let Some(r) = &s.end {
                    return Err(ConnectionError::Disconnected(r.clone()));
                }
                match stopped {
                    Some(e) => Err(e),
                    None => Ok(None),
                }
            }
            None => Err(stopped.unwrap_or(ConnectionError::EndpointClosed)),
        }
    }

    /// Waits until the connection has ended and says why.
    pub async fn closed(&self) -> ConnectionError {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.shared().lock();
                match st.conns.get(&self.inner.handle) {
                    Some(Slot { end: Some(r), .. }) => {
                        return ConnectionError::Disconnected(r.clone())
                    }
                    None => {
                        return st
                            .stopped
                            .clone()
                            .unwrap_or(ConnectionError::EndpointClosed)
                    }
                    _ => {}
                }
                if let Some(e) = &st.stopped {
                    return e.clone();
                }
            }
            notified.await;
        }
    }

    /// Why the connection ended, if it has.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        let st = self.shared().lock();
        match st.conns.get(&self.inner.handle) {
            Some(Slot { end: Some(r), .. }) => Some(ConnectionError::Disconnected(r.clone())),
            Some(_) => st.stopped.clone(),
            None => Some(
                st.stopped
                    .clone()
                    .unwrap_or(ConnectionError::EndpointClosed),
            ),
        }
    }

    /// A snapshot of the connection's statistics (RTT, losses, retransmissions, queues);
    /// `None` once the connection is gone.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.shared()
            .lock()
            .engine
            .core
            .connection_stats(self.inner.handle)
    }

    /// Closes the connection gracefully: queued reliable data is delivered first (up to the
    /// transport's close timeout), then the peer is told `code` and `reason`. [`recv`](Self::recv)
    /// then reports [`DisconnectReason::LocallyClosed`].
    pub fn close(&self, code: u64, reason: &[u8]) {
        let shared = self.shared();
        let mut st = shared.lock();
        st.engine
            .core
            .close(Instant::now(), self.inner.handle, code, reason);
        shared.dispatch(&mut st);
        drop(st);
        shared.wake.notify_one();
    }
}

// ------------------------------------------------------------------------------------ driver

async fn drive(shared: Arc<Shared>) {
    // The guard also runs when the task is dropped without finishing (its runtime shut down):
    // waiters learn the endpoint is gone instead of waiting forever.
    let guard = DriverGuard {
        shared,
        result: None,
    };
    let mut rx = RecvBuf::new();
    let mut tx = TxBatch::default();
    let result = run(&guard.shared, &mut rx, &mut tx).await;
    let mut guard = guard;
    guard.result = Some(result);
}

struct DriverGuard {
    shared: Arc<Shared>,
    result: Option<io::Result<()>>,
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        let shared = &self.shared;
        let mut st = shared.lock();
        st.stopped = Some(match self.result.take() {
            Some(Err(e)) => ConnectionError::EndpointFailed(Arc::new(e)),
            Some(Ok(())) | None => ConnectionError::EndpointClosed,
        });
        for s in st.conns.values() {
            s.notify.notify_waiters();
        }
        drop(st);
        shared.accept.notify_waiters();
        shared.idle.notify_waiters();
    }
}

async fn run(shared: &Shared, rx: &mut RecvBuf, tx: &mut TxBatch) -> io::Result<()> {
    let mut recv_errors = 0u32;
    loop {
        let (deadline, done) = {
            let mut st = shared.lock();
            let now = Instant::now();
            st.engine.io.wakeups += 1;
            st.engine.on_timeout(now);
            st.engine.collect(now, tx, shared.udp.max_gso_segments());
            shared.dispatch(&mut st);
            let done = st
                .shutdown
                .is_some_and(|limit| st.engine.core.connection_count() == 0 || now >= limit);
            (st.engine.next_wakeup(), done)
        };
        send_all(shared, tx).await;
        if done {
            return Ok(());
        }
        let sleep_to = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            r = shared.socket.readable() => {
                r?;
                receive(shared, rx, &mut recv_errors)?;
            }
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep_until(sleep_to.into()) => {}
        }
    }
}

/// Reads what the socket holds (a bounded number of batches) and feeds it to the core.
fn receive(shared: &Shared, rx: &mut RecvBuf, errors: &mut u32) -> io::Result<()> {
    for _ in 0..RECV_BATCHES_PER_WAKE {
        let r = shared.socket.try_io(Interest::READABLE, || {
            rx.recv(&shared.udp, UdpSockRef::from(&shared.socket))
        });
        match r {
            Ok(_) => {
                *errors = 0;
                let mut st = shared.lock();
                let now = Instant::now();
                st.engine.io.recv_calls += 1;
                for (from, d) in rx.datagrams() {
                    st.engine.on_datagram(now, from, d);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => {
                shared.lock().engine.io.recv_errors += 1;
                *errors += 1;
                if *errors >= MAX_RECV_ERRORS {
                    return Err(e);
                }
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Hands every queued train to the socket, waiting for writability when the socket is full.
/// Send errors lose the datagrams (counted); the protocol recovers as from any loss.
async fn send_all(shared: &Shared, tx: &mut TxBatch) {
    let (mut calls, mut datagrams, mut bytes, mut errors) = (0u64, 0u64, 0u64, 0u64);
    while let Some((t, count)) = tx.next() {
        let r = shared
            .socket
            .async_io(Interest::WRITABLE, || {
                shared.udp.try_send(UdpSockRef::from(&shared.socket), &t)
            })
            .await;
        match r {
            Ok(()) => {
                calls += 1;
                datagrams += count as u64;
                bytes += t.contents.len() as u64;
            }
            Err(_) => errors += 1,
        }
        tx.advance();
    }
    if calls + errors > 0 {
        let mut st = shared.lock();
        st.engine.io.send_calls += calls;
        st.engine.io.datagrams_sent += datagrams;
        st.engine.io.bytes_sent += bytes;
        st.engine.io.send_errors += errors;
    }
}
