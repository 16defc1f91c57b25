//! Security over real sockets: connections are encrypted by default, a wrong server key never
//! connects, the cleartext opt-out needs both ends, connect tokens admit exactly their holders,
//! and the per-source connection cap refuses with a reason.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use common::{join, key, within, ALL};
use thinwire::{
    CipherSuite, Config, ConnectError, ConnectToken, DisconnectReason, Endpoint, Host, HostEvent,
    RefuseReason, SendMode, ServerConfig, ServerKey, TokenClaims, TokenKey, TokenPolicy,
};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A server that admits only clients with a token minted with `token_key`.
fn token_server(token_key: &TokenKey) -> Endpoint {
    let server = ServerConfig {
        connect_tokens: Some(TokenPolicy {
            key: token_key.clone(),
            public_addresses: Vec::new(),
        }),
        ..ServerConfig::default()
    };
    Endpoint::bind(loopback(), Config::server().with_server(server)).unwrap()
}

fn mint(token_key: &TokenKey, server: &Endpoint, client_id: u64, expires: u64) -> ConnectToken {
    let claims = TokenClaims {
        client_id,
        user_data: b"team blue".to_vec(),
    };
    ConnectToken::mint(
        token_key,
        &claims,
        key(server).0,
        &[server.local_addr()],
        expires,
        [client_id as u8; 24],
    )
    .unwrap()
}

#[tokio::test]
async fn connections_are_encrypted_by_default() {
    let server = Endpoint::bind(loopback(), Config::server()).unwrap();
    let client = Endpoint::bind(loopback(), Config::client()).unwrap();
    let (conn, peer) = join(&client, &server).await;
    let suite = conn.cipher_suite().unwrap();
    assert!(suite.is_encrypted(), "{suite:?}");
    assert_eq!(peer.cipher_suite(), Some(suite));
    assert!(peer.token_claims().is_none());
    assert!(client.public_key().is_none(), "a client has no server key");
}

#[tokio::test]
async fn a_configured_key_is_the_servers_key() {
    let k = ServerKey::generate([3; 32]);
    let server = Endpoint::bind(loopback(), Config::server().with_server_key(k.clone())).unwrap();
    assert_eq!(server.public_key(), Some(k.public()));
    let client = Endpoint::bind(loopback(), Config::client()).unwrap();
    within(
        5,
        "connect",
        client.connect(server.local_addr(), k.public(), &ALL),
    )
    .await
    .unwrap();
}

/// A client given another key writes its handshake to that key: the server cannot read it
/// and refuses it, and the client is told so at once (not at its handshake timeout), in
/// words that say what to check.
#[tokio::test]
async fn a_wrong_server_key_never_connects() {
    let server = Endpoint::bind(loopback(), Config::server()).unwrap();
    let client = Endpoint::bind(loopback(), Config::client()).unwrap();
    let impostor_key = ServerKey::generate([9; 32]).public();
    assert_ne!(Some(impostor_key), server.public_key());
    // well within the 5 s handshake timeout
    let err = within(
        2,
        "the refusal",
        client.connect(server.local_addr(), impostor_key, &ALL),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            ConnectError::Handshake(DisconnectReason::Refused(RefuseReason::UnknownServerKey))
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("the server did not accept this server key (wrong key for this address?)"),
        "{text}"
    );
    let stats = server.stats().protocol;
    assert!(stats.dropped_bad_handshake >= 1, "{stats:?}");
    assert_eq!(stats.connections_accepted, 0);
    assert_eq!(server.connection_count(), 0);
}

