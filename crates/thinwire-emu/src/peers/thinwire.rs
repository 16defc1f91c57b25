//! thinwire over real UDP (the `thinwire` runtime) as a real peer, in one of
//! the lab's thinwire configurations: one endpoint per host, the channels the
//! configuration maps the classes to, deadline sends as in the simulator.
//! Encrypted like any thinwire deployment (Noise NK handshake, AEAD-sealed
//! packets) unless the configuration is the `-insecure-cleartext` opt-out;
//! the server holds the simulator's server key
//! ([`lab_server_key`](thinwire_lab::protocol::lab_server_key)), which the
//! clients connect with.

use std::net::SocketAddr;
use std::sync::Arc;

use super::book::{client_slot, payload, runtime, slot, Book, HostReport, Plan};
use crate::net::host_addr;
use thinwire_lab::protocol::{lab_server_key, ChannelSemantics, ThinwireProtocol};
use thinwire_lab::workload::AppEvent;

const THINWIRE_PORT: u16 = 7300;

/// One host's endpoint and connections: on the server one slot per client,
/// on a client the one connection to the server.
type Conns = (thinwire::Endpoint, Vec<Option<thinwire::Connection>>);

/// The runtime configuration of configuration `t` (a server's with `server`).
pub(super) fn config(t: ThinwireProtocol, server: bool) -> thinwire::Config {
    let mut config = if server {
        thinwire::Config::server().with_server_key(lab_server_key().clone())
    } else {
        thinwire::Config::client()
    }
    .with_transport(t.transport());
    if t.insecure_cleartext {
        config = config.insecure_cleartext();
    }
    config
}

/// Binds the host's endpoint; the server accepts one connection per client,
/// client `c` connects to the server with the channels `kinds`.
async fn open(
    t: ThinwireProtocol,
    client: Option<u32>,
    clients: u32,
    kinds: &[thinwire::ChannelKind],
) -> Result<Conns, String> {
    let server = SocketAddr::from((host_addr(0), THINWIRE_PORT));
    let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
    let ep = match client {
        None => {
            let ep =
                thinwire::Endpoint::bind(server, config(t, true)).map_err(|e| e.to_string())?;
            conns.resize_with(clients as usize, || None);
            for _ in 0..clients {
                let c = ep.accept().await.ok_or("endpoint closed")?;
                if let Some(slot) = client_slot(c.remote_address()).and_then(|i| conns.get_mut(i)) {
                    *slot = Some(c);
                }
            }
            ep
        }
        Some(c) => {
            let ep = thinwire::Endpoint::bind(
                SocketAddr::from((host_addr(c as usize + 1), 0)),
                config(t, false),
            )
            .map_err(|e| e.to_string())?;
            let conn = ep
                .connect(server, lab_server_key().public(), kinds)
                .await
                .map_err(|e| e.to_string())?;
            conns.push(Some(conn));
            ep
        }
    };
    Ok((ep, conns))
}

/// Sends message `id` (event `ev`) on `c`, on its class's channel.
pub(super) fn send(
    t: ThinwireProtocol,
    c: &thinwire::Connection,
    per_class: &[(u8, ChannelSemantics)],
    id: usize,
    ev: &AppEvent,
    book: &Book,
) {
    let (ch, sem) = per_class
        .get(usize::from(ev.msg.class))
        .copied()
        .unwrap_or((0, ChannelSemantics::ReliableOrdered));
    book.sent(id);
    let data = bytes::Bytes::from(payload(id, ev.msg.size));
    // Deadline delivery, as in the simulator adapter: messages with a
    // deadline go through `send_deadline` (too large for 64 shards:
    // an ordinary message); a refused send means the message is lost.
    if let (Some(parity), Some(deadline)) = (t.deadline, ev.msg.deadline) {
        let opts = thinwire::DeadlineOptions {
            parity: parity.mode(),
            ..thinwire::DeadlineOptions::new(deadline, ev.msg.target)
        };
        match c.send_deadline(ch, data.clone(), opts) {
            Err(thinwire::SendError::Rejected(thinwire::proto::SendError::MessageTooLarge {
                ..
            })) => {}
            _ => return,
        }
    }
    let _ = if sem == ChannelSemantics::LatestReliable {
        c.send_latest(ch, ev.msg.key, data)
    } else {
        c.send(ch, data)
    };
}

/// The connections' payload bytes sent and their counters, summed.
pub(super) fn report(conns: &[Option<thinwire::Connection>]) -> HostReport {
    let mut report = HostReport::default();
    let mut total = thinwire::proto::ConnectionCounters::default();
    for st in conns.iter().flatten().filter_map(|c| c.stats()) {
        report.payload_bytes_sent += st.payload_bytes.total();
        total += st.counters();
    }
    report.thinwire = Some(total);
    report
}

/// Runs one thinwire host of the emulation (the server when `client` is
/// `None`) until the plan ends. Reports thinwire's own payload count
/// (retransmissions and parity included) and its connection counters.
pub(crate) fn thinwire_host(
    t: ThinwireProtocol,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let rt = runtime()?;
    let (kinds, per_class) = t.channels(&plan.classes);
    let plan = plan.clone();
    let book = book.clone();
    rt.block_on(async move {
        let (ep, conns) = open(t, client, plan.clients, &kinds).await?;
        for c in conns.iter().flatten() {
            let c = c.clone();
            let book = book.clone();
            tokio::spawn(async move {
                while let Ok((_, m)) = c.recv().await {
                    book.delivered(&m.data);
                }
            });
        }
        for id in plan.ids_of(client) {
            let ev = plan.events[id];
            let at = tokio::time::Instant::from_std(book.t0 + ev.at);
            tokio::time::sleep_until(at).await;
            if let Some(Some(c)) = conns.get(slot(client, &ev)) {
                send(t, c, &per_class, id, &ev, &book);
            }
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
        let report = report(&conns);
        ep.close(0, b"done");
        Ok(report)
    })
}
