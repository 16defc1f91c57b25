//! What both gateways do alike: hold and push messages into the trunk, take frames out of it,
//! order them per (flow, channel), hand them to the local connections, and close flows.
//! [`EdgeGateway`](super::EdgeGateway) and [`ServerGateway`](super::ServerGateway) add only
//! how flows open.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use thinwire_proto::{
    ConnectionHandle, DeadlineOptions, Endpoint, Event, Message, SendMode, Transmit,
};

use super::close;
use super::config::TrunkOptions;
use super::error::GatewayError;
use super::fin::Drains;
use super::flow::{Arrival, Flow, FlowKey, FlowState, Flows};
use super::frame::{self, Data, FlowClose, FlowOpen, Frame};
use super::hold::{Item, BULK_QUEUE_BOUND};
use super::inbound::expand_seq8;
use super::link::TrunkLink;
use super::push::{counts_for_fin, Pusher, DEADLINE_TARGET, MIN_DEADLINE};
use super::stats::GatewayStats;
use super::{GatewayEvent, Side};

/// Most events queued for the application; past it new ones are dropped and counted.
pub(crate) const MAX_EVENTS: usize = 65_536;

/// A control frame from the trunk, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Control {
    Open(FlowOpen),
    Opened(u32),
    Close {
        flow: u32,
        code: u64,
        reason: Vec<u8>,
    },
}

/// Who ended a flow, so who must still be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its local connection ended: tell the trunk.
    ByLocal,
    /// The far gateway closed it (or the trunk is gone): close the local connection.
    ByTrunk,
    /// This gateway ends it (backlog, protocol): both.
    Here,
}

/// The shared half of a gateway.
#[derive(Debug)]
pub(crate) struct Relay {
    pub(crate) options: TrunkOptions,
    pub(crate) trunk: Endpoint,
    pub(crate) local: Endpoint,
    /// The trunks that are up (admitted, at the server gateway), by connection.
    pub(crate) links: HashMap<ConnectionHandle, TrunkLink>,
    pub(crate) flows: Flows,
    pub(crate) stats: GatewayStats,
    /// Closes waiting for their flow's data (FlowFin).
    drains: Drains,
    events: VecDeque<GatewayEvent>,
}

impl Relay {
    pub(crate) fn new(options: TrunkOptions, trunk: Endpoint, local: Endpoint) -> Self {
        Self {
            options,
            trunk,
            local,
            links: HashMap::new(),
            flows: Flows::default(),
            stats: GatewayStats::default(),
            drains: Drains::default(),
            events: VecDeque::new(),
        }
    }

    /// The peer of an up trunk.
    pub(crate) fn peer(&self, trunk: ConnectionHandle) -> Option<u64> {
        self.links.get(&trunk).map(|l| l.peer)
    }