#[tokio::test]
async fn cleartext_needs_both_ends() {
    let cleartext = Endpoint::bind(loopback(), Config::server().insecure_cleartext()).unwrap();
    let encrypted = Endpoint::bind(loopback(), Config::server()).unwrap();

    let client = Endpoint::bind(loopback(), Config::client().insecure_cleartext()).unwrap();
    let conn = within(
        5,
        "cleartext pair",
        client.connect(cleartext.local_addr(), key(&cleartext), &ALL),
    )
    .await
    .unwrap();
    assert_eq!(conn.cipher_suite(), Some(CipherSuite::InsecureCleartext));

    // a cleartext client and an encrypting server, and the other way round: refused
    for (client, server) in [
        (Config::client().insecure_cleartext(), &encrypted),
        (Config::client(), &cleartext),
    ] {
        let client = Endpoint::bind(loopback(), client).unwrap();
        let err = within(
            5,
            "refused",
            client.connect(server.local_addr(), key(server), &ALL),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                err,
                ConnectError::Handshake(DisconnectReason::Refused(
                    RefuseReason::NoCommonCipherSuite
                ))
            ),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn connect_tokens_admit_their_holders_only() {
    let token_key = TokenKey::new([5; 32]);
    let server = token_server(&token_key);
    let client = Endpoint::bind(loopback(), Config::client()).unwrap();

    let token = mint(&token_key, &server, 77, unix_now_s() + 30);
    // as a backend would hand it over: bytes
    let token = ConnectToken::decode(&token.encode()).unwrap();
    let conn = within(5, "token connect", client.connect_with_token(&token, &ALL))
        .await
        .unwrap();
    conn.send(0, &b"hi"[..], SendMode::Plain).unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let claims = peer.token_claims().expect("admitted by token");
    assert_eq!(
        (claims.client_id, &claims.user_data[..]),
        (77, &b"team blue"[..])
    );

    // no token, an expired token, a token of another backend: refused before any state
    let refused = |r: Result<thinwire::Connection, ConnectError>| match r {
        Err(ConnectError::Handshake(DisconnectReason::Refused(RefuseReason::InvalidToken))) => {}
        other => panic!("expected an invalid-token refusal, got {other:?}"),
    };
    refused(
        within(
            5,
            "no token",
            client.connect(server.local_addr(), key(&server), &ALL),
        )
        .await,
    );
    let expired = mint(&token_key, &server, 78, unix_now_s() - 1);
    refused(within(5, "expired", client.connect_with_token(&expired, &ALL)).await);
    let foreign = mint(&TokenKey::new([6; 32]), &server, 79, unix_now_s() + 30);
    refused(within(5, "foreign", client.connect_with_token(&foreign, &ALL)).await);
    let stats = server.stats().protocol;
    assert_eq!(stats.connections_accepted, 1);
    assert!(stats.refusals_sent >= 3, "{stats:?}");
}

/// A dual-stack IPv6 client follows a token that lists the server's IPv4 address.
#[tokio::test]
async fn dual_stack_client_follows_an_ipv4_token() {
    let token_key = TokenKey::new([8; 32]);
    let server = token_server(&token_key);
    let client = match Endpoint::bind("[::]:0".parse().unwrap(), Config::client()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no IPv6 here ({e}); skipped");
            return;
        }
    };
    let token = mint(&token_key, &server, 1, unix_now_s() + 30);
    let conn = within(5, "token connect", client.connect_with_token(&token, &ALL))
        .await
        .unwrap();
    assert_eq!(conn.remote_address(), server.local_addr());
    conn.send(0, &b"over v6"[..], SendMode::Plain).unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let m = within(5, "recv", peer.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"over v6");
}

#[test]
fn host_connects_with_a_token() {
    let token_key = TokenKey::new([4; 32]);
    let policy = ServerConfig {
        connect_tokens: Some(TokenPolicy {
            key: token_key.clone(),
            public_addresses: Vec::new(),
        }),
        ..ServerConfig::default()
    };
    let mut server = Host::bind(loopback(), Config::server().with_server(policy)).unwrap();
    let token = ConnectToken::mint(
        &token_key,
        &TokenClaims {
            client_id: 12,
            user_data: Vec::new(),
        },
        server.public_key().unwrap().0,
        &[server.local_addr()],
        unix_now_s() + 30,
        [1; 24],
    )
    .unwrap();
    let client = std::thread::spawn(move || {
        let mut host = Host::bind(loopback(), Config::client()).unwrap();
        let conn = host.connect_with_token(&token, &ALL).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            match host.service(Duration::from_millis(20)).unwrap() {
                Some(HostEvent::Connected { .. }) => {
                    assert!(host.cipher_suite(conn).unwrap().is_encrypted());
                    host.close(conn, 0, b"done");
                    while host.connection_count() > 0 {
                        host.service(Duration::from_millis(20)).unwrap();
                    }
                    return;
                }
                Some(HostEvent::Disconnected { reason, .. }) => panic!("{reason}"),
                _ => {}
            }
        }
        panic!("no connection within 5 s");
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut claims = None;
    while claims.is_none() && std::time::Instant::now() < deadline {
        if let Some(HostEvent::Connected { conn, .. }) =
            server.service(Duration::from_millis(20)).unwrap()
        {
            claims = server.token_claims(conn).cloned();
        }
    }
    assert_eq!(claims.map(|c| c.client_id), Some(12));
    while !client.is_finished() {
        server.service(Duration::from_millis(20)).unwrap();
    }
    client.join().unwrap();
}

#[tokio::test]
async fn connections_per_source_are_capped() {
    let limits = ServerConfig {
        max_connections_per_source: 2,
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(loopback(), Config::server().with_server(limits)).unwrap();
    let client = Endpoint::bind(loopback(), Config::client()).unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(
            within(
                5,
                "connect",
                client.connect(server.local_addr(), key(&server), &ALL),
            )
            .await
            .unwrap(),
        );
    }
    let err = within(
        5,
        "third",
        client.connect(server.local_addr(), key(&server), &ALL),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            ConnectError::Handshake(DisconnectReason::Refused(RefuseReason::TooManyFromSource))
        ),
        "{err:?}"
    );
    assert_eq!(server.stats().protocol.connections_accepted, 2);
}
