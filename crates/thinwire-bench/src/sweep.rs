//! A 30 Hz game server with N clients: every tick each client sends 40 bytes and the server
//! sends every client a 40-byte update, all reliable. The server is one thread of this
//! process running a tick loop (handle arrivals until the tick is due, drain the socket, send
//! N updates, flush); the clients are real protocol clients in a child process, a few hundred
//! per socket. Measured: the server thread's CPU time per tick (everything it did in that
//! tick period, receiving included) and late ticks (ticks that ended more than a period
//! after they were due).

use std::time::{Duration, Instant};

use thinwire_peers::{tagged, Event, Outgoing};

use crate::child::{Child, ChildSpec, Role};
use crate::host::{channel, with_host, BenchHost, HostOptions, Protocol};
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric};
use crate::sys::{allowed_cpus, pin_thread, thread_cpu};

/// Ticks per second.
const HZ: f64 = 30.0;
/// Bytes per message, each way.
const SIZE: usize = 40;
/// Clients per socket in the child process.
const PER_SOCKET: usize = 250;
/// After the measurement the server sends nothing for this long, so that the updates in
/// flight reach the clients before they count.
const DRAIN: Duration = Duration::from_millis(200);
/// The clients are given this long to connect.
const CONNECT_LIMIT: Duration = Duration::from_secs(150);

/// Where the server thread and the clients run: on a machine with two CPUs or more, the
/// server thread on the last CPU the bench may use and the client process on the others (as
/// `taskset` would place them), so that the client load does not take the server's core.
#[derive(Debug, Clone, PartialEq)]
struct Placement {
    server: usize,
    clients: Vec<usize>,
}

impl Placement {
    /// The placement for CPUs `allowed` (lowest first); `None` with fewer than two.
    fn split(allowed: &[usize]) -> Option<Placement> {
        let (&last, rest) = allowed.split_last()?;
        (!rest.is_empty()).then(|| Placement {
            server: last,
            clients: rest.to_vec(),
        })
    }
}

/// Keeps the calling thread on one CPU until dropped, then gives it back the CPUs it had.
struct Pinned {
    before: Vec<usize>,
}

impl Pinned {
    /// Pins the calling thread to `cpu`; `before` is what it may use now (`allowed_cpus`).
    fn to(cpu: usize, before: Vec<usize>) -> Result<Pinned, String> {
        if pin_thread(&[cpu]) {
            Ok(Pinned { before })
        } else {
            Err(format!("could not pin the server to CPU {cpu}"))
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        pin_thread(&self.before);
    }
}

/// One run's result.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Mean server CPU per tick, ms.
    cpu_ms: f64,
    /// 99th percentile of the server CPU per tick, ms.
    cpu_p99_ms: f64,
    /// Ticks that ended more than a period after they were due.
    late: u64,
    /// Ticks measured.
    ticks: u64,
    /// Client messages the server received, % of what 30 Hz clients send.
    inbound_pct: f64,
    /// Updates the clients received, % of what the server sent.
    outbound_pct: f64,
    /// Ticks per second the clients managed.
    client_hz: f64,
}

/// Tracks connections and counts messages; returns the messages.
fn handle<C: Copy + PartialEq>(evs: &mut Vec<Event<C>>, conns: &mut Vec<C>) -> u64 {
    let mut messages = 0;
    for e in evs.drain(..) {
        match e {
            Event::Message { .. } => messages += 1,
            Event::Connected(c) => conns.push(c),
            Event::Disconnected(c) => conns.retain(|&x| x != c),
        }
    }
    messages
}

/// The settings of the sweep's hosts (server and clients): the run's, and with
/// `--thinwire-tick-acks` thinwire's ACKs on the sweep's tick.
fn host_options(ctx: &Ctx) -> HostOptions {
    HostOptions {
        tick: ctx.tick_acks.then(|| Duration::from_secs_f64(1.0 / HZ)),
        ..ctx.host
    }
}

