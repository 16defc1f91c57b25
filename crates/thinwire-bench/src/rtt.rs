//! Round trips back to back: one client sends a 24-byte message, waits for the server's
//! echo, and repeats; the server (its own thread) echoes every message on the channel it came
//! on and flushes at once. Percentiles from an HDR histogram in nanoseconds.
//!
//! Every stack's pair is connected for the whole repetition, and the measuring thread drives
//! their clients in turns of [`SLICE`], so the stacks sample the same stretch of the
//! machine's speed. Each round starts with the next stack, so with two stacks each runs two
//! slices in a row where one round meets the next; the warm-up is whole rounds. Run one
//! after the other for seconds each, as the other sections are, the stacks' p50s moved with
//! the machine: on a virtual machine the kernel's own round trip drifts by a third within a
//! minute. While one stack measures, the others' server threads wait in their hosts'
//! `service` (thinwire's and ENet's wake every 5 ms when idle, KCP's every millisecond). GNS
//! has no blocking receive, so its idle hosts poll (in each 5 ms `service` call, back to back
//! for 500 µs, then every 50 µs); with GNS in the turns, thinwire's round trips and ENet's
//! unreliable ones were about half as long as in a run minutes later with GNS on its own
//! (our reading: the polling kept the cores from sleeping). So GNS runs on its own after the
//! turns, and so does thinwire in its low-latency mode, whose hosts spin before they block.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use thinwire_peers::{tagged, Event, Outgoing, ServerInfo};

use crate::host::{channel, with_host, BenchHost, HostOptions, Protocol};
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric, Outcome};

/// Message size of the round-trip measurement.
const SIZE: usize = 24;
/// An unanswered message is given up after this long (unreliable ones can be lost).
pub(crate) const GIVE_UP: Duration = Duration::from_millis(200);

/// An empty histogram of round trips in nanoseconds (1 ns to 60 s, 3 significant digits),
/// for the stacks' round trips and the kernel's floor under them.
pub(crate) fn histogram() -> Result<Histogram<u64>, String> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| e.to_string())
}

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

/// How long one stack's client runs before the next stack's takes over: the stacks' round
/// trips are interleaved this finely, so that a drift of the machine's speed (which on a
/// virtual machine moves the kernel's own round trip by a third within a minute) falls on
/// every stack alike.
const SLICE: Duration = Duration::from_millis(100);

/// One stack's echo pair: its server thread and a connected client host, which the
/// measuring thread drives one [`SLICE`] at a time.
struct Pair<H: BenchHost> {
    host: H,
    conn: H::Conn,
    reliable: bool,
    evs: Vec<Event<H::Conn>>,
    seq: u64,
    stop: Arc<AtomicBool>,
    server: Option<thread::JoinHandle<Result<(), String>>>,
}

/// What one stack's slices of one repetition measured.
struct Tally {
    hist: Histogram<u64>,
    lost: u64,
    /// Time spent in measured slices.
    measured: Duration,
}

impl Tally {
    fn new() -> Result<Self, String> {
        Ok(Self {
            hist: histogram()?,
            lost: 0,
            measured: Duration::ZERO,
        })
    }

    fn sample(&self) -> Result<Sample, String> {
        let counted = self.hist.len();
        if counted == 0 {
            return Err(format!("no round trip completed ({} lost)", self.lost));
        }
        let us = |q| self.hist.value_at_quantile(q) as f64 / 1000.0;
        Ok(Sample {
            p50_us: us(0.5),
            p99_us: us(0.99),
            rate: counted as f64 / self.measured.as_secs_f64(),
            lost: self.lost,
        })
    }
}

/// A stack's pair behind its host type, so that the section can take turns among stacks.
trait Trips {
    /// Round trips until `until`; counted in `tally` when it is given (else a warm-up).
    fn slice(&mut self, until: Instant, tally: Option<&mut Tally>) -> Result<(), String>;
    /// Stops the server thread; its error, if it failed.
    fn close(&mut self) -> Result<(), String>;
}

