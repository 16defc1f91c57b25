//! `thinwire gateway` as a process: keygen and credentials, configuration files and
//! hostnames, trunk admission, the final statistics on SIGTERM and SIGINT, the Prometheus
//! endpoint. Loopback only; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const WAIT: Duration = Duration::from_secs(20);

fn thinwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(args)
        .output()
        .expect("runs the binary")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("thinwire-gw-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A running gateway process whose stdout lines (and stderr lines: its log) arrive on
/// channels.
struct Gateway {
    child: Child,
    lines: mpsc::Receiver<String>,
    log: mpsc::Receiver<String>,
    seen: Vec<String>,
}

/// The lines of `from`, on a channel.
fn lines_of(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(from).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    lines
}

impl Gateway {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_thinwire"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let lines = lines_of(child.stdout.take().expect("stdout"));
        let log = lines_of(child.stderr.take().expect("stderr"));
        Self {
            child,
            lines,
            log,
            seen: Vec::new(),
        }
    }

    /// The first stderr line containing `part` (waits for it, bounded).
    fn logged(&mut self, part: &str) -> String {
        let mut seen = Vec::new();
        let end = Instant::now() + WAIT;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let Ok(l) = self.log.recv_timeout(left) else {
                break;
            };
            if l.contains(part) {
                return l;
            }
            seen.push(l);
        }
        let _ = self.child.kill();
        panic!("no log line with `{part}`; saw {seen:?}");
    }

    /// The first stdout line starting with `prefix` (waits for it, bounded).
    fn line(&mut self, prefix: &str) -> String {
        if let Some(l) = self.seen.iter().find(|l| l.starts_with(prefix)) {
            return l.clone();
        }
        let end = Instant::now() + WAIT;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let Ok(l) = self.lines.recv_timeout(left) else {
                break;
            };
            self.seen.push(l.clone());
            if l.starts_with(prefix) {
                return l;
            }
        }
        let _ = self.child.kill();
        panic!("no line `{prefix}…`; saw {:?}", self.seen);
    }

    /// Sends `signal`; the exit status and the last stdout line.
    fn stop(mut self, signal: Signal) -> (bool, String) {
        kill(Pid::from_raw(self.child.id() as i32), signal).expect("signals");
        let end = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("waits") {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("still running {WAIT:?} after {signal}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest: Vec<String> = self.lines.iter().collect();
        self.seen.extend(rest);
        (
            status.success(),
            self.seen.last().cloned().unwrap_or_default(),
        )
    }
}

/// A fresh public key (from `thinwire gateway keygen`).
fn public_key(dir: &std::path::Path, name: &str) -> String {
    let path = dir.join(name);
    let o = thinwire(&[
        "gateway",
        "keygen",
        "--key-file",
        path.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout).trim().to_owned()
}

/// Mints the trunk credential `out` of peer `id` for the server gateway at `at` with key
/// `key` (`thinwire gateway credential`; the operator key `operator.key` in `dir`, created
/// by the first call).
fn credential(dir: &std::path::Path, id: u64, at: &str, key: &str, out: &str) -> PathBuf {
    let (operator, path) = (dir.join("operator.key"), dir.join(out));
    let o = thinwire(&[
        "gateway",
        "credential",
        "--operator-key-file",
        operator.to_str().expect("utf-8"),
        "--peer-id",
        &id.to_string(),
        "--name",
        &format!("edge-{id}"),
        "--server-gateway",
        at,
        "--server-gateway-key",
        key,
        "--out",
        path.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with(&format!("credential of peer {id} ")));
    path
}

/// A server gateway on loopback (its game server need not exist; its key `server.key` in
/// `dir`, made beforehand or now; the operator key `operator.key`), with `extra` flags.
fn start_server(dir: &std::path::Path, extra: &[&str]) -> Gateway {
    let game_key = public_key(dir, "game.key");
    let key = dir.join("server.key");
    let operator = dir.join("operator.key");
    let mut args = vec![
        "gateway",
        "server",
        "--listen",
        "localhost:0",
        "--game-server",
        "localhost:7",
        "--game-server-key",
        &game_key,
        "--key-file",
        key.to_str().expect("utf-8"),
        "--operator-key-file",
        operator.to_str().expect("utf-8"),
        "--report-every",
        "0",
    ];
    args.extend_from_slice(extra);
    Gateway::start(&args)
}

/// The address after `field: Some(` in a runner's Debug line.
fn addr_in(line: &str, field: &str) -> SocketAddr {
    let at = line.find(&format!("{field}: Some(")).expect("field") + field.len() + 7;
    line[at..]
        .split(')')
        .next()
        .expect("addr")
        .parse()
        .expect("an address")
}

#[test]
fn keygen_writes_a_private_key_once_and_force_replaces_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmpdir("keygen");
    let path = dir.join("gw.key");
    let p = path.to_str().expect("utf-8");
    let o = thinwire(&["gateway", "keygen", "--key-file", p]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let public = text(&o.stdout).trim().to_owned();
    assert!(
        public.len() == 64 && public.bytes().all(|b| b.is_ascii_hexdigit()),
        "{public}"
    );
    let secret = std::fs::read_to_string(&path).expect("written");
    assert!(secret.trim().len() == 64 && secret.trim() != public);
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let o = thinwire(&["gateway", "keygen", "--key-file", p]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not overwritten"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), secret);
    let o = thinwire(&["gateway", "keygen", "--key-file", p, "--force"]);
    assert!(o.status.success());
    assert_ne!(text(&o.stdout).trim(), public);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_prints_the_final_statistics_and_exits_0() {
    let dir = tmpdir("sigterm");
    let mut gw = start_server(&dir, &[]);
    let runner = gw.line("server: Runner");
    assert!(addr_in(&runner, "trunk").ip().is_loopback(), "{runner}");
    let (ok, last) = gw.stop(Signal::SIGTERM);
    assert!(ok, "exit status");
    assert!(last.starts_with("flows 0 open / 0 total; "), "{last}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_configuration_file_with_hostnames_runs_an_edge_and_sigint_stops_it() {
    let dir = tmpdir("config");
    let server_key = public_key(&dir, "server.key");
    let config = dir.join("edge.toml");
    let c = config.to_str().expect("utf-8");
    std::fs::write(
        &config,
        "listen = \"localhost:0\"\nkey_file = \"edge.key\"\n",
    )
    .expect("write");
    let o = thinwire(&["gateway", "edge", "--config", c]);
    assert!(!o.status.success(), "no credential: refused");
    assert!(
        text(&o.stderr).contains("missing --credential (or `credential_file`"),
        "{}",
        text(&o.stderr)
    );
    credential(&dir, 1, "127.0.0.1:7100", &server_key, "edge.cred");
    // the credential says 127.0.0.1:7100; the file dials a name instead
    std::fs::write(
        &config,
        format!(
            "listen = \"localhost:0\"\ncredential_file = \"edge.cred\"\n\
             server_gateway = \"localhost:7100\"\nserver_gateway_key = \"{server_key}\"\n\
             key_file = \"edge.key\"\nreport_every = 0\n[limits]\nmax_flows = 8\n"
        ),
    )
    .expect("write");
    // a flag overrides the file: the trunk socket on loopback
    let mut gw = Gateway::start(&[
        "gateway",
        "edge",
        "--config",
        c,
        "--trunk-bind",
        "127.0.0.1:0",
    ]);
    let who = gw.line("trunk credential: ");
    assert!(
        who.starts_with(&format!(
            "trunk credential: peer 1 (edge-1), server gateway key {server_key}"
        )),
        "{who}"
    );
    let runner = gw.line("edge: Runner");
    assert_eq!(
        addr_in(&runner, "local").ip().to_string(),
        "127.0.0.1",
        "{runner}"
    );
    assert_eq!(
        addr_in(&runner, "trunk").ip().to_string(),
        "127.0.0.1",
        "{runner}"
    );
    assert!(
        dir.join("edge.key").exists(),
        "the key file is relative to the configuration"
    );
    let (ok, last) = gw.stop(Signal::SIGINT);
    assert!(ok);
    assert!(last.starts_with("flows 0 open"), "{last}");

    std::fs::write(&config, "listen = \"localhost:0\"\nserver_gateway = 7100\n").expect("write");
    let o = thinwire(&["gateway", "edge", "--config", c]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains(&format!("{c}:2: ")),
        "{}",
        text(&o.stderr)
    );
    std::fs::write(&config, "listen = \"no-such-host.invalid:1\"\n").expect("write");
    let o = thinwire(&["gateway", "edge", "--config", c]);
    assert!(
        text(&o.stderr).contains(&format!(
            "{c}:1: listen no-such-host.invalid:1: does not resolve"
        )),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_edge_whose_peer_id_is_not_listed_is_not_admitted() {
    let dir = tmpdir("admission");
    let server_key = public_key(&dir, "server.key");
    let config = dir.join("server.toml");
    std::fs::write(&config, "[[peer]]\nid = 1\nname = \"edge-1\"\n").expect("write");
    let mut server = start_server(&dir, &["--config", config.to_str().expect("utf-8")]);
    let trunk = addr_in(&server.line("server: Runner"), "trunk");
    let cred = credential(&dir, 2, &trunk.to_string(), &server_key, "edge-2.cred");
    let edge_key = dir.join("edge.key");
    let mut edge = Gateway::start(&[
        "gateway",
        "edge",
        "--listen",
        "127.0.0.1:0",
        "--credential",
        cred.to_str().expect("utf-8"),
        "--key-file",
        edge_key.to_str().expect("utf-8"),
        "--report-every",
        "0",
    ]);
    let down = edge.logged("trunk of peer 2 down");
    assert!(down.contains("not admitted"), "{down}");
    let (ok, _) = edge.stop(Signal::SIGTERM);
    assert!(ok);
    let (ok, last) = server.stop(Signal::SIGTERM);
    assert!(ok);
    assert!(last.starts_with("flows 0 open / 0 total; "), "{last}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `GET /metrics` over a plain TCP connection; the body.
fn scrape(addr: SocketAddr) -> String {
    let mut c = TcpStream::connect(addr).expect("connects");
    c.set_read_timeout(Some(WAIT)).expect("timeout");
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n")
        .expect("writes");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("reads");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    out
}

fn sample(text: &str, name: &str) -> Option<u64> {
    let head = format!("{name}{{role=\"server\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&head)?.parse().ok())
}

#[test]
fn the_metrics_endpoint_counts_traffic() {
    let dir = tmpdir("metrics");
    let mut gw = start_server(&dir, &["--metrics", "127.0.0.1:0"]);
    let url = gw.line("metrics: http://");
    let metrics: SocketAddr = url["metrics: http://".len()..]
        .trim_end_matches("/metrics")
        .parse()
        .expect("address");
    let trunk = addr_in(&gw.line("server: Runner"), "trunk");
    let name = "thinwire_gateway_trunk_packets_received_total";
    let before = scrape(metrics);
    assert!(before.contains(&format!("# HELP {name} ")), "{before}");
    assert_eq!(sample(&before, name), Some(0));
    let udp = UdpSocket::bind("127.0.0.1:0").expect("binds");
    for _ in 0..3 {
        udp.send_to(&[0xff; 40], trunk).expect("sends");
    }
    let end = Instant::now() + WAIT;
    let mut seen = None;
    while Instant::now() < end {
        seen = sample(&scrape(metrics), name);
        if seen == Some(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(seen, Some(3), "three datagrams counted");
    let (ok, _) = gw.stop(Signal::SIGTERM);
    assert!(ok);
    std::fs::remove_dir_all(&dir).ok();
}
