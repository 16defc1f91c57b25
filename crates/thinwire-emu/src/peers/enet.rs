//! ENet (the C library, through `thinwire-enet`) as a real peer of the emulator.
//!
//! One channel per message class. `reliable` classes (ordered and unordered) always use
//! ENet's reliable packets; latest-value classes (positions) use reliable packets too in the
//! `enet-reliable` configuration and unsequenced (unreliable, no ordering) packets in
//! `enet-unsequenced`, the way ENet games send positions. A client announces its index in a
//! first reliable packet so the server can address it; messages for a client that has not
//! announced itself yet wait in a queue.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::Instant;

use thinwire_enet::{Event, Host, PeerId};

use super::book::{payload, Book, Plan};
use crate::net::host_addr;
use thinwire_lab::workload::Semantics;

const ENET_PORT: u16 = 7500;

/// Runs one ENet host of the emulation (the server when `client` is `None`) until the plan
/// ends. Returns the payload bytes the application handed to ENet.
pub(crate) fn enet_host(
    unsequenced: bool,
    client: Option<u32>,
    plan: &Plan,
    book: &Arc<Book>,
) -> Result<u64, String> {
    let e = |e: thinwire_enet::EnetError| e.to_string();
    // one channel per class, then the hello channel (the client's index)
    let classes = plan.classes.len().clamp(1, 250);
    let channels = classes + 1;
    let hello = classes as u8;
    let me = match client {
        None => SocketAddrV4::new(host_addr(0), ENET_PORT),
        Some(c) => SocketAddrV4::new(host_addr(c as usize + 1), ENET_PORT),
    };
    let mut host = Host::bind(me, plan.clients.max(1) as usize, channels).map_err(e)?;
    // server: client index -> peer; client: the one server peer
    let mut peers: HashMap<u32, PeerId> = HashMap::new();
    let mut hello_pending = None;
    if let Some(c) = client {
        let server = SocketAddrV4::new(host_addr(0), ENET_PORT);
        let p = host.connect(server, channels).map_err(e)?;
        hello_pending = Some((p, c));
    }
    let ids = plan.ids_of(client);
    let mut waiting: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut sent = 0u64;
    let end = book.t0 + plan.end;
    let send = |host: &mut Host, peer: PeerId, id: usize| -> Result<u64, String> {
        let ev = &plan.events[id];
        let class = usize::from(ev.msg.class);
        let semantics = plan.classes.get(class).map(|c| c.semantics);
        let reliable = !(unsequenced && semantics == Some(Semantics::Latest));
        let channel = class.min(classes - 1) as u8;
        book.sent(id);
        host.send(peer, channel, &payload(id, ev.msg.size), reliable)
            .map_err(|e| e.to_string())?;
        Ok(u64::from(ev.msg.size))
    };
    while Instant::now() < end {
        let now = Instant::now();
        while next < ids.len() && book.t0 + plan.events[ids[next]].at <= now {
            waiting.push(ids[next]);
            next += 1;
        }
        let mut still = Vec::new();
        for id in waiting.drain(..) {
            let target = match client {
                Some(c) => peers.get(&c).copied(),
                None => peers.get(&plan.events[id].client).copied(),
            };
            match target {
                Some(p) => sent += send(&mut host, p, id)?,
                None => still.push(id),
            }
        }
        waiting = still;
        match host.service(1).map_err(e)? {
            Some(Event::Connect(p)) => {
                if let Some((server, c)) = hello_pending.take() {
                    if server == p {
                        host.send(p, hello, &c.to_le_bytes(), true).map_err(e)?;
                        peers.insert(c, p);
                    }
                }
            }
            Some(Event::Receive {
                peer,
                channel,
                data,
            }) => {
                if channel == hello && client.is_none() && data.len() == 4 {
                    let c = u32::from_le_bytes(data[..4].try_into().unwrap_or_default());
                    peers.insert(c, peer);
                } else {
                    book.delivered(&data);
                }
            }
            Some(Event::Disconnect(_)) | None => {}
        }
    }
    host.flush();
    Ok(sent)
}
