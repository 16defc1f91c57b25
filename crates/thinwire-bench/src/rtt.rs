//! Round trips back to back: one client sends a 24-byte message, waits for the server's
//! echo, and repeats; the server (its own thread) echoes every message on the channel it came
//! on and flushes at once. Percentiles from an HDR histogram in nanoseconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use thinwire_peers::{tagged, Event, Outgoing, ServerInfo};

use crate::host::{channel, with_host, BenchHost, HostOptions, Protocol};
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric};

/// Message size of the round-trip measurement.
const SIZE: usize = 24;
/// An unanswered message is given up after this long (unreliable ones can be lost).
pub(crate) const GIVE_UP: Duration = Duration::from_millis(200);

/// One run's result.
#[derive(Debug, Clone, Copy)]
struct Sample {
    p50_us: f64,
    p99_us: f64,
    /// Round trips per second.
    rate: f64,
    /// Messages never answered.
    lost: u64,
}

fn echo<H: BenchHost>(
    opts: HostOptions,
    stop: &AtomicBool,
    info: mpsc::Sender<ServerInfo>,
) -> Result<(), String> {
    let mut host = H::server(8, opts)?;
    let _ = info.send(host.info());
    let mut evs = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        host.service(Duration::from_millis(5), &mut evs)?;
        let mut any = false;
        for e in evs.drain(..) {
            if let Event::Message {
                conn,
                channel,
                len,
                tag,
            } = e
            {
                host.send(conn, channel, Outgoing::new(&tagged(len, tag)))?;
                any = true;
            }
        }
        if any {
            host.flush();
        }
    }
    Ok(())
}

fn client<H: BenchHost>(reliable: bool, ctx: &Ctx, to: &ServerInfo) -> Result<Sample, String> {
    let mut host = H::client(1, ctx.host)?;
    let conn = host.connect(to)?;
    let mut evs = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !evs.contains(&Event::Connected(conn)) {
        if Instant::now() > deadline {
            return Err("no connection within 10 s".into());
        }
        host.service(Duration::from_millis(5), &mut evs)?;
    }
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let measure_from = start + ctx.warmup;
    let end = measure_from + ctx.seconds;
    let (mut seq, mut lost, mut counted) = (0u64, 0u64, 0u64);
    while Instant::now() < end {
        seq += 1;
        let t0 = Instant::now();
        if !host.send(conn, channel(reliable), Outgoing::new(&tagged(SIZE, seq)))? {
            return Err("the send window of an idle connection is full".into());
        }
        host.flush();
        let give_up = t0 + GIVE_UP;
        let answered = loop {
            evs.clear();
            let now = Instant::now();
            if now >= give_up {
                break false;
            }
            host.service(give_up - now, &mut evs)?;
            if evs
                .iter()
                .any(|e| matches!(e, Event::Message { tag, .. } if *tag == seq))
            {
                break true;
            }
        };
        let rtt = t0.elapsed();
        if t0 >= measure_from {
            if answered {
                counted += 1;
                let _ = hist.record((rtt.as_nanos() as u64).max(1));
            } else {
                lost += 1;
            }
        }
    }
    if counted == 0 {
        return Err(format!("no round trip completed ({lost} lost)"));
    }
    let us = |q| hist.value_at_quantile(q) as f64 / 1000.0;
    Ok(Sample {
        p50_us: us(0.5),
        p99_us: us(0.99),
        rate: counted as f64 / ctx.seconds.as_secs_f64(),
        lost,
    })
}

fn run<H: BenchHost>(reliable: bool, ctx: &Ctx) -> Result<Sample, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let hopts = ctx.host;
    let srv = {
        let stop = stop.clone();
        thread::spawn(move || echo::<H>(hopts, &stop, tx))
    };
    let result = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(info) => client::<H>(reliable, ctx, &info),
        Err(_) => Err("the echo server did not start".into()),
    };
    stop.store(true, Ordering::Relaxed);
    srv.join().map_err(|_| "echo server panicked")??;
    result
}

const METRICS: [Metric<Sample>; 3] = [
    Metric {
        key: "p50",
        label: "p50",
        unit: "µs",
        read: |s| s.p50_us,
    },
    Metric {
        key: "p99",
        label: "p99",
        unit: "µs",
        read: |s| s.p99_us,
    },
    Metric {
        key: "lost",
        label: "lost",
        unit: "messages",
        read: |s| s.lost as f64,
    },
];

/// Reliable and unreliable round trips for every transport.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let mut rows = Vec::new();
    for reliable in [true, false] {
        let class = if reliable { "reliable" } else { "unreliable" };
        let out = ctx.interleave(
            &format!("round trip {class} {SIZE} B"),
            |p| p.not_applicable(reliable, 1),
            |p: Protocol| with_host!(p, H => run::<H>(reliable, ctx)),
            |s: &Sample| {
                format!(
                    "p50 {:.1} µs, p99 {:.1} µs, {:.0} round trips/s, {} lost",
                    s.p50_us, s.p99_us, s.rate, s.lost
                )
            },
        );
        for m in &METRICS {
            rows.push(Row::new(
                format!("round_trip/{class}/{}", m.key),
                format!("{}, {class} {SIZE} B", m.label),
                m.unit,
                None,
                cells(&out, m.read),
            ));
        }
    }
    Section {
        id: "round_trip".into(),
        title: "Round trip, back to back".into(),
        method: format!(
            "One client sends a {SIZE}-byte message and flushes, waits for the echo, and repeats \
             for {:.1} s after a {:.1} s warm-up; the server, in its own thread, echoes each \
             message on its channel and flushes. Percentiles from an HDR histogram (ns, 3 \
             significant digits). A message unanswered after {} ms counts as lost.",
            ctx.seconds.as_secs_f64(),
            ctx.warmup.as_secs_f64(),
            GIVE_UP.as_millis()
        ),
        rows,
    }
}
