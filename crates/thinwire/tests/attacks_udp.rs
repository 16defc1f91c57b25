//! The attacks of PROTOCOL.md §11 over real UDP on loopback, by an attacker with raw sockets,
//! against the real runtime (the same attacks as `thinwire-proto`'s `src/tests/attacks.rs`,
//! which replays them against the sans-IO core in simulated time).
//!
//! The attacker is what an on-path attacker on loopback would be:
//!
//! * it **sniffs**: an `AF_PACKET` socket (cooked, `ETH_P_IP`) sees every IPv4 packet the
//!   kernel receives; packets between 127.0.0.0/8 addresses only ever travel on `lo`. From a
//!   short-header packet (§2.1) from the client's port to the server's it reads the server's
//!   connection id (bytes 1..9), from one the other way the client's, and it keeps a few of
//!   the client's genuine datagrams to replay or tamper with;
//! * it **spoofs**: a raw IPv4 socket (`IPPROTO_RAW`, which implies `IP_HDRINCL`) sends
//!   IPv4+UDP datagrams built here (both checksums computed) from any address and port on
//!   127.0.0.0/8: its own (127.0.0.66, where a normal UDP socket receives the answers), or the
//!   client's or the server's;
//! * its packets are the bytes of the protocol document: cleartext short headers with the
//!   sniffed id, CLOSE and message frames (§3.4, §3.5), Resets (§2.7).
//!
//! Each test asserts that the attack fails *and* that genuine traffic keeps flowing: numbered
//! messages on a reliable-ordered channel arrive, every one, in order and nothing else, in
//! both directions. Every wait is bounded; the attacks are a few hundred datagrams at most,
//! paced so that no socket buffer overflows (the counts asserted are exact).
//!
//! Raw sockets need root (`CAP_NET_RAW`). Without it every test prints
//! `skipped: needs root for raw sockets` and returns; the CI runs the tests as root, so there
//! they run. Linux only (`AF_PACKET`).
#![cfg(target_os = "linux")]

mod common;

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use common::{key, within, ALL};
use rustix::io::Errno;
use rustix::net::{
    eth, ipproto, recv, sendto, socket_with, sockopt, AddressFamily, RecvFlags, SendFlags,
    SocketFlags, SocketType,
};
use thinwire::proto::wire::LongPacket;
use thinwire::{ChannelKind, Config, Connection, DisconnectReason, Endpoint, SendMode};
use tokio::net::UdpSocket;

/// The attacker's own address: an address on the loopback network, not the peers'.
const ATTACKER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 66);
/// Connection id length of both endpoints (the default).
const CID_LEN: usize = 8;
/// A Reset with an 8-byte id: `c4`, version, id length, id, token.
const RESET_LEN: usize = 1 + 4 + 1 + CID_LEN + 16;
/// CLOSE, code 0, reason "bye" (§3.4 golden).
const CLOSE_BYE: [u8; 6] = [0x03, 0x00, 0x03, b'b', b'y', b'e'];
const PING: [u8; 1] = [0x01];
const SKIPPED: &str = "skipped: needs root for raw sockets";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// ---------------------------------------------------------------------------------------------
// Packets

/// A cleartext short-header packet (§2.1) with a 4-byte packet number (first byte `0x70`),
/// padded with zeros (PADDING frames) to at least 40 bytes, so that it is answered.
fn short4(cid: &[u8; CID_LEN], pn: u32, frames: &[u8]) -> Vec<u8> {
    let mut d = vec![0x70];
    d.extend_from_slice(cid);
    d.extend_from_slice(&pn.to_be_bytes());
    d.extend_from_slice(frames);
    d.resize(d.len().max(40), 0);
    d
}

/// A Reset (§2.7) for `cid` with `token`.
fn reset(cid: &[u8; CID_LEN], token: &[u8; 16]) -> Vec<u8> {
    let v = thinwire::proto::wire::VERSION.to_be_bytes();
    let mut d = vec![0xc4, v[0], v[1], v[2], v[3], CID_LEN as u8];
    d.extend_from_slice(cid);
    d.extend_from_slice(token);
    d
}

