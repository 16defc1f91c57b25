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
        clients: 3,
        access_up: vec![LinkConfig::default()],
        access_down: vec![down],
        bottleneck: None,
        cross: (None, None),
        duration: Duration::from_millis(2500),
        drain: Duration::from_secs(3),
        seed: 3,
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
