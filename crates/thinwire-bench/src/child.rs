//! The client process of the memory and sweep measurements: the bench runs itself again
//! (`thinwire bench --child SPEC`), and the child opens many connections from a few sockets,
//! says `READY` on stdout, keeps them alive (memory) or plays their game traffic (sweep)
//! until its stdin closes, then prints `DONE` and its counts as JSON. Keeping the clients in
//! another process keeps their memory out of the server's measurement.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use thinwire_peers::{tagged, Event, Outgoing, PeerHost, ServerInfo};

use crate::host::{channel, with_host, BenchHost, HostOptions, Protocol};
use crate::runner::Ctx;

/// Connections being opened at once (more would only queue handshakes at the server).
const WAVE: usize = 256;
/// A child gives up connecting after this long.
const CONNECT_LIMIT: Duration = Duration::from_secs(120);
/// A child never outlives this, whatever its parent does.
const LIFETIME: Duration = Duration::from_secs(1800);

/// What a child does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Role {
    /// Hold `n` idle connections from one socket.
    Idle {
        /// Connections.
        n: usize,
    },
    /// `n` game clients, `per_socket` per socket: each sends a `size`-byte reliable message
    /// `hz` times a second and counts what the server sends.
    Sweep {
        /// Clients.
        n: usize,
        /// Clients per socket.
        per_socket: usize,
        /// Ticks per second.
        hz: f64,
        /// Bytes per message.
        size: usize,
    },
}

/// Everything a child is told.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChildSpec {
    pub(crate) proto: Protocol,
    pub(crate) server: ServerInfo,
    pub(crate) host: HostOptions,
    pub(crate) role: Role,
    /// CPUs the child keeps to (all of its threads); empty: wherever the system puts it.
    #[serde(default)]
    pub(crate) cpus: Vec<usize>,
}

/// What a child reports when it ends.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ChildReport {
    /// Messages sent.
    pub(crate) sent: u64,
    /// Messages received.
    pub(crate) received: u64,
    /// Ticks played.
    pub(crate) ticks: u64,
    /// Connections that ended while it ran.
    pub(crate) disconnected: u64,
    /// Seconds from `READY` to the end.
    pub(crate) played_s: f64,
}

/// Runs a child from its spec (the JSON after `--child`).
pub(crate) fn child_main(spec: &str) -> Result<(), String> {
    let spec: ChildSpec = serde_json::from_str(spec).map_err(|e| format!("child spec: {e}"))?;
    // before any thread starts, so that every thread inherits it
    if !spec.cpus.is_empty() && !crate::sys::pin_thread(&spec.cpus) {
        return Err(format!("could not pin the clients to CPUs {:?}", spec.cpus));
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            stop.store(true, Ordering::Relaxed);
        });
    }
    let report = with_host!(spec.proto, H => play::<H>(&spec, &stop))?;
    let json = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    println!("DONE {json}");
    Ok(())
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

type Hosts<H> = Vec<(H, Vec<<H as PeerHost>::Conn>)>;

/// Opens `n` connections, `per_socket` per host, a wave at a time.
fn open<H: BenchHost>(spec: &ChildSpec, n: usize, per_socket: usize) -> Result<Hosts<H>, String> {
    let per_socket = per_socket.max(1);
    let mut hosts: Hosts<H> = Vec::new();
    let (mut started, mut up) = (0usize, 0usize);
    let mut evs = Vec::new();
    let deadline = Instant::now() + CONNECT_LIMIT;
    while up < n {
        if Instant::now() > deadline {
            return Err(format!(
                "{up} of {n} connections opened in {CONNECT_LIMIT:?}"
            ));
        }
        while started < n && started - up < WAVE {
            if started % per_socket == 0 {
                let share = per_socket.min(n - started);
                hosts.push((H::client(share, spec.host)?, Vec::with_capacity(share)));
            }
            let (h, conns) = hosts.last_mut().ok_or("no host")?;
            conns.push(h.connect(&spec.server)?);
            started += 1;
        }
        for (h, _) in &mut hosts {
            h.service(Duration::ZERO, &mut evs)?;
        }
        up += evs
            .drain(..)
            .filter(|e| matches!(e, Event::Connected(_)))
            .count();
        thread::sleep(Duration::from_micros(500));
    }
    Ok(hosts)
}

fn play<H: BenchHost>(spec: &ChildSpec, stop: &AtomicBool) -> Result<ChildReport, String> {
    let born = Instant::now();
    let (n, per_socket) = match spec.role {
        Role::Idle { n } => (n, n),
        Role::Sweep { n, per_socket, .. } => (n, per_socket),
    };
    let mut hosts = open::<H>(spec, n, per_socket)?;
    say("READY");
    let playing = Instant::now();
    let mut report = ChildReport::default();
    let mut evs = Vec::new();
    let tick = match spec.role {
        Role::Sweep { hz, size, .. } => Some((Duration::from_secs_f64(1.0 / hz), tagged(size, 0))),
        Role::Idle { .. } => None,
    };
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) && born.elapsed() < LIFETIME {
        if let Some((period, payload)) = &tick {
            if Instant::now() >= next {
                for (h, conns) in &mut hosts {
                    for &c in conns.iter() {
                        report.sent +=
                            u64::from(h.send(c, channel(true), Outgoing::new(payload))?);
                    }
                    h.flush();
                }
                report.ticks += 1;
                next += *period;
                next = next.max(Instant::now());
            }
        }
        for (h, _) in &mut hosts {
            h.service(Duration::ZERO, &mut evs)?;
            for e in evs.drain(..) {
                match e {
                    Event::Message { .. } => report.received += 1,
                    Event::Disconnected(_) => report.disconnected += 1,
                    Event::Connected(_) => {}
                }
            }
        }
        thread::sleep(Duration::from_millis(1));
    }
    report.played_s = playing.elapsed().as_secs_f64();
    Ok(report)
}

/// A running child, seen from the bench.
pub(crate) struct Child {
    proc: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    ready: bool,
}

impl Child {
    /// Starts a child with `spec`.
    pub(crate) fn spawn(ctx: &Ctx, spec: &ChildSpec) -> Result<Self, String> {
        let (program, args) = ctx.child.split_first().ok_or("no child command")?;
        let json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
        let mut proc = Command::new(program)
            .args(args)
            .arg("--child")
            .arg(json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the client process: {e}"))?;
        let stdout = proc.stdout.take().ok_or("child stdout")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            stdin: proc.stdin.take(),
            proc,
            lines,
            ready: false,
        })
    }

    /// Whether the child has opened all its connections. Errors once it has exited
    /// without doing so.
    pub(crate) fn ready(&mut self) -> Result<bool, String> {
        while let Ok(line) = self.lines.try_recv() {
            self.ready |= line == "READY";
        }
        if !self.ready {
            if let Ok(Some(status)) = self.proc.try_wait() {
                return Err(format!("the client process ended early ({status})"));
            }
        }
        Ok(self.ready)
    }

    /// Tells the child to stop (closes its stdin) and returns its report.
    pub(crate) fn finish(mut self) -> Result<ChildReport, String> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut report = None;
        while report.is_none() && Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(json) = line.strip_prefix("DONE ") {
                        report = serde_json::from_str(json).ok();
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if report.is_none() {
            let _ = self.proc.kill();
        }
        let _ = self.proc.wait();
        report.ok_or_else(|| "the client process gave no report".into())
    }
}

impl Drop for Child {
    /// A child the bench gave up on (an error before `finish`) is ended at once.
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            let _ = self.proc.kill();
            let _ = self.proc.wait();
        }
    }
}