/// Compact message frames (§3.5) carrying "FORGED" on every channel of `ALL`, with `seq8`
/// (and key 1 on the LatestReliable channel).
fn forged_messages(seq8: u8) -> Vec<u8> {
    let mut f = Vec::new();
    for (ch, kind) in ALL.iter().enumerate() {
        f.push(0x40 | ch as u8);
        if *kind != ChannelKind::Unreliable {
            f.push(seq8);
        }
        if *kind == ChannelKind::LatestReliable {
            f.push(0x01); // key 1, a one-byte varint
        }
        f.push(6);
        f.extend_from_slice(b"FORGED");
    }
    f
}

/// Checks that `d` is a Reset for `cid` and returns its token.
fn reset_token(d: &[u8], cid: &[u8; CID_LEN]) -> [u8; 16] {
    assert_eq!(d.len(), RESET_LEN, "{d:02x?}");
    let v = thinwire::proto::wire::VERSION.to_be_bytes();
    assert_eq!(
        &d[..6],
        &[0xc4, v[0], v[1], v[2], v[3], CID_LEN as u8],
        "{d:02x?}"
    );
    assert_eq!(&d[6..6 + CID_LEN], cid, "the Reset names the id it answers");
    assert!(
        matches!(LongPacket::decode(d), Ok(LongPacket::Reset { .. })),
        "{d:02x?}"
    );
    d[6 + CID_LEN..].try_into().expect("16 bytes")
}

/// The Internet checksum (RFC 1071) of `data`.
fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet holding a UDP datagram from `from` to `to`, both checksums computed.
fn ipv4_udp(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let udp_len = u16::try_from(8 + payload.len()).expect("small datagram");
    let total = udp_len + 20;
    let mut ip = vec![0x45, 0x00];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0x7a, 0x69, 0x40, 0x00, 64, 17, 0, 0]); // id, DF, TTL 64, UDP
    ip.extend_from_slice(&from.ip().octets());
    ip.extend_from_slice(&to.ip().octets());
    let sum = inet_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());

    let mut udp = Vec::with_capacity(usize::from(udp_len));
    udp.extend_from_slice(&from.port().to_be_bytes());
    udp.extend_from_slice(&to.port().to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = Vec::with_capacity(12 + udp.len());
    pseudo.extend_from_slice(&from.ip().octets());
    pseudo.extend_from_slice(&to.ip().octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    pseudo.extend_from_slice(&udp);
    let sum = match inet_checksum(&pseudo) {
        0 => 0xffff, // 0 would mean "no checksum"
        s => s,
    };
    udp[6..8].copy_from_slice(&sum.to_be_bytes());

    ip.extend_from_slice(&udp);
    ip
}

/// One sniffed UDP datagram.
#[derive(Debug)]
struct Sniffed {
    from: SocketAddrV4,
    to: SocketAddrV4,
    payload: Vec<u8>,
}

/// The UDP datagram in IPv4 packet `p`, if it is an unfragmented one.
fn parse_ipv4_udp(p: &[u8]) -> Option<Sniffed> {
    if p.len() < 28 || p[0] >> 4 != 4 || p[9] != 17 {
        return None;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    let fragment = u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0;
    if ihl < 20 || total > p.len() || total < ihl + 8 || fragment {
        return None;
    }
    let u = &p[ihl..total];
    let udp_len = usize::from(u16::from_be_bytes([u[4], u[5]]));
    if udp_len < 8 || udp_len > u.len() {
        return None;
    }
    let ip = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]);
    let port = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    Some(Sniffed {
        from: SocketAddrV4::new(ip(&p[12..16]), port(&u[0..2])),
        to: SocketAddrV4::new(ip(&p[16..20]), port(&u[2..4])),
        payload: u[8..udp_len].to_vec(),
    })
}

// ---------------------------------------------------------------------------------------------
// The attacker's sockets

/// An `AF_PACKET` socket receiving every IPv4 packet, without link headers; blocking, with a
/// receive timeout.
struct Sniffer {
    fd: OwnedFd,
}

