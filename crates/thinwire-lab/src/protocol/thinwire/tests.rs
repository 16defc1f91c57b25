use std::time::Duration;

use super::*;

use crate::protocol::ProtocolSpec;
use crate::sim::{run, RunOutput, SimSetup};
use crate::workload::{MessagingWorkload, WorkloadSpec};
use thinwire_netmodel::{LinkConfig, LossModel};

fn thinwire(name: &str) -> ThinwireProtocol {
    match ProtocolSpec::parse(name) {
        Some(ProtocolSpec::Thinwire(t)) => t,
        other => panic!("{name}: {other:?}"),
    }
}

/// Two 2 KB messages to each of 3 clients over `down` (RTT all on it).
fn two_messages(name: &str, down: LinkConfig) -> RunOutput {
    let setup = SimSetup {
        duration: Duration::from_millis(2500),
        drain: Duration::from_secs(3),
        seed: 3,
        ..SimSetup::access_only(3, LinkConfig::default(), down)
    };
    let w = [WorkloadSpec::Messaging(MessagingWorkload {
        start: Duration::from_secs(1),
        ..MessagingWorkload::default()
    })];
    run(&thinwire(name), &setup, &w, &mut |_| {})
}

#[test]
fn shard_suffix_parses_and_round_trips() {
    for (name, k) in [
        ("thinwire-deadline-k2", 2),
        ("thinwire-fec+3-k2", 2),
        ("thinwire-rtx-only-k64", 64),
    ] {
        let t = thinwire(name);
        assert_eq!(t.deadline_shards, Some(k), "{name}");
        assert!(t.deadline.is_some());
        assert_eq!(t.name(), name);
    }
    let t = thinwire("thinwire-deadline-k5-insecure-cleartext");
    assert_eq!((t.deadline_shards, t.insecure_cleartext), (Some(5), true));
    assert_eq!(t.name(), "thinwire-deadline-k5-insecure-cleartext");
    for bad in [
        "thinwire-k2",
        "thinwire-deadline-k0",
        "thinwire-deadline-k02",
        "thinwire-deadline-k65",
        "thinwire-deadline-k",
        "thinwire-deadline-k2-k3",
        "thinwire-deadline-insecure-cleartext-k2",
    ] {
        assert_eq!(ProtocolSpec::parse(bad), None, "{bad}");
    }
}

#[test]
fn k_shards_are_k_datagrams_and_counters_leave_out_handshake_and_acks() {
    let link = LinkConfig::default().with_delay(Duration::from_millis(100));
    for (name, k) in [
        ("thinwire-rtx-only-k2", 2.0),
        ("thinwire-deadline-k3", 3.0),
        ("thinwire-deadline", 4.0),
    ] {
        let out = two_messages(name, link.clone());
        assert_eq!(out.messages.len(), 6);
        assert!(out.messages.iter().all(|m| m.delivered_us.is_some()));
        let c = |n: &str| out.counters.get(n).copied().unwrap_or(f64::NAN);
        // lossless: exactly k data datagrams per message, nothing else
        assert_eq!(c("tw_server_message_bytes"), 6.0 * 2048.0, "{name}");
        assert_eq!(c("tw_server_datagrams"), 6.0 * k, "{name}");
        assert!(c("tw_server_payload_bytes") >= 6.0 * 2048.0, "{name}");
        assert_eq!(
            c("tw_server_bytes_at_40b_header"),
            c("tw_server_payload_bytes") + 40.0 * 6.0 * k,
            "{name}"
        );
        // thinwire's own headers are larger than Pangolin's 40 bytes
        let wire = c("tw_server_wire_bytes") - c("tw_server_payload_bytes");
        assert!(wire > 40.0 * 6.0 * k, "{name}: {wire}");
        // the clients sent no messages, hence no data datagrams
        assert_eq!(c("tw_client_datagrams"), 0.0, "{name}");
    }
}

#[test]
fn repairs_and_parity_count_as_datagrams() {
    let lossy = LinkConfig {
        loss: LossModel::Bernoulli { p: 0.3 },
        ..LinkConfig::default().with_delay(Duration::from_millis(50))
    };
    let out = two_messages("thinwire-fec+2-k2", lossy);
    let c = |n: &str| out.counters.get(n).copied().unwrap_or(f64::NAN);
    // every stage sends at least the 2 missing shards plus 2 parity shards
    assert!(c("tw_server_datagrams") >= 6.0 * 4.0, "{out:?}");
    assert!(c("tw_server_payload_bytes") >= 2.0 * c("tw_server_message_bytes"));
}

