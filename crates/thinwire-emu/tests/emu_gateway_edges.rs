//! The gateway peer with several edges (`gateway_edges`): one host per edge with its clients
//! beside it, one trunk per edge into one server gateway; every message arrives, each client
//! is one flow at its edge and one at the server gateway, nothing arrives out of order or
//! twice, and the processes' CPU is counted.
//!
//! Needs root and `/dev/net/tun`; skipped (with the reason printed) otherwise.

use std::time::Duration;

use thinwire_emu::{check_capabilities, run_emulated, EmuOptions, RealPeer};
use thinwire_lab::protocol::ProtocolSpec;
use thinwire_lab::scenario::Scenario;

#[test]
fn three_edges_carry_every_clients_messages() {
    if let Err(e) = check_capabilities() {
        println!("skipped: {e}");
        return;
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/emu-gateway-scale.toml"
    );
    let mut scn = Scenario::load(path).expect("scenario");
    assert_eq!((scn.clients, scn.gateway_edges), (4000, 8));
    scn.clients = 7;
    scn.gateway_edges = 3;
    scn.drain = Duration::from_secs(2);
    let Some(ProtocolSpec::Thinwire(t)) = scn.protocols.first().cloned() else {
        panic!("a thinwire scenario");
    };
    let run = run_emulated(
        &scn,
        &EmuOptions {
            duration: Some(Duration::from_secs(4)),
            peers: Some(vec![RealPeer::Gateway(t)]),
            ..EmuOptions::default()
        },
    )
    .expect("emulated run");
    let r = run
        .results
        .run(&"thinwire-gateway".into(), None)
        .expect("a gateway run");
    assert!(r.messages.sent > 20, "sent {}", r.messages.sent);
    assert_eq!(r.messages.delivered, r.messages.sent, "no loss: all arrive");
    // 10 ms each way plus the hold (and a debug build on a busy machine): no message waited
    // for a trunk to be redialled.
    assert!(
        r.latency_ms.p50 >= 10.0 && r.latency_ms.max < 1000.0,
        "{r:?}"
    );
    let counter = |name: &str| {
        run.counters[0]
            .counters
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    };
    assert_eq!(counter("gateway_flows"), Some(2 * 7));
    // every ReliableOrdered channel delivered its messages once and in order
    assert_eq!(counter("messages_out_of_order"), Some(0));
    for cpu in [
        "cpu_ms_server_gateway",
        "cpu_ms_game_server",
        "cpu_ms_edges",
    ] {
        assert!(counter(cpu).is_some(), "{cpu}");
    }
}
