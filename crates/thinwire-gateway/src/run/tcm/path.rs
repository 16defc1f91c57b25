//! The TUN side of a TCM process: one multiplexer and demultiplexer per trunk peer, and the
//! source filter on restored packets.
//!
//! tcm-local has one peer (its trunk to tcm-remote); tcm-remote one per admitted tcm-local.
//! A packet read from the TUN device goes to the peer whose prefixes hold its destination
//! (tcm-local: its only peer). A restored packet from peer P is written only if its source
//! lies in P's prefixes (tcm-remote: the prefixes configured for P, unless the process was
//! told to accept any source; tcm-local: its routes, or anything without routes). A peer's
//! compression contexts live as long as its trunk: both ends start afresh with a new trunk.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::time::Instant;

use tokio::io::unix::AsyncFd;

use super::super::drive::{Input, Machine};
use super::TunCounters;
use crate::tcm::{Demultiplexer, Multiplexer, Output, TcmConfig, TcmStats};
use crate::trunk::{source_allowed, Cidr, EdgeGateway, GatewayError, GatewayEvent, ServerGateway};

/// A gateway that carries bundles: the edge to its one peer, the server gateway to any.
/// Public only as the bound of the TCM processes' `run`; nothing outside the crate can name
/// it.
#[allow(unreachable_pub)]
pub trait Tunnel: Machine {
    /// Sends a bundle to `peer` (the edge: to its only peer).
    fn send_bundle_to(
        &mut self,
        now: Instant,
        peer: u64,
        bundle: &[u8],
    ) -> Result<(), GatewayError>;
}

impl Tunnel for EdgeGateway {
    fn send_bundle_to(&mut self, now: Instant, _: u64, b: &[u8]) -> Result<(), GatewayError> {
        self.send_bundle(now, b)
    }
}

impl Tunnel for ServerGateway {
    fn send_bundle_to(&mut self, now: Instant, peer: u64, b: &[u8]) -> Result<(), GatewayError> {
        self.send_bundle(now, peer, b)
    }
}

/// Which sources a restored packet of a peer may have.
#[derive(Debug, Clone)]
pub(crate) enum Sources {
    /// tcm-local: its routes (none: any).
    Routes(Vec<Cidr>),
    /// tcm-remote: each peer's prefixes; `any`: every source (the operator's explicit choice).
    Peers {
        prefixes: HashMap<u64, Vec<Cidr>>,
        any: bool,
    },
}

/// One trunk peer's compression state.
struct PeerPath {
    peer: u64,
    mux: Multiplexer,
    demux: Demultiplexer,
    /// Sources its restored packets may have; `None`: any.
    sources: Option<Vec<Cidr>>,
}

/// The TUN device and the peers' multiplexers: the third input of the driver loop.
pub(crate) struct TcmPath {
    pub(super) tun: AsyncFd<tun::Device>,
    pub(super) tcm: TcmConfig,
    pub(super) sources: Sources,
    peers: Vec<PeerPath>,
    /// The statistics of the peers' paths that ended.
    mux_done: TcmStats,
    demux_done: TcmStats,
    out: Vec<u8>,
    pub(super) counters: TunCounters,
}

impl TcmPath {
    pub(super) fn new(tun: AsyncFd<tun::Device>, tcm: TcmConfig, sources: Sources) -> Self {
        Self {
            tun,
            out: Vec::with_capacity(tcm.mtu),
            tcm,
            sources,
            peers: Vec::new(),
            mux_done: TcmStats::default(),
            demux_done: TcmStats::default(),
            counters: TunCounters::default(),
        }
    }

    /// The multiplexers' and demultiplexers' statistics, ended peers included.
    pub(super) fn tcm_stats(&self) -> (TcmStats, TcmStats) {
        let (mut mux, mut demux) = (self.mux_done, self.demux_done);
        for p in &self.peers {
            mux.merge(p.mux.stats());
            demux.merge(p.demux.stats());
        }
        (mux, demux)
    }

