//! KCP (the `kcp` crate, the original protocol) over one UDP socket, as a host: sessions
//! are keyed by the peer's address and conversation id. KCP has no handshake, so a client's
//! first message is a one-byte hello that creates its session on the server (and is not
//! delivered). KCP is one reliable ordered stream per session: every channel of the spec
//! maps onto it, and a send on an unreliable channel is refused.
//!
//! Sends and acknowledgements leave at once: [`flush`](PeerHost::flush) flushes the sessions
//! that queued data, and the sessions that received data are flushed after every batch read
//! (as ENet does). Every session's timers run every 10 ms (fast mode's interval; in KCP's
//! default mode its own 100 ms interval decides when they are due).

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::{is_reliable, tag_of, v4, Event, HostSpec, Outgoing, PeerHost, Role, ServerInfo};

/// KCP's send and receive windows in fast mode (packets).
const FAST_WINDOW: u16 = 1024;
/// How often every session's timers run (ms): fast mode's interval.
const INTERVAL: u32 = 10;
/// Socket buffer sizes requested, as thinwire's default `Config::socket_buffer`.
const SOCKET_BUFFER: usize = 1 << 20;
/// Most datagrams read per pass.
const RECV_BATCH: usize = 256;

/// KCP's protocol settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KcpMode {
    /// KCP's defaults: 100 ms interval, no fast resend, congestion window, windows of 32
    /// (send) and 128 (receive) packets.
    Default,
    /// Fast mode, `nodelay(true, 10, 2, true)`: no delay, 10 ms interval, fast resend after
    /// two duplicate acknowledgements, no congestion window; the windows widened to 1024
    /// packets (KCP's default 32 would measure the window, not the implementation).
    Fast,
}

/// KCP's output: datagrams to one peer over the shared socket. A full socket buffer drops
/// the datagram; KCP retransmits it (losses on the wire are the link's business).
struct Out {
    sock: Arc<UdpSocket>,
    to: SocketAddr,
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.sock.send_to(buf, self.to);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Session {
    kcp: kcp::Kcp<Out>,
    /// Server side: whether the client's hello was consumed.
    greeted: bool,
    /// Whether input arrived or data was queued since the last flush.
    dirty: bool,
}

/// A KCP host: one socket, one KCP session per connection.
pub struct KcpHost {
    sock: Arc<UdpSocket>,
    mode: KcpMode,
    server: bool,
    /// Per channel: whether KCP refuses it (unreliable classes).
    refused: Vec<bool>,
    sessions: Vec<Session>,
    by_peer: HashMap<(SocketAddr, u32), usize>,
    pending: Vec<Event<usize>>,
    /// Sessions with input or data since their last flush.
    dirty: Vec<usize>,
    start: Instant,
    last_update: u32,
    next_conv: u32,
    buf: Vec<u8>,
    msg: Vec<u8>,
}

impl std::fmt::Debug for KcpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KcpHost")
            .field("mode", &self.mode)
            .field("server", &self.server)
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl KcpHost {
    fn now_ms(&self) -> u32 {
        self.start.elapsed().as_millis() as u32
    }

    fn session(&mut self, to: SocketAddr, conv: u32) -> usize {
        let out = Out {
            sock: self.sock.clone(),
            to,
        };
        let mut kcp = kcp::Kcp::new(conv, out);
        if self.mode == KcpMode::Fast {
            kcp.set_nodelay(true, 10, 2, true);
            kcp.set_wndsize(FAST_WINDOW, FAST_WINDOW);
        }
        let _ = kcp.update(self.now_ms());
        self.sessions.push(Session {
            kcp,
            greeted: !self.server,
            dirty: false,
        });
        let id = self.sessions.len() - 1;
        self.by_peer.insert((to, conv), id);
        id
    }

    fn mark(&mut self, id: usize) {
        let s = &mut self.sessions[id];
        if !s.dirty {
            s.dirty = true;
            self.dirty.push(id);
        }
    }

    /// Reads what the socket holds into the sessions; returns whether anything arrived.
    fn receive(&mut self, out: &mut Vec<Event<usize>>) -> bool {
        let mut got = false;
        for _ in 0..RECV_BATCH {
            let Ok((n, from)) = self.sock.recv_from(&mut self.buf) else {
                break;
            };
            if n < kcp::Kcp::<Out>::header_len() {
                continue;
            }
            got = true;
            let conv = kcp::get_conv(&self.buf[..n]);
            let id = match self.by_peer.get(&(from, conv)) {
                Some(&id) => id,
                None if self.server => {
                    let id = self.session(from, conv);
                    out.push(Event::Connected(id));
                    id
                }
                None => continue,
            };
            self.mark(id);
            let s = &mut self.sessions[id];
            let _ = s.kcp.input(&self.buf[..n]);
            while let Ok(len) = s.kcp.recv(&mut self.msg) {
                if !s.greeted {
                    s.greeted = true;
                    continue;
                }
                out.push(Event::Message {
                    conn: id,
                    channel: 0,
                    len,
                    tag: tag_of(&self.msg[..len]),
                });
            }
        }
        got
    }

    /// Acknowledges what arrived, and runs every session's timers once per interval.
    fn timers(&mut self) {
        self.flush_dirty();
        let now = self.now_ms();
        if now.wrapping_sub(self.last_update) >= INTERVAL {
            self.last_update = now;
            for s in &mut self.sessions {
                let _ = s.kcp.update(now);
            }
        }
    }

    fn flush_dirty(&mut self) {
        for id in self.dirty.drain(..) {
            let s = &mut self.sessions[id];
            s.dirty = false;
            let _ = s.kcp.flush();
        }
    }
}

impl PeerHost for KcpHost {
    type Conn = usize;
    type Settings = KcpMode;