impl Sniffer {
    fn open() -> io::Result<Self> {
        let fd = socket_with(
            AddressFamily::PACKET,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            Some(eth::IP),
        )?;
        sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(ms(20)))?;
        // room for the other tests' traffic while this one reads (best effort)
        let _ = sockopt::set_socket_recv_buffer_size_force(&fd, 8 << 20);
        Ok(Self { fd })
    }

    /// The next UDP datagram between loopback addresses, if one comes before `deadline`.
    fn next(&self, buf: &mut [u8], deadline: Instant) -> Option<Sniffed> {
        while Instant::now() < deadline {
            match recv(&self.fd, &mut *buf, RecvFlags::empty()) {
                Ok((n, _)) => {
                    if let Some(d) = parse_ipv4_udp(&buf[..n]) {
                        if d.from.ip().is_loopback() && d.to.ip().is_loopback() {
                            return Some(d);
                        }
                    }
                }
                Err(e) if e == Errno::AGAIN || e == Errno::INTR => {}
                Err(e) => panic!("sniffer: {e}"),
            }
        }
        None
    }
}

/// A raw IPv4 socket (`IPPROTO_RAW`: the caller writes the IP header).
struct Spoofer {
    fd: OwnedFd,
}

impl Spoofer {
    fn open() -> io::Result<Self> {
        let fd = socket_with(
            AddressFamily::INET,
            SocketType::RAW,
            SocketFlags::CLOEXEC,
            Some(ipproto::RAW),
        )?;
        Ok(Self { fd })
    }

    /// Sends `payload` in a UDP datagram that claims to come from `from`.
    fn send(&self, from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) {
        let packet = ipv4_udp(from, to, payload);
        let n = sendto(
            &self.fd,
            &packet,
            SendFlags::empty(),
            &SocketAddrV4::new(*to.ip(), 0),
        )
        .expect("raw send");
        assert_eq!(n, packet.len());
    }
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => panic!("not IPv4: {a}"),
    }
}

// ---------------------------------------------------------------------------------------------
// A connected pair and its attacker

/// A server and a client connected over loopback, and an attacker who has watched them.
struct Rig {
    server: Endpoint,
    client: Endpoint,
    /// The client's connection.
    conn: Connection,
    /// The server's side of it.
    peer: Connection,
    server_addr: SocketAddrV4,
    client_addr: SocketAddrV4,
    /// The server's connection id, read in the client's short headers.
    server_cid: [u8; CID_LEN],
    /// The client's connection id, read in the server's short headers.
    client_cid: [u8; CID_LEN],
    /// Genuine short-header datagrams of the client to the server, as sniffed.
    captured: Vec<Vec<u8>>,
    spoofer: Spoofer,
    /// The attacker's own address, and a plain UDP socket bound to it.
    me: SocketAddrV4,
    inbox: UdpSocket,
    started: Instant,
}

impl Drop for Rig {
    fn drop(&mut self) {
        eprintln!("attack test ran for {:?}", self.started.elapsed());
    }
}

impl Rig {
    /// Connects a client to a server with `channels` (encrypted, or both ends in cleartext) and
    /// lets the attacker sniff three round trips on channel 0. `None` (after saying so)
    /// without the rights for raw sockets.
    async fn new(channels: &[ChannelKind], cleartext: bool) -> Option<Self> {
        let started = Instant::now();
        let (sniffer, spoofer) = match (Sniffer::open(), Spoofer::open()) {
            (Ok(s), Ok(r)) => (s, r),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("{SKIPPED} ({e})");
                return None;
            }
        };
        let loopback: SocketAddr = "127.0.0.1:0".parse().expect("address");
        let (mut server_config, mut client_config) = (Config::server(), Config::client());
        if cleartext {
            server_config = server_config.insecure_cleartext();
            client_config = client_config.insecure_cleartext();
        }
        let server = Endpoint::bind(loopback, server_config).expect("server");
        let client = Endpoint::bind(loopback, client_config).expect("client");
        let (server_addr, client_addr) = (v4(server.local_addr()), v4(client.local_addr()));
        let sniffing =
            tokio::task::spawn_blocking(move || sniff(&sniffer, client_addr, server_addr));

