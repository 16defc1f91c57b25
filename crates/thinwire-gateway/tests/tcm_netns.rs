//! TCM as real gateway processes, in two network namespaces joined by a veth pair:
//!
//! ```text
//!  namespace "players"                                   namespace "server"
//!  bots (std UdpSocket) ─► 10.2.0.0/24 via tcm0          tcm0 10.2.0.1/24 ─► echo server 10.2.0.1:7000
//!  tcm0 10.1.0.1/24 ◄─► tcm-local ══ veth 10.99.0.1 ══ 10.99.0.2:7100 ══ tcm-remote ◄─► tcm0
//!                                                        10.1.0.0/24 via tcm0 (the replies)
//! ```
//!
//! Unmodified UDP bots send datagrams to the echo server's address; they cross the trunk as
//! TCM bundles and come back. Needs root, `/dev/net/tun` and `ip`; skipped (with the reason
//! printed) otherwise.

use std::collections::HashSet;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sched::{setns, CloneFlags};
use thinwire_gateway::run::{
    Cidr, Stop, TcmLocalProcess, TcmProcessStats, TcmRemoteProcess, TcmRunner, TunSpec,
};
use thinwire_gateway::tcm::TcmConfig;
use thinwire_gateway::trunk::{mint_trunk_credential, CredentialSpec, TrunkCredential, TrunkPeer};
use thinwire_proto::{ServerKey, TokenKey, TransportConfig};

const BOTS: usize = 4;
const PER_BOT: usize = 50;
const GAP: Duration = Duration::from_millis(5);
const PERIOD: Duration = Duration::from_millis(50);
const SERVER: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::new(10, 2, 0, 1)), 7000);
const OPERATOR: [u8; 32] = [0x0b; 32];
const TRUNK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::new(10, 99, 0, 2)), 7100);

/// Why this host cannot run the test, if it cannot.
fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    {
        return Some(format!("/dev/net/tun: {e}"));
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("the `ip` tool (iproute2) is missing".into()),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "`ip {}`: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// Deletes the namespaces on drop, also when the test fails.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Stops the gateways and the echo server on drop (also when the test fails).
struct StopAll {
    gateways: Vec<Stop>,
    echo: Arc<AtomicBool>,
}

impl Drop for StopAll {
    fn drop(&mut self) {
        self.echo.store(true, Ordering::Relaxed);
        for s in &self.gateways {
            s.stop();
        }
    }
}

/// Runs `f` on a new thread inside the network namespace `ns`.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).expect("open the namespace");
        setns(&file, CloneFlags::CLONE_NEWNET).expect("setns");
        drop(file);
        f()
    })
}

fn tcm() -> TcmConfig {
    TcmConfig {
        period: PERIOD,
        ..TcmConfig::default()
    }
}

fn tun(address: &str, route: &str) -> TunSpec {
    TunSpec {
        name: "tcm0".into(),
        address: address.parse().expect("cidr"),
        routes: vec![route.parse::<Cidr>().expect("cidr")],
    }
}

type Gateway = JoinHandle<Result<TcmProcessStats, String>>;

/// Starts tcm-remote in `ns`; returns its thread once its TUN device is up, and its key.
/// Its one peer (id 1) may send packets from `prefix`.
fn start_remote(
    ns: &str,
    prefix: &str,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (Gateway, ServerKey) {
    let key = ServerKey::generate([7; 32]);
    let (ready, wait) = mpsc::channel();
    let p = TcmRemoteProcess {
        tun: tun("10.2.0.1/24", "10.1.0.0/24"),
        listen: TRUNK,
        key: key.clone(),
        operator_key: TokenKey::new(OPERATOR),
        peers: vec![TrunkPeer {
            prefixes: vec![prefix.parse().expect("cidr")],
            ..TrunkPeer::new(1, "players")
        }],
        accept_any_source: false,
        tcm: tcm(),
        transport: TransportConfig::default(),
    };
    let h = in_netns(ns, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let runner = TcmRunner::remote(p).await.map_err(|e| e.to_string())?;
            let _ = ready.send(());
            runner.run(stop, None).await.map_err(|e| e.to_string())
        })
    });
    wait_ready(&wait, &h, "tcm-remote");
    (h, key)
}