    pub(crate) fn event(&mut self, e: GatewayEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.stats.events_dropped += 1;
        } else {
            self.events.push_back(e);
        }
    }

    pub(crate) fn poll_event(&mut self) -> Option<GatewayEvent> {
        self.events.pop_front()
    }

    pub(crate) fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, d: &[u8]) {
        match side {
            Side::Trunk => {
                self.stats.trunk.received(d.len());
                self.trunk.handle_datagram(now, from, d);
            }
            Side::Local => {
                self.stats.local.received(d.len());
                self.local.handle_datagram(now, from, d);
            }
        }
    }

    /// Timers of both endpoints.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self.trunk.poll_timeout().is_some_and(|t| t <= now) {
            self.trunk.handle_timeout(now);
        }
        if self.local.poll_timeout().is_some_and(|t| t <= now) {
            self.local.handle_timeout(now);
        }
    }

    /// The earliest timer of the endpoints and the trunks' holds.
    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        let holds = self.links.values().filter_map(TrunkLink::poll_timeout);
        [
            self.trunk.poll_timeout(),
            self.local.poll_timeout(),
            self.drains.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .chain(holds)
        .min()
    }

    /// One datagram from either endpoint, the trunk first.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<(Side, Transmit)> {
        if let Some(t) = self.trunk.poll_transmit(now, buf) {
            self.stats.trunk.sent(t.size);
            return Some((Side::Trunk, t));
        }
        let t = self.local.poll_transmit(now, buf)?;
        self.stats.local.sent(t.size);
        Some((Side::Local, t))
    }

    /// Whether `trunk` may open one more flow (its own bound and the gateway's).
    pub(crate) fn has_room(&self, trunk: ConnectionHandle) -> bool {
        let Some(link) = self.links.get(&trunk) else {
            return false;
        };
        link.flows < link.max_flows && self.flows.len() < self.options.max_flows
    }

    pub(crate) fn add_flow(&mut self, key: FlowKey, flow: Flow) {
        self.flows.insert(key, flow);
        if let Some(l) = self.links.get_mut(&key.trunk) {
            l.flows += 1;
        }
        self.stats.flows_total += 1;
        self.stats.flows_open = self.flows.len();
    }

    /// Takes a flow out of the table with what was held for it (its hold, a close waiting for
    /// its data); returns it with its trunk's peer (0 if the trunk is gone).
    pub(crate) fn take_flow(&mut self, key: FlowKey) -> Option<(Flow, u64)> {
        let flow = self.flows.remove(key)?;
        self.drains.remove(key);
        let mut peer = 0;
        if let Some(l) = self.links.get_mut(&key.trunk) {
            self.stats.dropped_messages += l.hold.forget(key.id) as u64;
            l.flows = l.flows.saturating_sub(1);
            peer = l.peer;
        }
        self.stats.flows_open = self.flows.len();
        Some((flow, peer))
    }

    /// Ends a flow: forgets it and its held messages, and tells whoever must still know.
    pub(crate) fn close_flow(
        &mut self,
        now: Instant,
        key: FlowKey,
        (code, reason): (u64, &[u8]),
        by: Ended,
    ) {
        if by == Ended::ByLocal && self.links.get(&key.trunk).is_some_and(|l| l.hold.len() > 0) {
            // what the player sent before leaving goes ahead of the FlowClose
            self.push_held(now, key.trunk);
        }
        let Some((flow, peer)) = self.take_flow(key) else {
            return;
        };
        if by != Ended::ByLocal {
            self.local.close(now, flow.conn, code, reason);
        }
        if by != Ended::ByTrunk {
            if flow.reliable_sent > 0 {
                let sent = flow.reliable_sent;
                let fin = Frame::FlowFin { flow: key.id, sent };
                self.send_control(now, key.trunk, &fin);
            }
            let frame = Frame::FlowClose(FlowClose {
                flow: key.id,
                code,
                reason,
            });
            self.send_control(now, key.trunk, &frame);
        }
        self.event(GatewayEvent::FlowClosed { peer, flow: key.id });
    }

    /// A trunk is gone: every flow it carried ends with it (the player or the game server
    /// reads `code` and `reason`). Returns the peer it belonged to, if it was up.
    pub(crate) fn trunk_down(
        &mut self,
        now: Instant,
        trunk: ConnectionHandle,
        (code, reason): (u64, &[u8]),
    ) -> Option<u64> {
        for key in self.flows.of_trunk(trunk) {
            self.close_flow(now, key, (code, reason), Ended::ByTrunk);
        }
        self.drains.remove_trunk(trunk);
        let mut link = self.links.remove(&trunk)?;
        self.stats.dropped_messages += link.hold.clear() as u64;
        Some(link.peer)
    }

    /// A control frame, on trunk channel 0 at once.
    pub(crate) fn send_control(
        &mut self,
        now: Instant,
        trunk: ConnectionHandle,
        frame: &Frame<'_>,
    ) {
        let bytes = Bytes::from(frame.to_vec());
        if self
            .trunk
            .send(now, trunk, frame::CONTROL, bytes, SendMode::Plain)
            .is_err()
        {
            self.stats.dropped_messages += 1;
        }
    }

    /// A TCM bundle into `trunk` (which must be up).
    pub(crate) fn send_bundle(
        &mut self,
        now: Instant,
        trunk: ConnectionHandle,
        bundle: &[u8],
    ) -> Result<(), GatewayError> {
        if !self.links.contains_key(&trunk) {
            return Err(GatewayError::TrunkNotUp);
        }
        let bytes = Bytes::from(Frame::Bundle(bundle).to_vec());
        self.trunk
            .send(now, trunk, frame::UNRELIABLE, bytes, SendMode::Plain)?;
        Ok(())
    }

    /// A message from a local connection: held for its flow's trunk.
    pub(crate) fn take_local(&mut self, now: Instant, conn: ConnectionHandle, msg: Message) {
        let Some(key) = self.flows.of_conn(conn) else {
            self.stats.dropped_messages += 1;
            return;
        };
        let Some(kind) = self.flows.get(key).and_then(|f| f.kind(msg.channel)) else {
            return;
        };
        let item = Item {
            flow: key.id,
            channel: msg.channel,
            kind,
            key: msg.key,
            data: msg.data,
            since: now,
            deadline: msg.deadline.map(|d| d.deadline.saturating_sub(d.age)),
        };
        let held = self
            .links
            .get_mut(&key.trunk)
            .is_some_and(|l| l.hold.push(now, item));
        if !held {
            self.overflow(now, key);
        }
    }

    fn overflow(&mut self, now: Instant, key: FlowKey) {
        self.stats.flows_overflowed += 1;
        self.stats.dropped_messages += 1;
        self.close_flow(now, key, (close::BACKLOG, b"backlog"), Ended::Here);
    }

    /// Pushes every trunk's hold that is due, or that can ride with a retransmission or repair
    /// copy the trunk sends now; closes flows whose data did not come in time.
    pub(crate) fn flush(&mut self, now: Instant) {
        self.push_holds(now, true);
        for (key, (code, reason)) in self.drains.expired(now) {
            self.close_flow(now, key, (code, &reason), Ended::ByTrunk);
        }
    }

    /// Pushes the holds that can ride with a retransmission or repair copy the trunk sends now
    /// (after a datagram: an acknowledgement may have shown a loss).
    pub(crate) fn ride(&mut self, now: Instant) {
        self.push_holds(now, false);
    }

    /// Pushes the holds that are due (when `due`), and those of trunks that send message data
    /// now anyway: the held messages leave early, in a datagram that goes anyway, instead of
    /// one of their own a little later.
    fn push_holds(&mut self, now: Instant, due: bool) {
        let trunk = &self.trunk;
        let push: Vec<ConnectionHandle> = self
            .links
            .iter()
            .filter(|(&h, l)| {
                (due && l.hold.due(now)) || (l.hold.len() > 0 && trunk.repair_due(h, now))
            })
            .map(|(&h, _)| h)
            .collect();
        for h in push {
            self.push_held(now, h);
        }
    }

    fn push_held(&mut self, now: Instant, conn: ConnectionHandle) {
        let Some(link) = self.links.get_mut(&conn) else {
            return;
        };
        // the trunk takes the congestion share of the flows it carries, as they would have
        // separately (MulTCP weighting; docs/PROTOCOL.md §9), and no more
        let flows = u32::try_from(link.flows).unwrap_or(u32::MAX);
        let _ = self.trunk.set_congestion_weight(conn, flows);
        let queued = self
            .trunk
            .connection_stats(conn)
            .and_then(|s| s.channels.get(usize::from(frame::RELIABLE)).cloned())
            .map_or(0, |c| c.send_queue_bytes);
        let budget = BULK_QUEUE_BOUND.saturating_sub(queued);
        let mut pusher = Pusher::new(now, (&mut self.trunk, conn), &mut self.flows);
        link.hold.drain(now, budget, &mut self.stats, |items, out| {
            pusher.push(items, out)
        });
        self.stats.messages_to_trunk += pusher.sent;
    }

    /// A message from an up trunk: data is handled here, bundles become events, control
    /// frames are returned to the gateway.
    pub(crate) fn take_trunk(
        &mut self,
        now: Instant,
        trunk: ConnectionHandle,
        bytes: Bytes,
    ) -> Option<Control> {
        let frame = match Frame::parse(&bytes) {
            Ok(f) => f,
            Err(_) => {
                self.stats.bad_frames += 1;
                return None;
            }
        };
        match frame {
            Frame::Data(d) => {
                self.data(now, trunk, &d, &bytes);
                None
            }
            Frame::Batch(b) => {
                for (entry, d) in b.entries() {
                    self.data(now, trunk, &d, &bytes.slice_ref(entry));
                }
                None
            }
            Frame::Bundle(b) => {
                let bundle = bytes.slice_ref(b);
                let peer = self.peer(trunk)?;
                self.event(GatewayEvent::Bundle { peer, bundle });
                None
            }
            Frame::FlowOpen(o) => Some(Control::Open(o)),
            Frame::FlowOpened { flow } => Some(Control::Opened(flow)),
            Frame::FlowFin { flow, sent } => {
                let key = FlowKey { trunk, id: flow };
                if let Some(f) = self.flows.get(key) {
                    self.drains.fin(now, key, sent, f.reliable_received);
                }
                None
            }
            Frame::FlowClose(c) => {
                let key = FlowKey { trunk, id: c.flow };
                let (code, reason) = self.drains.close(key, (c.code, c.reason.to_vec()))?;
                Some(Control::Close {
                    flow: c.flow,
                    code,
                    reason,
                })
            }
        }
    }

    fn data(&mut self, now: Instant, trunk: ConnectionHandle, d: &Data<'_>, bytes: &Bytes) {
        let limit = self.options.max_flow_backlog;
        let key = FlowKey { trunk, id: d.flow };
        let Some(flow) = self.flows.get_mut(key) else {
            let early = self.links.get_mut(&trunk).and_then(|l| l.early.as_mut());
            let held = match early {
                Some(e) if e.is_future(d.flow) => e.hold(d.flow, bytes.clone()),
                _ => false,
            };
            self.stats.messages_from_trunk += u64::from(!held);
            self.stats.dropped_messages += u64::from(!held);
            return;
        };
        self.stats.messages_from_trunk += 1;
        if let Some(us) = d.deadline_us {
            let conn = flow.conn;
            let open = flow.state == FlowState::Open && flow.kind(d.channel).is_some();
            return self.deliver_deadline(now, (trunk, conn, open), d, (us, bytes));
        }
        if flow.kind(d.channel).is_some_and(counts_for_fin) {
            flow.reliable_received += 1;
        }
        let received = flow.reliable_received;
        let seq = match d.seq {
            Some(low) if d.seq8 => {
                let next = flow.expected(d.channel);
                match next.and_then(|n| expand_seq8(n, low as u8)) {
                    Some(s) => Some(s),
                    None => {
                        self.stats.bad_frames += 1;
                        return;
                    }
                }
            }
            s => s,
        };
        let mut out = Vec::new();
        let payload = bytes.slice_ref(d.payload);
        match flow.arrive((d.channel, seq, d.key), payload, limit, &mut out) {
            Arrival::Ok { stale } => self.stats.dropped_messages += u64::from(stale),
            Arrival::Bad => self.stats.bad_frames += 1,
            Arrival::Overflow => return self.overflow(now, key),
        }
        let conn = flow.conn;
        self.deliver(now, conn, out);
        if let Some((code, reason)) = self.drains.data(key, received) {
            self.close_flow(now, key, (code, &reason), Ended::ByTrunk);
        }
    }

    /// A deadline message from the trunk, to the local connection with what it has left (less
    /// half the trunk's smoothed RTT, its time on the trunk); dropped while the flow's
    /// connection is not up.
    fn deliver_deadline(
        &mut self,
        now: Instant,
        (trunk, conn, open): (ConnectionHandle, ConnectionHandle, bool),
        d: &Data<'_>,
        (us, bytes): (u64, &Bytes),
    ) {
        let transit = self
            .trunk
            .connection_stats(trunk)
            .map_or(Duration::ZERO, |s| s.path.srtt / 2);
        let left = Duration::from_micros(us).saturating_sub(transit);
        let opts = DeadlineOptions::new(left.max(MIN_DEADLINE), DEADLINE_TARGET);
        let payload = bytes.slice_ref(d.payload);
        if !open
            || self
                .local
                .send(now, conn, d.channel, payload, SendMode::Deadline(opts))
                .is_err()
        {
            self.stats.dropped_messages += 1;
        }
    }

    /// Hands messages to a local connection, each on its channel.
    pub(crate) fn deliver(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        msgs: Vec<(u8, Option<u64>, Bytes)>,
    ) {
        for (channel, key, data) in msgs {
            let mode = key.map_or(SendMode::Plain, |key| SendMode::Latest { key });
            if self.local.send(now, conn, channel, data, mode).is_err() {
                self.stats.dropped_messages += 1;
            }
        }
    }

    /// Replays the frames of `trunk` that arrived before one of its flows opened.
    pub(crate) fn replay_early(
        &mut self,
        now: Instant,
        trunk: ConnectionHandle,
        frames: Vec<Bytes>,
    ) {
        for f in frames {
            self.take_trunk(now, trunk, f);
        }
    }
}

/// A gateway's handler of one endpoint event.
type OnEvent<G> = fn(&mut G, Instant, ConnectionHandle, Event);

/// Hands every event of a gateway's two endpoints to its handlers until none is left, then
/// pushes what the hold is due to push; true if there was any event. The edge and the server
/// gateway differ only in their handlers.
pub(crate) fn pump<G>(
    g: &mut G,
    now: Instant,
    relay: fn(&mut G) -> &mut Relay,
    on_trunk: OnEvent<G>,
    on_local: OnEvent<G>,
) -> bool {
    let mut any = false;
    loop {
        let mut progressed = false;
        while let Some((h, e)) = relay(g).trunk.poll_event() {
            progressed = true;
            on_trunk(g, now, h, e);
        }
        while let Some((h, e)) = relay(g).local.poll_event() {
            progressed = true;
            on_local(g, now, h, e);
        }
        if !progressed {
            break;
        }
        any = true;
    }
    relay(g).flush(now);
    any
}
