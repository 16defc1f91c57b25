//! Moving between edges (server gateway): a player with an identity (the client id of the
//! connect-token claims its edge verified and carried in FlowOpen) keeps its game-server
//! connection while it moves from one edge to another.
//!
//! - **Park.** When a flow with a client id loses its trunk flow (the trunk went down, or the
//!   edge lost the player: FlowClose with [`TIMED_OUT`](super::close::TIMED_OUT) or
//!   [`RESET`](super::close::RESET)), the flow
//!   is not closed: it leaves the flow table for the parked table, its game-server connection
//!   open, for [`TrunkOptions::resume_grace`](super::TrunkOptions). What the game server sends
//!   meanwhile is held: reliable messages kept in order, the newest value per LatestReliable
//!   key, unreliable ones dropped; within `max_flow_backlog` per flow and `max_held` for all
//!   parked flows together (past either, the flow is closed as a backlog overflow).
//! - **Resume.** A FlowOpen from any admitted trunk whose client id is that of a parked flow,
//!   or of an open flow on another trunk flow (the player moved for a better round trip: the
//!   old flow is closed toward its edge with [`MOVED`](super::close::MOVED)), with the same
//!   channel kinds, takes the flow over: no new game-server connection, FlowOpened at once,
//!   what was held pushed into the new trunk's hold. The trunk's sequence numbers start again
//!   from 0 with the new flow id; nothing held for reordering from the old flow is kept, and
//!   frames of the old flow id are dropped (its key is gone), so nothing stale enters the new
//!   one. Messages that were in the dead trunk are lost.
//! - **Expire.** A parked flow nobody took over within the grace is closed (the game server
//!   reads the code of the loss: `TRUNK_DOWN`, or the edge's `TIMED_OUT` or `RESET`).
//!
//! One flow per client id: a second FlowOpen with it takes the flow from the first.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle, Event, Message};

use super::close;
use super::flow::{Flow, FlowKey, FlowState};
use super::frame::{FlowClose, Frame};
use super::hold::Item;
use super::inbound::ENTRY_COST;
use super::relay::{Ended, Relay};
use super::GatewayEvent;

/// A message from the game server held for a parked flow.
#[derive(Debug)]
struct Down {
    channel: u8,
    kind: ChannelKind,
    key: Option<u64>,
    data: Bytes,
}

impl Down {
    fn cost(&self) -> usize {
        self.data.len() + ENTRY_COST
    }
}

/// One parked flow.
#[derive(Debug)]
struct Parked {
    flow: Flow,
    /// Where it was: (peer, flow id).
    from: (u64, u32),
    until: Instant,
    /// The code and reason its game-server connection gets if it expires.
    why: (u64, &'static [u8]),
    down: VecDeque<Down>,
    held: usize,
}

/// A flow taken over by a FlowOpen, with where it was and what was held for it.
#[derive(Debug)]
pub(crate) struct TakenOver {
    flow: Flow,
    from: (u64, u32),
    down: VecDeque<Down>,
}

/// The parked flows and the index of the open ones by client id.
#[derive(Debug)]
pub(crate) struct Resume {
    grace: Duration,
    /// Open flows with a client id (checked against the flow's own `client` when used:
    /// entries of flows closed since are stale and pruned).
    open: HashMap<u64, FlowKey>,
    parked: HashMap<u64, Parked>,
    by_conn: HashMap<ConnectionHandle, u64>,
    deadlines: BTreeSet<(Instant, u64)>,
    /// Bytes held for all parked flows.
    held: usize,
}

impl Resume {
    /// Flows park for `grace` (`ZERO`: never).
    pub(crate) fn new(grace: Duration) -> Self {
        Self {
            grace,
            open: HashMap::new(),
            parked: HashMap::new(),
            by_conn: HashMap::new(),
            deadlines: BTreeSet::new(),
            held: 0,
        }
    }

    /// Flows parked now.
    pub(crate) fn len(&self) -> usize {
        self.parked.len()
    }

    /// When the next parked flow expires.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(t, _)| t)
    }

    /// Flow `key` (just added to the table) belongs to `client`.
    pub(crate) fn opened(&mut self, relay: &Relay, client: u64, key: FlowKey) {
        self.open.insert(client, key);
        if self.open.len() > 2 * relay.options.max_flows {
            self.open
                .retain(|&c, &mut k| relay.flows.get(k).and_then(|f| f.client) == Some(c));
        }
    }

