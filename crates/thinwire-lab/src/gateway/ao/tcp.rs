//! The paper's own transport beside thinwire's: the same streams over the lab's TCP model
//! (`tcp-model-linux`: New Reno as Linux 2.6 runs it, with SACK, and with Linux's default
//! timestamp option: 52 B of IPv4 + TCP header), used as a library, across the same
//! simulated server's link.
//!
//! ```text
//! TCP direct: game server ══ one TCP connection per stream ══ players
//! TCP trunk:  game server ══ one TCP connection for every stream ══ proxy ─ players (0 ms)
//! ```
//! The trunk is Table 1's "single connection carrying the multiplexed streams for all
//! clients to an imaginary proxy": every message goes into the one byte stream with a 4-byte
//! prefix (length and stream id), and the proxy hands each message to its player as soon as
//! the connection delivers it in order (a loss holds every stream back behind it). The
//! players only acknowledge, so every segment toward the server is a pure ACK and every
//! segment toward the players carries data: the two directions of [`WanCount`] are the data
//! and the ACK counts.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use thinwire_netmodel::{Corruptible, Link, SendOutcome};

use super::ledger::{Ledger, Workload};
use super::results::{AoModeResult, DirCount, RtxDelay, WanCount};
use super::AoOptions;
use crate::protocol::{OutMessage, SimEndpoint, TcpConfig, TcpConn, TcpSegment, TcpVariant};

/// Which way the TCP streams cross the server's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TcpMode {
    /// One TCP connection per stream (Table 1's "simplex").
    Direct,
    /// One TCP connection for all streams, split by a proxy at the players (Table 1's
    /// "multiplex").
    Trunk,
}

/// IPv4 header bytes inside the TCP model's 40-byte IP + TCP header.
const IPV4: u64 = 20;
/// The trunk's per-message prefix: 2 bytes of length and 2 of stream id.
const TRUNK_PREFIX: u32 = 4;
/// Seed tag of the links (index: the mode).
const LINK_TAG: u64 = 0x414f_5443;
/// Longest the run goes on after the workload's end for the last deliveries.
const DRAIN: Duration = Duration::from_secs(120);

/// A segment on the link, with the connection it belongs to.
#[derive(Debug, Clone)]
struct Wire {
    conn: usize,
    seg: TcpSegment,
}

impl Corruptible for Wire {
    fn bit_len(&self) -> usize {
        self.seg.bit_len()
    }
    fn flip_bit(&mut self, bit: usize) {
        self.seg.flip_bit(bit);
    }
}

/// The two directions of the server's link.
const DOWN: usize = 0;
const UP: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    App(usize),
    Link(usize),
    /// A connection end's timer: side (0 server, 1 player) and connection.
    Timer(usize, usize),
}

/// The connections of one run, both ends, and the network between them.
struct TcpNet {
    /// Index 0: the server's ends; 1: the players' (or the proxy's) ends.
    ends: [Vec<TcpConn>; 2],
    armed: [Vec<Option<Instant>>; 2],
    links: [Link<Wire>; 2],
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    wan: WanCount,
    measure_from: Instant,
}

impl TcpNet {
    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Sends what end `(side, c)` has to send and arms its timer.
    fn service(&mut self, now: Instant, side: usize, c: usize) {
        let dir = if side == 0 { DOWN } else { UP };
        while let Some(t) = self.ends[side][c].poll_transmit(now) {
            let wire = t.wire_bytes;
            let outcome = self.links[dir].send(
                now,
                Wire {
                    conn: c,
                    seg: t.packet,
                },
                wire,
            );
            if now >= self.measure_from {
                let d: &mut DirCount = if dir == DOWN {
                    &mut self.wan.down
                } else {
                    &mut self.wan.up
                };
                d.count_ip(
                    wire as u64,
                    wire as u64 - IPV4,
                    outcome != SendOutcome::Lost,
                );
            }
            if let SendOutcome::Scheduled(at) = outcome {
                self.push(at, Ev::Link(dir));
            }
        }
        if let Some(t) = self.ends[side][c].poll_timeout() {
            let t = t.max(now);
            if self.armed[side][c] != Some(t) {
                self.armed[side][c] = Some(t);
                self.push(t, Ev::Timer(side, c));
            }
        }
    }

    /// Hands what the players' end `c` delivered to the ledger.
    fn deliver(&mut self, now: Instant, c: usize, mode: TcpMode, ledger: &mut Ledger) {
        while let Some((_, id)) = self.ends[1][c].poll_delivered() {
            let flow = match mode {
                TcpMode::Direct => c,
                TcpMode::Trunk => ledger.flow_of(id).unwrap_or(usize::MAX),
            };
            ledger.deliver_id(flow, id, now);
        }
    }
}

