//! The order of a host's pass ([`Engine::pump`]) on simulated time: two engines wired by hand,
//! no sockets, so what each send call carries is seen exactly.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle, Event, SendMode};

use super::Engine;
use crate::config::Config;
use crate::io::TxBatch;

type Datagram = (SocketAddr, Vec<u8>);

/// One pass of `e` at `now`: what each of its send calls carried, empty calls included.
fn pass(e: &mut Engine, now: Instant) -> Vec<Vec<Datagram>> {
    let mut batch = TxBatch::default();
    let mut calls = Vec::new();
    e.pump(now, &mut batch, 1, |tx, _| calls.push(tx.take_datagrams()));
    calls
}

/// The payloads of the messages `e` holds, in the order it hands them out.
fn messages(e: &mut Engine) -> Vec<Bytes> {
    let mut out = Vec::new();
    while let Some((_, ev)) = e.core.poll_event() {
        if let Event::Message(m) = ev {
            out.push(m.data);
        }
    }
    out
}

/// A client engine connected to a server engine over a lossless wire with 1 ms between
/// passes; `now` is the last pass's time and nothing is in flight.
struct Wired {
    client: Engine,
    server: Engine,
    conn: ConnectionHandle,
    now: Instant,
}

const CLIENT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4000);
const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 5000);

impl Wired {
    fn new() -> Self {
        Self::with_channels(&[ChannelKind::ReliableOrdered])
    }

    fn with_channels(channels: &[ChannelKind]) -> Self {
        let now = Instant::now();
        let server = Engine::new(&Config::server(), now, SERVER).unwrap();
        let mut client = Engine::new(&Config::client(), now, CLIENT).unwrap();
        let key = server.core.public_key().unwrap();
        let conn = client.core.connect(now, SERVER, &key, channels).unwrap();
        let mut w = Wired {
            client,
            server,
            conn,
            now,
        };
        let mut connected = false;
        for _ in 0..20 {
            w.exchange();
            while let Some((_, ev)) = w.client.core.poll_event() {
                connected |= matches!(ev, Event::Connected { .. });
            }
            while w.server.core.poll_event().is_some() {}
        }
        assert!(connected, "handshake within 20 exchanges");
        w
    }

    /// A pass of each side, 1 ms apart, every datagram delivered.
    fn exchange(&mut self) {
        self.now += Duration::from_millis(1);
        for (_, d) in pass(&mut self.client, self.now).concat() {
            self.server.on_datagram(self.now, CLIENT, &d);
        }
        self.now += Duration::from_millis(1);
        for (_, d) in pass(&mut self.server, self.now).concat() {
            self.client.on_datagram(self.now, SERVER, &d);
        }
    }

    /// Sends `data`, then lets the client's pass lose what it sends (one
    /// datagram), as the application stays busy past its retransmission timeout.
    fn lose(&mut self, data: &'static [u8]) {
        self.send(data);
        let lost = pass(&mut self.client, self.now).concat();
        assert_eq!(lost.len(), 1, "one datagram, dropped: {lost:?}");
        self.now += 2 * self
            .client
            .core
            .connection_stats(self.conn)
            .unwrap()
            .path
            .rto;
    }

    /// Delivers the datagram of a pass that made one send call with one datagram, and returns
    /// the messages the server then holds.
    fn deliver_alone(&mut self, calls: &[Vec<Datagram>]) -> Vec<Bytes> {
        assert_eq!(calls.len(), 1, "one send call: {calls:?}");
        assert_eq!(calls[0].len(), 1, "one datagram: {calls:?}");
        self.server.on_datagram(self.now, CLIENT, &calls[0][0].1);
        messages(&mut self.server)
    }

    fn send(&mut self, data: &'static [u8]) {
        self.client
            .send(self.conn, 0, Bytes::from_static(data), SendMode::Plain)
            .unwrap();
    }
}

