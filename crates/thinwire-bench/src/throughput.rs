//! Messages per second: clients queue bursts of messages, one flush per burst, as fast as
//! their transport accepts them (backing off while its send window is full); the server
//! counts what it delivers over a fixed time after a warm-up. Server and clients each run in
//! one thread (all clients in the same thread, each with its own socket), so each side is
//! one single-threaded host, as ENet's are.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;

use thinwire_peers::{Event, Outgoing, ServerInfo};

use crate::host::{channel, with_host, BenchHost, HostOptions, Protocol};
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric};
use crate::sys::thread_cpu;

/// One throughput configuration.
#[derive(Debug, Clone, Copy)]
struct Case {
    size: usize,
    reliable: bool,
    clients: usize,
}

impl Case {
    fn label(&self) -> String {
        format!(
            "{} {} B, {} client{}",
            class(self.reliable),
            self.size,
            self.clients,
            if self.clients == 1 { "" } else { "s" }
        )
    }
}

fn class(reliable: bool) -> &'static str {
    if reliable {
        "reliable"
    } else {
        "unreliable"
    }
}

/// One run's result.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Messages the server delivered per second.
    rate: f64,
    /// Server thread CPU per delivered message, ns.
    server_ns: f64,
    /// Client thread CPU per message sent, ns.
    client_ns: f64,
}

/// Phases the main thread steps the server and client threads through.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// What a thread notes when it sees a phase change: when, its CPU time, its count.
#[derive(Debug, Clone, Copy)]
struct Snap {
    at: Instant,
    cpu: Duration,
    count: u64,
}

impl Snap {
    fn now(count: u64) -> Self {
        Self {
            at: Instant::now(),
            cpu: thread_cpu(),
            count,
        }
    }
}

/// Rate and CPU per item between the snapshots at the start and end of the measurement.
fn between(s: &[Snap]) -> Result<(f64, f64), String> {
    let (a, b) = match s {
        [a, b, ..] => (a, b),
        _ => return Err("the measurement did not complete".into()),
    };
    let n = b.count.saturating_sub(a.count);
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let cpu = b.cpu.saturating_sub(a.cpu).as_nanos() as f64;
    Ok((n as f64 / secs, cpu / (n.max(1) as f64)))
}

fn server<H: BenchHost>(
    capacity: usize,
    opts: HostOptions,
    phase: &AtomicU8,
    info: mpsc::Sender<ServerInfo>,
) -> Result<Vec<Snap>, String> {
    let mut host = H::server(capacity, opts)?;
    let _ = info.send(host.info());
    let (mut seen, mut count, mut snaps, mut evs) = (WARMUP, 0u64, Vec::new(), Vec::new());
    loop {
        let p = phase.load(Ordering::Relaxed);
        if p != seen {
            seen = p;
            snaps.push(Snap::now(count));
            if p == STOP {
                return Ok(snaps);
            }
        }
        host.service(Duration::from_millis(1), &mut evs)?;
        count += evs
            .drain(..)
            .filter(|e| matches!(e, Event::Message { .. }))
            .count() as u64;
    }
}

fn clients<H: BenchHost>(
    case: Case,
    burst: usize,
    opts: HostOptions,
    to: &ServerInfo,
    phase: &AtomicU8,
    ready: &AtomicBool,
) -> Result<Vec<Snap>, String> {
    let mut hosts = Vec::with_capacity(case.clients);
    for _ in 0..case.clients {
        let mut h = H::client(1, opts)?;
        let c = h.connect(to)?;
        hosts.push((h, c, false));
    }
    let mut evs = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while hosts.iter().any(|(_, _, up)| !up) {
        if Instant::now() > deadline {
            return Err("clients did not connect within 20 s".into());
        }
        for (h, c, up) in &mut hosts {
            h.service(Duration::from_micros(200), &mut evs)?;
            *up |= evs.drain(..).any(|e| e == Event::Connected(*c));
        }
    }
    ready.store(true, Ordering::Release);
    let payload = Bytes::from(vec![7u8; case.size]);
    let (mut seen, mut sent, mut snaps) = (WARMUP, 0u64, Vec::new());
    loop {
        let p = phase.load(Ordering::Relaxed);
        if p != seen {
            seen = p;
            snaps.push(Snap::now(sent));
            if p == STOP {
                return Ok(snaps);
            }
        }
        let mut any = false;
        for (h, c, _) in &mut hosts {
            if !h.backlogged(*c) {
                for _ in 0..burst {
                    if !h.send(*c, channel(case.reliable), Outgoing::new(&payload))? {
                        break;
                    }
                    sent += 1;
                    any = true;
                }
            }
            h.flush();
            h.service(Duration::ZERO, &mut evs)?;
            evs.clear();
        }
        if !any {
            thread::yield_now();
        }
    }
}