    fn peer_up(&mut self, peer: u64) {
        self.peer_down(peer);
        let sources = match &self.sources {
            Sources::Routes(r) if r.is_empty() => None,
            Sources::Routes(r) => Some(r.clone()),
            Sources::Peers { any: true, .. } => None,
            Sources::Peers { prefixes, .. } => {
                Some(prefixes.get(&peer).cloned().unwrap_or_default())
            }
        };
        // the configuration was checked when the process started
        let (Ok(mux), Ok(demux)) = (
            Multiplexer::new(self.tcm.clone()),
            Demultiplexer::new(&self.tcm),
        ) else {
            return;
        };
        self.peers.push(PeerPath {
            peer,
            mux,
            demux,
            sources,
        });
    }

    fn peer_down(&mut self, peer: u64) {
        if let Some(i) = self.peers.iter().position(|p| p.peer == peer) {
            let p = self.peers.swap_remove(i);
            self.mux_done.merge(p.mux.stats());
            self.demux_done.merge(p.demux.stats());
        }
    }

    /// The peer a packet read from the TUN device goes to: the one whose prefixes hold its
    /// destination, or the only one up (tcm-local; tcm-remote accepting any source).
    fn route(&self, packet: &[u8]) -> Option<usize> {
        if let Sources::Peers { prefixes, .. } = &self.sources {
            if let Some(&[a, b, c, d]) = packet.get(16..20) {
                let dst = Ipv4Addr::new(a, b, c, d);
                let owner = prefixes
                    .iter()
                    .find(|(_, ps)| ps.iter().any(|p| p.contains(dst)));
                if let Some((id, _)) = owner {
                    return self.peers.iter().position(|p| p.peer == *id);
                }
            }
        }
        (self.peers.len() == 1).then_some(0)
    }

    /// Sends what peer `i`'s multiplexer has ready: bundles into its trunk.
    fn drain<M: Tunnel>(&mut self, m: &mut M, now: Instant, i: usize) {
        let p = &mut self.peers[i];
        while let Some(kind) = p.mux.poll_output(now, &mut self.out) {
            match kind {
                Output::Bundle => {
                    if m.send_bundle_to(now, p.peer, &self.out).is_err() {
                        self.counters.bundles_lost += 1;
                    }
                }
                Output::Native => self.counters.natives_dropped += 1,
            }
        }
    }
}

impl<M: Tunnel> Input<M> for TcmPath {
    async fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut ready = self.tun.readable().await?;
            if let Ok(r) = ready.try_io(|d| d.get_ref().recv(buf)) {
                return r;
            }
        }
    }

    fn handle_packet(&mut self, m: &mut M, now: Instant, packet: &[u8]) {
        self.counters.packets_read += 1;
        self.counters.bytes_read += packet.len() as u64;
        let Some(i) = self.route(packet) else {
            self.counters.trunk_down_drops += 1;
            return;
        };
        if self.peers[i].mux.push(now, packet).is_err() {
            self.counters.refused += 1;
        }
        self.drain(m, now, i);
    }

    fn handle_event(&mut self, _: &mut M, _: Instant, event: GatewayEvent) {
        match event {
            GatewayEvent::TrunkUp { peer } => self.peer_up(peer),
            GatewayEvent::TrunkDown { peer, .. } => self.peer_down(peer),
            GatewayEvent::Bundle { peer, bundle } => {
                let Some(p) = self.peers.iter_mut().find(|p| p.peer == peer) else {
                    return;
                };
                let (tun, c, sources) = (&self.tun, &mut self.counters, &p.sources);
                let mut write = |packet: &[u8]| {
                    if sources.as_ref().is_some_and(|s| !source_allowed(s, packet)) {
                        c.foreign_sources += 1;
                        return;
                    }
                    match tun.get_ref().send(packet) {
                        Ok(_) => c.packets_written += 1,
                        Err(_) => c.write_errors += 1,
                    }
                };
                if p.demux.handle_bundle(&bundle, &mut write).is_err() {
                    self.counters.bad_bundles += 1;
                }
            }
            GatewayEvent::TrunkRefused { .. }
            | GatewayEvent::FlowOpened { .. }
            | GatewayEvent::FlowClosed { .. }
            | GatewayEvent::FlowParked { .. }
            | GatewayEvent::FlowResumed { .. }
            | GatewayEvent::FlowResumeExpired { .. } => {}
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.peers.iter().filter_map(|p| p.mux.poll_timeout()).min()
    }

    fn handle_timeout(&mut self, m: &mut M, now: Instant) {
        for i in 0..self.peers.len() {
            self.peers[i].mux.handle_timeout(now);
            self.drain(m, now, i);
        }
    }
}