impl<H: BenchHost> Pair<H> {
    /// Starts the echo server and connects a client to it.
    fn open(reliable: bool, opts: HostOptions) -> Result<Self, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let server = {
            let stop = stop.clone();
            thread::spawn(move || echo::<H>(opts, &stop, tx))
        };
        let connected = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(info) => connect::<H>(opts, &info),
            Err(_) => Err("the echo server did not start".into()),
        };
        match connected {
            Ok((host, conn)) => Ok(Self {
                host,
                conn,
                reliable,
                evs: Vec::new(),
                seq: 0,
                stop,
                server: Some(server),
            }),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                Err(open_error(e, server.join()))
            }
        }
    }

    /// One round trip: its time, or `None` when no echo came within [`GIVE_UP`].
    fn round_trip(&mut self) -> Result<Option<Duration>, String> {
        self.seq += 1;
        let seq = self.seq;
        let t0 = Instant::now();
        let msg = tagged(SIZE, seq);
        if !self
            .host
            .send(self.conn, channel(self.reliable), Outgoing::new(&msg))?
        {
            return Err("the send window of an idle connection is full".into());
        }
        self.host.flush();
        let give_up = t0 + GIVE_UP;
        loop {
            self.evs.clear();
            let now = Instant::now();
            if now >= give_up {
                return Ok(None);
            }
            self.host.service(give_up - now, &mut self.evs)?;
            if self
                .evs
                .iter()
                .any(|e| matches!(e, Event::Message { tag, .. } if *tag == seq))
            {
                return Ok(Some(t0.elapsed()));
            }
        }
    }
}

/// Why a pair did not open, from the client's error and how the server thread ended: the
/// server's own error says more than the client's ("the echo server did not start").
fn open_error(client: String, server: thread::Result<Result<(), String>>) -> String {
    match server {
        Ok(Err(server_error)) => server_error,
        Err(_) => "echo server panicked".into(),
        Ok(Ok(())) => client,
    }
}

/// A client host of stack `H` connected to the server at `to`.
fn connect<H: BenchHost>(opts: HostOptions, to: &ServerInfo) -> Result<(H, H::Conn), String> {
    let mut host = H::client(1, opts)?;
    let conn = host.connect(to)?;
    let mut evs = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !evs.contains(&Event::Connected(conn)) {
        if Instant::now() > deadline {
            return Err("no connection within 10 s".into());
        }
        host.service(Duration::from_millis(5), &mut evs)?;
    }
    Ok((host, conn))
}

