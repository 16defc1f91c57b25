//! GNS over loopback: listen, connect, reliable and unreliable messages both ways, addresses,
//! and a closed connection seen by the peer. Skipped (it says why, and passes) when the
//! library is not built.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use thinwire_gns::{available, unavailable_reason, ConnId, EventRef, Host};

/// An owned copy of what a poll handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Up(ConnId),
    Msg(ConnId, bool, Vec<u8>),
    Down(ConnId),
}

fn collect(host: &mut Host, out: &mut Vec<Seen>) {
    host.poll(|e| {
        out.push(match e {
            EventRef::Connected(c) => Seen::Up(c),
            EventRef::Message {
                conn,
                reliable,
                data,
            } => Seen::Msg(conn, reliable, data.to_vec()),
            EventRef::Disconnected(c) => Seen::Down(c),
        })
    });
}

/// Polls both hosts until `done` holds for what each collected (10 s at most).
fn pump(
    a: &mut Host,
    b: &mut Host,
    seen: &mut (Vec<Seen>, Vec<Seen>),
    done: impl Fn(&[Seen], &[Seen]) -> bool,
) {
    let limit = Instant::now() + Duration::from_secs(10);
    while !done(&seen.0, &seen.1) {
        assert!(Instant::now() < limit, "no progress: {seen:?}");
        collect(a, &mut seen.0);
        collect(b, &mut seen.1);
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn messages(s: &[Seen]) -> Vec<(bool, Vec<u8>)> {
    s.iter()
        .filter_map(|e| match e {
            Seen::Msg(_, r, d) => Some((*r, d.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn reliable_and_unreliable_round_trip() {
    if !available() {
        eprintln!("skipped: {}", unavailable_reason().unwrap_or_default());
        return;
    }
    let mut server = Host::listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).expect("listen");
    let addr = server.local_addr().expect("a server has an address");
    assert_ne!(addr.port(), 0);
    let mut client = Host::client().expect("client host");
    let conn = client.connect(addr).expect("connect");
    let mut seen = (Vec::new(), Vec::new());
    pump(&mut server, &mut client, &mut seen, |s, c| {
        s.iter().any(|e| matches!(e, Seen::Up(_))) && c.contains(&Seen::Up(conn))
    });
    assert_eq!(client.remote(conn), Some(addr));
    let theirs = seen
        .0
        .iter()
        .find_map(|e| match e {
            Seen::Up(c) => Some(*c),
            _ => None,
        })
        .unwrap();
    let from = server.remote(theirs).expect("the client's address");
    assert_eq!(*from.ip(), Ipv4Addr::LOCALHOST);

    for i in 0..20u8 {
        assert!(client.send(conn, &[i; 30], true).unwrap());
        assert!(client.send(conn, &[i; 10], false).unwrap());
    }
    client.flush();
    pump(&mut server, &mut client, &mut seen, |s, _| {
        messages(s).len() == 40
    });
    let got = messages(&seen.0);
    let reliable: Vec<u8> = got.iter().filter(|m| m.0).map(|m| m.1[0]).collect();
    assert_eq!(reliable, (0..20).collect::<Vec<u8>>(), "reliable, in order");
    assert!(got.iter().filter(|m| !m.0).all(|m| m.1.len() == 10));

    assert!(server.send(theirs, b"pong", true).unwrap());
    server.flush();
    pump(&mut server, &mut client, &mut seen, |_, c| {
        !messages(c).is_empty()
    });
    assert_eq!(messages(&seen.1), [(true, b"pong".to_vec())]);
    assert_eq!(client.pending(conn), 0);
    assert!(
        client.send(theirs, b"x", true).is_err(),
        "not the client's connection"
    );

    // the client goes away: the server sees the connection end
    drop(client);
    let limit = Instant::now() + Duration::from_secs(10);
    while !seen.0.contains(&Seen::Down(theirs)) {
        assert!(Instant::now() < limit, "no disconnect: {:?}", seen.0);
        collect(&mut server, &mut seen.0);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(server.connections(), 0);
}
