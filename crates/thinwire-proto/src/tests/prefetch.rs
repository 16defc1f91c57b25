//! Prefetch hints ([`crate::prefetch`]): they name a connection's memory at each stage for a
//! datagram of that connection and for the connections queued to send, nothing for anything
//! else or below the threshold, and an endpoint that makes them sends and delivers exactly
//! what one that does not makes.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::connection::Connection;
use crate::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, SendMode, ServerConfig,
    ServerKey,
};

thread_local! {
    /// The hints this test's thread was given: how many, and how many bytes in all.
    static HINTS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    /// The addresses of the hints of a connection's main structure, in order.
    static MAIN: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Every hint, address and length, in order.
    static LOG: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// The recording prefetcher: counts, touches nothing.
fn record(p: *const u8, len: usize) {
    HINTS.with(|h| {
        let (n, bytes) = h.get();
        h.set((n + 1, bytes + len));
    });
    if len == std::mem::size_of::<Connection>() {
        MAIN.with(|m| m.borrow_mut().push(p as usize));
    }
    LOG.with(|l| l.borrow_mut().push((p as usize, len)));
}

/// The hints logged since the last call, in order.
fn take_log() -> Vec<(usize, usize)> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// The hints recorded since the last call.
fn take_hints() -> (usize, usize) {
    HINTS.with(|h| h.replace((0, 0)))
}

const CLIENT: &str = "127.0.0.1:40000";
const SERVER: &str = "127.0.0.1:4433";

/// `n` clients (one client endpoint) connected to a server endpoint, in simulated time; the
/// server hints from `hint_from` connections on (`None`: it has no prefetcher).
struct World {
    client: Endpoint,
    server: Endpoint,
    now: Instant,
    clients: Vec<ConnectionHandle>,
    servers: Vec<ConnectionHandle>,
    /// Every datagram the server sent, in order.
    sent: Vec<Vec<u8>>,
    /// Every message the server delivered, with its connection's place in `servers`.
    got: Vec<(usize, Bytes)>,
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("address")
}

impl World {
    fn new(n: usize, hint_from: Option<usize>) -> World {
        let now = Instant::now();
        let client = Endpoint::new(EndpointConfig::new([7; 32]), None, now).expect("client");
        let server_config = ServerConfig {
            key: Some(ServerKey::generate([3; 32])),
            trusted_sources: vec![addr(CLIENT).ip()],
            ..ServerConfig::default()
        };
        let mut server =
            Endpoint::new(EndpointConfig::new([9; 32]), Some(server_config), now).expect("server");
        if let Some(from) = hint_from {
            server.set_prefetcher(Some(record), from);
        }
        let mut w = World {
            client,
            server,
            now,
            clients: Vec::new(),
            servers: Vec::new(),
            sent: Vec::new(),
            got: Vec::new(),
        };
        let key = w.server.public_key().expect("server key");
        for _ in 0..n {
            let c = w
                .client
                .connect(now, addr(SERVER), &key, &[ChannelKind::ReliableOrdered])
                .expect("connect");
            w.clients.push(c);
        }
        for _ in 0..200 {
            if w.servers.len() == n {
                break;
            }
            w.exchange(false);
        }
        assert_eq!(w.servers.len(), n, "every client connects");
        w
    }

    /// The client's datagrams to the server (hinted three, two and one ahead when `hint`),
    /// then the server's back; 1 ms each way.
    fn exchange(&mut self, hint: bool) {
        let up = drain(&mut self.client, self.now, None);
        self.now += Duration::from_millis(1);
        self.client_to_server(&up, hint);
        let down = drain(&mut self.server, self.now, Some(&mut self.sent));
        self.now += Duration::from_millis(1);
        for d in &down {
            self.client.handle_datagram(self.now, addr(SERVER), d);
        }
        while self.client.poll_event().is_some() {}
        self.client.handle_timeout(self.now);
        self.server.handle_timeout(self.now);
    }

    fn client_to_server(&mut self, up: &[Vec<u8>], hint: bool) {
        for (i, d) in up.iter().enumerate() {
            if hint {
                for (stage, k) in [(0, 3), (1, 2), (2, 1)] {
                    if let Some(next) = up.get(i + k) {
                        self.server.prefetch_datagram(next, stage);
                    }
                }
            }
            self.server.handle_datagram(self.now, addr(CLIENT), d);
        }
        while let Some((h, e)) = self.server.poll_event() {
            match e {
                Event::Connected { .. } => self.servers.push(h),
                Event::Message(m) => {
                    let place = self.servers.iter().position(|&s| s == h).expect("known");
                    self.got.push((place, m.data));
                }
                Event::Disconnected { .. } => panic!("a connection closed"),
            }
        }
    }

    /// A tick: every client sends a message, the server answers each.
    fn tick(&mut self, i: u8, hint: bool) {
        for &c in &self.clients {
            let data = Bytes::from(vec![i; 40]);
            self.client
                .send(self.now, c, 0, data, SendMode::Plain)
                .expect("send");
        }
        self.exchange(hint);
        for &s in &self.servers.clone() {
            let data = Bytes::from(vec![i ^ 0xff; 40]);
            self.server
                .send(self.now, s, 0, data, SendMode::Plain)
                .expect("send");
        }
        self.exchange(hint);
        self.now += Duration::from_millis(30);
    }
}

/// Everything `e` sends now (recorded in `log` too).
fn drain(e: &mut Endpoint, now: Instant, mut log: Option<&mut Vec<Vec<u8>>>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = e.poll_transmit(now, &mut buf) {
        out.push(buf[..t.size].to_vec());
        if let Some(log) = log.as_deref_mut() {
            log.push(buf[..t.size].to_vec());
        }
    }
    out
}

#[test]
fn hints_change_nothing_the_endpoint_sends_or_delivers() {
    let run = |hints: bool| {
        let mut w = World::new(24, hints.then_some(0));
        take_hints();
        for i in 0..10 {
            w.tick(i, hints);
        }
        (w.sent, w.got, take_hints())
    };
    let (sent, got, none) = run(false);
    let (sent_hinted, got_hinted, hinted) = run(true);
    assert_eq!(none, (0, 0), "no prefetcher, no hints");
    assert!(
        hinted.0 > 24 * 10,
        "hints were made for every tick's datagrams and sends: {hinted:?}"
    );
    assert_eq!(got.len(), 24 * 10, "every message arrives");
    assert_eq!(got_hinted, got, "the same messages in the same order");
    assert_eq!(sent_hinted, sent, "the same datagrams, byte for byte");
}

#[test]
fn a_datagram_of_a_connection_is_hinted_at_each_stage_and_nothing_else_is() {
    let mut w = World::new(4, Some(0));
    w.tick(0, false);
    // until nothing is left to acknowledge
    w.now += Duration::from_millis(100);
    for _ in 0..3 {
        w.exchange(false);
    }
    let c = w.clients[2];
    w.client
        .send(w.now, c, 0, Bytes::from_static(b"hello"), SendMode::Plain)
        .expect("send");
    let up = drain(&mut w.client, w.now, None);
    assert_eq!(up.len(), 1);
    take_hints();
    w.server.prefetch_datagram(&up[0], 0);
    assert_eq!(
        take_hints(),
        (1, std::mem::size_of::<Connection>()),
        "stage 0: the connection's main structure"
    );
    w.server.prefetch_datagram(&up[0], 1);
    let (n, bytes) = take_hints();
    assert!(
        n >= 3 && bytes > 0,
        "stage 1: the parts it points to ({n} hints)"
    );
    w.server.prefetch_datagram(&up[0], 2);
    assert!(take_hints().0 >= 1, "stage 2: the ends of their lists");
    // a datagram of no connection here, a handshake's, or garbage: nothing
    let mut stray = up[0].clone();
    stray[1] ^= 0xff; // the first byte of the destination id
    w.server.prefetch_datagram(&stray, 0);
    w.server.prefetch_datagram(&[0xff; 64], 0);
    w.server.prefetch_datagram(&[], 0);
    assert_eq!(take_hints(), (0, 0), "no connection, no hint");
    // handling it after the hints delivers it as usual
    w.client_to_server(&up, false);
    assert_eq!(w.got.last().map(|(_, d)| &d[..]), Some(&b"hello"[..]));
    // the lookup a runtime makes once per datagram names the connection that delivered it,
    // and none for the strays
    let place = w.got.last().expect("delivered").0;
    assert_eq!(w.server.datagram_connection(&up[0]), Some(w.servers[place]));
    for stray in [&stray[..], &[0xff; 64], &[]] {
        assert_eq!(w.server.datagram_connection(stray), None);
    }
}

/// A runtime's walk through a batch ([`crate::Lookahead`]) hints exactly what
/// hinting each datagram at its stage does (three ahead at 0, two at 1, the next at 2), with
/// one lookup per datagram instead of one per stage.
#[test]
fn a_batch_walk_hints_what_each_datagram_at_its_stage_would() {
    let mut w = World::new(6, Some(0));
    w.tick(0, false);
    for &c in w.clients.iter().rev() {
        w.client
            .send(w.now, c, 0, Bytes::from_static(b"move"), SendMode::Plain)
            .expect("send");
    }
    let mut up = drain(&mut w.client, w.now, None);
    // a stray in the middle of the batch: no connection, no hint
    up.insert(3, vec![0xff; 64]);
    assert_eq!(up.len(), 7);
    take_log();
    for i in 0..up.len() {
        for (stage, k) in [(0, 3), (1, 2), (2, 1)] {
            if let Some(next) = up.get(i + k) {
                w.server.prefetch_datagram(next, stage);
            }
        }
    }
    let each = take_log();
    let mut ahead = crate::Lookahead::new(&w.server, up.iter().skip(1).map(|d| &d[..]));
    for _ in &up {
        ahead.hint(&w.server);
    }
    let walked = take_log();
    assert!(!each.is_empty());
    assert_eq!(walked, each);
}

#[test]
fn no_hints_below_the_threshold_or_without_a_prefetcher() {
    let mut w = World::new(4, Some(5));
    w.tick(0, true);
    assert_eq!(take_hints(), (0, 0), "4 connections, hints from 5 on");
    w.server.set_prefetcher(Some(record), 4);
    w.tick(1, true);
    assert!(take_hints().0 > 0, "hints from 4 on");
    w.server.set_prefetcher(None, 0);
    w.tick(2, true);
    assert_eq!(take_hints(), (0, 0), "no prefetcher");
}

#[test]
fn the_connections_queued_to_send_are_hinted_ahead() {
    let mut w = World::new(6, Some(0));
    let servers = w.servers.clone();
    // where each connection's main structure is, as a hint at stage 0 names it
    let mut at = Vec::new();
    for &s in &servers {
        MAIN.with(|m| m.borrow_mut().clear());
        w.server.prefetch_connection(s, 0, false);
        at.push(MAIN.with(|m| m.borrow()[0]));
    }
    for &s in &servers {
        w.server
            .send(w.now, s, 0, Bytes::from_static(b"update"), SendMode::Plain)
            .expect("send");
    }
    take_hints();
    MAIN.with(|m| m.borrow_mut().clear());
    let down = drain(&mut w.server, w.now, None);
    assert_eq!(down.len(), 6, "one datagram per connection");
    // as each connection leaves the queue, the one three places behind the next is hinted
    // at stage 0 (the later stages follow for the two before it): the fifth and the sixth
    let main = MAIN.with(|m| m.borrow().clone());
    assert_eq!(
        main,
        [at[4], at[5]],
        "stage 0 for the connections queued three ahead"
    );
    assert!(take_hints().0 > 2, "the later stages too");
}
