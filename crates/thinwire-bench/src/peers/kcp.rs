//! KCP (the `kcp` crate, the original protocol) over one UDP socket, as a host: sessions
//! are keyed by the peer's address and conversation id. KCP has no handshake, so a client's
//! first message is a one-byte hello that creates its session on the server (and is not
//! delivered). Fast mode, as in the emulator's `kcp-fast` peer: `nodelay(true, 10, 2,
//! true)`; the windows are widened to 1024 packets (KCP's default 32 would measure the
//! window, not the implementation). Incoming data is acknowledged at once (a flush after
//! every batch received, as ENet does), and every session's timers run every 10 ms (KCP's
//! interval in fast mode).

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::host::{tag_of, BenchHost, Ev, HostOptions, ServerInfo};

/// KCP's send and receive windows (packets).
const WINDOW: u16 = 1024;
/// KCP's update interval in fast mode (ms): every session's timers run this often.
const INTERVAL: u32 = 10;
/// Socket buffer sizes requested, as thinwire's default `Config::socket_buffer`.
const SOCKET_BUFFER: usize = 1 << 20;
/// Most datagrams read per pass.
const RECV_BATCH: usize = 256;

/// KCP's output: datagrams to one peer over the shared socket. A full socket buffer drops
/// the datagram; KCP retransmits it.
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
    /// Whether input arrived since the last flush (acknowledgements are due).
    dirty: bool,
}

/// A KCP host: one socket, one KCP session per connection.
pub(crate) struct KcpHost {
    sock: Arc<UdpSocket>,
    server: bool,
    sessions: Vec<Session>,
    by_peer: HashMap<(SocketAddr, u32), usize>,
    pending: Vec<Ev<usize>>,
    /// Sessions with input or data since their last flush.
    dirty: Vec<usize>,
    start: Instant,
    last_update: u32,
    next_conv: u32,
    buf: Vec<u8>,
    msg: Vec<u8>,
}

impl KcpHost {
    fn bind(server: bool) -> Result<Self, String> {
        let e = |e: io::Error| format!("KCP socket: {e}");
        let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).map_err(e)?;
        sock.set_nonblocking(true).map_err(e)?;
        // the buffers thinwire asks for by default (best effort: the system caps them)
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&sock, SOCKET_BUFFER);
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&sock, SOCKET_BUFFER);
        let port = sock.local_addr().map_err(e)?.port();
        Ok(Self {
            sock: Arc::new(sock),
            server,
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

    fn now_ms(&self) -> u32 {
        self.start.elapsed().as_millis() as u32
    }

    fn session(&mut self, to: SocketAddr, conv: u32) -> usize {
        let mut kcp = kcp::Kcp::new(
            conv,
            Out {
                sock: self.sock.clone(),
                to,
            },
        );
        kcp.set_nodelay(true, 10, 2, true);
        kcp.set_wndsize(WINDOW, WINDOW);
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

    /// Reads what the socket holds into the sessions; returns whether anything arrived.
    fn receive(&mut self, out: &mut Vec<Ev<usize>>) -> bool {
        let mut got = false;
        for _ in 0..RECV_BATCH {
            let (n, from) = match self.sock.recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(_) => break,
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
                    out.push(Ev::Connected(id));
                    id
                }
                None => continue,
            };
            let s = &mut self.sessions[id];
            let _ = s.kcp.input(&self.buf[..n]);
            if !s.dirty {
                s.dirty = true;
                self.dirty.push(id);
            }
            while let Ok(len) = s.kcp.recv(&mut self.msg) {
                if !s.greeted {
                    s.greeted = true;
                    continue;
                }
                out.push(Ev::Message {
                    conn: id,
                    reliable: true,
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

impl BenchHost for KcpHost {
    type Conn = usize;

    fn server(_capacity: usize, _opts: HostOptions) -> Result<Self, String> {
        Self::bind(true)
    }

    fn client(_capacity: usize, _opts: HostOptions) -> Result<Self, String> {
        Self::bind(false)
    }

    fn info(&self) -> ServerInfo {
        let port = self.sock.local_addr().map_or(0, |a| a.port());
        ServerInfo {
            addr: SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
            key: None,
        }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<usize, String> {
        let conv = self.next_conv;
        self.next_conv = self.next_conv.wrapping_add(1);
        let id = self.session(SocketAddr::V4(to.addr), conv);
        let s = &mut self.sessions[id];
        s.kcp.send(&[0]).map_err(|e| format!("KCP hello: {e}"))?;
        let _ = s.kcp.flush();
        self.pending.push(Ev::Connected(id));
        Ok(id)
    }

    fn service(&mut self, timeout: Duration, out: &mut Vec<Ev<usize>>) -> Result<(), String> {
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

    fn send(&mut self, conn: usize, reliable: bool, data: &Bytes) -> Result<bool, String> {
        if !reliable {
            return Err("KCP is reliable-only".into());
        }
        let s = self.sessions.get_mut(conn).ok_or("unknown KCP session")?;
        s.kcp.send(data).map_err(|e| format!("KCP send: {e}"))?;
        if !s.dirty {
            s.dirty = true;
            self.dirty.push(conn);
        }
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