        let conn = within(
            5,
            "connect",
            client.connect(server.local_addr(), key(&server), channels),
        )
        .await
        .expect("connects");
        let peer = within(5, "accept", server.accept())
            .await
            .expect("accepted");
        for i in 0..3 {
            let hello = format!("warm-up {i}");
            conn.send(0, hello.clone().into_bytes(), SendMode::Plain)
                .expect("send");
            let m = within(3, "warm-up", peer.recv()).await.expect("recv");
            assert_eq!((m.channel, &m.data[..]), (0, hello.as_bytes()));
            peer.send(0, m.data, SendMode::Plain).expect("send");
            let m = within(3, "warm-up echo", conn.recv()).await.expect("recv");
            assert_eq!((m.channel, &m.data[..]), (0, hello.as_bytes()));
        }
        let Sighted {
            server_cid,
            client_cid,
            captured,
        } = within(6, "sniffing the ids", sniffing)
            .await
            .expect("sniffer thread")
            .expect("the ids were seen within 5 s");

        let inbox = UdpSocket::bind(SocketAddrV4::new(ATTACKER_IP, 0))
            .await
            .expect("attacker socket");
        let me = v4(inbox.local_addr().expect("address"));
        Some(Self {
            server,
            client,
            conn,
            peer,
            server_addr,
            client_addr,
            server_cid,
            client_cid,
            captured,
            spoofer,
            me,
            inbox,
            started,
        })
    }

    /// Sends `datagrams` to `to` as coming from `from`, in chunks, each time waiting until
    /// `receiver` has read at least as many datagrams, so that no socket buffer overflows.
    async fn spoof_all(
        &self,
        receiver: &Endpoint,
        from: SocketAddrV4,
        to: SocketAddrV4,
        datagrams: &[Vec<u8>],
    ) {
        for chunk in datagrams.chunks(50) {
            let want = receiver.stats().io.datagrams_received + chunk.len() as u64;
            for d in chunk {
                self.spoofer.send(from, to, d);
            }
            until("the receiver reads the chunk", || {
                receiver.stats().io.datagrams_received >= want
            })
            .await;
        }
    }

    /// What the attacker's socket receives until `count` datagrams came (or 2 s passed),
    /// then for `quiet` more.
    async fn answers(&self, count: usize, quiet: Duration) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let mut wait = Duration::from_secs(2);
        loop {
            if got.len() >= count {
                wait = quiet;
            }
            match tokio::time::timeout(wait, self.inbox.recv_from(&mut buf)).await {
                Ok(r) => {
                    let (n, from) = r.expect("attacker recv");
                    assert_eq!(v4(from), self.server_addr, "only the server answers");
                    got.push(buf[..n].to_vec());
                }
                Err(_) => return got,
            }
        }
    }

    /// Both sides of the connection are up.
    fn assert_alive(&self) {
        assert!(
            self.conn.close_reason().is_none(),
            "client: {:?}",
            self.conn.close_reason()
        );
        assert!(
            self.peer.close_reason().is_none(),
            "server: {:?}",
            self.peer.close_reason()
        );
        assert_eq!(self.client.connection_count(), 1);
        assert_eq!(self.server.connection_count(), 1);
    }

    /// Genuine traffic flows: `n` numbered messages each way on the reliable-ordered channel 0
    /// arrive, every one, in order, and nothing else.
    async fn traffic_flows(&self, label: &str, n: usize) {
        self.assert_alive();
        for (from, to, dir) in [
            (&self.conn, &self.peer, "client to server"),
            (&self.peer, &self.conn, "server to client"),
        ] {
            for i in 0..n {
                from.send(
                    0,
                    format!("{label}: {dir} {i}").into_bytes(),
                    SendMode::Plain,
                )
                .expect("send");
                tokio::time::sleep(ms(1)).await;
            }
            for i in 0..n {
                let m = within(3, dir, to.recv()).await.expect("recv");
                let want = format!("{label}: {dir} {i}");
                assert_eq!(
                    (m.channel, &m.data[..]),
                    (0, want.as_bytes()),
                    "{dir}: {:?}",
                    String::from_utf8_lossy(&m.data)
                );
            }
        }
        tokio::time::sleep(ms(30)).await;
        assert!(matches!(self.peer.try_recv(), Ok(None)), "nothing else");
        assert!(matches!(self.conn.try_recv(), Ok(None)), "nothing else");
        self.assert_alive();
    }
}

