//! Tests of the event loop: paths, fan-out, latest-value semantics, determinism.

use std::sync::Arc;
use std::time::Duration;

use thinwire_netmodel::{LinkConfig, QueueLimit};

use super::*;
use crate::protocol::{TcpModel, UdpModel};
use crate::workload::{Direction, MmorpgWorkload, ReplayWorkload, TraceRow, WorkloadSpec};

const MS: Duration = Duration::from_millis(1);

fn rows(rows: &[(u64, Direction, u32, &str)]) -> WorkloadSpec {
    WorkloadSpec::Replay(ReplayWorkload {
        rows: Arc::new(
            rows.iter()
                .map(|&(t, dir, size, class)| TraceRow {
                    at: Duration::from_millis(t),
                    dir,
                    size,
                    class: class.to_owned(),
                    deadline: None,
                })
                .collect(),
        ),
        origin: "test".into(),
        target: crate::workload::DEFAULT_DEADLINE_TARGET,
        phase: Duration::ZERO,
        looped: false,
    })
}

fn latencies(out: &RunOutput) -> Vec<Option<u64>> {
    out.messages
        .iter()
        .map(|m| m.delivered_us.map(|d| d - m.sent_us))
        .collect()
}

#[test]
fn access_and_bottleneck_delays_and_serialization_add_up() {
    let w = [rows(&[
        (0, Direction::Up, 100, "x"),
        (1000, Direction::Down, 100, "x"),
    ])];
    let mut s = SimSetup::access_only(
        1,
        LinkConfig::default()
            .with_delay(10 * MS)
            .with_bandwidth(128_000),
        LinkConfig::default().with_delay(20 * MS),
    );
    s.bottleneck = Some((
        LinkConfig::default()
            .with_delay(5 * MS)
            .with_bandwidth(1_000_000),
        LinkConfig::default().with_delay(7 * MS),
    ));
    let out = run(&UdpModel, &s, &w, &mut |_| {});
    // Up: 128 B at 128 kbit/s = 8 ms, + 10 ms, then 128 B at 1 Mbit/s = 1.024 ms, + 5 ms.
    assert_eq!(latencies(&out), vec![Some(24_024), Some(27_000)]);
    assert_eq!(out.wire.packets, 2);
    assert_eq!(out.wire.bytes, 256);
    assert_eq!(out.wire.payload_bytes_sent, 200);
    assert_eq!(out.bottleneck.stats.sent, 2);
}

#[test]
fn udp_loses_what_the_link_loses_and_tcp_recovers_it() {
    let lossy = LinkConfig::default()
        .with_delay(20 * MS)
        .with_bernoulli_loss(0.1);
    let s = SimSetup::access_only(20, lossy.clone(), lossy);
    let w = [WorkloadSpec::Profile(crate::workload::ProfileWorkload {
        profile: *crate::workload::GameProfile::by_key("age-of-conan").expect("profile"),
        direction: Direction::Down,
        class: "game".into(),
        deadline: None,
        target: crate::workload::DEFAULT_DEADLINE_TARGET,
        rate_scale: 1.0,
    })];
    let udp = run(&UdpModel, &s, &w, &mut |_| {});
    let n = udp.messages.len() as f64;
    let lost = udp
        .messages
        .iter()
        .filter(|m| m.delivered_us.is_none())
        .count() as f64;
    assert!(n > 1000.0);
    assert!((lost / n - 0.1).abs() < 0.02, "{}", lost / n);
    let tcp = run(&TcpModel::default(), &s, &w, &mut |_| {});
    assert_eq!(
        tcp.messages.len(),
        udp.messages.len(),
        "same workload for every protocol"
    );
    assert!(tcp.messages.iter().all(|m| m.delivered_us.is_some()));
    // Same application traffic: identical send times.
    assert!(tcp
        .messages
        .iter()
        .zip(&udp.messages)
        .all(|(a, b)| a.sent_us == b.sent_us && a.size == b.size));
}

#[test]
fn server_relays_attacks_and_talk_to_the_zone() {
    let s = SimSetup::access_only(
        6,
        LinkConfig::default().with_delay(10 * MS),
        LinkConfig::default().with_delay(10 * MS),
    );
    let w = [WorkloadSpec::Mmorpg(MmorpgWorkload {
        zone_size: 3,
        ..MmorpgWorkload::default()
    })];
    let out = run(&UdpModel, &s, &w, &mut |_| {});
    let class = |name: &str| out.classes.iter().position(|c| c == name).expect("class") as u16;
    let (attack, talk) = (class("attack"), class("talk"));
    let up_relayable = out
        .messages
        .iter()
        .filter(|m| m.dir == Direction::Up && (m.class == attack || m.class == talk))
        .count();
    let relayed = out
        .messages
        .iter()
        .filter(|m| m.dir == Direction::Down && (m.class == attack || m.class == talk))
        .count();
    // Lossless: every attack and talk reaches the 2 other zone members.
    assert_eq!(relayed, 2 * up_relayable);
    let relayed_lat: Vec<u64> = out
        .messages
        .iter()
        .filter(|m| m.dir == Direction::Down && m.class == attack)
        .filter_map(|m| m.delivered_us.map(|d| d - m.sent_us))
        .collect();
    assert!(relayed_lat.iter().all(|&l| l == 10_000));
}