/// IPv4 + TCP header bytes with the timestamp option, which Linux 2.6 negotiates by default
/// (`tcp_timestamps = 1`): 20 + 20 + 12.
const HEADER_WITH_TIMESTAMPS: u32 = 52;

/// The TCP model's configuration of `mode`: Linux's New Reno with timestamps; the trunk's
/// prefix also names the stream.
fn config(mode: TcpMode) -> TcpConfig {
    let linux = TcpConfig {
        header_bytes: HEADER_WITH_TIMESTAMPS,
        ..TcpVariant::Linux.config()
    };
    match mode {
        TcpMode::Direct => linux,
        TcpMode::Trunk => TcpConfig {
            prefix_bytes: TRUNK_PREFIX,
            ..linux
        },
    }
}

/// Runs `mode` at `loss`: the same workload, link and ledger as the thinwire modes.
pub(super) fn run_tcp(opts: &AoOptions, loss: f64, mode: TcpMode) -> AoModeResult {
    let start = Instant::now();
    let end = start + opts.duration;
    let conns = match mode {
        TcpMode::Direct => opts.flows,
        TcpMode::Trunk => 1,
    };
    let seed = crate::seed::derive(opts.seed, LINK_TAG, mode as u64);
    let wan = opts.wan(loss);
    let mut net = TcpNet {
        ends: [0, 1].map(|_| (0..conns).map(|_| TcpConn::new(config(mode), 0)).collect()),
        armed: [vec![None; conns], vec![None; conns]],
        links: [0, 1].map(|i| Link::new(wan.clone(), crate::seed::derive(seed, LINK_TAG, i))),
        heap: BinaryHeap::new(),
        seq: 0,
        wan: WanCount::default(),
        measure_from: start,
    };
    let mut ledger = Ledger::new(opts.flows);
    let mut wl = Workload::new(opts.seed, opts.flows, opts.sessions(start));
    for f in 0..opts.flows {
        if let Some(at) = wl.first(f) {
            net.push(at, Ev::App(f));
        }
    }
    let mut last = start;
    while let Some(Reverse((now, _, ev))) = net.heap.pop() {
        if now > end + DRAIN {
            break;
        }
        last = now;
        match ev {
            Ev::App(f) => {
                let (size, next) = wl.next(f, now);
                ledger.send(f, size, now);
                let msg = OutMessage {
                    id: ledger.sent() - 1,
                    class: 0,
                    size: size as u32,
                    key: 0,
                    deadline: None,
                    target: 0.0,
                };
                let c = if mode == TcpMode::Direct { f } else { 0 };
                net.ends[0][c].send(now, 0, &msg);
                net.service(now, 0, c);
                if let Some(next) = next.filter(|&n| n < end) {
                    net.push(next, Ev::App(f));
                }
            }
            Ev::Link(dir) => {
                while let Some(w) = net.links[dir].poll_deliver(now) {
                    let side = if dir == DOWN { 1 } else { 0 };
                    net.ends[side][w.conn].receive(now, 0, w.seg);
                    if side == 1 {
                        net.deliver(now, w.conn, mode, &mut ledger);
                    }
                    net.service(now, side, w.conn);
                }
            }
            Ev::Timer(side, c) => {
                if net.armed[side][c] == Some(now) {
                    net.armed[side][c] = None;
                    net.ends[side][c].handle_timeout(now);
                    net.service(now, side, c);
                }
            }
        }
        if now >= end && ledger.delivered() == ledger.sent() {
            break;
        }
    }
    AoModeResult {
        late: ledger.late(opts.delay, Duration::ZERO),
        ..finish(net, &ledger, last - start)
    }
}

fn finish(mut net: TcpNet, l: &Ledger, simulated: Duration) -> AoModeResult {
    net.wan.finish();
    let mut rtx = crate::protocol::RtxCounters::default();
    for c in &net.ends[0] {
        let r = c.rtx_counters();
        rtx.data_packets += r.data_packets;
        for i in 0..crate::protocol::MAX_RTX_TRACKED {
            rtx.acked[i] += r.acked[i];
            rtx.delay_sum_ms[i] += r.delay_sum_ms[i];
            rtx.rtx_self[i] += r.rtx_self[i];
            rtx.rtx_incl[i] += r.rtx_incl[i];
        }
    }
    AoModeResult {
        wan: net.wan,
        all_ready_at_start: true,
        simulated_s: simulated.as_secs_f64(),
        rtx_delay: Some(RtxDelay::of(&rtx)),
        ..l.result()
    }
}
