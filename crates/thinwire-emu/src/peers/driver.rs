//! The one loop that runs a host of every stack behind `thinwire-peers`' [`PeerHost`]
//! (thinwire, ENet, KCP; the bench drives the same adapters on loopback): the plan's
//! messages go out at their times, deliveries are stamped in the [`Book`].
//!
//! The server is host 0, client `c` host `c + 1`, every host on the stack's port. A client
//! connects to the server at once; the server files each connection under the client whose
//! host it comes from. A message due on a connection that is not up yet waits for it (its
//! send stamp is taken when it goes). A send the stack refuses loses the message, as a loss
//! on the wire would.

use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_lab::workload::{AppEvent, ClassSpec, Semantics};
use thinwire_peers::{
    tagged, ChannelKind, ConnectionStats, DeadlineOptions, Event, HostSpec, Outgoing, PeerHost,
    Role, ServerInfo,
};

use super::book::{client_slot, slot, Book, Plan};
use crate::net::host_addr;

/// Longest one `service` call waits, whatever is due.
const MAX_WAIT: Duration = Duration::from_millis(10);

/// How a peer's connections carry the plan's classes.
#[derive(Debug, Clone)]
pub(crate) struct Lanes {
    /// The channels of every connection.
    pub(crate) channels: Vec<ChannelKind>,
    /// The channel of each class of the plan.
    pub(crate) of_class: Vec<u8>,
    /// Deadline delivery (thinwire configurations that have it): messages with a deadline go
    /// with this parity mode.
    pub(crate) deadline: Option<thinwire::ParityMode>,
}

impl Lanes {
    /// One reliable ordered channel for every class (KCP's one stream).
    pub(crate) fn single(classes: &[ClassSpec]) -> Self {
        Lanes {
            channels: vec![ChannelKind::ReliableOrdered],
            of_class: vec![0; classes.len()],
            deadline: None,
        }
    }

    /// One channel per class (the first 250), each of the class's kind: reliable ordered or
    /// unordered, latest-value for latest-value classes, or with `unreliable_latest`
    /// unreliable for the [`Semantics::Latest`] ones (how ENet games send positions).
    pub(crate) fn per_class(classes: &[ClassSpec], unreliable_latest: bool) -> Self {
        let n = classes.len().clamp(1, 250);
        let kind = |c: &ClassSpec| match c.semantics {
            Semantics::Latest if unreliable_latest => ChannelKind::Unreliable,
            Semantics::Latest | Semantics::Newest => ChannelKind::LatestReliable,
            Semantics::Unordered => ChannelKind::ReliableUnordered,
            Semantics::Ordered => ChannelKind::ReliableOrdered,
        };
        Lanes {
            channels: (0..n)
                .map(|i| classes.get(i).map_or(ChannelKind::ReliableOrdered, kind))
                .collect(),
            of_class: (0..classes.len()).map(|i| i.min(n - 1) as u8).collect(),
            deadline: None,
        }
    }

    /// The channel of message `ev` (its payload `data`) and the message to send on it.
    pub(crate) fn message<'a>(&self, ev: &AppEvent, data: &'a Bytes) -> (u8, Outgoing<'a>) {
        let class = usize::from(ev.msg.class);
        let channel = self.of_class.get(class).copied().unwrap_or(0);
        let deadline = match (self.deadline, ev.msg.deadline) {
            (Some(parity), Some(d)) => Some(DeadlineOptions {
                parity,
                ..DeadlineOptions::new(d, ev.msg.target)
            }),
            _ => None,
        };
        let msg = Outgoing {
            data,
            key: ev.msg.key,
            deadline,
        };
        (channel, msg)
    }
}

/// A stack behind [`PeerHost`] as one host of the emulation runs it.
#[derive(Debug, Clone)]
pub(crate) struct Stack<S> {
    /// This host's settings (thinwire: a server's or a client's config).
    pub(crate) settings: S,
    /// The port every host binds.
    pub(crate) port: u16,
    /// thinwire: the server's public key.
    pub(crate) key: Option<String>,
    /// How the connections carry the classes.
    pub(crate) lanes: Lanes,
}

