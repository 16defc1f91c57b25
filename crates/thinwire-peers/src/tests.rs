use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use super::*;
use ::thinwire::{Config, ServerConfig};

const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::Unreliable,
    ChannelKind::LatestReliable,
];

fn spec(role: Role) -> HostSpec {
    HostSpec {
        bind: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
        role,
        capacity: 4,
        channels: CHANNELS.to_vec(),
    }
}

/// The events each side collected: the server's, the client's.
type Seen<C> = (Vec<Event<C>>, Vec<Event<C>>);

/// Services both hosts until `done` says the events collected on each side are enough.
fn pump<H: PeerHost>(
    server: &mut H,
    client: &mut H,
    evs: &mut Seen<H::Conn>,
    done: impl Fn(&[Event<H::Conn>], &[Event<H::Conn>]) -> bool,
) {
    let limit = Instant::now() + Duration::from_secs(10);
    while !done(&evs.0, &evs.1) {
        assert!(Instant::now() < limit, "no progress: {:?}", evs.0);
        server
            .service(Duration::from_millis(1), &mut evs.0)
            .unwrap();
        client
            .service(Duration::from_millis(1), &mut evs.1)
            .unwrap();
    }
}

fn connected<C: PartialEq>(evs: &[Event<C>]) -> Option<&C> {
    evs.iter().find_map(|e| match e {
        Event::Connected(c) => Some(c),
        _ => None,
    })
}

fn tags<C>(evs: &[Event<C>]) -> Vec<(u8, usize, u64)> {
    evs.iter()
        .filter_map(|e| match e {
            Event::Message {
                channel, len, tag, ..
            } => Some((*channel, *len, *tag)),
            _ => None,
        })
        .collect()
}

/// A client connects, both sides see the connection and each other's address, and a tagged
/// message crosses each way on the reliable channel (and the latest-value one where asked).
fn round_trip<H: PeerHost>(server: &mut H, client: &mut H, latest: bool) -> (H::Conn, H::Conn) {
    let conn = client.connect(&server.info()).unwrap();
    let mut evs = (Vec::new(), Vec::new());
    pump(server, client, &mut evs, |_, c| connected(c).is_some());
    assert_eq!(connected(&evs.1), Some(&conn));
    assert_eq!(
        client.remote(conn),
        Some(SocketAddr::V4(server.info().addr))
    );
    let data = tagged(24, 7);
    assert!(client.send(conn, 0, Outgoing::new(&data)).unwrap());
    if latest {
        let newest = tagged(30, 8);
        let msg = Outgoing {
            key: 3,
            ..Outgoing::new(&newest)
        };
        assert!(client.send(conn, 2, msg).unwrap());
    }
    client.flush();
    let want = if latest { 2 } else { 1 };
    pump(server, client, &mut evs, |s, _| tags(s).len() == want);
    let mut got = tags(&evs.0);
    got.sort_unstable();
    assert_eq!(got[0], (0, 24, 7));
    if latest {
        assert_eq!(got[1], (2, 30, 8));
    }
    let theirs = *connected(&evs.0).expect("the server saw the connection");
    let local = client.info().addr;
    let seen = server.remote(theirs);
    if local.port() == 0 {
        // GNS: a client has no socket of its own (one per connection, port not reported)
        assert!(matches!(seen, Some(SocketAddr::V4(a)) if a.ip() == local.ip()));
    } else {
        assert_eq!(seen, Some(SocketAddr::V4(local)));
    }
    assert!(server
        .send(theirs, 0, Outgoing::new(&tagged(8, 9)))
        .unwrap());
    server.flush();
    pump(server, client, &mut evs, |_, c| !tags(c).is_empty());
    assert_eq!(tags(&evs.1), [(0, 8, 9)]);
    (conn, theirs)
}

/// A thinwire server and client on loopback, with default settings.
fn thinwire_pair() -> (ThinwireHost, ThinwireHost) {
    let server_config = Config::server().with_server(ServerConfig::default());
    let server = ThinwireHost::open(&spec(Role::Server), &server_config).unwrap();
    let client = ThinwireHost::open(&spec(Role::Client), &Config::client()).unwrap();
    (server, client)
}

#[test]
fn thinwire_carries_messages_and_reports_its_stats() {
    let (mut server, mut client) = thinwire_pair();
    let (conn, _) = round_trip(&mut server, &mut client, true);
    let stats = client.stats(conn).expect("thinwire has statistics");
    assert!(stats.udp.packets_sent > 0);
    assert!(!client.backlogged(conn));
}

