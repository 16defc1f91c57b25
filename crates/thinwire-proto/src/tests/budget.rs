//! The endpoint's memory budget against peers that make it hold what they can: every test
//! counts memory in bytes (`EndpointStats::memory_held`, the sum of what each connection
//! holds) against the budget, in simulated time. Before the budget, 8 connections from one
//! address that never sent sequence number 0 of an ordered channel pinned 16 MiB each, with
//! nothing bounding their sum.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use thinwire_netmodel::LinkConfig;

use super::net::Net;
use crate::testing::{Pair, Verdict};
use crate::wire::{self, ConnectionId, MessageHeader, ShortHeader};
use crate::{
    ChannelKind, CipherSuite, ConnectionHandle, DisconnectReason, EndpointConfig, Event,
    MemoryBudget, PeerError, SendMode, ServerConfig, TransportConfig, CLOSE_MEMORY_BUDGET,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The defaults scaled down by 32 (1 MiB in all, 256 KiB per source, 32 KiB per connection),
/// in cleartext so that the hostile clients can write their own packets.
fn scaled_configs() -> (EndpointConfig, EndpointConfig) {
    let transport = TransportConfig {
        recv_buffer: 32 << 10,
        ..TransportConfig::default()
    };
    let mut server = EndpointConfig::new([7; 32]).insecure_cleartext();
    server.transport = std::sync::Arc::new(transport);
    server.memory = MemoryBudget {
        total: 1 << 20,
        per_source: 256 << 10,
        grace: Duration::from_secs(2),
    };
    let client = EndpointConfig::new([9; 32]).insecure_cleartext();
    (server, client)
}

/// A hostile connection: the client endpoint it lives on, its handle there, the server's id
/// for it, and the next sequence number and packet number it forges.
struct Hostile {
    client: usize,
    handle: ConnectionHandle,
    cid: ConnectionId,
    seq: u64,
    pn: u64,
}

impl Hostile {
    /// One packet with one 1,000-byte message of an ordered channel, never sequence number 0:
    /// everything it sends waits for a message that never comes.
    fn packet(&mut self) -> Vec<u8> {
        self.seq += 1;
        self.pn += 1;
        let mut d = Vec::new();
        ShortHeader::encode(&self.cid, self.pn, 4, &mut d);
        let header = MessageHeader {
            channel: 0,
            kind: ChannelKind::ReliableOrdered,
            seq: self.seq,
            compact_seq: false,
            key: None,
            fragment: None,
        };
        wire::encode_message(&header, &[0xab; 1000], &mut d);
        d
    }
}

fn addr(a: u8, b: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, a, b], 5000))
}

/// Opens `per_client` connections from each client in `clients` and returns them as hostile
/// connections.
fn open_hostile(net: &mut Net, clients: std::ops::Range<usize>, per_client: usize) -> Vec<Hostile> {
    let mut out = Vec::new();
    for client in clients {
        for _ in 0..per_client {
            let handle = net.connect(client);
            out.push(Hostile {
                client,
                handle,
                cid: ConnectionId::new(&[0; 1]).expect("placeholder"),
                seq: 0,
                pn: 1000,
            });
        }
    }
    net.run(ms(100));
    for h in &mut out {
        h.cid = net.clients[h.client]
            .1
            .connection(h.handle)
            .and_then(|c| c.remote_cid())
            .expect("connected");
    }
    out
}

/// Every hostile connection sends `packets` forged packets.
fn attack(net: &mut Net, hostile: &mut [Hostile], packets: usize) {
    for h in hostile.iter_mut() {
        let from = net.clients[h.client].0;
        for _ in 0..packets {
            let d = h.packet();
            net.server.handle_datagram(net.now, from, &d);
        }
    }
}

