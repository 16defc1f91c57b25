//! Round trips of one 24-byte message between a client and a server endpoint, sans IO, on
//! one core: the client sends, the server echoes what arrives, the client receives the echo.
//! Each round trip is two datagrams (each carrying the message and the ACK of the one before)
//! through every layer of the core: queue, build, seal, route, open, ACK, timers, events. What
//! is left of a game's round trip when the sockets and the wake-ups are taken away.
//!
//! Run: `cargo bench -p thinwire-proto --bench hop` (`-- unreliable 200000 32` for the other
//! class, another count, and bursts of 32 messages per round trip: a flush of a busy sender,
//! where the costs per message show rather than those per datagram). Time on a shared
//! machine drifts; the instructions do not: `tools/hop-instructions.sh` counts them under
//! `valgrind --tool=callgrind` (two runs of different lengths, so the handshake's share
//! cancels out), for comparing two commits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, SendMode, ServerConfig,
    ServerKey,
};

/// The one-way delay between the two endpoints' clocks (the messages cross at once; the
/// clock moves by this much per datagram so that timers see time pass).
const ONE_WAY: Duration = Duration::from_micros(15);

/// Hands everything `from` (at `from_addr`) sends now to `to`; returns how many datagrams.
fn deliver(
    from: &mut Endpoint,
    from_addr: SocketAddr,
    to: &mut Endpoint,
    now: Instant,
    buf: &mut Vec<u8>,
) -> u64 {
    let mut datagrams = 0;
    while let Some(t) = from.poll_transmit(now, buf) {
        datagrams += 1;
        to.handle_datagram(now, from_addr, &buf[..t.size]);
    }
    datagrams
}

struct Hop {
    client: Endpoint,
    server: Endpoint,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    client_conn: ConnectionHandle,
    server_conn: ConnectionHandle,
    now: Instant,
    buf: Vec<u8>,
}

impl Hop {
    fn new(kind: ChannelKind) -> Hop {
        let mut now = Instant::now();
        let client_addr: SocketAddr = "127.0.0.1:40000".parse().expect("address");
        let server_addr: SocketAddr = "127.0.0.1:4433".parse().expect("address");
        let mut client = Endpoint::new(EndpointConfig::new([7; 32]), None, now).expect("client");
        let server_config = ServerConfig {
            key: Some(ServerKey::generate([3; 32])),
            trusted_sources: vec![client_addr.ip()],
            ..ServerConfig::default()
        };
        let mut server =
            Endpoint::new(EndpointConfig::new([9; 32]), Some(server_config), now).expect("server");
        let key = server.public_key().expect("server key");
        let client_conn = client
            .connect(now, server_addr, &key, &[kind])
            .expect("connect");
        let mut buf = Vec::with_capacity(2048);
        let mut server_conn = None;
        for _ in 0..20 {
            deliver(&mut client, client_addr, &mut server, now, &mut buf);
            while let Some((h, e)) = server.poll_event() {
                if matches!(e, Event::Connected { .. }) {
                    server_conn = Some(h);
                }
            }
            deliver(&mut server, server_addr, &mut client, now, &mut buf);
            while client.poll_event().is_some() {}
            now += Duration::from_millis(1);
            client.handle_timeout(now);
            server.handle_timeout(now);
        }
        Hop {
            client,
            server,
            client_addr,
            server_addr,
            client_conn,
            server_conn: server_conn.expect("the handshake completes"),
            now,
            buf,
        }
    }

    /// One round trip of `burst` messages; returns the datagrams it took and how many echoes
    /// came back.
    fn round_trip(&mut self, payload: &Bytes, burst: u64) -> (u64, u64) {
        let (now, c, s) = (self.now, self.client_conn, self.server_conn);
        for _ in 0..burst {
            let sent = self
                .client
                .send(now, c, 0, payload.clone(), SendMode::Plain);
            sent.expect("the send window of a round trip never fills");
        }
        self.client.handle_timeout(now);
        let (client, server) = (&mut self.client, &mut self.server);
        let mut datagrams = deliver(client, self.client_addr, server, now, &mut self.buf);
        self.now += ONE_WAY;
        let now = self.now;
        while let Some((_, e)) = self.server.poll_event() {
            if let Event::Message(m) = e {
                let echoed = self.server.send(now, s, 0, m.data, SendMode::Plain);
                echoed.expect("the send window of a round trip never fills");
            }
        }
        self.server.handle_timeout(now);
        let (client, server) = (&mut self.client, &mut self.server);
        datagrams += deliver(server, self.server_addr, client, now, &mut self.buf);
        self.now += ONE_WAY;
        let mut echoed = 0;
        while let Some((_, e)) = self.client.poll_event() {
            echoed += u64::from(matches!(e, Event::Message(_)));
        }
        (datagrams, echoed)
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let kind = match args.next().as_deref() {
        Some("unreliable") => ChannelKind::Unreliable,
        _ => ChannelKind::ReliableOrdered,
    };
    let count: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("a count"));
    let burst: u64 = args.next().map_or(1, |n| n.parse().expect("a burst"));
    let mut hop = Hop::new(kind);
    let payload = Bytes::from_static(b"move x=1204 y=88 z=17 ..");
    let start = Instant::now();
    let (mut datagrams, mut echoes) = (0, 0);
    for _ in 0..count {
        let (d, echoed) = hop.round_trip(&payload, burst);
        datagrams += d;
        echoes += echoed;
    }
    let elapsed = start.elapsed();
    assert_eq!(
        echoes,
        count * burst,
        "every echo arrives on a perfect link"
    );
    println!(
        "hop/{kind:?}: {:.0} ns per round trip of {burst} message{} ({count} round trips, \
         {:.2} datagrams each)",
        elapsed.as_nanos() as f64 / count.max(1) as f64,
        if burst == 1 { "" } else { "s" },
        datagrams as f64 / count.max(1) as f64
    );
}
