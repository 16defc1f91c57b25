//! The event loop: [`Sim`] holds the links, endpoints, workload sources and
//! the event queue of one simulation; [`Sim::new`] builds and primes it,
//! [`Sim::step`] handles one event, [`Sim::finish`] sums up. The pieces it is
//! built from are made in `engine/build.rs`; application messages (sending,
//! delivery, the server's relays and reactions) are handled in
//! `engine/messages.rs`.

mod build;
mod messages;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use thinwire_netmodel::{Corruptible, Link, SendOutcome};

use super::cross::CrossGen;
use super::output::{LinkSummary, MessageOutcome, NetworkCounters, RunOutput};
use super::setup::SimSetup;
use crate::metrics::WireCounters;
use crate::protocol::{Protocol, SimEndpoint, ThinwireCounters};
use crate::workload::{
    instantiate_all, AppEvent, Direction, InstanceParams, WorkloadInstance, WorkloadSpec,
};
use build::{cross, endpoints, links};

#[derive(Debug, Clone)]
enum Frame<P> {
    Proto {
        client: u32,
        up: bool,
        size: u32,
        pkt: P,
    },
    Cross,
}

impl<P: Corruptible> Corruptible for Frame<P> {
    fn bit_len(&self) -> usize {
        match self {
            Frame::Proto { pkt, .. } => pkt.bit_len(),
            Frame::Cross => 0,
        }
    }
    fn flip_bit(&mut self, bit: usize) {
        if let Frame::Proto { pkt, .. } = self {
            pkt.flip_bit(bit);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    App(u32),
    Link(u32),
    Timer(u32),
    Cross(u8),
}

struct Msg {
    out: MessageOutcome,
    key: u64,
}

/// One simulation of one protocol.
pub(super) struct Sim<'a, P: Protocol> {
    proto: &'a P,
    base: Instant,
    end: Instant,
    clients: u32,
    per_client_server: bool,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    links: Vec<Link<Frame<P::Packet>>>,
    link_armed: Vec<Option<Instant>>,
    has_bottleneck: bool,
    endpoints: Vec<P::Endpoint>,
    timer_armed: Vec<Option<Instant>>,
    inst: WorkloadInstance,
    pending_app: Vec<Option<AppEvent>>,
    cross: [Option<CrossGen>; 2],
    cross_size: usize,
    msgs: Vec<Msg>,
    latest: HashMap<(u32, Direction, u16, u64), VecDeque<u64>>,
    wire: WireCounters,
    network: NetworkCounters,
    events: u64,
    dirty: Vec<u32>,
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl<'a, P: Protocol> Sim<'a, P> {
    /// A simulation of `proto` through `setup`'s network carrying `workload`,
    /// primed: every endpoint serviced once, the first application messages
    /// and cross-traffic packets scheduled.
    pub(super) fn new(proto: &'a P, setup: &SimSetup, workload: &[WorkloadSpec]) -> Self {
        let base = Instant::now();
        let clients = setup.clients;
        let inst = instantiate_all(
            workload,
            &InstanceParams {
                clients,
                duration: setup.duration,
                seed: setup.seed,
            },
        );
        let links = links(setup);
        let endpoints = endpoints(proto, setup, base, &inst.classes);
        let (cross, cross_size) = cross(setup);
        let (n_links, n_eps, n_sources) = (links.len(), endpoints.len(), inst.sources.len());
        let mut sim = Sim {
            proto,
            base,
            end: base + setup.duration + setup.drain,
            clients,
            per_client_server: proto.server_per_client(),
            heap: BinaryHeap::new(),
            seq: 0,
            links,
            link_armed: vec![None; n_links],
            has_bottleneck: setup.bottleneck.is_some(),
            endpoints,
            timer_armed: vec![None; n_eps],
            inst,
            pending_app: (0..n_sources).map(|_| None).collect(),
            cross,
            cross_size,
            msgs: Vec::new(),
            latest: HashMap::new(),
            wire: WireCounters::default(),
            network: NetworkCounters::default(),
            events: 0,
            dirty: Vec::new(),
        };
        for e in 0..n_eps {
            sim.service(base, e);
        }
        for s in 0..n_sources {
            sim.next_app(s);
        }
        for d in 0..2 {
            sim.next_cross(d);
        }
        sim
    }

    /// Handles the next event. Returns the fraction of simulated time done at
    /// it, or `None` when the run is over (nothing left before its end).
    pub(super) fn step(&mut self) -> Option<f64> {
        let Reverse((at, _, ev)) = self.heap.pop()?;
        if at > self.end {
            return None;
        }
        self.events += 1;
        match ev {
            Ev::App(s) => self.on_app(at, s as usize),
            Ev::Link(l) => self.on_link(at, l as usize),
            Ev::Timer(e) => self.on_timer(at, e as usize),
            Ev::Cross(d) => self.on_cross(at, d as usize),
        }
        let total = (self.end - self.base).as_secs_f64().max(1e-9);
        Some((at - self.base).as_secs_f64() / total)
    }

    /// Events handled so far.
    pub(super) fn events(&self) -> u64 {
        self.events
    }

    /// The outcome: every message, the wire and link counters.
    pub(super) fn finish(self) -> RunOutput {
        let mut wire = self.wire;
        // Endpoints that count their payload bytes themselves (all or none do).
        let own: Option<Vec<u64>> = self
            .endpoints
            .iter()
            .map(|e| e.payload_bytes_sent())
            .collect();
        if let Some(own) = own.filter(|v| !v.is_empty()) {
            wire.payload_bytes_sent = own.iter().sum();
        }
        let mut thinwire: Option<ThinwireCounters> = None;
        for c in self.endpoints.iter().filter_map(|e| e.thinwire_counters()) {
            *thinwire.get_or_insert_with(ThinwireCounters::default) += c;
        }
        let mut counters = crate::protocol::Counters::new();
        for e in &self.endpoints {
            e.add_counters(&mut counters);
        }
        let mut access = LinkSummary::default();
        let mut bottleneck = LinkSummary::default();
        for (i, l) in self.links.iter().enumerate() {
            if i < 2 * self.clients as usize {
                access.stats += *l.stats();
            } else {
                bottleneck.stats += *l.stats();
            }
        }
        RunOutput {
            protocol: self.proto.name(),
            model: self.proto.model(),
            classes: self.inst.classes.iter().map(|c| c.name.clone()).collect(),
            messages: self.msgs.into_iter().map(|m| m.out).collect(),
            wire,
            access,
            bottleneck,
            events: self.events,
            thinwire,
            counters,
            network: self.network,
        }
    }
    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn link_up(&self, c: u32) -> usize {
        c as usize
    }
    fn link_down(&self, c: u32) -> usize {
        (self.clients + c) as usize
    }
    fn bottleneck_up(&self) -> usize {
        (2 * self.clients) as usize
    }
    fn bottleneck_down(&self) -> usize {
        (2 * self.clients + 1) as usize
    }

    fn server_ep(&self, client: u32) -> (usize, u32) {
        if self.per_client_server {
            ((self.clients + client) as usize, 0)
        } else {
            (self.clients as usize, client)
        }
    }

    /// The client whose flow endpoint `e` serves for a packet to or from `peer`
    /// (the inverse of [`Sim::server_ep`] on the server side).
    fn client_of(&self, e: usize, peer: u32) -> u32 {
        if e < self.clients as usize {
            e as u32
        } else if self.per_client_server {
            e as u32 - self.clients
        } else {
            peer
        }
    }

    fn arm_link(&mut self, l: usize) {
        if let Some(t) = self.links[l].next_delivery() {
            if self.link_armed[l].is_none_or(|a| t < a) {
                self.link_armed[l] = Some(t);
                self.push(t, Ev::Link(l as u32));
            }
        }
    }

    fn send_on(&mut self, now: Instant, l: usize, frame: Frame<P::Packet>) {
        let (size, game_up) = match &frame {
            Frame::Proto { size, up, .. } => (*size as usize, Some(*up)),
            Frame::Cross => (self.cross_size, None),
        };
        let outcome = self.links[l].send(now, frame, size);
        if !matches!(outcome, SendOutcome::Scheduled(_)) {
            let down = l != self.bottleneck_up();
            match game_up {
                Some(up) => self.network.game_dropped[usize::from(!up)] += 1,
                None => self.network.cross_dropped[usize::from(down)] += 1,
            }
        }
        self.arm_link(l);
    }

    /// Drains an endpoint's transmissions and deliveries and re-arms its timer.
    fn service(&mut self, now: Instant, e: usize) {
        self.dirty.push(e as u32);
        self.drain_dirty(now);
    }

    fn drain_dirty(&mut self, now: Instant) {
        while let Some(e) = self.dirty.pop() {
            let e = e as usize;
            let is_client = e < self.clients as usize;
            while let Some(tx) = self.endpoints[e].poll_transmit(now) {
                self.wire.bytes += tx.wire_bytes as u64;
                self.wire.packets += 1;
                if let Some(p) = tx.payload_bytes {
                    self.wire.payload_bytes_sent += p as u64;
                }
                let client = self.client_of(e, tx.peer);
                let l = if is_client {
                    self.link_up(client)
                } else if client >= self.clients {
                    continue;
                } else if self.has_bottleneck {
                    self.bottleneck_down()
                } else {
                    self.link_down(client)
                };
                let frame = Frame::Proto {
                    client,
                    up: is_client,
                    size: tx.wire_bytes as u32,
                    pkt: tx.packet,
                };
                self.network.game_sent[usize::from(!is_client)] += 1;
                self.send_on(now, l, frame);
            }
            while let Some(id) = self.endpoints[e].poll_first_sent() {
                if let Some(m) = self.msgs.get_mut(id as usize) {
                    m.out.wire_us.get_or_insert(us(now - self.base));
                }
            }
            while let Some((peer, id)) = self.endpoints[e].poll_delivered() {
                let client = self.client_of(e, peer);
                self.delivered(now, id, client, !is_client);
            }
            self.arm_timer(now, e);
        }
    }

    fn arm_timer(&mut self, now: Instant, e: usize) {
        if let Some(t) = self.endpoints[e].poll_timeout() {
            let t = t.max(now);
            if self.timer_armed[e].is_none_or(|a| t < a) {
                self.timer_armed[e] = Some(t);
                self.push(t, Ev::Timer(e as u32));
            }
        }
    }

    fn on_link(&mut self, now: Instant, l: usize) {
        if self.link_armed[l] != Some(now) {
            return;
        }
        self.link_armed[l] = None;
        while let Some(frame) = self.links[l].poll_deliver(now) {
            let Frame::Proto {
                client,
                up,
                size,
                pkt,
            } = frame
            else {
                continue;
            };
            // With a bottleneck, packets leaving the access link up (or the
            // bottleneck down) take the next hop; otherwise they have arrived.
            let next_hop = if !self.has_bottleneck {
                None
            } else if up {
                (l == self.link_up(client)).then(|| self.bottleneck_up())
            } else {
                (l == self.bottleneck_down()).then(|| self.link_down(client))
            };
            if let Some(next) = next_hop {
                let frame = Frame::Proto {
                    client,
                    up,
                    size,
                    pkt,
                };
                self.send_on(now, next, frame);
            } else {
                let (e, peer) = if up {
                    self.server_ep(client)
                } else {
                    (client as usize, 0)
                };
                self.endpoints[e].receive(now, peer, pkt);
                self.service(now, e);
            }
        }
        self.arm_link(l);
    }

    fn on_timer(&mut self, now: Instant, e: usize) {
        if self.timer_armed[e] != Some(now) {
            return;
        }
        self.timer_armed[e] = None;
        if self.endpoints[e].poll_timeout().is_some_and(|t| t <= now) {
            self.endpoints[e].handle_timeout(now);
        }
        self.service(now, e);
    }

    fn on_app(&mut self, now: Instant, s: usize) {
        if let Some(ev) = self.pending_app[s].take() {
            self.app_send(now, &ev);
            self.drain_dirty(now);
        }
        self.next_app(s);
    }

    fn next_app(&mut self, s: usize) {
        if let Some(ev) = self.inst.sources[s].next_event() {
            let at = self.base + ev.at;
            if at <= self.end {
                self.pending_app[s] = Some(ev);
                self.push(at, Ev::App(s as u32));
            }
        }
    }

    fn on_cross(&mut self, now: Instant, dir: usize) {
        let l = if dir == 0 {
            self.bottleneck_up()
        } else {
            self.bottleneck_down()
        };
        self.network.cross_sent[dir] += 1;
        self.send_on(now, l, Frame::Cross);
        self.next_cross(dir);
    }

    fn next_cross(&mut self, dir: usize) {
        if let Some(g) = self.cross[dir].as_mut() {
            if let Some(t) = g.next_arrival() {
                let at = self.base + t;
                if at <= self.end {
                    self.push(at, Ev::Cross(dir as u8));
                }
            }
        }
    }
}
