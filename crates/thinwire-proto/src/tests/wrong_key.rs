//! A client that holds the wrong server key: the server cannot read its Noise message 1 and
//! says so with a Refuse `UnknownServerKey` (one round trip after the Connect, not the
//! handshake timeout), remembered with the spent cookie; and a Refuse counts for a client only
//! in its handshake, from the server's address, with its own nonce (`docs/PROTOCOL.md` §2.9,
//! §11).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_netmodel::LinkConfig;

use crate::testing::Pair;
use crate::wire::{self, ConnectionId, LongPacket};
use crate::{
    ChannelKind, ConnectionHandle, DisconnectReason, Event, PublicKey, RefuseReason, ServerKey,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const REFUSED: DisconnectReason = DisconnectReason::Refused(RefuseReason::UnknownServerKey);

/// A pair 10 ms each way whose sides log what they send, and a client connection started to
/// the server's address with `key` (the server's own without).
fn started(seed: u64, key: Option<PublicKey>) -> (Pair, ConnectionHandle, Instant) {
    let mut pair = Pair::builder(seed)
        .link(LinkConfig::default().with_delay(ms(10)))
        .build();
    pair.client_mut().set_log_sent(true);
    pair.server_mut().set_log_sent(true);
    let (now, server) = (pair.now(), pair.server().addr());
    let key = key.unwrap_or_else(|| pair.server_key());
    let c = pair
        .client_mut()
        .endpoint_mut()
        .connect(now, server, &key, &[ChannelKind::ReliableOrdered])
        .expect("connect");
    (pair, c, now)
}

fn wrong_key() -> Option<PublicKey> {
    Some(ServerKey::generate([99; 32]).public())
}

/// The first datagram of `kind` a side sent, decoded, with its bytes.
fn sent(log: &[(Instant, Vec<u8>)], kind: fn(&LongPacket) -> bool) -> (LongPacket, Vec<u8>) {
    log.iter()
        .find_map(|(_, d)| {
            let p = LongPacket::decode(d).ok()?;
            kind(&p).then(|| (p, d.clone()))
        })
        .expect("sent")
}

fn refuse(cid: ConnectionId, nonce: u64) -> Vec<u8> {
    let mut out = Vec::new();
    LongPacket::Refuse {
        version: wire::VERSION,
        dst_cid: cid,
        nonce,
        reason: RefuseReason::UnknownServerKey.code(),
    }
    .encode(&mut out);
    out
}

#[test]
fn a_wrong_key_is_refused_one_round_trip_after_the_connect() {
    let (mut pair, c, start) = started(31, wrong_key());
    // Hello and Challenge: one round trip (20 ms); Connect and Refuse: one more
    assert!(pair.run_while(ms(41), |p| p.client().disconnected().is_some()));
    assert_eq!(pair.client().disconnected(), Some(&REFUSED));
    assert!(pair.now() - start <= ms(40), "{:?}", pair.now() - start);
    assert!(pair.client().endpoint().connection(c).is_none());
    let stats = pair.server().endpoint().stats();
    assert_eq!(stats.handshakes_attempted, 1, "{stats:?}");
    assert_eq!(stats.refusals_sent, 1, "{stats:?}");
    assert_eq!(stats.dropped_bad_handshake, 1, "{stats:?}");
    assert_eq!(pair.server().endpoint().connection_count(), 0);
    assert_eq!(
        REFUSED.to_string(),
        "refused by the server: the server did not accept this server key \
         (wrong key for this address?)"
    );
}

/// The same Connect again (a retransmission, or an attacker replaying it from the client's
/// address) is refused again from the spent-cookie table, without a second Diffie-Hellman;
/// from another address its cookie does not verify and nothing answers.
#[test]
fn a_replayed_connect_gets_the_same_refuse_without_a_second_read() {
    let (mut pair, _, _) = started(32, wrong_key());
    assert!(pair.run_while(ms(100), |p| p.client().disconnected().is_some()));
    let (_, connect) = sent(pair.client().sent_log(), |p| {
        matches!(p, LongPacket::Connect { .. })
    });
    let (_, first) = sent(pair.server().sent_log(), |p| {
        matches!(p, LongPacket::Refuse { .. })
    });
    assert!(first.len() < connect.len(), "never an amplifier");
    let (now, client) = (pair.now(), pair.client().addr());
    let elsewhere: SocketAddr = "203.0.113.66:6666".parse().expect("address");
    let server = pair.server_mut().endpoint_mut();
    let mut buf = Vec::new();
    for _ in 0..3 {
        server.handle_datagram(now, client, &connect);
        let t = server.poll_transmit(now, &mut buf).expect("a Refuse");
        assert_eq!(t.destination, client);
        assert_eq!(buf[..t.size], first[..], "the same Refuse");
        server.handle_datagram(now, elsewhere, &connect);
        assert!(server.poll_transmit(now, &mut buf).is_none());
    }
    let stats = server.stats();
    assert_eq!(stats.handshakes_attempted, 1, "no second read: {stats:?}");
    assert_eq!(stats.dropped_cookie_spent, 3, "{stats:?}");
    assert_eq!(stats.dropped_bad_cookie, 3, "{stats:?}");
    assert_eq!(stats.refusals_sent, 4, "{stats:?}");
}

/// A client acts on a Refuse only while it waits for the handshake, only from the server's
/// address and only with its own nonce: an off-path attacker, who does not see the nonce,
/// cannot end a handshake with a forged one, nor anyone an established connection.
#[test]
fn a_forged_refuse_ends_nothing() {
    let (mut pair, c, _) = started(33, None);
    pair.flush();
    let (hello, _) = sent(pair.client().sent_log(), |p| {
        matches!(p, LongPacket::Hello { .. })
    });
    let LongPacket::Hello { src_cid, nonce, .. } = hello else {
        unreachable!("a Hello")
    };
    let (now, server) = (pair.now(), pair.server().addr());
    let attacker: SocketAddr = "203.0.113.66:6666".parse().expect("address");
    let client = pair.client_mut().endpoint_mut();
    client.handle_datagram(now, server, &refuse(src_cid, nonce ^ 1));
    client.handle_datagram(now, attacker, &refuse(src_cid, nonce));
    assert_eq!(client.stats().dropped_unexpected, 2);
    assert!(pair.run_while(ms(100), |p| {
        p.client()
            .events()
            .iter()
            .any(|(h, e)| *h == c && matches!(e, Event::Connected { .. }))
    }));
    let now = pair.now();
    let client = pair.client_mut().endpoint_mut();
    client.handle_datagram(now, server, &refuse(src_cid, nonce));
    assert_eq!(client.stats().dropped_unexpected, 3, "established");
    pair.run_for(ms(100));
    assert_eq!(pair.client().disconnected(), None);
    assert!(pair.client().endpoint().connection(c).is_some());
}
