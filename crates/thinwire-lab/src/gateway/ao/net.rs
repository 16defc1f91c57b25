//! The simulated network of one run: the nodes, the four links between their two sites, the
//! event queue, and the counters of the server's link.
//!
//! ```text
//!   server site                         the server's link (WAN)            player site
//!   game server ─ local hop ─ server gw ══ down: delay, loss ══► edge gw ─ LAN ─ players
//!                 (0 ms, no loss)         ◄══ up:  delay, loss ══          (0 ms, no loss)
//! ```
//! In the direct mode the site hops are unused: the game server and the players talk over
//! the WAN links. A datagram's link follows from the sites of its source and destination
//! sockets; every datagram offered to a WAN link is counted, lost ones included.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_netmodel::{Link, LinkConfig, SendOutcome};

use super::gateways::{EdgeNode, ServerGwNode};
use super::ledger::Ledger;
use super::nodes::{GameServer, Player};
use super::results::{DirCount, WanCount, IP_UDP};

/// A datagram in flight: source and destination sockets, and the UDP payload.
type Packet = ((SocketAddr, SocketAddr), Vec<u8>);

/// Which end of the server's link a node sits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Site {
    /// The game server and the server gateway.
    Server,
    /// The players and the edge gateway.
    Players,
}

/// The links, by index.
const WAN_DOWN: usize = 0;
const WAN_UP: usize = 1;
const SERVER_HOP: usize = 2;
const PLAYER_LAN: usize = 3;

/// One node of the network.
pub(super) enum Node {
    /// The game server.
    Server(GameServer),
    /// A player.
    Player(Player),
    /// The edge gateway near the players.
    Edge(Box<EdgeNode>),
    /// The server gateway near the game server.
    ServerGw(Box<ServerGwNode>),
}

impl Node {
    fn handle_datagram(
        &mut self,
        now: Instant,
        (local, from): (SocketAddr, SocketAddr),
        data: &[u8],
        ledger: &mut Ledger,
    ) {
        match self {
            Node::Server(s) => {
                s.ep.handle_datagram(now, from, data);
                s.drain_events(now);
            }
            Node::Player(p) => {
                p.ep.handle_datagram(now, from, data);
                p.drain_events(now, ledger);
            }
            Node::Edge(e) => e.handle_datagram(now, local, from, data),
            Node::ServerGw(g) => g.handle_datagram(now, local, from, data),
        }
    }

    fn handle_timeout(&mut self, now: Instant, ledger: &mut Ledger) {
        match self {
            Node::Server(s) => {
                s.ep.handle_timeout(now);
                s.drain_events(now);
            }
            Node::Player(p) => {
                p.ep.handle_timeout(now);
                p.drain_events(now, ledger);
            }
            Node::Edge(e) => e.handle_timeout(now),
            Node::ServerGw(g) => g.handle_timeout(now),
        }
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        match self {
            Node::Server(s) => s.ep.poll_timeout(),
            Node::Player(p) => p.ep.poll_timeout(),
            Node::Edge(e) => e.poll_timeout(),
            Node::ServerGw(g) => g.poll_timeout(),
        }
    }

    /// The next datagram: source, destination and length (in `buf`).
    fn poll_transmit(
        &mut self,
        now: Instant,
        own: SocketAddr,
        buf: &mut Vec<u8>,
    ) -> Option<(SocketAddr, SocketAddr, usize)> {
        match self {
            Node::Server(s) => {
                s.ep.poll_transmit(now, buf)
                    .map(|t| (own, t.destination, t.size))
            }
            Node::Player(p) => {
                p.ep.poll_transmit(now, buf)
                    .map(|t| (own, t.destination, t.size))
            }
            Node::Edge(e) => e.poll_transmit(now, buf),
            Node::ServerGw(g) => g.poll_transmit(now, buf),
        }
    }
}

/// A node with its place in the network.
struct Slot {
    node: Node,
    /// Its (first) socket: the source of what a single-socket node sends.
    addr: SocketAddr,
    site: Site,
    /// The timer in the queue, if any.
    armed: Option<Instant>,
}

/// What the event queue holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    /// The application of the game server sends on this flow.
    App(usize),
    /// A link may deliver.
    Link(usize),
    /// A node's timer.
    Timer(usize),
}

/// The network of one run.
pub(super) struct Net {
    slots: Vec<Slot>,
    route: HashMap<SocketAddr, usize>,
    links: Vec<Link<Packet>>,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    buf: Vec<u8>,
    /// WAN datagrams are counted from this time on.
    pub(super) measure_from: Instant,
    /// The counters of the server's link.
    pub(super) wan: WanCount,
    /// Datagrams to an address no node has.
    pub(super) unroutable: u64,
    /// The messages.
    pub(super) ledger: Ledger,
}