#[test]
fn connection_counters_are_kept_per_side_and_sum_to_the_runs() {
    let lossy = LinkConfig {
        loss: LossModel::Bernoulli { p: 0.2 },
        ..LinkConfig::default().with_delay(Duration::from_millis(50))
    };
    let out = two_messages("thinwire", lossy);
    let t = out.thinwire.expect("thinwire counters");
    let (server, client, total) = (t.server, t.client, t.total());
    assert_eq!(
        total.recovery.packets_lost,
        server.recovery.packets_lost + client.recovery.packets_lost
    );
    // the server sends the messages: it retransmits, the clients acknowledge
    assert!(server.recovery.packets_lost > 0, "{t:?}");
    assert!(server.frames.retransmitted > 0, "{t:?}");
    assert_eq!(client.frames.retransmitted, 0, "{t:?}");
    assert!(
        total.recovery.repairs_in_time + total.recovery.repairs_late
            <= total.frames.retransmitted + total.recovery.repair_copies
    );
    // the payload counter of the named counters is the typed one
    let named = |side: &str| out.counters[&format!("tw_{side}_payload_bytes")] as u64;
    assert_eq!(named("server"), server.payload_bytes.total());
    assert_eq!(named("client"), client.payload_bytes.total());
    let mut twice = t;
    twice += t;
    assert_eq!(
        twice.total().recovery.packets_lost,
        2 * total.recovery.packets_lost
    );
    assert_eq!(twice.server.frames.bundled, 2 * server.frames.bundled);
    // no message went through deadline delivery
    assert_eq!(t.with_deadline(), None);
}

#[test]
fn client_addresses_round_trip() {
    for c in [0u32, 1, 255, 256, 65_535, 100_000] {
        assert_eq!(client_of(client_addr(c)), Some(c));
    }
    assert_eq!(client_of(server_addr()), None);
}

#[test]
fn copy_first_suffix_parses_and_round_trips() {
    for name in [
        "thinwire-copy-first",
        "thinwire-full-mapping-copy-first",
        "thinwire-copy-first-insecure-cleartext",
    ] {
        let t = thinwire(name);
        assert!(t.copy_first, "{name}");
        assert_eq!(t.name(), name);
        assert_eq!(t.transport().repair, Some(COPY_FIRST_TARGET), "{name}");
    }
    assert_eq!(
        thinwire("thinwire").transport().repair,
        TransportConfig::default().repair
    );
    for bad in [
        "thinwire-deadline-copy-first",
        "thinwire-thin-off-copy-first",
        "thinwire-copy-first-copy-first",
        "thinwire-insecure-cleartext-copy-first",
        "tcp-model-copy-first",
        "copy-first",
    ] {
        assert_eq!(ProtocolSpec::parse(bad), None, "{bad}");
    }
}

/// The AO-like thin stream (a message every 632 ms on average, far apart against the RTT)
/// to 20 clients for 120 s over 100 ms each way and 3% loss each way.
fn thin_stream_at_3_percent(name: &str) -> RunOutput {
    let link = LinkConfig::default()
        .with_delay(Duration::from_millis(100))
        .with_bernoulli_loss(0.03);
    let setup = SimSetup {
        duration: Duration::from_secs(120),
        seed: 11,
        ..SimSetup::access_only(20, link.clone(), link)
    };
    let w = [WorkloadSpec::Profile(crate::workload::ProfileWorkload {
        profile: *crate::workload::GameProfile::by_key("anarchy-online").expect("profile"),
        direction: crate::workload::Direction::Down,
        class: "game".into(),
        deadline: None,
        target: crate::workload::DEFAULT_DEADLINE_TARGET,
        rate_scale: 1.0,
    })];
    run(&thinwire(name), &setup, &w, &mut |_| {})
}

/// A message whose first copy is lost waits for a retransmission timeout, at least one RTT,
/// unless its first transmission was copied: `-copy-first` sends the copies (one repair
/// copy or more per message) and, once the connection's loss estimate has settled (messages
/// sent after the first 10 s), almost no message arrives later than the one-way delay plus
/// 3/4 of an RTT, where about one in thirty-three does without it.
#[test]
fn copy_first_brings_a_lost_first_copy_within_the_round_trip() {
    let late_share = |out: &RunOutput| {
        let settled: Vec<_> = out
            .messages
            .iter()
            .filter(|m| m.sent_us >= 10_000_000)
            .collect();
        let late = settled
            .iter()
            .filter(|m| {
                m.delivered_us
                    .is_none_or(|d| d.saturating_sub(m.sent_us) > 250_000)
            })
            .count();
        late as f64 / settled.len() as f64
    };
    let plain = thin_stream_at_3_percent("thinwire");
    let copied = thin_stream_at_3_percent("thinwire-copy-first");
    assert!(plain.messages.len() > 3000, "{}", plain.messages.len());
    assert_eq!(plain.messages.len(), copied.messages.len());
    assert!(copied.messages.iter().all(|m| m.delivered_us.is_some()));
    let copies = |out: &RunOutput| {
        out.thinwire
            .expect("counters")
            .server
            .recovery
            .repair_copies
    };
    assert!(
        copies(&copied) as usize >= copied.messages.len(),
        "{} repair copies for {} messages",
        copies(&copied),
        copied.messages.len()
    );
    let (p, c) = (late_share(&plain), late_share(&copied));
    assert!(p > 0.015, "plain thinwire: {p}");
    assert!(c < 0.004, "with copies: {c} (plain {p})");
}
