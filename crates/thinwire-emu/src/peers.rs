//! Real transport peers driven by the lab's workloads.
//!
//! Every peer runs as threads inside the hosts' namespaces (see
//! [`super::EmuNet::spawn_in`]); messages carry their index in the run's
//! event list, and the [`Book`] stamps send and delivery `Instant`s of the
//! one process clock.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::net::host_index;
use super::{host_addr, EmuError, EmuNet};
use thinwire_lab::protocol::ChannelSemantics;
use thinwire_lab::protocol::ProtocolSpec;
use thinwire_lab::workload::{AppEvent, ClassSpec, Direction};

/// A real transport stack run by the emulator.
#[derive(Debug, Clone, PartialEq)]
pub enum RealPeer {
    /// Kernel TCP with `TCP_NODELAY` and CUBIC congestion control (where the
    /// kernel has it); with `thin`, also `TCP_THIN_LINEAR_TIMEOUTS`.
    Tcp {
        /// Set `TCP_THIN_LINEAR_TIMEOUTS`.
        thin: bool,
    },
    /// KCP (`kcp` crate, the original protocol) over UDP; `fast`:
    /// `nodelay(true, 10, 2, true)`, otherwise KCP's defaults.
    Kcp {
        /// Fast mode.
        fast: bool,
    },
    /// thinwire over real UDP (the `thinwire` runtime) in a lab configuration.
    Thinwire(thinwire_lab::protocol::ThinwireProtocol),
    /// QUIC (`quinn`, rustls with `ring`, a self-signed certificate): one
    /// unidirectional stream per reliable class, datagrams for classes that
    /// allow loss (latest-value classes).
    QuicStreams,
    /// ENet (Debian's C library through `thinwire-enet`), one channel per class; with
    /// `unsequenced`, latest-value classes use unsequenced packets, otherwise everything is
    /// reliable.
    Enet {
        /// Unsequenced packets for latest-value classes.
        unsequenced: bool,
    },
}

impl RealPeer {
    /// Label in `results.json`.
    pub fn name(&self) -> String {
        match self {
            RealPeer::Tcp { thin: false } => "tcp-nodelay".into(),
            RealPeer::Tcp { thin: true } => "tcp-thin-linear".into(),
            RealPeer::Kcp { fast: false } => "kcp".into(),
            RealPeer::Kcp { fast: true } => "kcp-fast".into(),
            RealPeer::Thinwire(t) => ProtocolSpec::Thinwire(*t).name(),
            RealPeer::QuicStreams => "quic-streams".into(),
            RealPeer::Enet { unsequenced: false } => "enet-reliable".into(),
            RealPeer::Enet { unsequenced: true } => "enet-unsequenced".into(),
        }
    }
}

/// What one host of a peer's run reports: the payload bytes it sent (see
/// [`run_peer`]) and the stack's own counters, by name.
#[derive(Debug, Default)]
pub(crate) struct HostReport {
    pub(crate) payload_bytes_sent: u64,
    pub(crate) counters: Vec<(&'static str, u64)>,
}

impl HostReport {
    fn sent(payload_bytes_sent: u64) -> Self {
        HostReport {
            payload_bytes_sent,
            counters: Vec::new(),
        }
    }
}

/// Adds `more` into `into`, name by name, keeping first-seen order.
fn merge_counters(into: &mut Vec<(&'static str, u64)>, more: &[(&'static str, u64)]) {
    for &(k, v) in more {
        match into.iter_mut().find(|(n, _)| *n == k) {
            Some((_, x)) => *x += v,
            None => into.push((k, v)),
        }
    }
}

