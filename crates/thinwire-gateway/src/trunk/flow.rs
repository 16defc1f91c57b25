//! Flows: one per player, with its channel kinds, its send sequence numbers and its receive
//! states, indexed by flow id and by the local connection that carries it.
//!
//! | state               | meaning                                                        |
//! |---------------------|----------------------------------------------------------------|
//! | `AwaitingUpstream`  | server gateway only: the upstream connection is being set up; |
//! |                     | data from the trunk is ordered, then held (bounded)            |
//! | `Open`              | the local connection is up: data is relayed both ways          |
//!
//! At the edge a flow is `Open` from the start (its player is connected); the server
//! gateway's FlowOpened is reported as an event. A flow leaves the table when it closes, from
//! either side; its id is never reused.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle};

use super::inbound::{Budget, Inbound, Outcome, ENTRY_COST};
use super::seq8::Seq8Log;

/// What a flow waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowState {
    /// The upstream connection is being set up (server gateway): data is held.
    AwaitingUpstream,
    /// The local connection is up.
    Open,
}

/// One flow.
#[derive(Debug)]
pub(crate) struct Flow {
    pub(crate) conn: ConnectionHandle,
    pub(crate) kinds: Vec<ChannelKind>,
    pub(crate) state: FlowState,
    /// Next trunk seq per channel.
    pub(crate) send_seq: Vec<u64>,
    /// Its ReliableOrdered pushes the receiving gateway may still miss (8-bit seqs).
    pub(crate) seq8: Seq8Log,
    /// Reliable Data frames pushed into the trunk, and taken from it (FlowFin).
    pub(crate) reliable_sent: u64,
    pub(crate) reliable_received: u64,
    inbound: Vec<Inbound>,
    /// Messages ready for the local connection while it is not (server gateway).
    pub(crate) pending: VecDeque<(u8, Option<u64>, Bytes)>,
    /// Bytes held for reordering and in `pending`.
    held: usize,
    /// The player's client id (FlowOpen claims), at the server gateway: what lets the flow
    /// resume over another trunk flow (`resume.rs`).
    pub(crate) client: Option<u64>,
}

/// Where an arriving message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Handled (delivered to `out`, held, or dropped as stale: see the count).
    Ok { stale: bool },
    /// The frame does not fit the flow (unknown channel, fields of another kind).
    Bad,
    /// The flow's backlog bound is passed: close it.
    Overflow,
}

impl Flow {
    pub(crate) fn new(conn: ConnectionHandle, kinds: Vec<ChannelKind>, state: FlowState) -> Self {
        Self {
            conn,
            send_seq: vec![0; kinds.len()],
            seq8: Seq8Log::default(),
            reliable_sent: 0,
            reliable_received: 0,
            inbound: kinds.iter().map(|&k| Inbound::new(k)).collect(),
            kinds,
            state,
            pending: VecDeque::new(),
            held: 0,
            client: None,
        }
    }

    /// The kind of `channel`, if the flow has it.
    pub(crate) fn kind(&self, channel: u8) -> Option<ChannelKind> {
        self.kinds.get(usize::from(channel)).copied()
    }

    /// The next seq ReliableOrdered `channel` waits for.
    pub(crate) fn expected(&self, channel: u8) -> Option<u64> {
        self.inbound.get(usize::from(channel))?.expected()
    }

