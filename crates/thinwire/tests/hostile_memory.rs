//! Logged-in peers that fill head-of-line buffers, over real UDP on loopback, against a
//! server with the default configuration in a process of its own, whose resident set is
//! measured: 8 connections from one address and 32 from 8 more (4 each) send 1,000-byte
//! messages on a reliable-ordered channel, never its first one, so everything they send
//! waits. Before the endpoint's memory budget, 8 such connections took a server from 22 to
//! 148 MB; now the whole attack may grow it by at most 64 MB (the budget's 32 MiB plus what
//! the allocator and the buffers' bookkeeping add).
//!
//! The hostile clients are the sans-IO core on plain sockets: real handshakes, real keys, and
//! packets they seal themselves (`Endpoint::seal_raw`). Linux only (`/proc/PID/status`); the
//! sources are 127.0.1.1 and 127.0.2.1..=8, loopback addresses that need no set-up.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use thinwire::proto::wire::{self, MessageHeader};
use thinwire::proto::{Endpoint as Core, EndpointConfig};
use thinwire::{ChannelKind, Config, Host, PublicKey};

/// Set in the child process: it runs the server.
const SERVER_ENV: &str = "THINWIRE_HOSTILE_MEMORY_SERVER";
const TEST_NAME: &str = "head_of_line_peers_grow_the_server_by_at_most_64_mb";
/// A guard only: the server normally ends when its standard input closes. The attack takes
/// 35-65 s in a debug build on a loaded 2-core machine, so the guard is far above that (at 60 s
/// a slow run once measured a server that had already exited).
const SERVER_LIFETIME: Duration = Duration::from_secs(600);
/// The Done-when bound of the attack's growth.
const MOST_GROWTH_KB: u64 = 64 * 1000;

/// The server: a `Host` with the default server configuration on 127.0.0.1, which prints its
/// port and key, then serves until its standard input closes (the parent closes it when done,
/// and so does its exit) or [`SERVER_LIFETIME`] passes.
fn serve() {
    let mut host = Host::bind("127.0.0.1:0".parse().expect("address"), Config::server())
        .expect("bind the server");
    let key = host.public_key().expect("a server has a key");
    println!("{} {}", host.local_addr().port(), hex(&key.0));
    std::io::stdout().flush().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let _ = tx.send(());
    });
    let end = Instant::now() + SERVER_LIFETIME;
    while Instant::now() < end && rx.try_recv().is_err() {
        while let Ok(Some(_)) = host.service(Duration::from_millis(5)) {}
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

/// The resident set of process `pid`, in kB.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// One hostile source: a client core on its own socket, with its connections.
struct Source {
    core: Core,
    socket: UdpSocket,
    conns: Vec<thinwire::ConnectionHandle>,
    buf: Vec<u8>,
}

impl Source {
    fn new(ip: [u8; 4], seed: u8) -> Self {
        let socket = UdpSocket::bind(SocketAddr::from((ip, 0))).expect("bind a loopback source");
        socket
            .set_read_timeout(Some(Duration::from_millis(2)))
            .expect("timeout");
        let core = Core::new(EndpointConfig::new([seed; 32]), None, Instant::now()).expect("core");
        Self {
            core,
            socket,
            conns: Vec::new(),
            buf: Vec::with_capacity(2048),
        }
    }

    /// Moves datagrams both ways for a while.
    fn pump(&mut self) {
        let now = Instant::now();
        self.core.handle_timeout(now);
        while let Some(t) = self.core.poll_transmit(now, &mut self.buf) {
            let _ = self.socket.send_to(&self.buf[..t.size], t.destination);
        }
        let mut rx = [0u8; 2048];
        while let Ok((n, from)) = self.socket.recv_from(&mut rx) {
            self.core.handle_datagram(Instant::now(), from, &rx[..n]);
        }
        while self.core.poll_event().is_some() {}
    }

    /// Sends one hostile packet on each connection: message `seq` (never 0) of 1,000 bytes.
    fn attack(&mut self, seq: u64) {
        let header = MessageHeader {
            channel: 0,
            kind: ChannelKind::ReliableOrdered,
            seq,
            compact_seq: false,
            key: None,
            fragment: None,
        };
        let mut frames = Vec::new();
        wire::encode_message(&header, &[0xab; 1000], &mut frames);
        for &c in &self.conns {
            if let Some(t) = self.core.seal_raw(c, &frames, &mut self.buf) {
                let _ = self.socket.send_to(&self.buf[..t.size], t.destination);
            }
        }
    }
}

#[test]
fn head_of_line_peers_grow_the_server_by_at_most_64_mb() {
    if std::env::var_os(SERVER_ENV).is_some() {
        return serve();
    }
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(SERVER_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the server");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (port, key) = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).expect("read") > 0, "server ended");
        // the harness may print "test NAME ... " on the same line first: the last two words
        let mut parts = line.split_whitespace().rev();
        if let (Some(k), Some(p)) = (parts.next(), parts.next()) {
            if let (Ok(p), true) = (p.parse::<u16>(), k.len() == 64) {
                break (p, PublicKey(unhex(k)));
            }
        }
    };
    let server = SocketAddr::from(([127, 0, 0, 1], port));
    // 8 connections from 127.0.1.1, 4 from each of 127.0.2.1..=8
    let mut sources = vec![(Source::new([127, 0, 1, 1], 1), 8)];
    for i in 1..=8u8 {
        sources.push((Source::new([127, 0, 2, i], 1 + i), 4));
    }
    for (s, n) in &mut sources {
        for _ in 0..*n {
            let c = s
                .core
                .connect(
                    Instant::now(),
                    server,
                    &key,
                    &[ChannelKind::ReliableOrdered],
                )
                .expect("connect");
            s.conns.push(c);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let connected = |s: &Source| s.conns.iter().all(|&c| s.core.cipher_suite(c).is_some());
    while !sources.iter().all(|(s, _)| connected(s)) {
        assert!(Instant::now() < deadline, "hostile clients did not connect");
        for (s, _) in &mut sources {
            s.pump();
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id();
    let before = rss_kb(pid);
    // 1,100 messages of 1,000 bytes per connection: 1.1 MB each (more than its receive
    // buffer), 44 MB in all (more than the budget), paced so the socket buffers keep up
    for seq in 1..=1100u64 {
        for (s, _) in &mut sources {
            s.attack(seq);
        }
        if seq % 8 == 0 {
            std::thread::sleep(Duration::from_millis(2));
            for (s, _) in &mut sources {
                s.pump();
            }
        }
    }
    let settle = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < settle {
        for (s, _) in &mut sources {
            s.pump();
        }
    }
    let after = rss_kb(pid);
    drop(child.stdin.take());
    let _ = child.wait();
    let growth = after.saturating_sub(before);
    eprintln!("server RSS {before} kB -> {after} kB: +{growth} kB (bound {MOST_GROWTH_KB} kB)");
    assert!(
        growth <= MOST_GROWTH_KB,
        "server RSS grew by {growth} kB under the attack"
    );
    // the attack did reach the server (the datagrams were not lost on the way): the bound is
    // not met by an attack that never arrived
    assert!(
        growth >= 8 * 1000,
        "the attack did not reach the server: +{growth} kB"
    );
}