/// The Done-when attack of the budget at a 32nd of its size: 8 connections from one address
/// and 32 from 8 more (4 each) fill their head-of-line buffers while two honest players
/// play. Memory stays within the budget (plus at most one packet per connection), the
/// honest players lose nothing and are never closed. Then 40 more hostile connections come
/// from 10 more addresses: the fair share halves, the endpoint goes over budget, and the
/// connections holding more than the new share are closed after the grace period with a
/// reason both ends see.
#[test]
fn head_of_line_connections_stay_within_the_endpoint_budget() {
    let (server_config, client_config) = scaled_configs();
    // clients 0..9: hostile sources; 9, 10: honest players; 11..21: more hostile sources
    let mut addrs: Vec<SocketAddr> = (0..9).map(|i| addr(1, i + 1)).collect();
    addrs.extend([addr(2, 1), addr(2, 2)]);
    addrs.extend((0..10).map(|i| addr(3, i + 1)));
    let total = server_config.memory.total;
    let server = (server_config, ServerConfig::default());
    let mut net = Net::with_configs(server, client_config, &addrs);
    let mut hostile = open_hostile(&mut net, 0..1, 8);
    hostile.extend(open_hostile(&mut net, 1..9, 4));
    let honest: Vec<(usize, ConnectionHandle)> = (9..11).map(|c| (c, net.connect(c))).collect();
    net.run(ms(100));
    assert_eq!(net.server.connection_count(), 42);
    let mut most_held = 0;
    let mut sent = 0usize;
    let step = |net: &mut Net, hostile: &mut [Hostile], sent: &mut usize| {
        attack(net, hostile, 4);
        for (c, h) in &honest {
            let data = Bytes::from(format!("move {sent}"));
            net.clients[*c]
                .1
                .send(net.now, *h, 0, data, SendMode::Plain)
                .expect("send");
        }
        *sent += 1;
        net.run(ms(20));
        net.server.stats().memory_held as usize
    };
    for _ in 0..250 {
        most_held = most_held.max(step(&mut net, &mut hostile, &mut sent));
    }
    // 40 connections x 32 KiB would be 1.25 MiB: the budget holds it to 1 MiB, give or take a
    // message per connection
    let slack = 42 * 1200;
    assert!(
        most_held <= total + slack,
        "held {most_held} bytes, budget {total}"
    );
    assert!(most_held > total - slack, "the attack filled the budget");
    let refused: u64 = hostile
        .iter()
        .filter_map(|h| {
            let s = net
                .server
                .connections()
                .find(|&s| net.server.remote_address(s) == Some(net.clients[h.client].0))?;
            net.server
                .connection_stats(s)
                .map(|st| st.udp.dropped_buffer_full)
        })
        .sum();
    assert!(refused > 0, "no hostile packet was refused");
    assert_eq!(
        net.server.stats().closed_over_budget,
        0,
        "nobody over budget yet"
    );

    // ten more hostile addresses
    hostile.extend(open_hostile(&mut net, 11..21, 4));
    assert_eq!(net.server.connection_count(), 82);
    for _ in 0..250 {
        most_held = most_held.max(step(&mut net, &mut hostile, &mut sent));
    }
    let closed = net.server.stats().closed_over_budget;
    assert!(closed >= 20, "{closed} connections closed");
    assert!(
        (net.server.stats().memory_held as usize) <= total + slack,
        "back within the budget: {}",
        net.server.stats().memory_held
    );
    let over_budget = net
        .server_events
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                Event::Disconnected {
                    reason: DisconnectReason::Peer(PeerError::OverMemoryBudget { held, share })
                } if held > share
            )
        })
        .count();
    assert_eq!(over_budget as u64, closed);
    // the peers were told why
    let told = hostile
        .iter()
        .filter(|h| {
            matches!(
                net.outcome(h.client, h.handle),
                Some(Err(DisconnectReason::ClosedByPeer { code, .. })) if code == CLOSE_MEMORY_BUDGET
            )
        })
        .count();
    assert_eq!(told as u64, closed);
    // the honest players: every move delivered in order, never closed
    let delivered: Vec<String> = net
        .server_events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Message(m) => Some(String::from_utf8_lossy(&m.data).into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(delivered.len(), 2 * sent, "honest messages lost");
    for (c, h) in &honest {
        assert_eq!(
            net.outcome(*c, *h),
            Some(Ok(())),
            "an honest player was closed"
        );
    }
}

/// A peer that pings but never acknowledges makes the server hold everything the application
/// sends it, up to `send_buffer`. Once the budget has no room and the connection is above its
/// fair share (here two connections share a 64 KiB budget), the application's sends to it
/// are refused with `BufferFull`, while the other connection's still go; what the application
/// queued is never a reason to close a connection.
#[test]
fn sends_to_a_peer_that_never_acknowledges_stop_at_its_share() {
    let budget = MemoryBudget {
        total: 64 << 10,
        per_source: 64 << 10,
        grace: Duration::from_secs(1),
    };
    let mut pair = Pair::builder(31)
        .link(LinkConfig::default().with_delay(ms(10)))
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .server_memory(budget)
        .build();
    let (_c, s) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    let (_c2, s2) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    // only the first connection's packets are made into PINGs: it never acknowledges
    let first_cid = pair
        .client()
        .endpoint()
        .connection(_c)
        .and_then(|c| c.remote_cid())
        .expect("id");
    pair.client_mut()
        .set_filter(Some(Box::new(move |_, _, d: &mut Vec<u8>| {
            if !wire::is_long_header(d) {
                if let Ok((h, offset)) = ShortHeader::decode(d, 8) {
                    if h.dst_cid == first_cid {
                        d.truncate(offset);
                        wire::encode_ping(d);
                    }
                }
            }
            Verdict::Pass
        })));
    let mut refused_at = None;
    for i in 0..400 {
        let now = pair.now();
        let sent = pair.server_mut().endpoint_mut().send(
            now,
            s,
            0,
            Bytes::from(vec![1u8; 2000]),
            SendMode::Plain,
        );
        if sent.is_err() && refused_at.is_none() {
            refused_at = Some(i);
        }
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .send(now, s2, 0, Bytes::from(vec![2u8; 100]), SendMode::Plain)
            .expect("the other connection is within its share");
        pair.run_for(ms(10));
        let held = pair.server().endpoint().stats().memory_held as usize;
        assert!(held <= budget.total + 2100, "held {held}");
    }
    let refused_at = refused_at.expect("sends were refused");
    // the first connection filled the free budget (about 31 messages of 2 KB), no more
    assert!(
        (25..40).contains(&refused_at),
        "refused from send {refused_at}"
    );
    assert!(
        pair.server().disconnected().is_none(),
        "closed for what it was sent"
    );
    assert_eq!(pair.server().endpoint().stats().closed_over_budget, 0);
    assert_eq!(pair.server_mut().take_messages(0).len(), 0);
    let small = pair.client_mut().take_messages(0);
    let small = small.iter().filter(|m| m.data.len() == 100).count();
    assert_eq!(small, 400, "the other connection's data");
}

