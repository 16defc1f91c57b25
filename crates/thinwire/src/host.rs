//! The blocking API for game loops without async: a [`Host`] in the style of ENet's
//! `enet_host_service`, on the same sans-IO core as the async [`Endpoint`](crate::Endpoint).
//!
//! ```no_run
//! use std::time::Duration;
//! use thinwire::{ChannelKind, Config, Host, HostEvent, PublicKey, SendMode};
//!
//! // the server's public key (its `Host::public_key`), as 64 hex digits
//! let key: PublicKey = std::env::args().nth(1).ok_or("usage: client SERVER_KEY")?.parse()?;
//! let mut host = Host::bind("127.0.0.1:0".parse()?, Config::client())?;
//! let server = host.connect("127.0.0.1:7777".parse()?, key, &[ChannelKind::LatestReliable])?;
//! loop {
//!     // handle everything that arrived, waiting at most until the next frame is due
//!     while let Some(event) = host.service(Duration::from_millis(16))? {
//!         match event {
//!             HostEvent::Connected { conn, .. } => println!("{conn} connected"),
//!             HostEvent::Message { message, .. } => println!("{}: {:?}", message.channel, message.data),
//!             HostEvent::Disconnected { reason, .. } => return Err(reason.into()),
//!         }
//!     }
//!     // game tick: queue this frame's updates, then put them on the wire
//!     let _ = host.send(server, 0, &b"x=1,y=2"[..], SendMode::Latest { key: 1 });
//!     host.flush()?;
//! }
//! # #[allow(unreachable_code)] Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn_udp::UdpSocketState;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use thinwire_proto::{
    ChannelKind, CipherSuite, ConnectError, ConnectToken, ConnectionHandle, ConnectionStats,
    DisconnectReason, Event, Message, PublicKey, SendError, SendMode, TokenClaims,
};

use crate::config::Config;
use crate::engine::Engine;
use crate::error::BindError;
use crate::io::{RecvBuf, TxBatch, RECV_BATCHES_PER_TURN};
use crate::stats::{EndpointStats, IoStats};

/// How long one send may wait for a full socket buffer to drain before the datagram is dropped.
const SEND_WAIT: Duration = Duration::from_millis(100);

/// What [`Host::service`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A connection completed its handshake (ours) or was accepted (theirs).
    Connected {
        /// The connection.
        conn: ConnectionHandle,
        /// The peer's address.
        remote: SocketAddr,
        /// Whether the peer opened it.
        incoming: bool,
    },
    /// A message arrived.
    Message {
        /// The connection.
        conn: ConnectionHandle,
        /// The message (the channel it arrived on is [`Message::channel`]).
        message: Message,
    },
    /// A connection ended; its handle is no longer valid.
    Disconnected {
        /// The connection.
        conn: ConnectionHandle,
        /// Why it ended.
        reason: DisconnectReason,
    },
}

/// A blocking thinwire endpoint for game loops: one non-blocking UDP socket, any number of
/// connections, driven by the calling thread through [`service`](Self::service) and
/// [`flush`](Self::flush). Nothing runs in the background: keepalives, retransmissions and
/// acknowledgements happen inside those calls, so call `service` at least every few tens of
/// milliseconds (a game loop does).
///
/// Like ENet's `enet_host_service`, what arrives is handed to the application before the
/// acknowledgements it asks for are sent: they go out at the next `service` that finds
/// nothing new, or at [`flush`](Self::flush), so an answer sent in between carries them in
/// the same datagram (a reliable request and its reply take two datagrams, not four). They
/// are never held back more than 1 ms while events keep arriving.
pub struct Host {
    socket: UdpSocket,
    udp: UdpSocketState,
    engine: Engine,
    rx: RecvBuf,
    tx: TxBatch,
    local_addr: SocketAddr,
    /// When timers and transmits were last processed.
    last_pump: Instant,
    /// The low-latency mode's spin before each blocking wait (zero: off).
    busy_poll: Duration,
}

/// Longest `service` returns newly arrived events without processing timers and sending
/// (acknowledgements, retransmissions) in between.
pub(crate) const ACK_HOLD: Duration = Duration::from_millis(1);

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("local_addr", &self.local_addr)
            .field("events", &self.pending_events())
            .finish()
    }
}