/// This host's connections and the messages that wait for theirs.
struct Outbox<C> {
    /// On the server one slot per client, on a client the one connection to the server.
    conns: Vec<Option<C>>,
    /// Messages due whose connection is not up yet.
    waiting: Vec<usize>,
    /// Payload bytes the stack took.
    sent: u64,
}

impl<C: Copy> Outbox<C> {
    /// Sends the waiting messages whose connection is up (stamping each), then flushes.
    fn send<H: PeerHost<Conn = C>>(
        &mut self,
        host: &mut H,
        lanes: &Lanes,
        client: Option<u32>,
        plan: &Plan,
        book: &Book,
    ) {
        let (conns, mut sent, mut any) = (&self.conns, 0, false);
        self.waiting.retain(|&id| {
            let ev = &plan.events[id];
            let Some(&Some(conn)) = conns.get(slot(client, ev)) else {
                return true;
            };
            book.sent(id);
            let data = tagged(ev.msg.size as usize, id as u64);
            let (channel, msg) = lanes.message(ev, &data);
            if host.send(conn, channel, msg) == Ok(true) {
                sent += u64::from(ev.msg.size);
            }
            any = true;
            false
        });
        self.sent += sent;
        if any {
            host.flush();
        }
    }
}

/// What one host run by [`drive`] leaves behind.
#[derive(Debug)]
pub(crate) struct Driven {
    /// The payload bytes the application handed over (and the stack took).
    pub(crate) sent: u64,
    /// The stack's own statistics of each connection (thinwire's; none for the others).
    pub(crate) stats: Vec<ConnectionStats>,
}

/// Runs one host (the server when `client` is `None`) of `stack` until the plan ends.
pub(crate) fn drive<H: PeerHost>(
    stack: &Stack<H::Settings>,
    client: Option<u32>,
    plan: &Plan,
    book: &Book,
) -> Result<Driven, String> {
    let spec = HostSpec {
        bind: SocketAddrV4::new(host_addr(client.map_or(0, |c| c as usize + 1)), stack.port),
        role: client.map_or(Role::Server, |_| Role::Client),
        capacity: client.map_or(plan.clients.max(1) as usize, |_| 1),
        channels: stack.lanes.channels.clone(),
    };
    let mut host = H::open(&spec, &stack.settings)?;
    let mut out = Outbox {
        conns: vec![None; client.map_or(plan.clients as usize, |_| 1)],
        waiting: Vec::new(),
        sent: 0,
    };
    let mine = match client {
        Some(_) => Some(host.connect(&ServerInfo {
            addr: SocketAddrV4::new(host_addr(0), stack.port),
            key: stack.key.clone(),
        })?),
        None => None,
    };
    let ids = plan.ids_of(client);
    let (mut next, mut evs) = (0, Vec::new());
    let end = book.t0 + plan.end;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        while next < ids.len() && book.t0 + plan.events[ids[next]].at <= now {
            out.waiting.push(ids[next]);
            next += 1;
        }
        out.send(&mut host, &stack.lanes, client, plan, book);
        let due = ids
            .get(next)
            .map_or(end, |&id| book.t0 + plan.events[id].at);
        let wake = due.min(end).min(now + MAX_WAIT);
        host.service(wake.saturating_duration_since(Instant::now()), &mut evs)?;
        for e in evs.drain(..) {
            match e {
                Event::Connected(c) => {
                    let at = match mine {
                        Some(m) => (m == c).then_some(0),
                        None => host.remote(c).and_then(client_slot),
                    };
                    if let Some(s) = at.and_then(|i| out.conns.get_mut(i)) {
                        *s = Some(c);
                    }
                }
                Event::Message { len, tag, .. } if len >= 8 => book.delivered_id(tag),
                Event::Message { .. } | Event::Disconnected(_) => {}
            }
        }
    }
    let conns = out.conns.iter().flatten();
    Ok(Driven {
        sent: out.sent,
        stats: conns.filter_map(|&c| host.stats(c)).collect(),
    })
}