    /// Takes a message from the trunk; what the local connection may get now is appended to
    /// `out` as (channel, key, data).
    pub(crate) fn arrive(
        &mut self,
        (channel, seq, key): (u8, Option<u64>, Option<u64>),
        data: Bytes,
        limit: usize,
        out: &mut Vec<(u8, Option<u64>, Bytes)>,
    ) -> Arrival {
        let Some(kind) = self.kind(channel) else {
            return Arrival::Bad;
        };
        if kind.has_key() != key.is_some() || kind.has_seq() != seq.is_some() {
            return Arrival::Bad;
        }
        let mut ready = Vec::new();
        let budget = Budget {
            held: &mut self.held,
            limit,
        };
        let inbound = &mut self.inbound[usize::from(channel)];
        let outcome = inbound.accept((seq, key), data, budget, &mut ready);
        match outcome {
            Outcome::Bad => return Arrival::Bad,
            Outcome::Overflow => return Arrival::Overflow,
            Outcome::Stale => return Arrival::Ok { stale: true },
            Outcome::Taken => {}
        }
        let ready = ready.into_iter().map(|(k, d)| (channel, k, d));
        if self.state == FlowState::Open {
            out.extend(ready);
            return Arrival::Ok { stale: false };
        }
        for (c, k, d) in ready {
            let cost = d.len() + ENTRY_COST;
            if self.held + cost > limit {
                return Arrival::Overflow;
            }
            self.held += cost;
            self.pending.push_back((c, k, d));
        }
        Arrival::Ok { stale: false }
    }

    /// The flow's connection is up: hands over what waited for it.
    pub(crate) fn open(&mut self) -> Vec<(u8, Option<u64>, Bytes)> {
        self.state = FlowState::Open;
        let pending: Vec<_> = self.pending.drain(..).collect();
        self.held = self.inbound.iter().map(Inbound::held_bytes).sum();
        pending
    }

    /// The flow carries on over a new trunk flow (resumed): the trunk's sequence numbers
    /// start again from 0 both ways and nothing held for reordering from the old one is
    /// kept; what waits for the local connection (`pending`) stays.
    pub(crate) fn restart(&mut self) {
        self.send_seq.iter_mut().for_each(|s| *s = 0);
        self.seq8 = Seq8Log::default();
        // FlowFin counts are per flow id too: the new flow's close announces its own frames
        self.reliable_sent = 0;
        self.reliable_received = 0;
        self.inbound = self.kinds.iter().map(|&k| Inbound::new(k)).collect();
        let pending = self.pending.iter().map(|(_, _, d)| d.len() + ENTRY_COST);
        self.held = pending.sum();
    }

    /// Bytes held for this flow (reordering and pending).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.held
    }
}

/// A flow's name at a gateway: the trunk connection that carries it and its id on that
/// trunk (each trunk numbers its flows from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FlowKey {
    pub(crate) trunk: ConnectionHandle,
    pub(crate) id: u32,
}

/// The flow table of all trunks.
#[derive(Debug, Default)]
pub(crate) struct Flows {
    map: HashMap<FlowKey, Flow>,
    by_conn: HashMap<ConnectionHandle, FlowKey>,
}

impl Flows {
    pub(crate) fn insert(&mut self, key: FlowKey, flow: Flow) {
        self.by_conn.insert(flow.conn, key);
        self.map.insert(key, flow);
    }

    pub(crate) fn remove(&mut self, key: FlowKey) -> Option<Flow> {
        let f = self.map.remove(&key)?;
        self.by_conn.remove(&f.conn);
        Some(f)
    }

    pub(crate) fn get(&self, key: FlowKey) -> Option<&Flow> {
        self.map.get(&key)
    }

    pub(crate) fn get_mut(&mut self, key: FlowKey) -> Option<&mut Flow> {
        self.map.get_mut(&key)
    }

    pub(crate) fn of_conn(&self, conn: ConnectionHandle) -> Option<FlowKey> {
        self.by_conn.get(&conn).copied()
    }

    /// Flows of all trunks.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The flows of `trunk`, by id.
    pub(crate) fn of_trunk(&self, trunk: ConnectionHandle) -> Vec<FlowKey> {
        let mut keys: Vec<FlowKey> = self
            .map
            .keys()
            .filter(|k| k.trunk == trunk)
            .copied()
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Every flow, by trunk and id.
    pub(crate) fn keys(&self) -> Vec<FlowKey> {
        let mut keys: Vec<FlowKey> = self.map.keys().copied().collect();
        keys.sort_unstable();
        keys
    }
}