impl<H: BenchHost> Trips for Pair<H> {
    fn slice(&mut self, until: Instant, mut tally: Option<&mut Tally>) -> Result<(), String> {
        let start = Instant::now();
        while Instant::now() < until {
            let answered = self.round_trip()?;
            if let Some(t) = tally.as_deref_mut() {
                match answered {
                    Some(rtt) => {
                        let _ = t.hist.record((rtt.as_nanos() as u64).max(1));
                    }
                    None => t.lost += 1,
                }
            }
        }
        if let Some(t) = tally {
            t.measured += start.elapsed();
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.server.take().map(thread::JoinHandle::join) {
            Some(Err(_)) => Err("echo server panicked".into()),
            Some(Ok(r)) => r,
            None => Ok(()),
        }
    }
}

impl<H: BenchHost> Drop for Pair<H> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// One stack taking part in a repetition.
struct Turn {
    protocol: Protocol,
    pair: Box<dyn Trips>,
    tally: Tally,
}

/// One repetition of every stack in `stacks` (`reliable` or not): the stacks whose idle
/// hosts block take turns ([`take_turns`]: each connects, warms up for `ctx.warmup` and then
/// runs [`SLICE`]s in turn with the others until each has measured `ctx.seconds`); a stack
/// whose idle host polls ([`Protocol::polls_when_idle`]) then runs the same on its own, so
/// that its polling does not keep the cores awake under the others. The result of each, or
/// its error (a stack that fails leaves the turns; the others go on).
fn repetition(
    reliable: bool,
    ctx: &Ctx,
    stacks: &[Protocol],
) -> Vec<(Protocol, Result<Sample, String>)> {
    let mut done = Vec::new();
    for group in groups(stacks, &ctx.host) {
        let mut turns = Vec::new();
        for p in group {
            let pair = with_host!(p, H => Pair::<H>::open(reliable, ctx.host)
                .map(|pair| Box::new(pair) as Box<dyn Trips>));
            match pair.and_then(|pair| Ok((pair, Tally::new()?))) {
                Ok((pair, tally)) => turns.push(Turn {
                    protocol: p,
                    pair,
                    tally,
                }),
                Err(e) => done.push((p, Err(e))),
            }
        }
        done.extend(take_turns(turns, ctx.warmup, ctx.seconds));
    }
    done
}

/// The groups of `stacks` that run together: those whose idle hosts block, in one group of
/// turns (if any), then each whose idle host polls (with `opts`) on its own.
fn groups(stacks: &[Protocol], opts: &HostOptions) -> Vec<Vec<Protocol>> {
    let (polling, blocking): (Vec<Protocol>, Vec<Protocol>) =
        stacks.iter().partition(|p| p.polls_when_idle(opts));
    let first = (!blocking.is_empty()).then_some(blocking);
    first
        .into_iter()
        .chain(polling.into_iter().map(|p| vec![p]))
        .collect()
}

/// Runs `turns` in [`SLICE`]s, each round starting with the next stack: first `warmup`'s
/// worth of rounds unmeasured, then until each stack has measured `seconds`. A stack leaves
/// the turns when it is done or failed; its result, in the order they left.
fn take_turns(
    mut turns: Vec<Turn>,
    warmup: Duration,
    seconds: Duration,
) -> Vec<(Protocol, Result<Sample, String>)> {
    let mut done = Vec::new();
    let mut round = 0usize;
    while !turns.is_empty() {
        // the warm-up in slices too, so that every stack's first measured slice follows others'
        let warm = SLICE.saturating_mul(u32::try_from(round).unwrap_or(u32::MAX)) < warmup;
        let n = turns.len();
        let mut failed = vec![None; n];
        for i in 0..n {
            // each round starts with another stack
            let k = (round + i) % n;
            let turn = &mut turns[k];
            let tally = (!warm).then_some(&mut turn.tally);
            failed[k] = turn.pair.slice(Instant::now() + SLICE, tally).err();
        }
        for (k, error) in failed.into_iter().enumerate().rev() {
            if error.is_none() && turns[k].tally.measured < seconds {
                continue;
            }
            let mut turn = turns.remove(k);
            let closed = turn.pair.close();
            let result = match error {
                Some(e) => Err(e),
                None => closed.and_then(|()| turn.tally.sample()),
            };
            done.push((turn.protocol, result));
        }
        round += 1;
    }
    done
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

/// Every repetition of the `reliable` (or unreliable) round trips of every transport that
/// applies, reporting each stack's result to [`Ctx::progress`] as it comes; a stack that
/// failed is left out of the later repetitions, as [`Ctx::interleave`] does.
fn measure(reliable: bool, ctx: &Ctx) -> BTreeMap<Protocol, Outcome<Sample>> {
    let class = if reliable { "reliable" } else { "unreliable" };
    let what = format!("round trip {class} {SIZE} B");
    let mut out = ctx.outcomes(|p| p.not_applicable(reliable, 1));
    for rep in 1..=ctx.reps {
        let stacks = ctx.running(&out);
        let mut results = repetition(reliable, ctx, &stacks);
        // reported in the run order, not in the order the stacks finished
        results.sort_by_key(|(p, _)| stacks.iter().position(|q| q == p));
        for (p, result) in results {
            ctx.record(&mut out, (&what, rep, p), result, |s: &Sample| {
                format!(
                    "p50 {:.1} µs, p99 {:.1} µs, {:.0} round trips/s, {} lost",
                    s.p50_us, s.p99_us, s.rate, s.lost
                )
            });
        }
    }
    out
}

/// Reliable and unreliable round trips for every transport.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let mut rows = Vec::new();
    for reliable in [true, false] {
        let class = if reliable { "reliable" } else { "unreliable" };
        let out = measure(reliable, ctx);
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
            "One client sends a {SIZE}-byte message and flushes, waits for the echo, and repeats; \
             the server, in its own thread, echoes each message on its channel and flushes. \
             Every stack's pair is connected at once, and their clients take turns in slices \
             of {} ms (each round starting with the next stack), {:.1} s of warm-up in whole \
             rounds and then until each has run {:.1} s: a drift of the machine's speed falls \
             on every stack alike. A stack whose idle host polls rather than blocks (GNS, and \
             thinwire in its low-latency mode) keeps a core from sleeping, which changed the \
             others' round trips when GNS took part: it runs the same on its own after the \
             turns. Percentiles from an HDR histogram (ns, 3 significant digits) of each \
             stack's measured slices. A message unanswered after {} ms counts as lost.",
            SLICE.as_millis(),
            ctx.warmup.as_secs_f64(),
            ctx.seconds.as_secs_f64(),
            GIVE_UP.as_millis()
        ),
        rows,
    }
}

#[cfg(test)]
mod tests;