fn run<H: BenchHost>(case: Case, ctx: &Ctx) -> Result<Sample, String> {
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let ready = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let hopts = ctx.host;
    let srv = {
        let phase = phase.clone();
        thread::spawn(move || server::<H>(case.clients + 8, hopts, &phase, tx))
    };
    let stop = |phase: &AtomicU8| phase.store(STOP, Ordering::Relaxed);
    let Ok(info) = rx.recv_timeout(Duration::from_secs(10)) else {
        stop(&phase);
        return Err(srv.join().map_or("server panicked".into(), |r| {
            r.err().unwrap_or_else(|| "server did not start".into())
        }));
    };
    let cli = {
        let (phase, ready) = (phase.clone(), ready.clone());
        let burst = ctx.burst;
        thread::spawn(move || clients::<H>(case, burst, hopts, &info, &phase, &ready))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.load(Ordering::Acquire) && !cli.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    if ready.load(Ordering::Acquire) {
        thread::sleep(ctx.warmup);
        phase.store(MEASURE, Ordering::Relaxed);
        thread::sleep(ctx.seconds);
    }
    stop(&phase);
    let c = cli.join().map_err(|_| "client thread panicked")??;
    let s = srv.join().map_err(|_| "server thread panicked")??;
    let (rate, server_ns) = between(&s)?;
    let (_, client_ns) = between(&c)?;
    Ok(Sample {
        rate,
        server_ns,
        client_ns,
    })
}

/// The rate, then each thread's CPU per message (the label is the case's, after this).
const METRICS: [Metric<Sample>; 3] = [
    Metric {
        key: "rate",
        label: "",
        unit: "msg/s",
        read: |s| s.rate,
    },
    Metric {
        key: "server_cpu",
        label: "server CPU per message, ",
        unit: "ns",
        read: |s| s.server_ns,
    },
    Metric {
        key: "client_cpu",
        label: "client CPU per message, ",
        unit: "ns",
        read: |s| s.client_ns,
    },
];

/// Every size, class and client count, each run for every transport.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let mut rows = Vec::new();
    for clients in [1usize, 100] {
        for reliable in [true, false] {
            for size in [24usize, 200] {
                let case = Case {
                    size,
                    reliable,
                    clients,
                };
                let label = case.label();
                let out = ctx.interleave(
                    &format!("throughput {label}"),
                    |p| p.not_applicable(reliable, clients),
                    |p: Protocol| with_host!(p, H => run::<H>(case, ctx)),
                    |s: &Sample| format!("{:.0} msg/s", s.rate),
                );
                let id = format!("throughput/{}/{size}B/{clients}", class(reliable));
                for m in &METRICS {
                    rows.push(Row::new(
                        format!("{id}/{}", m.key),
                        format!("{}{label}", m.label),
                        m.unit,
                        None,
                        cells(&out, m.read),
                    ));
                }
            }
        }
    }
    Section {
        id: "throughput".into(),
        title: "Messages per second".into(),
        method: format!(
            "Clients queue bursts of {} messages, one flush per burst, as fast as the transport \
             accepts them (a client skips its turn while its send window is full: thinwire \
             refuses with BufferFull, ENet holds packets its reliable window kept off the wire, \
             KCP holds a window's worth, GNS holds more than 64 KiB not yet sent or refuses \
             with LimitExceeded); every send is a copy of the message in a buffer of the \
             stack's own (ENet's packet, KCP's segment, GNS's message, and a new Bytes for \
             thinwire's Host, as a game that builds each message makes one); the server \
             counts the messages it delivers for {:.1} s \
             after a {:.1} s warm-up. The server is one thread, all clients share another, each \
             client with its own socket. CPU per message is each thread's CPU time \
             (CLOCK_THREAD_CPUTIME_ID) over the messages it delivered (server) or queued \
             (client); GNS does its sending and receiving work on its own service thread, which \
             this does not count. thinwire's reliable channel is ReliableOrdered, like ENet's \
             reliable packets, KCP and GNS's reliable messages; unreliable is thinwire's \
             Unreliable, ENet's unsequenced packets and GNS's unreliable messages (GNS: Nagle \
             on, each burst flushed with FlushMessagesOnConnection; send-rate limits raised to \
             256 MiB/s).",
            ctx.burst,
            ctx.seconds.as_secs_f64(),
            ctx.warmup.as_secs_f64()
        ),
        rows,
    }
}