/// Starts tcm-local in `ns`; returns its thread once its TUN device is up.
/// Its credential is minted with `operator` (the real operator key, or an attacker's).
fn start_local(
    ns: &str,
    key: &ServerKey,
    operator: &TokenKey,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Gateway {
    let (ready, wait) = mpsc::channel();
    let p = TcmLocalProcess {
        tun: tun("10.1.0.1/24", "10.2.0.0/24"),
        trunk_bind: "10.99.0.1:0".parse().expect("addr"),
        credential: credential(key, operator),
        server_gateway: None,
        key: ServerKey::generate([8; 32]),
        tcm: tcm(),
        transport: TransportConfig::default(),
    };
    let h = in_netns(ns, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let runner = TcmRunner::local(p).await.map_err(|e| e.to_string())?;
            let _ = ready.send(());
            runner.run(stop, None).await.map_err(|e| e.to_string())
        })
    });
    wait_ready(&wait, &h, "tcm-local");
    h
}

/// A trunk credential for peer 1 minted with `operator` for tcm-remote's `key`.
fn credential(key: &ServerKey, operator: &TokenKey) -> TrunkCredential {
    let expires = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 3600;
    mint_trunk_credential(
        operator,
        &CredentialSpec {
            peer_id: 1,
            name: "players",
            server_gateway_key: &key.public(),
            addresses: &[TRUNK],
            expires_unix_s: expires,
        },
        [3; 24],
    )
    .expect("credential")
}

fn wait_ready(wait: &mpsc::Receiver<()>, h: &Gateway, what: &str) {
    if wait.recv_timeout(Duration::from_secs(10)).is_err() {
        assert!(h.is_finished(), "{what} did not start within 10 s");
        panic!("{what} did not start");
    }
}

/// The echo server: answers every datagram, records who sent it; runs until `stop`.
fn start_echo(ns: &str, stop: Arc<AtomicBool>) -> JoinHandle<(HashSet<SocketAddr>, u64)> {
    in_netns(ns, move || {
        let sock = UdpSocket::bind(SERVER).expect("bind the echo server");
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        let (mut seen, mut count, mut buf) = (HashSet::new(), 0, [0u8; 2048]);
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                seen.insert(from);
                count += 1;
                let _ = sock.send_to(&buf[..n], from);
            }
        }
        (seen, count)
    })
}

/// What the bots saw.
#[derive(Debug)]
struct Bots {
    /// Datagrams sent (the warm-up included).
    sent: u64,
    /// Echoes of the measured datagrams, per bot.
    echoed: Vec<usize>,
    /// The bots' ports.
    ports: Vec<u16>,
}