fn run<H: BenchHost>(p: Protocol, n: usize, ctx: &Ctx) -> Result<Sample, String> {
    let allowed = allowed_cpus();
    let place = (!ctx.shared_cores)
        .then(|| Placement::split(&allowed))
        .flatten();
    let _pinned = place
        .as_ref()
        .map(|p| Pinned::to(p.server, allowed))
        .transpose()?;
    let opts = host_options(ctx);
    let mut host = H::server(n + 16, opts)?;
    let spec = ChildSpec {
        proto: p,
        server: host.info(),
        host: opts,
        role: Role::Sweep {
            n,
            per_socket: PER_SOCKET,
            hz: HZ,
            size: SIZE,
        },
        cpus: place.map(|p| p.clients).unwrap_or_default(),
    };
    let mut child = Child::spawn(ctx, &spec)?;
    let mut conns = Vec::with_capacity(n);
    let mut evs = Vec::new();
    let mut received = 0u64;
    let deadline = Instant::now() + CONNECT_LIMIT;
    while conns.len() < n || !child.ready()? {
        if Instant::now() > deadline {
            return Err(format!(
                "{} of {n} clients in {CONNECT_LIMIT:?}",
                conns.len()
            ));
        }
        host.service(Duration::from_millis(1), &mut evs)?;
        received += handle(&mut evs, &mut conns);
    }
    let playing = Instant::now();
    let period = Duration::from_secs_f64(1.0 / HZ);
    let payload = tagged(SIZE, 0);
    let measure_from = playing + ctx.warmup * 3;
    let limit = measure_from + ctx.seconds * 3;
    let (mut cpu_ticks, mut late, mut sent) = (Vec::new(), 0u64, 0u64);
    let mut received_at = None;
    let mut cpu_mark = thread_cpu();
    let mut due = Instant::now();
    loop {
        // until the tick is due: handle what arrives
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            host.service(due - now, &mut evs)?;
            received += handle(&mut evs, &mut conns);
        }
        let start = Instant::now();
        host.service(Duration::ZERO, &mut evs)?;
        received += handle(&mut evs, &mut conns);
        for &c in &conns {
            sent += u64::from(host.send(c, channel(true), Outgoing::new(&payload))?);
        }
        host.flush();
        let end = Instant::now();
        let cpu = thread_cpu();
        if start >= measure_from {
            let r0 = *received_at.get_or_insert((start, received));
            cpu_ticks.push(cpu.saturating_sub(cpu_mark).as_secs_f64() * 1e3);
            late += u64::from(end.duration_since(due) > period);
            let measured = end.duration_since(r0.0);
            if measured >= ctx.seconds || end > limit {
                let expected = n as f64 * HZ * measured.as_secs_f64();
                let inbound = (received - r0.1) as f64 / expected.max(1.0) * 100.0;
                // let the last updates arrive before the clients count them
                let drained = Instant::now() + DRAIN;
                while Instant::now() < drained {
                    host.service(Duration::from_millis(5), &mut evs)?;
                    handle(&mut evs, &mut conns);
                }
                let report = child.finish()?;
                cpu_ticks.sort_by(f64::total_cmp);
                let ticks = cpu_ticks.len();
                return Ok(Sample {
                    cpu_ms: cpu_ticks.iter().sum::<f64>() / ticks.max(1) as f64,
                    cpu_p99_ms: cpu_ticks[(ticks * 99 / 100).min(ticks - 1)],
                    late,
                    ticks: ticks as u64,
                    inbound_pct: inbound,
                    outbound_pct: report.received as f64 / sent.max(1) as f64 * 100.0,
                    client_hz: report.ticks as f64 / report.played_s.max(1e-9),
                });
            }
        }
        cpu_mark = cpu;
        // the next tick is due a period later; after an overrun, at once (no catch-up burst)
        due = (due + period).max(end);
    }
}

const METRICS: [Metric<Sample>; 6] = [
    Metric {
        key: "cpu",
        label: "server CPU per tick",
        unit: "ms",
        read: |s| s.cpu_ms,
    },
    Metric {
        key: "cpu_p99",
        label: "server CPU per tick, p99",
        unit: "ms",
        read: |s| s.cpu_p99_ms,
    },
    Metric {
        key: "late",
        label: "late ticks",
        unit: "ticks",
        read: |s| s.late as f64,
    },
    Metric {
        key: "inbound",
        label: "client messages received",
        unit: "%",
        read: |s| s.inbound_pct,
    },
    Metric {
        key: "outbound",
        label: "updates received by clients",
        unit: "%",
        read: |s| s.outbound_pct,
    },
    Metric {
        key: "client_hz",
        label: "client tick rate achieved",
        unit: "Hz",
        read: |s| s.client_hz,
    },
];