    /// Parks flow `key` if it has a client id and parking is on; `why` is what its
    /// game-server connection reads if nobody takes it over. False: the caller closes it.
    pub(crate) fn park(
        &mut self,
        now: Instant,
        relay: &mut Relay,
        key: FlowKey,
        why: (u64, &'static [u8]),
    ) -> bool {
        let client = relay.flows.get(key).and_then(|f| f.client);
        let Some(client) = client.filter(|_| !self.grace.is_zero()) else {
            return false;
        };
        let Some((flow, peer)) = relay.take_flow(key) else {
            return false;
        };
        if let Some(old) = self.remove(client) {
            // cannot happen (one flow per client id), but never leak a connection
            close_parked(now, relay, old, (close::MOVED, b"moved"));
        }
        self.open.remove(&client);
        let until = now + self.grace;
        self.by_conn.insert(flow.conn, client);
        self.deadlines.insert((until, client));
        let from = (peer, key.id);
        self.parked.insert(
            client,
            Parked {
                flow,
                from,
                until,
                why,
                down: VecDeque::new(),
                held: 0,
            },
        );
        relay.stats.flows_parked += 1;
        relay.event(GatewayEvent::FlowParked {
            peer,
            flow: key.id,
            client_id: client,
        });
        true
    }

    /// A FlowOpen for `key` with `client`'s id and `kinds`: takes over the parked flow of
    /// that client, or its open flow elsewhere (closed toward its edge with `MOVED`). A flow
    /// with other channel kinds cannot carry on: it is closed (the game server sees a
    /// disconnect) and `None` returned, as when there is nothing to take over.
    pub(crate) fn take_over(
        &mut self,
        now: Instant,
        relay: &mut Relay,
        (client, key): (u64, FlowKey),
        kinds: &[ChannelKind],
    ) -> Option<TakenOver> {
        if self.grace.is_zero() {
            return None;
        }
        if let Some(p) = self.remove(client) {
            if p.flow.kinds != kinds {
                let (peer, flow) = p.from;
                close_parked(now, relay, p, (close::PROTOCOL, b"channels changed"));
                relay.event(GatewayEvent::FlowClosed { peer, flow });
                return None;
            }
            let (flow, from, down) = (p.flow, p.from, p.down);
            return Some(TakenOver { flow, from, down });
        }
        let old = self.open.get(&client).copied()?;
        if old == key || relay.flows.get(old).and_then(|f| f.client) != Some(client) {
            return None;
        }
        let reason = &b"moved to another edge"[..];
        if relay.flows.get(old).is_some_and(|f| f.kinds != kinds) {
            relay.close_flow(now, old, (close::MOVED, reason), Ended::Here);
            return None;
        }
        let (flow, peer) = relay.take_flow(old)?;
        let frame = Frame::FlowClose(FlowClose {
            flow: old.id,
            code: close::MOVED,
            reason,
        });
        relay.send_control(now, old.trunk, &frame);
        relay.event(GatewayEvent::FlowClosed { peer, flow: old.id });
        let down = VecDeque::new();
        Some(TakenOver {
            flow,
            from: (peer, old.id),
            down,
        })
    }

    /// Puts a taken-over flow in the table as `key` (its trunk must be up): FlowOpened at
    /// once if its game-server connection is up, and what was held for it into the hold.
    pub(crate) fn attach(&mut self, now: Instant, relay: &mut Relay, key: FlowKey, t: TakenOver) {
        let TakenOver {
            mut flow,
            from,
            down,
        } = t;
        let client = flow.client.unwrap_or_default();
        flow.restart();
        let open = flow.state == FlowState::Open;
        relay.flows.insert(key, flow);
        let mut peer = 0;
        if let Some(l) = relay.links.get_mut(&key.trunk) {
            l.flows += 1;
            peer = l.peer;
        }
        relay.stats.flows_open = relay.flows.len();
        relay.stats.flows_resumed += 1;
        self.opened(relay, client, key);
        if open {
            relay.send_control(now, key.trunk, &Frame::FlowOpened { flow: key.id });
        }
        relay.event(GatewayEvent::FlowResumed {
            peer,
            flow: key.id,
            client_id: client,
            from_peer: from.0,
            from_flow: from.1,
        });
        for d in down {
            let item = Item {
                flow: key.id,
                channel: d.channel,
                kind: d.kind,
                key: d.key,
                data: d.data,
                since: now,
                deadline: None,
            };
            let held = (relay.links.get_mut(&key.trunk)).is_some_and(|l| l.hold.push(now, item));
            if !held {
                relay.stats.flows_overflowed += 1;
                relay.close_flow(now, key, (close::BACKLOG, b"backlog"), Ended::Here);
                return;
            }
        }
    }

    /// An event of a game-server connection that is not in the flow table: handled if it is
    /// a parked flow's.
    pub(crate) fn on_upstream(
        &mut self,
        now: Instant,
        relay: &mut Relay,
        h: ConnectionHandle,
        e: Event,
    ) {
        let Some(&client) = self.by_conn.get(&h) else {
            return;
        };
        match e {
            Event::Connected { .. } => {
                let pending = (self.parked.get_mut(&client))
                    .map(|p| p.flow.open())
                    .unwrap_or_default();
                relay.deliver(now, h, pending);
            }
            Event::Message(m) => self.hold(now, relay, client, m),
            Event::Disconnected { .. } => {
                if let Some(p) = self.remove(client) {
                    relay.stats.dropped_messages += p.down.len() as u64;
                    let (peer, flow) = p.from;
                    relay.event(GatewayEvent::FlowClosed { peer, flow });
                }
            }
        }
    }

    /// Closes the parked flows whose grace ran out.
    pub(crate) fn expire(&mut self, now: Instant, relay: &mut Relay) {
        while let Some(&(t, client)) = self.deadlines.first() {
            if t > now {
                break;
            }
            self.deadlines.pop_first();
            let Some(p) = self.remove(client) else {
                continue;
            };
            let (peer, flow) = p.from;
            let why = p.why;
            relay.stats.flows_resume_expired += 1;
            close_parked(now, relay, p, why);
            relay.event(GatewayEvent::FlowResumeExpired {
                peer,
                flow,
                client_id: client,
            });
        }
    }

    /// A message from the game server for parked `client`: held by its channel's rule.
    fn hold(&mut self, now: Instant, relay: &mut Relay, client: u64, m: Message) {
        let (limit, max_total) = (relay.options.max_flow_backlog, relay.options.max_held);
        let share = max_total / self.parked.len().max(1);
        let Some(p) = self.parked.get_mut(&client) else {
            return;
        };
        let kind = match p.flow.kind(m.channel) {
            Some(ChannelKind::Unreliable | ChannelKind::UnreliableSequenced) | None => {
                relay.stats.dropped_messages += 1;
                return;
            }
            Some(k) => k,
        };
        let key = m.key.filter(|_| kind == ChannelKind::LatestReliable);
        if key.is_some() {
            let before = p.down.len();
            let mut freed = 0;
            p.down.retain(|d| {
                let older = d.channel == m.channel && d.key == key;
                freed += if older { d.cost() } else { 0 };
                !older
            });
            p.held -= freed;
            self.held -= freed;
            relay.stats.dropped_messages += (before - p.down.len()) as u64;
        }
        let d = Down {
            channel: m.channel,
            kind,
            key,
            data: m.data,
        };
        let after = p.held + d.cost();
        let full = self.held + d.cost() > max_total;
        if after > limit || (full && after > share) {
            let p = self.remove(client);
            relay.stats.flows_overflowed += 1;
            relay.stats.dropped_messages += 1;
            if let Some(p) = p {
                let (peer, flow) = p.from;
                close_parked(now, relay, p, (close::BACKLOG, b"backlog"));
                relay.event(GatewayEvent::FlowClosed { peer, flow });
            }
            return;
        }
        p.held = after;
        self.held += d.cost();
        p.down.push_back(d);
    }

    fn remove(&mut self, client: u64) -> Option<Parked> {
        let p = self.parked.remove(&client)?;
        self.by_conn.remove(&p.flow.conn);
        self.deadlines.remove(&(p.until, client));
        self.held -= p.held;
        Some(p)
    }
}

/// Closes a parked flow's game-server connection.
fn close_parked(now: Instant, relay: &mut Relay, p: Parked, (code, reason): (u64, &[u8])) {
    relay.stats.dropped_messages += p.down.len() as u64;
    relay.local.close(now, p.flow.conn, code, reason);
}