/// Kernel TCP counters of the calling thread's network namespace
/// (`/proc/thread-self/net/snmp` and `netstat`): segments sent and
/// retransmitted, tail loss probes, retransmission timeouts, fast
/// retransmits and spurious timeouts. Each emulated host has its own
/// namespace, so these are that host's alone.
fn kernel_tcp_counters() -> Vec<(&'static str, u64)> {
    const WANTED: [(&str, &str, &str); 6] = [
        ("snmp", "Tcp", "OutSegs"),
        ("snmp", "Tcp", "RetransSegs"),
        ("netstat", "TcpExt", "TCPLossProbes"),
        ("netstat", "TcpExt", "TCPTimeouts"),
        ("netstat", "TcpExt", "TCPFastRetrans"),
        ("netstat", "TcpExt", "TCPSpuriousRTOs"),
    ];
    let mut out = Vec::new();
    for (file, table, name) in WANTED {
        let text =
            std::fs::read_to_string(format!("/proc/thread-self/net/{file}")).unwrap_or_default();
        if let Some(v) = proc_net_value(&text, table, name) {
            out.push((name, v));
        }
    }
    out
}

/// One value of a `/proc/net/snmp`-style file: a header line `Table: names...`
/// followed by a line `Table: values...`.
fn proc_net_value(text: &str, table: &str, name: &str) -> Option<u64> {
    let prefix = format!("{table}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let (head, vals) = (lines.next()?, lines.next()?);
    let i = head.split_whitespace().position(|n| n == name)?;
    vals.split_whitespace().nth(i)?.parse().ok()
}

/// Send and delivery stamps of every message of a run (µs since `t0`, 0 = not yet).
#[derive(Debug)]
pub(crate) struct Book {
    pub(crate) t0: Instant,
    pub(crate) sent: Vec<AtomicU64>,
    pub(crate) delivered: Vec<AtomicU64>,
}

impl Book {
    pub(crate) fn new(t0: Instant, n: usize) -> Self {
        Book {
            t0,
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            delivered: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }
    fn stamp(&self, v: &AtomicU64) {
        let us = Instant::now()
            .saturating_duration_since(self.t0)
            .as_micros() as u64
            + 1;
        let _ = v.compare_exchange(0, us, Ordering::Relaxed, Ordering::Relaxed);
    }
    pub(crate) fn sent(&self, id: usize) {
        self.stamp(&self.sent[id]);
    }
    pub(crate) fn delivered(&self, data: &[u8]) {
        if data.len() >= 8 {
            let id = u64::from_le_bytes(data[..8].try_into().unwrap_or_default()) as usize;
            if let Some(v) = self.delivered.get(id) {
                self.stamp(v);
            }
        }
    }
}

/// The run's events and timing, shared by all peer threads.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) events: Vec<AppEvent>,
    pub(crate) classes: Vec<ClassSpec>,
    pub(crate) clients: u32,
    /// When the last peer thread stops.
    pub(crate) end: Duration,
}

impl Plan {
    pub(crate) fn ids(&self, dir: Direction, client: Option<u32>) -> Vec<usize> {
        (0..self.events.len())
            .filter(|&i| {
                let e = &self.events[i];
                e.dir == dir && client.is_none_or(|c| e.client == c)
            })
            .collect()
    }
}

pub(crate) fn payload(id: usize, size: u32) -> Vec<u8> {
    let mut v = vec![0u8; (size as usize).max(8)];
    v[..8].copy_from_slice(&(id as u64).to_le_bytes());
    v
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

fn perr(peer: &str, e: impl std::fmt::Display) -> EmuError {
    EmuError::Peer {
        peer: peer.into(),
        msg: e.to_string(),
    }
}

/// Runs `peer` over `net` (host 0 server, host `c + 1` client `c`) until
/// `plan.end`; stamps go to `book`. Returns the payload bytes the peers
/// sent: for thinwire the transport's own count (`payload_bytes_sent`:
/// retransmissions and parity included); for TCP and KCP the bytes the
/// application handed over (retransmissions are not counted, so their
/// redundancy reads 0).
pub(crate) fn run_peer(
    peer: &RealPeer,
    net: &EmuNet,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, EmuError> {
    let cert = Arc::new(match peer {
        RealPeer::QuicStreams => Some(QuicCert::generate().map_err(|e| perr(&peer.name(), e))?),
        _ => None,
    });
    let mut handles = Vec::new();
    for host in 0..=plan.clients as usize {
        let (peer2, plan, book, cert) = (peer.clone(), plan.clone(), book.clone(), cert.clone());
        handles.push(net.spawn_in(host, move || {
            let client = (host > 0).then(|| host as u32 - 1);
            match &peer2 {
                RealPeer::Tcp { thin } => tcp_host(*thin, client, &plan, &book),
                RealPeer::Kcp { fast } => {
                    kcp_host(*fast, client, &plan, &book).map(HostReport::sent)
                }
                RealPeer::Thinwire(t) => thinwire_host(*t, client, &plan, &book),
                RealPeer::QuicStreams => match cert.as_ref() {
                    Some(cert) => quic_host(cert, client, &plan, &book),
                    None => Err("no certificate".into()),
                },
                RealPeer::Enet { unsequenced } => {
                    super::enet_peer::enet_host(*unsequenced, client, &plan, &book)
                        .map(HostReport::sent)
                }
            }
            .map_err(|e| perr(&peer2.name(), e))
        })?);
    }
    let mut first_err = None;
    let mut total = HostReport::default();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| perr(&peer.name(), "thread panicked"))
            .and_then(|r| r);
        match r {
            Ok(h) => {
                total.payload_bytes_sent += h.payload_bytes_sent;
                merge_counters(&mut total.counters, &h.counters);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(total), Err)
}

// ---------------------------------------------------------------- TCP

const TCP_PORT: u16 = 7100;

fn tcp_setup(s: &TcpStream, thin: bool) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    // CUBIC, Linux's built-in default, whatever the host's sysctl says: a
    // namespace inherits the host's choice (BBR on the machine this was
    // measured on, which paces, and with which a 2 KB message's median
    // latency was 50 ms higher). Where the kernel lacks CUBIC the
    // namespace's default stays.
    let _ = socket2::SockRef::from(s).set_tcp_congestion(b"cubic");
    if thin {
        // TCP_THIN_LINEAR_TIMEOUTS (option 16 on Linux).
        socket2::SockRef::from(s).set_thin_linear_timeouts(true)?;
    }
    Ok(())
}

fn tcp_reader(mut s: TcpStream, book: Arc<Book>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut len = [0u8; 4];
        let mut buf = Vec::new();
        while s.read_exact(&mut len).is_ok() {
            buf.resize(u32::from_le_bytes(len) as usize, 0);
            if s.read_exact(&mut buf).is_err() {
                break;
            }
            book.delivered(&buf);
        }
    })
}