    fn open(spec: &HostSpec, mode: &KcpMode) -> Result<Self, String> {
        let e = |e: io::Error| format!("KCP socket: {e}");
        let sock = UdpSocket::bind(spec.bind).map_err(e)?;
        sock.set_nonblocking(true).map_err(e)?;
        // the buffers thinwire asks for by default (best effort: the system caps them)
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&sock, SOCKET_BUFFER);
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&sock, SOCKET_BUFFER);
        let port = sock.local_addr().map_err(e)?.port();
        Ok(Self {
            sock: Arc::new(sock),
            mode: *mode,
            server: spec.role == Role::Server,
            refused: spec.channels.iter().map(|&k| !is_reliable(k)).collect(),
            sessions: Vec::new(),
            by_peer: HashMap::new(),
            pending: Vec::new(),
            dirty: Vec::new(),
            start: Instant::now(),
            last_update: 0,
            // distinct conversation ids per client host
            next_conv: u32::from(port) << 16,
            buf: vec![0; 65_536],
            msg: vec![0; 65_536],
        })
    }

    fn info(&self) -> ServerInfo {
        let addr = self.sock.local_addr().map_or_else(
            |_| std::net::SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0),
            v4,
        );
        ServerInfo { addr, key: None }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<usize, String> {
        let conv = self.next_conv;
        self.next_conv = self.next_conv.wrapping_add(1);
        let id = self.session(SocketAddr::V4(to.addr), conv);
        let s = &mut self.sessions[id];
        s.kcp.send(&[0]).map_err(|e| format!("KCP hello: {e}"))?;
        let _ = s.kcp.flush();
        self.pending.push(Event::Connected(id));
        Ok(id)
    }

    /// A search of the sessions, so that a session keeps no copy of its address (the bench
    /// measures memory per idle connection); the emulator asks once per connection.
    fn remote(&self, conn: usize) -> Option<SocketAddr> {
        let mut peers = self.by_peer.iter();
        peers
            .find(|&(_, &id)| id == conn)
            .map(|(&(addr, _), _)| addr)
    }

    fn service(&mut self, timeout: Duration, out: &mut Vec<Event<usize>>) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        out.append(&mut self.pending);
        loop {
            let got = self.receive(out);
            self.timers();
            let now = Instant::now();
            if !out.is_empty() || now >= deadline {
                return Ok(());
            }
            if !got {
                // wait for the socket, at most a millisecond (the timers' granularity)
                let wait = deadline.duration_since(now).min(Duration::from_millis(1));
                let ts = Timespec {
                    tv_sec: 0,
                    tv_nsec: i64::from(wait.subsec_nanos()),
                };
                let mut fds = [PollFd::new(&*self.sock, PollFlags::IN)];
                let _ = poll(&mut fds, Some(&ts));
            }
        }
    }

    fn send(&mut self, conn: usize, channel: u8, msg: Outgoing<'_>) -> Result<bool, String> {
        if self.refused.get(usize::from(channel)) != Some(&false) {
            return Err(format!("KCP is reliable-only (channel {channel})"));
        }
        let s = self.sessions.get_mut(conn).ok_or("unknown KCP session")?;
        s.kcp.send(msg.data).map_err(|e| format!("KCP send: {e}"))?;
        self.mark(conn);
        Ok(true)
    }

    fn backlogged(&self, conn: usize) -> bool {
        self.sessions
            .get(conn)
            .is_some_and(|s| s.kcp.wait_snd() >= usize::from(s.kcp.snd_wnd()))
    }

    fn flush(&mut self) {
        self.flush_dirty();
    }
}