impl Net {
    /// A network whose WAN has `wan` in both directions, the player LAN `lan_delay`, with
    /// links seeded from `seed`, empty.
    pub(super) fn new(wan: &LinkConfig, lan_delay: Duration, seed: u64, ledger: Ledger) -> Self {
        let lan = LinkConfig::default().with_delay(lan_delay);
        let tag = 0x414f_4c4b;
        let links = [wan.clone(), wan.clone(), LinkConfig::default(), lan]
            .into_iter()
            .enumerate()
            .map(|(i, c)| Link::new(c, crate::seed::derive(seed, tag, i as u64)))
            .collect();
        Net {
            slots: Vec::new(),
            route: HashMap::new(),
            links,
            heap: BinaryHeap::new(),
            seq: 0,
            buf: Vec::with_capacity(2048),
            measure_from: Instant::now(),
            wan: WanCount::default(),
            unroutable: 0,
            ledger,
        }
    }

    /// Adds `node` at `site`, reachable at `addrs` (the first is its source address);
    /// returns its index.
    pub(super) fn add(&mut self, node: Node, site: Site, addrs: &[SocketAddr]) -> usize {
        let i = self.slots.len();
        for a in addrs {
            self.route.insert(*a, i);
        }
        self.slots.push(Slot {
            node,
            addr: addrs[0],
            site,
            armed: None,
        });
        i
    }

    /// The node at `i`.
    pub(super) fn node(&self, i: usize) -> &Node {
        &self.slots[i].node
    }

    /// The node at `i`, to call into (service it afterwards).
    pub(super) fn node_mut(&mut self, i: usize) -> &mut Node {
        &mut self.slots[i].node
    }

    /// Every node.
    pub(super) fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.slots.iter().map(|s| &s.node)
    }

    /// Queues `ev` at `at`.
    pub(super) fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// The next event, or `None` when the queue is empty.
    pub(super) fn pop(&mut self) -> Option<(Instant, Ev)> {
        self.heap.pop().map(|Reverse((at, _, ev))| (at, ev))
    }

    /// Handles a link or timer event at `now`.
    pub(super) fn handle(&mut self, now: Instant, ev: Ev) {
        match ev {
            Ev::Link(l) => {
                while let Some(((from, to), data)) = self.links[l].poll_deliver(now) {
                    let Some(&n) = self.route.get(&to) else {
                        self.unroutable += 1;
                        continue;
                    };
                    let node = &mut self.slots[n].node;
                    node.handle_datagram(now, (to, from), &data, &mut self.ledger);
                    self.service(now, n);
                }
            }
            Ev::Timer(n) => {
                if self.slots[n].armed == Some(now) {
                    self.slots[n].armed = None;
                    self.slots[n].node.handle_timeout(now, &mut self.ledger);
                    self.service(now, n);
                }
            }
            Ev::App(_) => {}
        }
    }

    /// Sends what node `n` has to send and arms its timer.
    pub(super) fn service(&mut self, now: Instant, n: usize) {
        let own = self.slots[n].addr;
        while let Some((from, to, size)) = self.slots[n].node.poll_transmit(now, own, &mut self.buf)
        {
            let Some(&dst) = self.route.get(&to) else {
                self.unroutable += 1;
                continue;
            };
            let l = match (self.slots[n].site, self.slots[dst].site) {
                (Site::Server, Site::Players) => WAN_DOWN,
                (Site::Players, Site::Server) => WAN_UP,
                (Site::Server, Site::Server) => SERVER_HOP,
                (Site::Players, Site::Players) => PLAYER_LAN,
            };
            let wire = size as u64 + IP_UDP;
            let packet = ((from, to), self.buf[..size].to_vec());
            let outcome = self.links[l].send(now, packet, wire as usize);
            if l <= WAN_UP && now >= self.measure_from {
                let dir: &mut DirCount = if l == WAN_DOWN {
                    &mut self.wan.down
                } else {
                    &mut self.wan.up
                };
                dir.count(size as u64, outcome != SendOutcome::Lost);
            }
            if let SendOutcome::Scheduled(at) = outcome {
                self.push(at, Ev::Link(l));
            }
        }
        if let Some(t) = self.slots[n].node.poll_timeout() {
            let t = t.max(now);
            if self.slots[n].armed != Some(t) {
                self.slots[n].armed = Some(t);
                self.push(t, Ev::Timer(n));
            }
        }
    }
}