/// A connection within its fair share is never closed, however long memory stays tight: two
/// connections from two sources share a 64 KiB budget (32 KiB each). The greedy one takes all
/// that is free; then the modest one grows, within its share, which it may even though
/// nothing is free: the endpoint is over budget, and only the greedy one, above its share,
/// is closed once the grace has passed.
#[test]
fn a_connection_within_its_fair_share_is_never_closed() {
    let (mut server_config, client_config) = scaled_configs();
    server_config.memory = MemoryBudget {
        total: 64 << 10,
        per_source: 64 << 10,
        grace: Duration::from_secs(1),
    };
    server_config.transport = std::sync::Arc::new(TransportConfig {
        recv_buffer: 1 << 20,
        ..TransportConfig::default()
    });
    let addrs = [addr(1, 1), addr(1, 2)];
    let server = (server_config, ServerConfig::default());
    let mut net = Net::with_configs(server, client_config, &addrs);
    let mut modest = open_hostile(&mut net, 0..1, 1);
    let mut greedy = open_hostile(&mut net, 1..2, 1);
    // the modest one holds 10 messages (about 10 KB), the greedy one takes the rest
    attack(&mut net, &mut modest, 10);
    attack(&mut net, &mut greedy, 100);
    net.run(ms(20));
    let held = net.server.stats().memory_held as usize;
    assert!(held <= 64 << 10, "{held}");
    assert_eq!(net.server.stats().closed_over_budget, 0);
    // the modest one grows to about 27 KB, within its share
    attack(&mut net, &mut modest, 15);
    assert!(
        net.server.stats().memory_held as usize > 64 << 10,
        "over budget"
    );
    for _ in 0..100 {
        attack(&mut net, &mut greedy, 4);
        net.run(ms(20));
    }
    assert_eq!(net.server.stats().closed_over_budget, 1);
    assert_eq!(
        net.outcome(0, modest[0].handle),
        Some(Ok(())),
        "modest closed"
    );
    assert!(matches!(
        net.outcome(1, greedy[0].handle),
        Some(Err(DisconnectReason::ClosedByPeer { code, .. })) if code == CLOSE_MEMORY_BUDGET
    ));
}

/// One datagram makes at most `MAX_MESSAGES_PER_PACKET` events: a packet of 65 empty
/// unreliable messages is dropped whole, one of 64 delivers 64; and a sender that queues a
/// thousand empty messages at once packs them so that every one arrives.
#[test]
fn one_datagram_makes_at_most_64_messages() {
    let mut pair = Pair::builder(32)
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (c, s) = pair.connect(&[ChannelKind::Unreliable]).expect("connects");
    let cid = pair
        .client()
        .endpoint()
        .connection(c)
        .and_then(|conn| conn.remote_cid())
        .expect("established");
    let from = pair.client().addr();
    for (pn, count) in [(5000u64, 65usize), (5001, 64)] {
        let mut d = Vec::new();
        ShortHeader::encode(&cid, pn, 4, &mut d);
        for _ in 0..count {
            let header = MessageHeader {
                channel: 0,
                kind: ChannelKind::Unreliable,
                seq: 0,
                compact_seq: false,
                key: None,
                fragment: None,
            };
            wire::encode_message(&header, &[], &mut d);
        }
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    pair.flush();
    assert_eq!(pair.server_mut().take_messages(0).len(), 64);
    let st = pair
        .server()
        .endpoint()
        .connection_stats(s)
        .expect("connection");
    assert_eq!(st.udp.malformed_packets, 1);
    for _ in 0..1000 {
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::new(), SendMode::Plain)
            .expect("send");
    }
    pair.run_for(ms(200));
    assert_eq!(pair.server_mut().take_messages(0).len(), 1000);
    let st = pair
        .server()
        .endpoint()
        .connection_stats(s)
        .expect("connection");
    assert_eq!(
        st.udp.malformed_packets, 1,
        "the sender never packs more than 64"
    );
}