/// What the attacker learnt by watching the pair.
struct Sighted {
    server_cid: [u8; CID_LEN],
    client_cid: [u8; CID_LEN],
    captured: Vec<Vec<u8>>,
}

/// Reads loopback traffic until it has seen the server's id (in the client's short headers),
/// the client's (in the server's), and three genuine datagrams of the client; gives up after
/// 5 s. Blocking: runs on tokio's blocking pool.
fn sniff(sniffer: &Sniffer, client: SocketAddrV4, server: SocketAddrV4) -> Option<Sighted> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = vec![0u8; 65_536];
    let (mut server_cid, mut client_cid) = (None::<[u8; CID_LEN]>, None);
    let mut captured: Vec<Vec<u8>> = Vec::new();
    loop {
        let d = sniffer.next(&mut buf, deadline)?;
        // a short header with an 8-byte id and a packet number at least
        let short = d.payload.len() > 1 + CID_LEN && d.payload[0] & 0xc0 == 0x40;
        if !short {
            continue;
        }
        let cid: [u8; CID_LEN] = d.payload[1..1 + CID_LEN].try_into().expect("8 bytes");
        if (d.from, d.to) == (client, server) {
            assert_eq!(*server_cid.get_or_insert(cid), cid, "one id per connection");
            if d.payload.len() <= 1200 && !captured.contains(&d.payload) {
                captured.push(d.payload);
            }
        } else if (d.from, d.to) == (server, client) {
            assert_eq!(*client_cid.get_or_insert(cid), cid, "one id per connection");
        }
        if let (Some(s), Some(c), 3..) = (server_cid, client_cid, captured.len()) {
            return Some(Sighted {
                server_cid: s,
                client_cid: c,
                captured,
            });
        }
    }
}

/// Waits (at most 3 s) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    within(3, what, async {
        while !done() {
            tokio::time::sleep(ms(2)).await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// The attacks

/// A cleartext CLOSE with the sniffed id, from the attacker's address and spoofed as the
/// client's, at several packet numbers: the server drops all of them unauthenticated and
/// stays up; each draws a decoy Reset to the address it claims, which reveals nothing (not
/// the client's id) and resets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_close_closes_nothing_from_any_address() {
    let Some(rig) = Rig::new(&[ChannelKind::ReliableOrdered], false).await else {
        return;
    };
    let server_before = rig.server.stats().protocol;
    let client_before = rig.client.stats().protocol;
    for (i, from) in [rig.me, rig.client_addr].into_iter().enumerate() {
        let forged: Vec<Vec<u8>> = [0u32, 1, 100, 1 << 20]
            .iter()
            .map(|pn| short4(&rig.server_cid, pn + i as u32, &CLOSE_BYE))
            .collect();
        assert!(forged.iter().all(|d| d.len() == 40));
        rig.spoof_all(&rig.server, from, rig.server_addr, &forged)
            .await;
    }
    until("8 forged CLOSEs dropped", || {
        rig.server.stats().protocol.dropped_unauthenticated
            >= server_before.dropped_unauthenticated + 8
    })
    .await;
    let server_after = rig.server.stats().protocol;
    assert_eq!(
        server_after.dropped_unauthenticated - server_before.dropped_unauthenticated,
        8,
        "{server_after:?}"
    );
    let st = rig.peer.stats().expect("the server's connection is alive");
    assert_eq!(st.security.unauthenticated_packets, 8, "{st:?}");

    // the attacker's four drew four decoy Resets, of the Reset's shape, naming the id
    // they were sent to, never the client's id
    let answers = rig.answers(4, ms(100)).await;
    assert_eq!(answers.len(), 4, "{answers:02x?}");
    for a in &answers {
        reset_token(a, &rig.server_cid);
        assert!(!a.windows(CID_LEN).any(|w| w == rig.client_cid));
    }
    // those spoofed as the client went to the client, which believes none of them
    until("4 decoy Resets dropped by the client", || {
        rig.client.stats().protocol.dropped_bad_reset >= client_before.dropped_bad_reset + 4
    })
    .await;
    assert_eq!(
        rig.client.stats().protocol.dropped_bad_reset - client_before.dropped_bad_reset,
        4
    );
    tokio::time::sleep(ms(100)).await;
    rig.traffic_flows("after forged CLOSEs", 10).await;
    assert_eq!(
        rig.peer
            .stats()
            .expect("alive")
            .security
            .unauthenticated_packets,
        8
    );
}

