//! The gateway processes over real UDP on loopback: an unmodified thinwire game server, a
//! server gateway, an edge gateway and players that connect to the edge as to the server.

#![cfg(feature = "runtime")]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use thinwire::{ChannelKind, Config, Endpoint, SendMode, ServerConfig, ServerKey, TransportConfig};
use thinwire_gateway::run::{EdgeProcess, Runner, ServerProcess, Stop};
use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, TrunkCredential, TrunkOptions, TrunkPeer,
};
use thinwire_proto::{PublicKey, TokenKey};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const CHANNELS: [ChannelKind; 2] = [ChannelKind::ReliableOrdered, ChannelKind::Unreliable];

const OPERATOR: [u8; 32] = [0x0b; 32];

/// Peer 1's credential minted with `operator` for the server gateway at `gw`.
fn credential(gw: (SocketAddr, PublicKey), operator: &TokenKey) -> TrunkCredential {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let expires = now.expect("clock").as_secs() + 3600;
    mint_trunk_credential(
        operator,
        &CredentialSpec {
            peer_id: 1,
            name: "edge",
            server_gateway_key: &gw.1,
            addresses: &[gw.0],
            expires_unix_s: expires,
        },
        [5; 24],
    )
    .expect("credential")
}

fn any_port() -> SocketAddr {
    SocketAddr::new(LOOPBACK, 0)
}

/// The game server echoes every message back on the channel it came on, with a prefix.
async fn echo_server(ep: Endpoint, players: usize) {
    for _ in 0..players {
        let conn = ep.accept().await.expect("accept");
        assert_eq!(
            conn.channels(),
            &CHANNELS,
            "the player's channels, as they asked"
        );
        tokio::spawn(async move {
            while let Ok(m) = conn.recv().await {
                let mut echo = b"echo:".to_vec();
                echo.extend_from_slice(&m.data);
                let _ = conn.send(m.channel, Bytes::from(echo), SendMode::Plain);
            }
        });
    }
}

#[tokio::test(flavor = "current_thread")]
async fn players_reach_an_unmodified_server_through_a_gateway_pair() {
    let game_key = ServerKey::generate([1; 32]);
    let game = Endpoint::bind(
        any_port(),
        Config::server()
            .with_server_key(game_key.clone())
            .with_server(ServerConfig {
                key: Some(game_key.clone()),
                trusted_sources: vec![LOOPBACK],
                ..ServerConfig::default()
            }),
    )
    .expect("game server");
    // more players than a game server's default per-source limit (64), all from 127.0.0.1:
    // players behind one carrier-grade NAT address must not be locked out of the edge
    let players = 70;
    tokio::spawn(echo_server(game.clone(), players));

    let options = TrunkOptions {
        period: Duration::from_millis(5),
        ..TrunkOptions::default()
    };
    let server_gw = Runner::server(ServerProcess {
        listen: any_port(),
        upstream_bind: any_port(),
        game_server: game.local_addr(),
        game_server_key: game_key.public(),
        key: ServerKey::generate([2; 32]),
        operator_key: TokenKey::new(OPERATOR),
        peers: vec![TrunkPeer::new(1, "edge")],
        upstream_tokens: None,
        options: options.clone(),
        transport: TransportConfig::default(),
    })
    .await
    .expect("server gateway");
    let gw = (
        server_gw.trunk_addr().expect("address"),
        server_gw.public_key(),
    );
    let edge_process = |credential, seed| EdgeProcess {
        listen: any_port(),
        trunk_bind: any_port(),
        credential,
        server_gateway: None,
        players_tokens: None,
        key: ServerKey::generate([seed; 32]),
        options: options.clone(),
        transport: TransportConfig::default(),
        insecure_cleartext: false,
    };
    let edge = Runner::edge(edge_process(credential(gw, &TokenKey::new(OPERATOR)), 3))
        .await
        .expect("edge gateway");
    // an attacker who knows the server gateway's public key and address, not the operator key
    let forged = credential(gw, &TokenKey::new([0x66; 32]));
    let attacker = Runner::edge(edge_process(forged, 4))
        .await
        .expect("attacker's edge");
    let (edge_addr, edge_key) = (edge.local_addr().expect("address"), edge.public_key());
    let attacker_addr = attacker.local_addr().expect("address");
    let attacker_key = attacker.public_key();
    let (stop, rx) = Stop::new();
    let server_task = tokio::spawn(server_gw.run(rx.clone(), None));
    let edge_task = tokio::spawn(edge.run(rx.clone(), None));
    let attacker_task = tokio::spawn(attacker.run(rx, None));

    let mut conns = Vec::new();
    for i in 0..players {
        // a player that arrives before the edge's trunk is up is turned away: try again
        let mut tries = 0;
        let (ep, conn) = loop {
            tries += 1;
            assert!(tries < 50, "the edge's trunk never came up");
            let ep = Endpoint::bind(any_port(), Config::client()).expect("player");
            let conn = tokio::time::timeout(
                Duration::from_secs(5),
                ep.connect(edge_addr, edge_key, &CHANNELS),
            )
            .await
            .expect("connect in time")
            .expect("connected to the edge");
            if i > 0 {
                break (ep, conn); // the trunk is up since the first player's flow opened
            }
            let wait = tokio::time::timeout(Duration::from_millis(100), conn.recv()).await;
            if wait.is_err() {
                break (ep, conn); // not closed: its flow is open
            }
        };
        conns.push((ep, conn));
    }
    for (i, (_, conn)) in conns.iter().enumerate() {
        for n in 0..20u32 {
            conn.send(0, Bytes::from(format!("p{i}-{n}")), SendMode::Plain)
                .expect("send");
        }
    }
    for (i, (_, conn)) in conns.iter().enumerate() {
        for n in 0..20u32 {
            let m = tokio::time::timeout(Duration::from_secs(5), conn.recv())
                .await
                .expect("echo in time")
                .expect("open");
            assert_eq!(m.channel, 0);
            assert_eq!(&m.data[..], format!("echo:p{i}-{n}").as_bytes(), "in order");
        }
    }
    assert_eq!(
        game.connection_count(),
        players,
        "one connection per player"
    );
    // the attacker's edge never got a trunk: its player is turned away, and nothing of it
    // reaches the game server
    let ep = Endpoint::bind(any_port(), Config::client()).expect("player");
    let refused = tokio::time::timeout(
        Duration::from_secs(5),
        ep.connect(attacker_addr, attacker_key, &CHANNELS),
    )
    .await
    .expect("an answer in time");
    if let Ok(conn) = refused {
        let r = tokio::time::timeout(Duration::from_secs(5), conn.recv()).await;
        assert!(matches!(r, Ok(Err(_))), "closed at once: {r:?}");
    }
    assert_eq!(
        game.connection_count(),
        players,
        "no flow from the attacker"
    );
    stop.stop();
    let server_stats = server_task.await.expect("joined").expect("ran");
    let edge_stats = edge_task.await.expect("joined").expect("ran");
    let attacker_stats = attacker_task.await.expect("joined").expect("ran");
    assert_eq!(attacker_stats.flows_total, 0);
    assert_eq!(attacker_stats.flows_refused, 1);
    assert_eq!(edge_stats.flows_total, players as u64);
    assert_eq!(server_stats.flows_total, players as u64);
    assert_eq!(edge_stats.messages_to_trunk, 20 * players as u64);
    assert_eq!(edge_stats.messages_from_trunk, 20 * players as u64);
}