/// thinwire's adapter sends a copy of each message, as the other stacks' sends do: the
/// caller's buffer is not shared with the queued message (a clone would leave it shared until
/// the message is acknowledged).
#[test]
fn thinwire_sends_a_copy_of_each_message() {
    let (mut server, mut client) = thinwire_pair();
    let (conn, _) = round_trip(&mut server, &mut client, false);
    let data = tagged(24, 5);
    assert!(client.send(conn, 0, Outgoing::new(&data)).unwrap());
    assert!(
        data.is_unique(),
        "the queued message shares the caller's buffer"
    );
    client.flush();
    let mut evs = (Vec::new(), Vec::new());
    pump(&mut server, &mut client, &mut evs, |s, _| {
        !tags(s).is_empty()
    });
    assert_eq!(tags(&evs.0), [(0, 24, 5)]);
}

#[test]
fn kcp_carries_messages_and_refuses_unreliable_channels() {
    for mode in [KcpMode::Default, KcpMode::Fast] {
        let mut server = KcpHost::open(&spec(Role::Server), &mode).unwrap();
        let mut client = KcpHost::open(&spec(Role::Client), &mode).unwrap();
        let (conn, _) = round_trip(&mut server, &mut client, false);
        let data = tagged(8, 1);
        assert!(client.send(conn, 1, Outgoing::new(&data)).is_err());
        assert_eq!(client.stats(conn), None);
    }
}

#[test]
fn enet_carries_messages_when_linked() {
    if !thinwire_enet::available() {
        assert!(EnetHost::open(&spec(Role::Server), &()).is_err());
        return;
    }
    let mut server = EnetHost::open(&spec(Role::Server), &()).unwrap();
    let mut client = EnetHost::open(&spec(Role::Client), &()).unwrap();
    round_trip(&mut server, &mut client, true);
}

#[test]
fn gns_carries_messages_when_built() {
    if !thinwire_gns::available() {
        let why = GnsHost::open(&spec(Role::Server), &GnsWait::default()).unwrap_err();
        eprintln!("skipped: {why}");
        return;
    }
    let mut server = GnsHost::open(&spec(Role::Server), &GnsWait::default()).unwrap();
    let mut client = GnsHost::open(&spec(Role::Client), &GnsWait::default()).unwrap();
    let (conn, theirs) = round_trip(&mut server, &mut client, false);
    // unreliable messages arrive on the unreliable channel, latest-value ones go reliably
    let data = tagged(16, 4);
    assert!(client.send(conn, 1, Outgoing::new(&data)).unwrap());
    assert!(client.send(conn, 2, Outgoing::new(&data)).unwrap());
    client.flush();
    let mut evs = (Vec::new(), Vec::new());
    pump(&mut server, &mut client, &mut evs, |s, _| {
        tags(s).len() == 2
    });
    let mut got = tags(&evs.0);
    got.sort_unstable();
    assert_eq!(got, [(0, 16, 4), (1, 16, 4)]);
    assert!(!client.backlogged(conn));
    assert_eq!(server.stats(theirs), None);
    drop(client);
    pump(
        &mut server,
        &mut GnsHost::open(&spec(Role::Client), &GnsWait::default()).unwrap(),
        &mut evs,
        |s, _| s.contains(&Event::Disconnected(theirs)),
    );
}

#[test]
fn reliable_classes_are_all_but_the_unreliable_ones() {
    let reliable: Vec<_> = ChannelKind::ALL
        .into_iter()
        .filter(|&k| is_reliable(k))
        .collect();
    assert_eq!(
        reliable,
        [
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
            ChannelKind::LatestReliable
        ]
    );
}

#[test]
fn tags_round_trip_and_short_payloads_read_zero() {
    let p = tagged(3, 0x0102_0304_0506_0708);
    assert_eq!(p.len(), 8);
    assert_eq!(tag_of(&p), 0x0102_0304_0506_0708);
    assert_eq!(tagged(40, 5).len(), 40);
    assert_eq!(tag_of(&[1, 2, 3]), 0);
}

#[test]
fn server_info_travels_as_json() {
    let info = ServerInfo {
        addr: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7300),
        key: Some("ab".repeat(32)),
    };
    let json = serde_json::to_string(&info).unwrap();
    assert_eq!(serde_json::from_str::<ServerInfo>(&json).unwrap(), info);
}