fn tcp_write(s: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(data.len() + 4);
    frame.extend_from_slice(&(data.len() as u32).to_le_bytes());
    frame.extend_from_slice(data);
    s.write_all(&frame)
}

fn tcp_host(
    thin: bool,
    client: Option<u32>,
    plan: &Plan,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let server = SocketAddr::from((host_addr(0), TCP_PORT));
    let e = |e: std::io::Error| e.to_string();
    let mut streams: Vec<Option<TcpStream>> = Vec::new();
    let mut readers = Vec::new();
    let ids = match client {
        None => {
            let l = TcpListener::bind(server).map_err(e)?;
            streams.resize_with(plan.clients as usize, || None);
            for _ in 0..plan.clients {
                let (mut s, _) = l.accept().map_err(e)?;
                tcp_setup(&s, thin).map_err(e)?;
                let mut id = [0u8; 4];
                s.read_exact(&mut id).map_err(e)?;
                let c = u32::from_le_bytes(id) as usize;
                readers.push(tcp_reader(s.try_clone().map_err(e)?, book.clone()));
                if let Some(slot) = streams.get_mut(c) {
                    *slot = Some(s);
                }
            }
            plan.ids(Direction::Down, None)
        }
        Some(c) => {
            let mut s = None;
            for _ in 0..50 {
                match TcpStream::connect_timeout(&server, Duration::from_secs(2)) {
                    Ok(x) => {
                        s = Some(x);
                        break;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
            let mut s = s.ok_or("cannot connect")?;
            tcp_setup(&s, thin).map_err(e)?;
            s.write_all(&c.to_le_bytes()).map_err(e)?;
            readers.push(tcp_reader(s.try_clone().map_err(e)?, book.clone()));
            streams.push(Some(s));
            plan.ids(Direction::Up, Some(c))
        }
    };
    let mut sent = 0;
    for id in ids {
        let ev = &plan.events[id];
        sleep_until(book.t0 + ev.at);
        let slot = if client.is_some() {
            0
        } else {
            ev.client as usize
        };
        if let Some(Some(s)) = streams.get_mut(slot) {
            book.sent(id);
            tcp_write(s, &payload(id, ev.msg.size)).map_err(e)?;
            sent += u64::from(ev.msg.size);
        }
    }
    sleep_until(book.t0 + plan.end);
    let mut counters = kernel_tcp_counters();
    let cubic = streams
        .iter()
        .flatten()
        .filter(|s| {
            socket2::SockRef::from(*s)
                .tcp_congestion()
                .is_ok_and(|ca| ca.starts_with(b"cubic"))
        })
        .count();
    counters.push(("sockets_cubic", cubic as u64));
    for s in streams.iter().flatten() {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    for r in readers {
        let _ = r.join();
    }
    Ok(HostReport {
        payload_bytes_sent: sent,
        counters,
    })
}

// ---------------------------------------------------------------- KCP

const KCP_PORT: u16 = 7200;

/// KCP's output: datagrams to one peer address.
struct KcpOut {
    sock: Arc<UdpSocket>,
    to: SocketAddr,
}

impl Write for KcpOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Losses on the wire are the link model's business; a full socket
        // buffer is treated the same way.
        let _ = self.sock.send_to(buf, self.to);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn kcp_host(fast: bool, client: Option<u32>, plan: &Plan, book: &Arc<Book>) -> Result<u64, String> {
    let e = |e: std::io::Error| e.to_string();
    let me = match client {
        None => SocketAddr::from((host_addr(0), KCP_PORT)),
        Some(c) => SocketAddr::from((host_addr(c as usize + 1), KCP_PORT)),
    };
    let sock = Arc::new(UdpSocket::bind(me).map_err(e)?);
    sock.set_read_timeout(Some(Duration::from_millis(1)))
        .map_err(e)?;
    let peers: Vec<u32> = match client {
        None => (0..plan.clients).collect(),
        Some(c) => vec![c],
    };
    let mut kcps: Vec<kcp::Kcp<KcpOut>> = peers
        .iter()
        .map(|&c| {
            let to = match client {
                None => SocketAddr::from((host_addr(c as usize + 1), KCP_PORT)),
                Some(_) => SocketAddr::from((host_addr(0), KCP_PORT)),
            };
            let mut k = kcp::Kcp::new(
                c + 1,
                KcpOut {
                    sock: sock.clone(),
                    to,
                },
            );
            if fast {
                k.set_nodelay(true, 10, 2, true);
            }
            k
        })
        .collect();
    let ids = match client {
        None => plan.ids(Direction::Down, None),
        Some(c) => plan.ids(Direction::Up, Some(c)),
    };
    let mut next = 0;
    let mut sent = 0;
    let mut buf = vec![0u8; 65_536];
    let mut msg = vec![0u8; 65_536];
    let end = book.t0 + plan.end;
    let start = Instant::now();
    while Instant::now() < end {
        let now = Instant::now();
        while next < ids.len() && book.t0 + plan.events[ids[next]].at <= now {
            let id = ids[next];
            let ev = &plan.events[id];
            let k = if client.is_some() {
                0
            } else {
                ev.client as usize
            };
            book.sent(id);
            kcps[k]
                .send(&payload(id, ev.msg.size))
                .map_err(|e| e.to_string())?;
            sent += u64::from(ev.msg.size);
            next += 1;
        }
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if n >= 4 {
                let conv = kcp::get_conv(&buf[..n]);
                let k = if client.is_some() {
                    0
                } else {
                    conv.wrapping_sub(1) as usize
                };
                if let Some(k) = kcps.get_mut(k) {
                    let _ = k.input(&buf[..n]);
                    while let Ok(m) = k.recv(&mut msg) {
                        book.delivered(&msg[..m]);
                    }
                }
            }
        }
        let ms = start.elapsed().as_millis() as u32;
        for k in &mut kcps {
            let _ = k.update(ms);
        }
    }
    Ok(sent)
}

/// The 0-based client index of a peer that connected to the server from an
/// emulated client host (host `i + 1` is client `i`), if it is one.
fn client_slot(addr: SocketAddr) -> Option<usize> {
    match addr.ip() {
        std::net::IpAddr::V4(ip) => host_index(ip.octets())?.checked_sub(1),
        std::net::IpAddr::V6(_) => None,
    }
}

// ---------------------------------------------------------------- thinwire

const THINWIRE_PORT: u16 = 7300;

fn thinwire_host(
    t: thinwire_lab::protocol::ThinwireProtocol,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (kinds, per_class) = t.channels(&plan.classes);
    let transport = t.transport();
    let plan = plan.clone();
    let book = book.clone();
    rt.block_on(async move {
        let server = SocketAddr::from((host_addr(0), THINWIRE_PORT));
        let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
        let ep;
        let ids = match client {
            None => {
                ep = thinwire::Endpoint::bind(
                    server,
                    thinwire::Config::server().with_transport(transport),
                )
                .map_err(|e| e.to_string())?;
                conns.resize_with(plan.clients as usize, || None);
                for _ in 0..plan.clients {
                    let c = ep.accept().await.ok_or("endpoint closed")?;
                    if let Some(slot) =
                        client_slot(c.remote_address()).and_then(|i| conns.get_mut(i))
                    {
                        *slot = Some(c);
                    }
                }
                plan.ids(Direction::Down, None)
            }
            Some(c) => {
                ep = thinwire::Endpoint::bind(
                    SocketAddr::from((host_addr(c as usize + 1), 0)),
                    thinwire::Config::client().with_transport(transport),
                )
                .map_err(|e| e.to_string())?;
                let conn = ep
                    .connect(server, &kinds)
                    .await
                    .map_err(|e| e.to_string())?;
                conns.push(Some(conn));
                plan.ids(Direction::Up, Some(c))
            }
        };
        for c in conns.iter().flatten() {
            let c = c.clone();
            let book = book.clone();
            tokio::spawn(async move {
                while let Ok((_, m)) = c.recv().await {
                    book.delivered(&m.data);
                }
            });
        }
        for id in ids {
            let ev = plan.events[id];
            let at = tokio::time::Instant::from_std(book.t0 + ev.at);
            tokio::time::sleep_until(at).await;
            let slot = if client.is_some() {
                0
            } else {
                ev.client as usize
            };
            let Some(Some(c)) = conns.get(slot) else {
                continue;
            };
            let (ch, sem) = per_class
                .get(usize::from(ev.msg.class))
                .copied()
                .unwrap_or((0, ChannelSemantics::ReliableOrdered));
            book.sent(id);
            let data = bytes::Bytes::from(payload(id, ev.msg.size));
            // Deadline delivery, as in the simulator adapter: messages with a
            // deadline go through `send_deadline` (too large for 64 shards:
            // an ordinary message); a refused send means the message is lost.
            if let (Some(parity), Some(deadline)) = (t.deadline, ev.msg.deadline) {
                let opts = thinwire::DeadlineOptions {
                    parity: parity.mode(),
                    ..thinwire::DeadlineOptions::new(deadline, ev.msg.target)
                };
                match c.send_deadline(ch, data.clone(), opts) {
                    Err(thinwire::SendError::Rejected(
                        thinwire::proto::SendError::MessageTooLarge { .. },
                    )) => {}
                    _ => continue,
                }
            }
            let _ = if sem == ChannelSemantics::LatestReliable {
                c.send_latest(ch, ev.msg.key, data)
            } else {
                c.send(ch, data)
            };
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
        let mut report = HostReport::default();
        for st in conns.iter().flatten().filter_map(|c| c.stats()) {
            report.payload_bytes_sent += st.payload_bytes_sent();
            merge_counters(
                &mut report.counters,
                &[
                    ("packets_sent", st.packets_sent),
                    ("packets_lost", st.packets_lost),
                    ("thin_fast_losses", st.thin_fast_losses),
                    ("rto_expirations", st.rto_expirations),
                    ("spurious_losses", st.spurious_losses),
                    (
                        "payload_bytes_retransmitted",
                        st.payload_bytes_retransmitted,
                    ),
                    ("payload_bytes_bundled", st.payload_bytes_bundled),
                    ("payload_bytes_parity", st.payload_bytes_parity),
                ],
            );
        }
        ep.close(0, b"done");
        Ok(report)
    })
}

// ---------------------------------------------------------------- QUIC

const QUIC_PORT: u16 = 7400;

/// A self-signed certificate (DER) and its PKCS#8 key, shared by the QUIC
/// server (which presents it) and the clients (which trust it alone).
#[derive(Debug)]
pub(crate) struct QuicCert {
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

impl QuicCert {
    pub(crate) fn generate() -> Result<Self, String> {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .map_err(|e| e.to_string())?;
        Ok(QuicCert {
            cert: ck.cert.der().clone(),
            key: ck.key_pair.serialize_der(),
        })
    }
}

fn quic_transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    Arc::new(t)
}

/// Sends on one QUIC connection: one unidirectional stream per class (opened
/// with the class's first message, frames `[len u32 LE][data]`), written by
/// its own task so that a blocked stream holds up only its class; classes
/// that allow loss (latest-value classes) go as datagrams, or on their
/// stream when a message is too large for one datagram.
struct QuicSender {
    conn: quinn::Connection,
    streams: Vec<tokio::sync::mpsc::UnboundedSender<bytes::Bytes>>,
}

impl QuicSender {
    fn new(conn: quinn::Connection, classes: usize) -> Self {
        let streams = (0..classes)
            .map(|_| {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<bytes::Bytes>();
                let conn = conn.clone();
                tokio::spawn(async move {
                    let mut s: Option<quinn::SendStream> = None;
                    while let Some(d) = rx.recv().await {
                        if s.is_none() {
                            s = conn.open_uni().await.ok();
                        }
                        let Some(st) = s.as_mut() else { return };
                        let mut frame = Vec::with_capacity(d.len() + 4);
                        frame.extend_from_slice(&(d.len() as u32).to_le_bytes());
                        frame.extend_from_slice(&d);
                        if st.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
                tx
            })
            .collect();
        QuicSender { conn, streams }
    }

    fn send(&self, class: usize, lossy: bool, data: bytes::Bytes) {
        if lossy
            && self
                .conn
                .max_datagram_size()
                .is_some_and(|m| data.len() <= m)
        {
            // Refused (connection gone): the message is lost.
            let _ = self.conn.send_datagram(data);
            return;
        }
        if let Some(tx) = self.streams.get(class) {
            let _ = tx.send(data);
        }
    }
}

/// Delivers everything `conn` receives: datagrams and every unidirectional stream.
fn quic_receive(conn: quinn::Connection, book: Arc<Book>) {
    let (c2, b2) = (conn.clone(), book.clone());
    tokio::spawn(async move {
        while let Ok(d) = c2.read_datagram().await {
            b2.delivered(&d);
        }
    });
    tokio::spawn(async move {
        while let Ok(mut s) = conn.accept_uni().await {
            let book = book.clone();
            tokio::spawn(async move {
                let mut len = [0u8; 4];
                let mut buf = Vec::new();
                while s.read_exact(&mut len).await.is_ok() {
                    buf.resize(u32::from_le_bytes(len) as usize, 0);
                    if s.read_exact(&mut buf).await.is_err() {
                        break;
                    }
                    book.delivered(&buf);
                }
            });
        }
    });
}

fn quic_host(
    cert: &QuicCert,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let server = SocketAddr::from((host_addr(0), QUIC_PORT));
    let lossy: Vec<bool> = plan
        .classes
        .iter()
        .map(|c| c.semantics == thinwire_lab::workload::Semantics::Latest)
        .collect();
    let (plan, book) = (plan.clone(), book.clone());
    rt.block_on(async move {
        let mut conns: Vec<Option<QuicSender>> = Vec::new();
        let ep;
        let ids = match client {
            None => {
                let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key.clone());
                let mut cfg =
                    quinn::ServerConfig::with_single_cert(vec![cert.cert.clone()], key.into())
                        .map_err(|e| s(&e))?;
                cfg.transport_config(quic_transport());
                ep = quinn::Endpoint::server(cfg, server).map_err(|e| s(&e))?;
                conns.resize_with(plan.clients as usize, || None);
                for _ in 0..plan.clients {
                    let inc = ep.accept().await.ok_or("endpoint closed")?;
                    let c = inc.await.map_err(|e| s(&e))?;
                    quic_receive(c.clone(), book.clone());
                    if let Some(slot) =
                        client_slot(c.remote_address()).and_then(|i| conns.get_mut(i))
                    {
                        *slot = Some(QuicSender::new(c, plan.classes.len()));
                    }
                }
                plan.ids(Direction::Down, None)
            }
            Some(c) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(cert.cert.clone()).map_err(|e| s(&e))?;
                let mut cfg = quinn::ClientConfig::with_root_certificates(Arc::new(roots))
                    .map_err(|e| s(&e))?;
                cfg.transport_config(quic_transport());
                ep = quinn::Endpoint::client(SocketAddr::from((host_addr(c as usize + 1), 0)))
                    .map_err(|e| s(&e))?;
                let conn = ep
                    .connect_with(cfg, server, "localhost")
                    .map_err(|e| s(&e))?
                    .await
                    .map_err(|e| s(&e))?;
                quic_receive(conn.clone(), book.clone());
                conns.push(Some(QuicSender::new(conn, plan.classes.len())));
                plan.ids(Direction::Up, Some(c))
            }
        };
        let mut sent = 0;
        for id in ids {
            let ev = plan.events[id];
            tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + ev.at)).await;
            let slot = if client.is_some() {
                0
            } else {
                ev.client as usize
            };
            let Some(Some(c)) = conns.get(slot) else {
                continue;
            };
            let class = usize::from(ev.msg.class);
            book.sent(id);
            c.send(
                class,
                lossy.get(class).copied().unwrap_or(false),
                bytes::Bytes::from(payload(id, ev.msg.size)),
            );
            sent += u64::from(ev.msg.size);
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
        let mut report = HostReport::sent(sent);
        for c in conns.iter().flatten() {
            let st = c.conn.stats();
            merge_counters(
                &mut report.counters,
                &[
                    ("udp_datagrams_sent", st.udp_tx.datagrams),
                    ("lost_packets", st.path.lost_packets),
                    ("lost_bytes", st.path.lost_bytes),
                ],
            );
        }
        ep.close(0u32.into(), b"done");
        Ok(report)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1234
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens OutSegs RetransSegs
Tcp: 1 200 120000 -1 3 4417 87
Udp: InDatagrams NoPorts
Udp: 10 0
";

    #[test]
    fn reads_proc_net_tables_by_column_name() {
        assert_eq!(proc_net_value(SNMP, "Tcp", "OutSegs"), Some(4417));
        assert_eq!(proc_net_value(SNMP, "Tcp", "RetransSegs"), Some(87));
        assert_eq!(proc_net_value(SNMP, "Ip", "InReceives"), Some(1234));
        // absent column, absent table, a negative value, truncated text
        assert_eq!(proc_net_value(SNMP, "Tcp", "TCPLossProbes"), None);
        assert_eq!(proc_net_value(SNMP, "TcpExt", "OutSegs"), None);
        assert_eq!(proc_net_value(SNMP, "Tcp", "MaxConn"), None);
        assert_eq!(proc_net_value("Tcp: OutSegs\n", "Tcp", "OutSegs"), None);
        assert_eq!(proc_net_value("", "Tcp", "OutSegs"), None);
    }

    #[test]
    fn counters_merge_by_name_in_first_seen_order() {
        let mut total = Vec::new();
        merge_counters(&mut total, &[("a", 1), ("b", 2)]);
        merge_counters(&mut total, &[("b", 10), ("c", 5), ("a", 1)]);
        assert_eq!(total, [("a", 2), ("b", 12), ("c", 5)]);
    }
}
