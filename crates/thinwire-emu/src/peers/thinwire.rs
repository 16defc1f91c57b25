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

use super::book::{client_slot, merge_counters, payload, runtime, slot, Book, HostReport, Plan};
use crate::net::host_addr;
use thinwire::SendMode;
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
    // deadline are sent as `SendMode::Deadline` (too large for 64 shards:
    // an ordinary message); a refused send means the message is lost.
    if let (Some(parity), Some(deadline)) = (t.deadline, ev.msg.deadline) {
        let opts = thinwire::DeadlineOptions {
            parity: parity.mode(),
            ..thinwire::DeadlineOptions::new(deadline, ev.msg.target)
        };
        match c.send(ch, data.clone(), SendMode::Deadline(opts)) {
            Err(thinwire::SendError::Rejected(thinwire::proto::SendError::MessageTooLarge {
                ..
            })) => {}
            _ => return,
        }
    }
    let mode = if sem == ChannelSemantics::LatestReliable {
        SendMode::Latest { key: ev.msg.key }
    } else {
        SendMode::Plain
    };
    let _ = c.send(ch, data, mode);
}

/// The named counters of one connection's `ConnectionStats`.
fn stats_counters(st: &thinwire::ConnectionStats) -> [(&'static str, u64); 16] {
    [
        ("packets_sent", st.packets_sent),
        ("packets_lost", st.packets_lost),
        ("thin_fast_losses", st.thin_fast_losses),
        ("rto_expirations", st.rto_expirations),
        ("spurious_losses", st.spurious_losses),
        (
            "payload_bytes_retransmitted",
            st.payload_bytes_retransmitted,
        ),
        ("payload_bytes_bundled", st.payload_bytes_bundled),
        ("payload_bytes_parity", st.payload_bytes_parity),
        ("spurious_timeouts", st.spurious_timeouts),
        ("frames_retransmitted", st.frames_retransmitted),
        ("repair_copies", st.repair_copies),
        ("payload_bytes_copies", st.payload_bytes_copies),
        ("repairs_in_time", st.repairs_in_time),
        ("repairs_late", st.repairs_late),
        ("ack_repeats", st.ack_repeats),
        ("frames_bundled", st.frames_bundled),
    ]
}

/// The connections' `ConnectionStats`, summed.
pub(super) fn report(conns: &[Option<thinwire::Connection>]) -> HostReport {
    let mut report = HostReport::default();
    for st in conns.iter().flatten().filter_map(|c| c.stats()) {
        report.payload_bytes_sent += st.payload_bytes_sent();
        merge_counters(&mut report.counters, &stats_counters(&st));
    }
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
                while let Ok(m) = c.recv().await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use thinwire_lab::protocol::RecoveryCounters;

    #[test]
    fn counters_include_every_recovery_counter_under_its_lab_name() {
        let st = thinwire::ConnectionStats {
            rto_expirations: 3,
            spurious_timeouts: 1,
            repairs_in_time: 2,
            ack_repeats: 5,
            ..Default::default()
        };
        let named = stats_counters(&st);
        let get = |n: &str| named.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        for name in RecoveryCounters::NAMES {
            assert!(get(name).is_some(), "{name}");
        }
        let r = RecoveryCounters::from_named(get).expect("recovery counters");
        assert_eq!(r, RecoveryCounters::from_stats(&st));
        assert_eq!((r.rto_expirations, r.ack_repeats), (3, 5));
    }
}
