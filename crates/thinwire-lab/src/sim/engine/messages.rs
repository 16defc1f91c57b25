//! Application messages: sending them, recording their delivery (with
//! latest-value supersession), and the server's relays and reactions.

use std::time::Instant;

use super::{us, Msg, Sim};
use crate::protocol::{OutMessage, Protocol, SimEndpoint};
use crate::sim::output::MessageOutcome;
use crate::workload::{AppEvent, Direction, Semantics};

impl<P: Protocol> Sim<'_, P> {
    pub(super) fn delivered(&mut self, now: Instant, id: u64, client: u32, at_server: bool) {
        let Some(m) = self.msgs.get_mut(id as usize) else {
            return;
        };
        // Sanity: the message must belong to this flow.
        if m.out.client != client {
            return;
        }
        let now_us = us(now - self.base);
        let first = m.out.delivered_us.is_none();
        if first {
            m.out.delivered_us = Some(now_us);
        }
        let (class, dir, key) = (m.out.class, m.out.dir, m.key);
        if self.inst.classes[class as usize].semantics == Semantics::Latest {
            // This value supersedes every older value of the same key.
            if let Some(q) = self.latest.get_mut(&(client, dir, class, key)) {
                while q.front().is_some_and(|&old| old <= id) {
                    let old = q.pop_front().unwrap_or(id);
                    let o = &mut self.msgs[old as usize].out;
                    if o.delivered_us.is_none() {
                        o.delivered_us = Some(now_us);
                    }
                }
            }
        }
        if first && at_server {
            self.relay(now, id, client);
        }
    }

    fn relay(&mut self, now: Instant, id: u64, from: u32) {
        self.react(now, id, from);
        let Some(f) = &self.inst.fanout else { return };
        let m = &self.msgs[id as usize];
        if !f.classes.contains(&m.out.class) {
            return;
        }
        let (class, size, key) = (m.out.class, m.out.size, m.key);
        let peers: Vec<u32> = f.peers(from, self.clients).collect();
        for c in peers {
            let ev = AppEvent {
                at: now - self.base,
                client: c,
                dir: Direction::Down,
                msg: crate::workload::MessageSpec {
                    class,
                    size,
                    deadline: None,
                    target: crate::workload::DEFAULT_DEADLINE_TARGET,
                    key,
                },
            };
            self.app_send(now, &ev);
        }
    }

    /// The workload's server reactions to message `id` from `from`.
    fn react(&mut self, now: Instant, id: u64, from: u32) {
        let Some(r) = self.inst.reactor.as_mut() else {
            return;
        };
        let m = &self.msgs[id as usize];
        let msg = crate::workload::MessageSpec {
            class: m.out.class,
            size: m.out.size,
            deadline: None,
            target: crate::workload::DEFAULT_DEADLINE_TARGET,
            key: m.key,
        };
        let mut out = Vec::new();
        r.react(now - self.base, from, &msg, self.clients, &mut out);
        for ev in &out {
            self.app_send(now, ev);
        }
    }

    pub(super) fn app_send(&mut self, now: Instant, ev: &AppEvent) {
        let id = self.msgs.len() as u64;
        self.msgs.push(Msg {
            out: MessageOutcome {
                sent_us: us(now - self.base),
                delivered_us: None,
                wire_us: None,
                size: ev.msg.size,
                class: ev.msg.class,
                deadline_us: ev.msg.deadline.map(us),
                client: ev.client,
                dir: ev.dir,
            },
            key: ev.msg.key,
        });
        if self.inst.classes[ev.msg.class as usize].semantics == Semantics::Latest {
            self.latest
                .entry((ev.client, ev.dir, ev.msg.class, ev.msg.key))
                .or_default()
                .push_back(id);
        }
        let out = OutMessage {
            id,
            class: ev.msg.class,
            size: ev.msg.size,
            key: ev.msg.key,
            deadline: ev.msg.deadline,
            target: ev.msg.target,
        };
        let (e, peer) = match ev.dir {
            Direction::Up => (ev.client as usize, 0),
            Direction::Down => self.server_ep(ev.client),
        };
        self.endpoints[e].send(now, peer, &out);
        self.dirty.push(e as u32);
    }
}