/// A thousand Resets to the client, spoofed as the server's address and port, naming the
/// server's id with random tokens: the client counts every one as a bad Reset and stays
/// connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoofed_reset_kills_nothing() {
    let Some(rig) = Rig::new(&[ChannelKind::ReliableOrdered], false).await else {
        return;
    };
    let before = rig.client.stats().protocol.dropped_bad_reset;
    let resets: Vec<Vec<u8>> = (0..1000)
        .map(|_| reset(&rig.server_cid, &rand::random()))
        .collect();
    assert_eq!(resets[0].len(), RESET_LEN);
    rig.spoof_all(&rig.client, rig.server_addr, rig.client_addr, &resets)
        .await;
    until("1000 Resets dropped", || {
        rig.client.stats().protocol.dropped_bad_reset >= before + 1000
    })
    .await;
    assert_eq!(rig.client.stats().protocol.dropped_bad_reset - before, 1000);
    rig.traffic_flows("after 1000 spoofed Resets", 10).await;
}

/// Cleartext message frames carrying "FORGED" on every channel class, with the sequence
/// numbers the genuine messages are about to take, at 64 packet numbers, spoofed as the
/// client; then the client's genuine datagrams, replayed from its address with one bit
/// flipped. None is delivered, nothing is counted as malformed, and the genuine messages with
/// the same sequence numbers all arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_messages_are_never_delivered_nor_displace_genuine_ones() {
    let Some(rig) = Rig::new(&ALL, false).await else {
        return;
    };
    let before = rig.server.stats().protocol.dropped_unauthenticated;
    // channel 0 has carried seq 0..=2 (the warm-up), the others nothing: seq8 0..16 covers
    // every genuine message below
    let forged: Vec<Vec<u8>> = (0..64u32)
        .map(|pn| short4(&rig.server_cid, pn, &forged_messages((pn % 16) as u8)))
        .collect();
    let tampered: Vec<Vec<u8>> = rig
        .captured
        .iter()
        .map(|d| {
            let mut d = d.clone();
            let at = d.len() / 2; // past the header: in the sealed frames or the tag
            d[at] ^= 0x20;
            d
        })
        .collect();
    let sent = forged.len() + tampered.len();
    rig.spoof_all(&rig.server, rig.client_addr, rig.server_addr, &forged)
        .await;
    rig.spoof_all(&rig.server, rig.client_addr, rig.server_addr, &tampered)
        .await;
    until("every forged packet dropped", || {
        rig.server.stats().protocol.dropped_unauthenticated >= before + sent as u64
    })
    .await;
    assert_eq!(
        rig.server.stats().protocol.dropped_unauthenticated - before,
        sent as u64
    );
    assert!(matches!(rig.peer.try_recv(), Ok(None)), "nothing delivered");

    // genuine messages on every channel, taking the sequence numbers the forgeries named
    let per_channel = 4;
    for i in 0..per_channel {
        for ch in 1..5u8 {
            let m = format!("genuine ch{ch} {i}").into_bytes();
            if ALL[usize::from(ch)] == ChannelKind::LatestReliable {
                rig.conn
                    .send(ch, m, SendMode::Latest { key: i + 1 })
                    .expect("send");
            } else {
                rig.conn.send(ch, m, SendMode::Plain).expect("send");
            }
        }
        tokio::time::sleep(ms(2)).await;
    }
    let mut got: Vec<Vec<String>> = vec![Vec::new(); 5];
    for _ in 0..4 * per_channel {
        let m = within(3, "genuine messages", rig.peer.recv())
            .await
            .expect("recv");
        got[usize::from(m.channel)].push(String::from_utf8(m.data.to_vec()).expect("utf-8"));
    }
    for (ch, msgs) in got.iter_mut().enumerate().skip(1) {
        assert!(msgs.iter().all(|m| !m.contains("FORGED")), "{msgs:?}");
        if !matches!(ALL[ch], ChannelKind::UnreliableSequenced) {
            msgs.sort(); // only the sequenced class promises an order here
        }
        let want: Vec<String> = (0..per_channel)
            .map(|i| format!("genuine ch{ch} {i}"))
            .collect();
        assert_eq!(*msgs, want, "channel {ch} ({:?})", ALL[ch]);
    }
    rig.traffic_flows("after injection", 10).await;
    let st = rig.peer.stats().expect("alive");
    assert_eq!(st.security.unauthenticated_packets, sent as u64, "{st:?}");
    assert_eq!(st.udp.malformed_packets, 0, "{st:?}");
}