/// The sweep over client counts, every transport at each.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let mut rows = Vec::new();
    for &n in &ctx.sweep {
        let out = ctx.interleave(
            &format!("sweep {n} clients at 30 Hz"),
            |p| p.not_applicable(true, n),
            |p: Protocol| with_host!(p, H => run::<H>(p, n, ctx)),
            |s: &Sample| {
                format!(
                    "CPU {:.2} ms per tick (p99 {:.2}), {} of {} late, in {:.1}%, out {:.1}%, clients at {:.1} Hz",
                    s.cpu_ms, s.cpu_p99_ms, s.late, s.ticks, s.inbound_pct, s.outbound_pct, s.client_hz
                )
            },
        );
        for m in &METRICS {
            rows.push(Row::new(
                format!("sweep/{n}/{}", m.key),
                format!("{}, {n} clients", m.label),
                m.unit,
                Some(n as f64),
                cells(&out, m.read),
            ));
        }
    }
    let placement = match (ctx.shared_cores, Placement::split(&allowed_cpus())) {
        (false, Some(p)) => format!(
            "The server thread was pinned to CPU {} and the client process to CPUs {:?} \
             (sched_setaffinity, as taskset does), so the clients did not take the server's \
             core.",
            p.server, p.clients
        ),
        (true, _) => "The server thread and the client process shared every core \
                      (--shared-cores)."
            .to_owned(),
        (false, None) => {
            "With one CPU, the server thread and the client process shared it.".to_owned()
        }
    };
    let acks = if ctx.tick_acks {
        " thinwire's server and clients acknowledge on the tick (--thinwire-tick-acks, \
         TransportConfig::with_tick_acks): each ACK rides the next update or input, so a \
         client and its tick take two datagrams instead of four."
    } else {
        ""
    };
    Section {
        id: "sweep".into(),
        title: "A 30 Hz server".into(),
        method: format!(
            "N clients each send {SIZE} bytes per tick (30 Hz) to the server, which sends each \
             client a {SIZE}-byte update per tick; both directions on the reliable channel. The \
             server is one thread: until a tick is due it handles arrivals (blocking in its \
             host's service call), then it drains the socket, queues N updates and flushes. \
             CPU per tick is that thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over each tick \
             period, receiving included; a tick is late when it ended more than 33.3 ms after \
             it was due. The clients are real protocol clients in a child process, {PER_SOCKET} \
             per socket (one host per socket, all hosts polled from one thread every \
             millisecond). {placement} Measured for {:.1} s after a {:.1} s warm-up. The last \
             rows say how much of the traffic arrived and whether the clients kept 30 Hz.{acks}",
            ctx.seconds.as_secs_f64(),
            (ctx.warmup * 3).as_secs_f64()
        ),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::{allowed_cpus, Pinned, Placement};

    /// Pinning takes hold on the calling thread and the guard gives every CPU back.
    #[test]
    fn the_guard_pins_the_thread_and_restores_it() {
        std::thread::spawn(|| {
            let all = allowed_cpus();
            assert!(!all.is_empty(), "sched_getaffinity failed");
            {
                let _pinned = Pinned::to(all[0], all.clone()).expect("pin");
                assert_eq!(allowed_cpus(), vec![all[0]]);
            }
            assert_eq!(allowed_cpus(), all);
        })
        .join()
        .expect("the pinned thread");
    }

    #[test]
    fn the_server_gets_the_last_cpu_and_the_clients_the_rest() {
        assert_eq!(Placement::split(&[]), None);
        assert_eq!(Placement::split(&[3]), None);
        assert_eq!(
            Placement::split(&[0, 1]),
            Some(Placement {
                server: 1,
                clients: vec![0]
            })
        );
        assert_eq!(
            Placement::split(&[2, 5, 7]),
            Some(Placement {
                server: 7,
                clients: vec![2, 5]
            })
        );
    }
}
