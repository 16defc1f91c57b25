//! Every real peer through the emulator on a shortened `emu-ao` scenario.
//!
//! Needs root and `/dev/net/tun`; skipped (with the reason printed) otherwise.

use std::time::Duration;

use thinwire_emu::{check_capabilities, run_emulated, EmuOptions};
use thinwire_lab::scenario::Scenario;

#[test]
fn all_peers_on_short_ao_run() {
    if let Err(e) = check_capabilities() {
        println!("skipped: {e}");
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/emu-ao.toml");
    let mut scn = Scenario::load(path).expect("scenario");
    scn.clients = 2;
    scn.drain = Duration::from_secs(3);
    let run = run_emulated(
        &scn,
        &EmuOptions {
            duration: Some(Duration::from_secs(3)),
            ..EmuOptions::default()
        },
    )
    .expect("emulated run");
    let results = &run.results;
    let json = results.to_json_pretty();
    println!("{json}");
    assert_eq!(results.engine.as_str(), "emu");
    let mut names = vec![
        "tcp-nodelay",
        "tcp-thin-linear",
        "kcp",
        "kcp-fast",
        "thinwire",
        "thinwire-gateway",
        "quic-streams",
    ];
    if thinwire_enet::available() {
        names.extend(["enet-reliable", "enet-unsequenced"]);
    }
    if thinwire_gns::available() {
        names.extend(["gns-reliable", "gns-unreliable"]);
    }
    for name in names {
        let r = results
            .run(&name.into(), None)
            .unwrap_or_else(|| panic!("no run for {name}"));
        assert!(!r.model, "{name} labelled as a model");
        assert!(r.messages.sent > 0, "{name} sent nothing");
        assert!(
            r.messages.delivered * 10 >= r.messages.sent * 9,
            "{name}: {} of {} delivered",
            r.messages.delivered,
            r.messages.sent
        );
        let p50 = r.latency_ms.p50;
        assert!(
            p50 >= 99.0,
            "{name}: p50 {p50} below the 100 ms one-way delay"
        );
    }
    // The stacks' own counters come back, one entry per peer, from the
    // peer's own namespaces: kernel TCP sent segments, thinwire sent packets.
    let counter = |peer: &str, name: &str| {
        run.counters
            .iter()
            .find(|c| c.peer == peer.into())
            .and_then(|c| c.counters.iter().find(|(k, _)| k == name))
            .map(|(_, v)| *v)
    };
    assert_eq!(run.counters.len(), results.protocol_runs().count());
    for tcp in ["tcp-nodelay", "tcp-thin-linear"] {
        let out = counter(tcp, "OutSegs").expect("OutSegs");
        let wire = results.run(&tcp.into(), None).unwrap().wire.packets;
        // Every segment the hosts sent crossed the emulated links.
        assert!(
            out > 0 && out <= wire,
            "{tcp}: {out} segments, {wire} packets"
        );
        assert!(counter(tcp, "RetransSegs").is_some());
        // CUBIC on every socket, both ends of each client's connection.
        assert_eq!(
            counter(tcp, "sockets_cubic"),
            Some(2 * u64::from(scn.clients))
        );
    }
    let tw = run.counters.iter().find(|c| c.peer == "thinwire".into());
    let tw = tw.and_then(|c| c.thinwire).expect("thinwire counters");
    assert!(tw.udp.packets_sent > 0);
    // through the gateway pair: both gateways saw every client as one flow
    assert_eq!(
        counter("thinwire-gateway", "gateway_flows"),
        Some(2 * u64::from(scn.clients))
    );
    assert!(counter("quic-streams", "lost_packets").is_some());
    assert!(run
        .counters
        .iter()
        .find(|c| c.peer == "kcp".into())
        .is_some_and(|c| c.summary().is_none()));
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let me = format!("twemu-{}-", std::process::id());
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&me),
        "namespaces left"
    );
}

/// The full `emu-ao` scenario with every real peer, printed as a table:
/// `EMU_AO_SECS=60 cargo test --release -p thinwire-emu --test emu_peers -- --ignored --nocapture`
#[test]
#[ignore = "long run (about 80 s, all peers side by side); needs root"]
fn emu_ao_table() {
    if let Err(e) = check_capabilities() {
        println!("skipped: {e}");
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/emu-ao.toml");
    let scn = Scenario::load(path).expect("scenario");
    let secs: u64 = std::env::var("EMU_AO_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let results = run_emulated(
        &scn,
        &EmuOptions {
            duration: Some(Duration::from_secs(secs)),
            ..EmuOptions::default()
        },
    )
    .expect("emulated run")
    .results;
    println!(
        "| peer | sent | delivered | p50 ms | p99 ms | p99.9 ms | max ms | wire bytes | packets |"
    );
    for r in results.protocol_runs() {
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
            r.key,
            r.messages.sent,
            r.messages.delivered,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.latency_ms.p999,
            r.latency_ms.max,
            r.wire.bytes,
            r.wire.packets
        );
    }
}