/// From the attacker's address: packets with the sniffed id and far-ahead 4-byte packet
/// numbers (first byte `0x70`), then the client's genuine datagrams, replayed. The forgeries
/// do not authenticate, the replays are duplicates: nothing starts a path validation, the
/// connection stays on the client's address, the attacker gets nothing but decoy Resets, and
/// the server's replies keep reaching the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_ahead_packet_number_or_a_replay_cannot_hijack() {
    let Some(rig) = Rig::new(&[ChannelKind::ReliableOrdered], false).await else {
        return;
    };
    let before = rig.server.stats().protocol;
    let st0 = rig.peer.stats().expect("alive");
    let far: Vec<Vec<u8>> = [1u32 << 20, 1 << 30, u32::MAX]
        .iter()
        .map(|pn| short4(&rig.server_cid, *pn, &PING))
        .collect();
    assert!(far.iter().all(|d| d[0] == 0x70));
    rig.spoof_all(&rig.server, rig.me, rig.server_addr, &far)
        .await;
    rig.spoof_all(&rig.server, rig.me, rig.server_addr, &rig.captured)
        .await;
    let replays = rig.captured.len() as u64;
    until("forgeries dropped and replays discarded", || {
        let st = rig.peer.stats().expect("alive");
        rig.server.stats().protocol.dropped_unauthenticated >= before.dropped_unauthenticated + 3
            && st.udp.duplicate_packets >= st0.udp.duplicate_packets + replays
    })
    .await;
    let st = rig.peer.stats().expect("alive");
    assert_eq!(
        st.security.unauthenticated_packets - st0.security.unauthenticated_packets,
        3
    );
    assert_eq!(
        st.udp.duplicate_packets - st0.udp.duplicate_packets,
        replays
    );

    // the attacker gets three decoy Resets (one per forgery), nothing else: no
    // PATH_CHALLENGE, no data
    let answers = rig.answers(3, ms(150)).await;
    assert_eq!(answers.len(), 3, "{answers:02x?}");
    for a in &answers {
        reset_token(a, &rig.server_cid);
    }
    assert_eq!(st.security.path_challenges_sent, 0, "{st:?}");
    assert_eq!(st.security.migrations, 0, "{st:?}");
    assert_eq!(
        rig.peer.current_remote_address(),
        Some(SocketAddr::V4(rig.client_addr))
    );

    // the window did not move: genuine 1-byte packet numbers still open, both ways
    rig.traffic_flows("after the hijack attempt", 10).await;
    let st = rig.peer.stats().expect("alive");
    assert_eq!(
        (st.security.path_challenges_sent, st.security.migrations),
        (0, 0),
        "{st:?}"
    );
    assert!(
        rig.answers(0, ms(50)).await.is_empty(),
        "the server's traffic never went to the attacker"
    );
}

