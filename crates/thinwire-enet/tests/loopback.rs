//! ENet over loopback: connect, reliable and unsequenced packets both ways.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use thinwire_enet::{available, Event, Host};

#[test]
fn reliable_and_unsequenced_round_trip() {
    if !available() {
        eprintln!("skipped: built without libenet (apt-get install libenet-dev)");
        return;
    }
    let lo = |port| SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    // a fixed loopback port (this wrapper does not expose the bound port)
    let port = 40_000 + (std::process::id() % 20_000) as u16;
    let mut server = Host::bind(lo(port), 4, 2).expect("server host");
    let mut client = Host::bind(lo(0), 1, 2).expect("client host");
    let peer = client.connect(lo(port), 2).expect("connect");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut connected = false;
    let mut server_peer = None;
    while Instant::now() < deadline && !(connected && server_peer.is_some()) {
        if let Some(Event::Connect(p)) = client.service(5).unwrap() {
            assert_eq!(p, peer);
            connected = true;
        }
        if let Some(Event::Connect(p)) = server.service(5).unwrap() {
            server_peer = Some(p);
        }
    }
    assert!(
        connected && server_peer.is_some(),
        "ENet handshake on loopback"
    );
    for i in 0..20u8 {
        client.send(peer, 0, &[i; 30], true).unwrap();
        client.send(peer, 1, &[i; 10], false).unwrap();
    }
    client.flush();
    let mut reliable = Vec::new();
    let mut unsequenced = 0;
    while Instant::now() < deadline && (reliable.len() < 20 || unsequenced < 20) {
        client.service(1).unwrap();
        if let Some(Event::Receive { channel, data, .. }) = server.service(5).unwrap() {
            if channel == 0 {
                reliable.push(data[0]);
            } else {
                unsequenced += 1;
            }
        }
    }
    assert_eq!(
        reliable,
        (0..20).collect::<Vec<u8>>(),
        "reliable channel in order"
    );
    assert_eq!(unsequenced, 20, "loopback loses nothing");
}

#[test]
fn bound_port_borrowed_receive_and_backlog() {
    if !available() {
        eprintln!("skipped: built without libenet (apt-get install libenet-dev)");
        return;
    }
    let lo = |port| SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let mut server = Host::bind(lo(0), 2, 1).expect("server host");
    let addr = server.local_addr();
    assert_eq!(*addr.ip(), Ipv4Addr::LOCALHOST);
    assert_ne!(addr.port(), 0, "the port the system picked");
    let mut client = Host::bind(lo(0), 1, 1).expect("client host");
    let peer = client.connect(addr, 1).expect("connect");
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut up, mut got) = (false, Vec::new());
    while Instant::now() < deadline && got.len() < 100 {
        if client.service(1).unwrap() == Some(Event::Connect(peer)) {
            up = true;
            for i in 0..100u8 {
                client.send(peer, 0, &[i; 24], true).unwrap();
            }
            client.flush();
        }
        if up {
            client.service(0).unwrap();
        }
        server
            .service_with(1, |e| {
                if let thinwire_enet::EventRef::Receive { data, .. } = e {
                    got.push(data[0]);
                }
            })
            .unwrap();
    }
    assert_eq!(got, (0..100).collect::<Vec<u8>>());
    // everything was acknowledged: nothing waits for the window
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        client.service(1).unwrap();
        server.service(1).unwrap();
    }
    assert!(!client.backlogged(peer));
}