impl Host {
    /// Binds a UDP socket to `addr` (IPv4 or IPv6; port 0 picks a free port). With
    /// [`Config::server`] the host accepts incoming connections.
    pub fn bind(addr: SocketAddr, config: Config) -> Result<Self, BindError> {
        let (socket, udp) = crate::io::bind(addr, config.socket_buffer)?;
        let local_addr = socket.local_addr()?;
        let engine = Engine::new(&config, Instant::now(), local_addr)?;
        Ok(Self {
            socket,
            udp,
            engine,
            rx: RecvBuf::new(),
            tx: TxBatch::default(),
            local_addr,
            last_pump: Instant::now(),
            busy_poll: config.busy_poll,
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts a connection to the server at `remote` whose static public key is `server_key`
    /// (its [`public_key`](Self::public_key)), with the given channel classes. It completes
    /// (or fails) inside later [`service`](Self::service) calls: [`HostEvent::Connected`] or
    /// [`HostEvent::Disconnected`] follows. Messages may be queued at once.
    pub fn connect(
        &mut self,
        remote: SocketAddr,
        server_key: PublicKey,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        let remote = crate::engine::canonical(remote);
        let h = self
            .engine
            .core
            .connect(Instant::now(), remote, &server_key, channels)?;
        Ok(h)
    }

    /// Starts a connection with a connect token from a matchmaking backend: to the token's
    /// first server address, authenticating the server by the key inside the token. Completes
    /// like [`connect`](Self::connect).
    pub fn connect_with_token(
        &mut self,
        token: &ConnectToken,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        let h = self
            .engine
            .core
            .connect_with_token(Instant::now(), token, channels)?;
        Ok(h)
    }

    /// The server's static public key, which its clients pass to [`connect`](Self::connect);
    /// `None` for a host that is not a server.
    pub fn public_key(&self) -> Option<PublicKey> {
        self.engine.core.public_key()
    }

    /// The cipher suite protecting a connection's packets, once its handshake is done.
    pub fn cipher_suite(&self, conn: ConnectionHandle) -> Option<CipherSuite> {
        self.engine.core.cipher_suite(conn)
    }

    /// On a server: what an incoming connection's connect token said (client id, user data);
    /// `None` for a connection admitted without a token.
    pub fn token_claims(&self, conn: ConnectionHandle) -> Option<&TokenClaims> {
        self.engine.core.token_claims(conn)
    }

    /// Queues a message on `channel` of `conn`, delivered as `mode` says ([`SendMode::Plain`]
    /// for the channel's own class, [`SendMode::Latest`] for the newest value of a key on a
    /// LatestReliable channel, [`SendMode::Deadline`] for a deadline message on any channel;
    /// see [`Connection::send`](crate::Connection::send)). It is sent by the next
    /// [`flush`](Self::flush) or [`service`](Self::service).
    pub fn send(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        data: impl Into<Bytes>,
        mode: SendMode,
    ) -> Result<(), SendError> {
        self.engine.send(conn, channel, data.into(), mode)
    }

    /// Makes every later [`SendMode::Plain`] [`send`](Self::send) on `channel` of `conn` a
    /// deadline message with `opts` (`None`: back to the channel's own class).
    pub fn set_channel_deadline(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        opts: Option<thinwire_proto::DeadlineOptions>,
    ) -> Result<(), SendError> {
        self.engine.core.set_channel_deadline(conn, channel, opts)
    }

    /// Sets the repair target of reliable `channel` of `conn` (`None`: plain retransmission;
    /// see [`thinwire_proto::RepairTarget`]).
    pub fn set_channel_repair(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        target: Option<thinwire_proto::RepairTarget>,
    ) -> Result<(), SendError> {
        self.engine.core.set_channel_repair(conn, channel, target)
    }

    /// Closes a connection gracefully; [`HostEvent::Disconnected`] follows once the peer has
    /// been told (keep calling [`service`](Self::service)).
    pub fn close(&mut self, conn: ConnectionHandle, code: u64, reason: &[u8]) {
        self.engine.core.close(Instant::now(), conn, code, reason);
    }

    /// Sends everything queued now, without waiting for anything to arrive.
    pub fn flush(&mut self) -> io::Result<()> {
        self.pump(Instant::now());
        Ok(())
    }

    /// Processes the network for at most `timeout` and returns the first event, or `None` when
    /// the time ran out with nothing to report. Events already queued return at once;
    /// `Duration::ZERO` only processes what has arrived. The wait is a `poll(2)` on the socket
    /// bounded by the earlier of `timeout` and the protocol's next timer: no spinning.
    pub fn service(&mut self, timeout: Duration) -> io::Result<Option<HostEvent>> {
        if let Some(e) = self.next_event() {
            return Ok(Some(e));
        }
        let now = Instant::now();
        // a huge timeout (Duration::MAX) waits "forever" rather than overflowing
        let deadline = now
            .checked_add(timeout)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        loop {
            self.receive()?;
            let now = Instant::now();
            if now < self.last_pump + ACK_HOLD {
                // the application sees what arrived first; its answer will carry the ACKs
                if let Some(e) = self.next_event() {
                    return Ok(Some(e));
                }
            }
            self.pump(now);
            if let Some(e) = self.next_event() {
                return Ok(Some(e));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let wake = self
                .engine
                .next_wakeup()
                .map_or(deadline, |t| t.min(deadline));
            if !self.busy_poll.is_zero() && self.spin(wake.min(now + self.busy_poll))? {
                continue;
            }
            self.engine.io.wakeups += 1;
            wait(
                &self.socket,
                PollFlags::IN,
                wake.saturating_duration_since(now),
            )?;
        }
    }

    /// The oldest event, taken straight from the core (from its connection's queue, in the
    /// order the core keeps across connections): the host keeps no queue of its own, so an
    /// event is not moved once more (in a burst of small messages, that move and a third
    /// queue's growth were a fifth of the receiving thread's time).
    fn next_event(&mut self) -> Option<HostEvent> {
        let (conn, ev) = self.engine.core.poll_event()?;
        Some(match ev {
            Event::Connected { remote, incoming } => HostEvent::Connected {
                conn,
                remote,
                incoming,
            },
            Event::Message(message) => HostEvent::Message { conn, message },
            Event::Disconnected { reason } => HostEvent::Disconnected { conn, reason },
        })
    }

    /// Events waiting to be returned by [`service`](Self::service): once `service` has
    /// returned one, every event of what it read in that call, so a caller that drains until
    /// this reads 0 has handed out the whole burst.
    pub fn pending_events(&self) -> usize {
        self.engine.core.pending_events()
    }

    /// Statistics of one connection (`None` once it is gone).
    pub fn connection_stats(&self, conn: ConnectionHandle) -> Option<ConnectionStats> {
        self.engine.core.connection_stats(conn)
    }

    /// The peer address of a connection.
    pub fn remote_address(&self, conn: ConnectionHandle) -> Option<SocketAddr> {
        self.engine.core.remote_address(conn)
    }

    /// Connections held now, in any state.
    pub fn connection_count(&self) -> usize {
        self.engine.core.connection_count()
    }

    /// The host's counters: protocol drops by reason, socket I/O, fault injection.
    pub fn stats(&self) -> EndpointStats {
        let mut stats = self.engine.stats();
        stats.io.gso_segments = self.udp.max_gso_segments();
        stats.io.gro_segments = self.udp.gro_segments();
        stats
    }

    /// The low-latency mode: reads the socket in a loop until something arrives (true) or
    /// `until` passes (false).
    fn spin(&mut self, until: Instant) -> io::Result<bool> {
        loop {
            if self.receive()? {
                return Ok(true);
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }

    /// Reads what the socket holds, without waiting; whether it held anything.
    ///
    /// A batch that did not fill every slot emptied the socket's queue, so the reading stops
    /// there instead of asking again only to hear `WouldBlock`: one system call less on every
    /// wake-up, which is on a round trip's critical path. A datagram that arrives meanwhile
    /// is read at the next call (the wait is a level-triggered `poll`, which returns at once).
    /// Where a receive reads one datagram at most, reading goes on until `WouldBlock`.
    fn receive(&mut self) -> io::Result<bool> {
        let mut read = false;
        for _ in 0..RECV_BATCHES_PER_TURN {
            match self.rx.recv(&self.udp, &self.socket) {
                Ok(_) => {
                    read = true;
                    let now = Instant::now();
                    self.engine.io.recv_calls += 1;
                    self.engine.on_datagrams(now, self.rx.datagrams());
                    if self.rx.drained() {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(read),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // a failed read loses at most that datagram; report it in the stats
                    self.engine.io.recv_errors += 1;
                    tracing::debug!(error = %e, "receive failed");
                    return Ok(read);
                }
            }
        }
        Ok(read)
    }

    /// Timers (and at most `handshakes_per_turn` queued handshake reads, after the datagrams
    /// `receive` handled) and transmits, in the order [`Engine::pump`] gives.
    fn pump(&mut self, now: Instant) {
        self.last_pump = now;
        let segments = self.udp.max_gso_segments();
        let (udp, socket) = (&self.udp, &self.socket);
        self.engine.pump(now, &mut self.tx, segments, |tx, io| {
            send_all(udp, socket, tx, io)
        });
    }
}

/// Hands every queued train to the socket (a flush's worth per `sendmmsg` on Linux). A full
/// socket gets one wait of up to [`SEND_WAIT`] per train; a train it still refuses is dropped
/// (counted), and the protocol recovers as from any loss.
fn send_all(udp: &UdpSocketState, socket: &UdpSocket, tx: &mut TxBatch, io: &mut IoStats) {
    let mut waited = false;
    while !tx.is_empty() {
        match tx.send(udp, socket) {
            Ok(sent) => {
                sent.record(io);
                waited = false;
            }
            // the socket is full: wait for room once
            Err(_) if !waited => {
                waited = true;
                if wait(socket, PollFlags::OUT, SEND_WAIT).is_err() {
                    tx.drop_next().record(io);
                }
            }
            Err(_) => {
                tx.drop_next().record(io);
                waited = false;
            }
        }
    }
}

/// Waits until the socket is ready for `flags` or `timeout` passed.
fn wait(socket: &UdpSocket, flags: PollFlags, timeout: Duration) -> io::Result<()> {
    let ts = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        // below 10^9, so it fits the i32 of Windows' timespec as well as Unix's i64
        tv_nsec: (timeout.subsec_nanos() as i32).into(),
    };
    let mut fds = [PollFd::new(socket, flags)];
    match poll(&mut fds, Some(&ts)) {
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
