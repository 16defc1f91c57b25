//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use thinwire::ChannelKind;

/// Every channel class, channel `i` = `ALL[i]`.
pub const ALL: [ChannelKind; 5] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::ReliableUnordered,
    ChannelKind::Unreliable,
    ChannelKind::UnreliableSequenced,
    ChannelKind::LatestReliable,
];

/// Runs `f` with a deadline; a test that hangs fails instead.
pub async fn within<T>(secs: u64, what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done within {secs} s"),
    }
}

/// A server endpoint on 127.0.0.1 (any port) with the server configuration `limits`.
pub fn server_with(limits: thinwire::ServerConfig) -> thinwire::Endpoint {
    thinwire::Endpoint::bind(
        "127.0.0.1:0".parse().expect("address"),
        thinwire::Config::server().with_server(limits),
    )
    .expect("bind a server")
}

/// A server endpoint's public key (what its clients connect with).
pub fn key(server: &thinwire::Endpoint) -> thinwire::PublicKey {
    server.public_key().expect("a server endpoint has a key")
}

/// Connects `client` to `server` on every channel class and accepts the connection there
/// (each step within 5 s): the client's side, then the server's.
pub async fn join(
    client: &thinwire::Endpoint,
    server: &thinwire::Endpoint,
) -> (thinwire::Connection, thinwire::Connection) {
    let conn = within(
        5,
        "connect",
        client.connect(server.local_addr(), key(server), &ALL),
    )
    .await
    .expect("connect");
    let peer = within(5, "accept", server.accept()).await.expect("accept");
    (conn, peer)
}
