//! A property test of the order of the application's events across connections: each
//! connection keeps its own events and the endpoint only their order (`endpoint/events.rs`),
//! and connections are forgotten while their events wait. Whatever the interleaving of sends,
//! closes, time and the application's reads, each connection's events come out as it produced
//! them (connected, its messages in the order sent, disconnected last), none is lost or
//! repeated, and nothing is left once all are taken.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

use super::net::Net;
use super::properties::{id_of, payload};
use crate::{ConnectionHandle, Endpoint, EndpointConfig, Event, SendMode, ServerConfig};

const CLIENTS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    /// Client `i` sends its next message.
    Send(usize),
    /// The server's application takes up to `n` events.
    Take(usize),
    /// Client `i` closes its connection.
    Close(usize),
    /// Client `i` vanishes (its endpoint is replaced by a new one that knows nothing): the
    /// server's connection ends in one call, by a reset or by the idle timeout, and is
    /// dropped in that call, before its `Disconnected` can have been taken.
    Vanish(usize),
    /// Time moves on by `ms` (timers, keepalives, the close's draining).
    Wait(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..CLIENTS).prop_map(Op::Send),
            2 => (0usize..6).prop_map(Op::Take),
            1 => (0..CLIENTS).prop_map(Op::Close),
            1 => (0..CLIENTS).prop_map(Op::Vanish),
            2 => (1u64..3_000).prop_map(Op::Wait),
        ],
        1..60,
    )
}

/// The server's events of one connection, as the application saw them.
#[derive(Debug, Default)]
struct Seen {
    connected: bool,
    /// Message ids, in the order taken.
    messages: Vec<u64>,
    disconnected: bool,
}

fn take(
    net: &mut Net,
    n: usize,
    seen: &mut HashMap<ConnectionHandle, Seen>,
) -> Result<(), TestCaseError> {
    for _ in 0..n {
        let before = net.server.pending_events();
        let Some((h, e)) = net.server.poll_event() else {
            prop_assert_eq!(before, 0, "pending but none taken");
            return Ok(());
        };
        prop_assert_eq!(net.server.pending_events(), before - 1);
        let s = seen.entry(h).or_default();
        prop_assert!(!s.disconnected, "an event after Disconnected on {}", h);
        match e {
            Event::Connected { .. } => {
                prop_assert!(!s.connected && s.messages.is_empty(), "Connected not first");
                s.connected = true;
            }
            Event::Message(m) => {
                prop_assert!(s.connected, "a message before Connected");
                s.messages.push(id_of(&m.data));
            }
            Event::Disconnected { .. } => s.disconnected = true,
        }
    }
    Ok(())
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let addrs: Vec<std::net::SocketAddr> = (0..CLIENTS)
        .map(|i| {
            format!("198.51.100.{}:1000", i + 1)
                .parse()
                .expect("address")
        })
        .collect();
    let mut net = Net::new(ServerConfig::default(), &addrs);
    let conns: Vec<_> = (0..CLIENTS).map(|i| net.connect(i)).collect();
    net.exchange();
    for _ in 0..20 {
        net.step(Duration::from_millis(10));
    }
    prop_assert_eq!(net.server.connection_count(), CLIENTS);
    // what each client sent, in order; whether it closed
    let mut sent: Vec<Vec<u64>> = vec![Vec::new(); CLIENTS];
    let mut closed = [false; CLIENTS];
    let mut seen: HashMap<ConnectionHandle, Seen> = HashMap::new();
    let mut next_id = 0u64;
    for op in ops {
        match *op {
            Op::Send(i) if !closed[i] => {
                let now = net.now;
                net.clients[i]
                    .1
                    .send(now, conns[i], 0, payload(next_id, 24), SendMode::Plain)
                    .expect("sent");
                sent[i].push(next_id);
                next_id += 1;
            }
            Op::Send(_) => {}
            Op::Take(n) => take(&mut net, n, &mut seen)?,
            Op::Close(i) => {
                if !closed[i] {
                    let now = net.now;
                    net.clients[i].1.close(now, conns[i], 0, b"done");
                    closed[i] = true;
                }
            }
            Op::Vanish(i) => {
                if !closed[i] {
                    let seed = [0x60 + i as u8; 32];
                    let fresh = Endpoint::new(EndpointConfig::new(seed), None, net.now);
                    net.clients[i].1 = fresh.expect("client");
                    closed[i] = true;
                }
            }
            Op::Wait(ms) => {
                net.exchange();
                let end = net.now + Duration::from_millis(ms);
                while net.now < end {
                    net.step((end - net.now).min(Duration::from_millis(20)));
                }
            }
        }
        net.exchange();
    }
    // everything settles (closed connections drain and are forgotten, vanished ones time
    // out), then all is taken
    for _ in 0..400 {
        net.step(Duration::from_millis(50));
    }
    let open = closed.iter().filter(|c| !**c).count();
    prop_assert_eq!(net.server.connection_count(), open, "closed ones forgotten");
    take(&mut net, usize::MAX, &mut seen)?;
    prop_assert_eq!(net.server.pending_events(), 0);
    prop_assert_eq!(net.server.orphaned_connections(), 0);
    // each server connection is one client's: its messages are that client's, all, in order
    prop_assert_eq!(seen.len(), CLIENTS);
    for s in seen.values() {
        prop_assert!(s.connected);
        let client = s
            .messages
            .first()
            .and_then(|id| sent.iter().position(|v| v.contains(id)));
        match client {
            Some(i) => {
                prop_assert_eq!(&s.messages, &sent[i], "client {}'s messages", i);
                prop_assert_eq!(s.disconnected, closed[i], "client {} closed", i);
            }
            None => prop_assert!(s.messages.is_empty()),
        }
    }
    let delivered: usize = seen.values().map(|s| s.messages.len()).sum();
    let total: usize = sent.iter().map(Vec::len).sum();
    prop_assert_eq!(delivered, total, "every message, once");
    let disconnected = seen.values().filter(|s| s.disconnected).count();
    prop_assert_eq!(disconnected, CLIENTS - open);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: RngSeed::Fixed(0x0e76_42f0),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn events_come_out_per_connection_in_order_whatever_the_interleaving(ops in ops()) {
        run(&ops)?;
    }
}