#[test]
fn a_newer_latest_value_satisfies_older_lost_ones() {
    // Three moves; the link loses the second datagram only.
    let trace = thinwire_netmodel::Trace::parse("10,0\n10,1\n10,0\n").expect("trace");
    let up = LinkConfig::default().with_trace(Arc::new(trace));
    let s = SimSetup::access_only(1, up, LinkConfig::default());
    let w = [rows(&[
        (0, Direction::Up, 25, "move"),
        (100, Direction::Up, 25, "move"),
        (200, Direction::Up, 25, "move"),
    ])];
    let out = run(&UdpModel, &s, &w, &mut |_| {});
    assert_eq!(
        latencies(&out),
        vec![Some(10_000), Some(110_000), Some(10_000)]
    );
    // For an ordered class the lost message stays lost.
    let w = [rows(&[
        (0, Direction::Up, 25, "talk"),
        (100, Direction::Up, 25, "talk"),
        (200, Direction::Up, 25, "talk"),
    ])];
    let out = run(&UdpModel, &s, &w, &mut |_| {});
    assert_eq!(latencies(&out), vec![Some(10_000), None, Some(10_000)]);
}

#[test]
fn same_seed_same_outcome_with_cross_traffic() {
    let mut s = SimSetup::access_only(
        10,
        LinkConfig::default()
            .with_delay(10 * MS)
            .with_bandwidth(100_000)
            .with_queue(QueueLimit::Bytes(8000)),
        LinkConfig::default().with_delay(10 * MS),
    );
    s.bottleneck = Some((
        LinkConfig::default()
            .with_bandwidth(300_000)
            .with_queue(QueueLimit::Bytes(10_000)),
        LinkConfig::default()
            .with_bandwidth(300_000)
            .with_queue(QueueLimit::Time(50 * MS)),
    ));
    let cross = CrossTraffic {
        rate_pps: 30.0,
        packet_bytes: 1000,
        shape: CrossShape::Poisson,
    };
    s.cross = (Some(cross), Some(cross));
    let w = [WorkloadSpec::Mmorpg(MmorpgWorkload::default())];
    let a = run(&TcpModel::default(), &s, &w, &mut |_| {});
    let b = run(&TcpModel::default(), &s, &w, &mut |_| {});
    assert_eq!(a.messages, b.messages);
    assert_eq!(a.wire, b.wire);
    assert!(a.bottleneck.drop_rate() > 0.0);
    // The network counters: every game packet once, every drop once.
    let n = a.network;
    assert_eq!(n.game_sent.iter().sum::<u64>(), a.wire.packets);
    let dropped = |l: &LinkSummary| l.stats.lost + l.stats.dropped_queue;
    let all_dropped = n.game_dropped.iter().chain(&n.cross_dropped).sum::<u64>();
    assert_eq!(all_dropped, dropped(&a.access) + dropped(&a.bottleneck));
    let game_on_bottleneck = a.bottleneck.stats.sent - n.cross_sent.iter().sum::<u64>();
    assert!(n.cross_dropped[0] > 0 && game_on_bottleneck > 0);
    let mut c = crate::protocol::Counters::new();
    n.add_to(&mut c);
    assert_eq!(c["net_dropped"], all_dropped as f64);
    s.seed = 2;
    let c = run(&TcpModel::default(), &s, &w, &mut |_| {});
    assert_ne!(a.messages, c.messages);
}

/// thinwire's encryption costs exactly its AEAD tag: on a lossless link the
/// encrypted and the cleartext configuration send the same packets at the
/// same times, and every packet after the handshake (Hello, Challenge,
/// Connect, Accept: four per client) is 16 bytes longer. The handshakes
/// differ by one byte: the encrypting client's Connect offers two cipher
/// suites, the cleartext one only one.
#[test]
fn encryption_costs_sixteen_bytes_per_data_packet() {
    use crate::protocol::{Mapping, ThinwireProtocol};
    let link = LinkConfig::default().with_delay(20 * MS);
    let clients = 3;
    let s = SimSetup::access_only(clients, link.clone(), link);
    let w = [rows(&[
        (0, Direction::Up, 30, "x"),
        (50, Direction::Down, 300, "x"),
        (400, Direction::Up, 2500, "x"),
        (900, Direction::Down, 40, "x"),
    ])];
    let tw = |insecure_cleartext| ThinwireProtocol {
        thin: true,
        mapping: Mapping::SingleOrdered,
        deadline: None,
        deadline_shards: None,
        insecure_cleartext,
        copy_first: false,
    };
    let sealed = run(&tw(false), &s, &w, &mut |_| {});
    let clear = run(&tw(true), &s, &w, &mut |_| {});
    assert_eq!(latencies(&sealed), latencies(&clear));
    assert!(latencies(&sealed).iter().all(Option::is_some));
    assert_eq!(sealed.wire.packets, clear.wire.packets);
    assert_eq!(
        sealed.wire.payload_bytes_sent,
        clear.wire.payload_bytes_sent
    );
    let data_packets = sealed.wire.packets - 4 * u64::from(clients);
    assert_eq!(
        sealed.wire.bytes - clear.wire.bytes,
        16 * data_packets + u64::from(clients)
    );
}