/// The bots: bot 0 pings until the first echo (the trunk is up), then every bot sends
/// `PER_BOT` datagrams, one every `GAP`, and collects the echoes (for at most 10 s).
fn run_bots(ns: &str) -> JoinHandle<Result<Bots, String>> {
    in_netns(ns, || {
        let socks: Vec<UdpSocket> = (0..BOTS)
            .map(|_| UdpSocket::bind("0.0.0.0:0"))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let mut sent = 0;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buf = [0u8; 2048];
        socks[0]
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        loop {
            if Instant::now() > deadline {
                return Err("no echo within 10 s: the trunk did not come up".into());
            }
            socks[0]
                .send_to(b"warm", SERVER)
                .map_err(|e| e.to_string())?;
            sent += 1;
            if socks[0].recv_from(&mut buf).is_ok() {
                break;
            }
        }
        for round in 0..PER_BOT {
            for (i, s) in socks.iter().enumerate() {
                s.send_to(format!("bot{i}-{round}").as_bytes(), SERVER)
                    .map_err(|e| e.to_string())?;
                sent += 1;
            }
            std::thread::sleep(GAP);
        }
        let mut echoed = vec![HashSet::new(); BOTS];
        // a bound on a broken trunk, not a measurement: a loaded machine may need seconds
        let deadline = Instant::now() + Duration::from_secs(10);
        for s in &socks {
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
        }
        while echoed.iter().any(|e| e.len() < PER_BOT) && Instant::now() < deadline {
            for (i, s) in socks.iter().enumerate() {
                while let Ok(n) = s.recv(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).to_string();
                    if text.starts_with(&format!("bot{i}-")) {
                        echoed[i].insert(text);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let ports = socks
            .iter()
            .map(|s| s.local_addr().map(|a| a.port()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        Ok(Bots {
            sent,
            echoed: echoed.iter().map(HashSet::len).collect(),
            ports,
        })
    })
}

/// Two namespaces joined by a veth pair (10.99.0.1 in `players`, 10.99.0.2 in `server`).
/// `tag` tells the namespaces of tests that run at once apart.
fn make_namespaces(tag: &str) -> (Namespaces, String, String) {
    let pid = std::process::id();
    let (players, server) = (format!("twtcm-{pid}{tag}-p"), format!("twtcm-{pid}{tag}-s"));
    let mut guard = Namespaces(Vec::new());
    for n in [&players, &server] {
        ip(&["netns", "add", n]);
        guard.0.push(n.clone());
    }
    ip(&[
        "-n", &players, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns",
        &server,
    ]);
    for (ns, dev, addr) in [
        (&players, "veth0", "10.99.0.1/24"),
        (&server, "veth1", "10.99.0.2/24"),
    ] {
        ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
        ip(&["-n", ns, "link", "set", dev, "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
    }
    (guard, players, server)
}

#[test]
fn unmodified_udp_bots_reach_an_echo_server_through_a_tcm_pair() {
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return;
    }
    let started = Instant::now();
    let (_namespaces, players, server) = make_namespaces("a");
    let (stop_remote, rx_remote) = Stop::new();
    let (stop_local, rx_local) = Stop::new();
    let echo_stop = Arc::new(AtomicBool::new(false));
    let stop_all = StopAll {
        gateways: vec![stop_local, stop_remote],
        echo: echo_stop.clone(),
    };
    let (remote, key) = start_remote(&server, "10.1.0.0/24", rx_remote);
    let echo = start_echo(&server, echo_stop);
    let local = start_local(&players, &key, &TokenKey::new(OPERATOR), rx_local);

    let bots = run_bots(&players).join().expect("bots").expect("bots ran");
    drop(stop_all);
    let local = local.join().expect("tcm-local").expect("tcm-local ran");
    let remote = remote.join().expect("tcm-remote").expect("tcm-remote ran");
    let (seen, echo_count) = echo.join().expect("echo");

    println!("bots: {bots:?}; echo server saw {echo_count} datagrams from {seen:?}");
    println!("tcm-local:  {local:#?}");
    println!("tcm-remote: {remote:#?}");
    let measured = (BOTS * PER_BOT) as u64;
    println!(
        "bots sent {} datagrams; trunk carried {} (local -> remote) and {} (remote -> local); \
         TCM saved {:.1}% bytes {:.1}% packets toward the server; took {:?}",
        bots.sent,
        local.gateway.trunk.packets_sent,
        remote.gateway.trunk.packets_sent,
        100.0 * local.saved().0,
        100.0 * local.saved().1,
        started.elapsed(),
    );

    // every measured datagram came back
    assert_eq!(bots.echoed, vec![PER_BOT; BOTS], "echoes per bot");
    // the server saw the players' own address (the TUN's, chosen by routing) and ports
    let expected: HashSet<SocketAddr> = bots
        .ports
        .iter()
        .map(|&p| SocketAddr::from(([10, 1, 0, 1], p)))
        .collect();
    assert_eq!(seen, expected, "source addresses at the echo server");
    // multiplexing happened: far fewer trunk packets than datagrams, both ways
    assert!(local.gateway.trunk.packets_sent < bots.sent / 2);
    assert!(remote.gateway.trunk.packets_sent < measured / 2);
    assert!(local.mux.bundles_out * 4 < local.mux.packets_in);
    // restored exactly, both ways
    for (side, s) in [("remote", &remote), ("local", &local)] {
        assert!(s.demux.restored >= measured, "{side}: {:?}", s.demux);
        assert_eq!(s.demux.check_failures, 0, "{side}");
        assert_eq!(s.demux.context_losses, 0, "{side}");
        assert_eq!(s.tun.natives_dropped, 0, "{side}");
        assert_eq!(s.tun.foreign_sources, 0, "{side}");
        assert_eq!(s.tun.packets_written, s.demux.restored, "{side}");
        assert!(s.mux.compressed_records > 0, "{side}: headers compressed");
    }
    assert!(local.saved().0 > 0.0, "TCM saved bytes");
}

/// Sends `count` datagrams to the echo server from `bind` (one every 10 ms) and counts the
/// echoes that come back within `wait` after the last.
fn ping(ns: &str, bind: &str, count: usize, wait: Duration) -> JoinHandle<usize> {
    let bind: SocketAddr = bind.parse().expect("addr");
    in_netns(ns, move || {
        let sock = UdpSocket::bind(bind).expect("bind the pinger");
        sock.set_read_timeout(Some(Duration::from_millis(10)))
            .expect("timeout");
        let (mut echoes, mut buf) = (0, [0u8; 64]);
        for _ in 0..count {
            let _ = sock.send_to(b"ping", SERVER);
            echoes += usize::from(sock.recv_from(&mut buf).is_ok());
        }
        let end = Instant::now() + wait;
        while Instant::now() < end {
            echoes += usize::from(sock.recv_from(&mut buf).is_ok());
        }
        echoes
    })
}

/// Impersonation and source forging, as real processes: a tcm-local that knows only tcm-remote's public key
/// gets no tunnel (its packets reach nothing); then the legitimate tcm-local gets its tunnel,
/// and a packet it carries from a source outside the prefix assigned to it (forged, as from
/// another player network) is dropped before the TUN device.
#[test]
fn a_tcm_local_without_credential_gets_nothing_and_foreign_sources_are_dropped() {
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return;
    }
    let (_namespaces, players, server) = make_namespaces("b");
    // a second source in the players' namespace, outside the peer's prefix
    ip(&["-n", &players, "addr", "add", "10.5.0.1/32", "dev", "lo"]);
    let (stop_remote, rx_remote) = Stop::new();
    let echo_stop = Arc::new(AtomicBool::new(false));
    let stop_all = StopAll {
        gateways: vec![stop_remote],
        echo: echo_stop.clone(),
    };
    let (remote, key) = start_remote(&server, "10.1.0.1/32", rx_remote);
    let echo = start_echo(&server, echo_stop);

    let (stop_attacker, rx_attacker) = Stop::new();
    let forged = TokenKey::new([0x66; 32]);
    let attacker = start_local(&players, &key, &forged, rx_attacker);
    let got = ping(&players, "10.1.0.1:0", 150, Duration::from_millis(500));
    let got = got.join().expect("pinger");
    stop_attacker.stop();
    let attacker = attacker.join().expect("attacker").expect("attacker ran");
    assert_eq!(got, 0, "no echo through the attacker's tcm-local");
    assert_eq!(
        attacker.mux.bundles_out, 0,
        "it never had a trunk to send on"
    );

    let (stop_local, rx_local) = Stop::new();
    let local = start_local(&players, &key, &TokenKey::new(OPERATOR), rx_local);
    let honest = ping(&players, "10.1.0.1:0", 300, Duration::from_millis(500));
    assert!(
        honest.join().expect("pinger") > 0,
        "the legitimate tcm-local is served"
    );
    let spoofed = ping(&players, "10.5.0.1:0", 50, Duration::from_millis(500));
    assert_eq!(
        spoofed.join().expect("pinger"),
        0,
        "a foreign source gets nowhere"
    );
    stop_local.stop();
    drop(stop_all);
    let local = local.join().expect("tcm-local").expect("tcm-local ran");
    let remote = remote.join().expect("tcm-remote").expect("tcm-remote ran");
    let (seen, _) = echo.join().expect("echo");
    println!("attacker: {attacker:?}\nlocal: {local:?}\nremote: {remote:?}\nseen: {seen:?}");
    assert!(
        seen.iter().all(|a| a.ip() == Ipv4Addr::new(10, 1, 0, 1)),
        "{seen:?}"
    );
    assert!(remote.tun.foreign_sources >= 50, "{:?}", remote.tun);
    assert_eq!(
        remote.demux.restored,
        remote.tun.packets_written + remote.tun.foreign_sources
    );
}