#[test]
fn new_data_goes_before_the_timers_when_none_is_overdue() {
    let mut w = Wired::new();
    w.now += Duration::from_millis(5);
    w.send(b"fresh");
    let calls = pass(&mut w.client, w.now);
    // the application's message goes in the first call, before the timers are looked at;
    // the second call (after them) finds nothing more
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].len(), 1);
    assert!(calls[1].is_empty());
    w.server.on_datagram(w.now, CLIENT, &calls[0][0].1);
    assert_eq!(messages(&mut w.server), [&b"fresh"[..]]);
}

#[test]
fn an_expired_retransmission_timeout_goes_first_and_with_the_new_data() {
    let mut w = Wired::new();
    w.now += Duration::from_millis(5);
    // nothing asks for the next timer after the loss (as when `Host::service` returns an
    // event at once), so only the end of the lost datagram's pass has worked that timer out
    w.lose(b"lost");
    w.send(b"new");
    let calls = pass(&mut w.client, w.now);
    // the expired timer is handled before anything is sent: one call, one datagram carrying
    // the retransmission and the new message together, the retransmission first
    assert_eq!(w.deliver_alone(&calls), [&b"lost"[..], &b"new"[..]]);
}

#[test]
fn a_timeout_armed_after_the_timers_of_a_pass_is_seen_by_the_next_one() {
    let mut w = Wired::new();
    w.now += Duration::from_millis(5);
    w.send(b"lost");
    pass(&mut w.client, w.now);
    w.now += 2 * w.client.core.connection_stats(w.conn).unwrap().path.rto;
    // the retransmission and the new message go after the timers (the timer had expired),
    // and are lost too: the timeout they arm is worked out by the end of this pass only
    w.lose(b"new");
    w.send(b"newer");
    let calls = pass(&mut w.client, w.now);
    assert_eq!(
        w.deliver_alone(&calls),
        [&b"lost"[..], &b"new"[..], &b"newer"[..]]
    );
}

thread_local! {
    /// Hints the recording prefetcher was given on this test's thread.
    static HINTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn record_hint(_: *const u8, _: usize) {
    HINTS.with(|h| h.set(h.get() + 1));
}

#[test]
fn a_hinted_batch_is_handed_over_whole_and_in_order() {
    // unreliable: each message is delivered as its datagram is handled, so their order is
    // the order the batch was handed over in
    let mut w = Wired::with_channels(&[ChannelKind::Unreliable]);
    // one datagram per message: each sent and flushed on its own
    let mut batch = Vec::new();
    for data in [&b"one"[..], b"two", b"three", b"four", b"five"] {
        w.now += Duration::from_millis(1);
        w.client
            .send(w.conn, 0, Bytes::from_static(data), SendMode::Plain)
            .unwrap();
        batch.extend(pass(&mut w.client, w.now).concat());
    }
    assert_eq!(batch.len(), 5, "{batch:?}");
    // the runtime's prefetcher is a hint for this CPU; here, a recording one, hinting from
    // the first connection on
    w.server.core.set_prefetcher(Some(record_hint), 1);
    assert!(w.server.core.prefetching());
    HINTS.with(|h| h.set(0));
    let before = w.server.io.datagrams_received;
    w.server
        .on_datagrams(w.now, batch.iter().map(|(_, d)| (CLIENT, &d[..])));
    assert_eq!(
        w.server.io.datagrams_received - before,
        5,
        "each handed over once"
    );
    let expected: Vec<&[u8]> = vec![b"one", b"two", b"three", b"four", b"five"];
    assert_eq!(messages(&mut w.server), expected);
    // the four datagrams after the first were hinted: 4 at stage 2, 3 at 1, 2 at 0, each a
    // hint or more
    assert!(HINTS.with(|h| h.get()) >= 9, "{}", HINTS.with(|h| h.get()));
    // one connection, hints from two on: none
    w.server.core.set_prefetcher(Some(record_hint), 2);
    assert!(!w.server.core.prefetching());
}