/// From its own address the attacker probes the sniffed live id and a random one with
/// 40-byte garbage short-header packets: the answers look the same (a 30-byte `c4` Reset
/// each), so they reveal nothing, and the live id's, replayed to the client as if from the
/// server, resets nothing. A probe too short to hold an 8-byte id draws no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_live_ids_get_the_same_answer() {
    let Some(rig) = Rig::new(&[ChannelKind::ReliableOrdered], false).await else {
        return;
    };
    let server_before = rig.server.stats().protocol;
    let client_before = rig.client.stats().protocol.dropped_bad_reset;
    let unknown: [u8; CID_LEN] = rand::random();
    assert_ne!(unknown, rig.server_cid);
    let mut answers = Vec::new();
    for cid in [rig.server_cid, unknown] {
        let mut probe = vec![0x40];
        probe.extend_from_slice(&cid);
        probe.push(0x05); // packet number, one byte
        while probe.len() < 40 {
            probe.push(rand::random());
        }
        rig.spoofer.send(rig.me, rig.server_addr, &probe);
        let got = rig.answers(1, ms(20)).await;
        assert_eq!(got.len(), 1, "one answer per probe: {got:02x?}");
        answers.push((cid, got.into_iter().next().expect("one")));
    }
    let shape = |d: &[u8]| (d.len(), d[0]);
    assert_eq!(shape(&answers[0].1), shape(&answers[1].1), "{answers:02x?}");
    assert_eq!(shape(&answers[0].1), (RESET_LEN, 0xc4));
    for (cid, a) in &answers {
        reset_token(a, cid);
    }
    let server_after = rig.server.stats().protocol;
    assert_eq!(
        server_after.dropped_unauthenticated - server_before.dropped_unauthenticated,
        1
    );
    assert_eq!(
        server_after.dropped_unknown_connection - server_before.dropped_unknown_connection,
        1
    );
    assert_eq!(server_after.resets_sent - server_before.resets_sent, 2);

    // the live id's answer carries a decoy, not the connection's token: delivered to the
    // client as if from the server, it resets nothing
    let live_answer = answers[0].1.clone();
    rig.spoof_all(
        &rig.client,
        rig.server_addr,
        rig.client_addr,
        &[live_answer],
    )
    .await;
    until("the decoy dropped by the client", || {
        rig.client.stats().protocol.dropped_bad_reset > client_before
    })
    .await;
    assert_eq!(
        rig.client.stats().protocol.dropped_bad_reset,
        client_before + 1
    );

    // too short for a header with an 8-byte id: no answer at all
    rig.spoofer
        .send(rig.me, rig.server_addr, &[0x40, 1, 2, 3, 4]);
    assert!(rig.answers(0, ms(100)).await.is_empty());

    rig.traffic_flows("after probing", 10).await;
}

/// The control: the attacker's datagrams do reach the connection. With both ends in
/// `InsecureCleartext` (PROTOCOL.md §11.5) the same forged packets work: a message spoofed as
/// the client is delivered, and a CLOSE from the attacker's own address ends the server's
/// connection. So the tests above fail for want of the keys, not of well-formed packets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_insecure_cleartext_the_same_forgeries_do_work() {
    let Some(rig) = Rig::new(&[ChannelKind::ReliableOrdered], true).await else {
        return;
    };
    // channel 0 carried seq 0..=2 (the warm-up): seq 3 is the next one
    let inject = short4(
        &rig.server_cid,
        1 << 20,
        &[0x40, 3, 6, b'F', b'O', b'R', b'G', b'E', b'D'],
    );
    rig.spoofer.send(rig.client_addr, rig.server_addr, &inject);
    let m = within(3, "the forged message", rig.peer.recv())
        .await
        .expect("delivered");
    assert_eq!((m.channel, &m.data[..]), (0, &b"FORGED"[..]));

    let close = short4(&rig.server_cid, (1 << 20) + 1, &CLOSE_BYE);
    rig.spoofer.send(rig.me, rig.server_addr, &close);
    let reason = within(3, "the forged CLOSE", rig.peer.closed()).await;
    assert!(
        matches!(
            reason,
            thinwire::ConnectionError::Disconnected(DisconnectReason::ClosedByPeer { .. })
        ),
        "{reason:?}"
    );
}
