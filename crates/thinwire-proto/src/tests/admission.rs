//! Handshake work and admission under attack (`docs/PROTOCOL.md` §5.6, §11): the global read
//! budget, round-robin by source, single-use cookies, token holders behind one address, the
//! per-source cap and refusals by network prefix under table pressure. Simulated time, seeded
//! randomness, an instantaneous wire.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{connect_datagram, message_1};
use crate::crypto::{self, ConnectToken, Responder, ServerKey, TokenClaims, TokenKey};
use crate::wire::{self, ConnectionId, LongPacket};
use crate::{
    ChannelKind, ConnectionHandle, DisconnectReason, Endpoint, EndpointConfig, Event, RefuseReason,
    ServerConfig, TokenPolicy,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const SERVER: &str = "192.0.2.1:4433";
/// Length of a Noise message 1 with an empty-ish payload: what a flooder sends as random bytes.
const GARBAGE_LEN: usize = 72;

/// An honest client endpoint at an address of its own.
struct Player {
    addr: SocketAddr,
    ep: Endpoint,
    conn: Option<ConnectionHandle>,
    /// When it connected (simulated), or why it ended.
    connected_at: Option<Instant>,
    ended: Option<DisconnectReason>,
}

/// A flooding source: asks for a cookie every `period`, and spends each on Connects carrying
/// random bytes as Noise message 1, at once and again [`REUSE_AFTER`] Hellos later.
struct Flooder {
    addr: SocketAddr,
    next_hello: Instant,
    nonce: u64,
    /// Its cookies, oldest first: `(cid, nonce, cookie)`.
    cookies: VecDeque<(ConnectionId, u64, Vec<u8>)>,
}

/// Hellos after which a flooder sends a cookie again (2 s at its 40 ms period: read by then).
const REUSE_AFTER: usize = 50;

/// One server, its players and its flooders, moved one millisecond at a time.
struct Arena {
    now: Instant,
    start: Instant,
    server: Endpoint,
    server_addr: SocketAddr,
    players: Vec<Player>,
    flooders: Vec<Flooder>,
    /// Hello period of each flooder, and Connects sent per cookie.
    period: Duration,
    connects_per_cookie: usize,
    rng: ChaCha8Rng,
    buf: Vec<u8>,
    seed: u8,
}

impl Arena {
    fn new(server: ServerConfig, seed: u64) -> Self {
        let now = Instant::now();
        let ep = Endpoint::new(EndpointConfig::new([1; 32]), Some(server), now).expect("server");
        Self {
            now,
            start: now,
            server: ep,
            server_addr: SERVER.parse().expect("address"),
            players: Vec::new(),
            flooders: Vec::new(),
            period: ms(40),
            connects_per_cookie: 3,
            rng: ChaCha8Rng::seed_from_u64(seed),
            buf: Vec::with_capacity(2048),
            seed: 2,
        }
    }

    fn player_endpoint(&mut self) -> Endpoint {
        self.seed = self.seed.wrapping_add(1);
        Endpoint::new(EndpointConfig::new([self.seed; 32]), None, self.now).expect("client")
    }

    /// A player at `addr` that connects now.
    fn connect(&mut self, addr: SocketAddr) -> usize {
        let mut ep = self.player_endpoint();
        let key = self.server.public_key().expect("server");
        let conn = ep
            .connect(
                self.now,
                self.server_addr,
                &key,
                &[ChannelKind::ReliableOrdered],
            )
            .expect("connect");
        self.add(addr, ep, conn)
    }

    fn add(&mut self, addr: SocketAddr, ep: Endpoint, conn: ConnectionHandle) -> usize {
        self.players.push(Player {
            addr,
            ep,
            conn: Some(conn),
            connected_at: None,
            ended: None,
        });
        self.players.len() - 1
    }

    fn flood_from(&mut self, addrs: impl IntoIterator<Item = SocketAddr>) {
        for (i, addr) in addrs.into_iter().enumerate() {
            self.flooders.push(Flooder {
                addr,
                // spread over the period
                next_hello: self.now + ms(i as u64 % self.period.as_millis() as u64),
                nonce: i as u64 * 1_000_000,
                cookies: VecDeque::new(),
            });
        }
    }

    fn hello(cid: ConnectionId, nonce: u64) -> Vec<u8> {
        let mut out = Vec::new();
        LongPacket::Hello {
            version: wire::VERSION,
            src_cid: cid,
            instance: 1,
            nonce,
        }
        .encode(&mut out);
        out
    }

    /// The flooder's Connects for a Challenge it received.
    fn flood_connects(&mut self, dst_cid: ConnectionId, nonce: u64, cookie: &[u8]) -> Vec<Vec<u8>> {
        (0..self.connects_per_cookie)
            .map(|_| {
                let mut handshake = vec![0u8; GARBAGE_LEN];
                self.rng.fill_bytes(&mut handshake);
                connect_datagram((dst_cid, 1, nonce), cookie, handshake)
            })
            .collect()
    }

    /// Delivers everything sent now, until nothing more is.
    fn exchange(&mut self) {
        loop {
            let mut to_server: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
            for p in &mut self.players {
                while let Some(t) = p.ep.poll_transmit(self.now, &mut self.buf) {
                    to_server.push((p.addr, self.buf[..t.size].to_vec()));
                }
            }
            let mut from_server = Vec::new();
            while let Some(t) = self.server.poll_transmit(self.now, &mut self.buf) {
                from_server.push((t.destination, self.buf[..t.size].to_vec()));
            }
            if to_server.is_empty() && from_server.is_empty() {
                break;
            }
            for (to, d) in from_server {
                if let Some(p) = self.players.iter_mut().find(|p| p.addr == to) {
                    p.ep.handle_datagram(self.now, self.server_addr, &d);
                } else if let Ok(LongPacket::Challenge {
                    dst_cid,
                    nonce,
                    cookie,
                    ..
                }) = LongPacket::decode(&d)
                {
                    for c in self.flood_connects(dst_cid, nonce, &cookie) {
                        to_server.push((to, c));
                    }
                    if let Some(f) = self.flooders.iter_mut().find(|f| f.addr == to) {
                        f.cookies.push_back((dst_cid, nonce, cookie));
                    }
                }
            }
            for (from, d) in to_server {
                self.server.handle_datagram(self.now, from, &d);
            }
        }
        for p in &mut self.players {
            while let Some((h, e)) = p.ep.poll_event() {
                if Some(h) != p.conn {
                    continue;
                }
                match e {
                    Event::Connected { .. } => p.connected_at = Some(self.now),
                    Event::Disconnected { reason } => p.ended = Some(reason),
                    Event::Message(_) => {}
                }
            }
        }
        while self.server.poll_event().is_some() {}
    }

    /// One millisecond: flooders' Hellos and reused cookies, due timers, then the datagrams.
    fn step(&mut self) {
        self.now += ms(1);
        let mut out = Vec::new();
        for f in &mut self.flooders {
            if f.next_hello <= self.now {
                f.next_hello += self.period;
                f.nonce += 1;
                let cid = ConnectionId::new(&f.nonce.to_be_bytes()).expect("8 bytes");
                out.push((f.addr, Self::hello(cid, f.nonce)));
                if f.cookies.len() >= REUSE_AFTER {
                    let old = f.cookies.pop_front().expect("a cookie");
                    out.push((f.addr, Vec::new()));
                    f.cookies.push_front(old);
                }
            }
        }
        for (from, d) in out {
            if d.is_empty() {
                let f = self
                    .flooders
                    .iter_mut()
                    .find(|f| f.addr == from)
                    .expect("flooder");
                let (cid, nonce, cookie) = f.cookies.pop_front().expect("a cookie");
                for c in self.flood_connects(cid, nonce, &cookie) {
                    self.server.handle_datagram(self.now, from, &c);
                }
            } else {
                self.server.handle_datagram(self.now, from, &d);
            }
        }
        if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
            self.server.handle_timeout(self.now);
        }
        for p in &mut self.players {
            if p.ep.poll_timeout().is_some_and(|t| t <= self.now) {
                p.ep.handle_timeout(self.now);
            }
        }
        self.exchange();
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    fn elapsed(&self) -> Duration {
        self.now - self.start
    }
}

fn addr(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([a, b, c, d], port))
}

/// 250 sources flood valid-cookie Connects with random message 1 for 10 s (three Connects
/// per cookie, a cookie every 40 ms each: some 19 000 Connects a second) against a server that
/// may read 200 a second. The server reads no more than its budget in any second, no cookie
/// twice, and five honest clients from addresses of their own, arriving during the flood,
/// each connect within 2 s: the queue is served round-robin by source.
#[test]
fn a_connect_flood_from_many_sources_gets_the_read_budget_and_honest_clients_get_in() {
    const BUDGET: u32 = 200;
    let server = ServerConfig {
        handshake_reads_per_second: BUDGET,
        ..ServerConfig::default()
    };
    let mut arena = Arena::new(server, 1);
    arena.flood_from((0..250u16).map(|i| addr(10, 66, (i / 200) as u8, (i % 200) as u8 + 1, 7000)));
    let mut per_second = Vec::new();
    let mut last = 0;
    let mut honest = Vec::new();
    for second in 0..10u64 {
        for tenth in 0..10u64 {
            // honest clients at 1.5, 3, 4.5, 6 and 7.5 s
            if [15, 30, 45, 60, 75].contains(&(second * 10 + tenth)) {
                let i = honest.len() as u8;
                honest.push((
                    arena.connect(addr(198, 51, 100, 10 + i, 5000)),
                    arena.elapsed(),
                ));
            }
            arena.run_for(ms(100));
        }
        let read = arena.server.stats().handshakes_attempted;
        per_second.push(read - last);
        last = read;
    }
    arena.flooders.clear();
    arena.run_for(ms(2000));
    let stats = arena.server.stats().clone();
    eprintln!("reads per second: {per_second:?}");
    eprintln!("{stats:?}");
    let burst = u64::from(BUDGET / 4);
    assert!(
        per_second.iter().all(|&n| n <= u64::from(BUDGET) + burst),
        "{per_second:?}"
    );
    assert!(
        per_second[1..]
            .iter()
            .all(|&n| n >= u64::from(BUDGET) * 9 / 10),
        "the flood kept the budget busy: {per_second:?}"
    );
    assert!(
        stats.handshakes_queued > stats.handshakes_attempted,
        "more wanted than read"
    );
    assert!(
        stats.dropped_cookie_spent > 0,
        "cookies were reused and not read again"
    );
    assert!(
        stats.handshakes_attempted <= stats.handshakes_queued,
        "every read is of a queued Connect"
    );
    assert_eq!(honest.len(), 5);
    for (i, at) in honest {
        let p = &arena.players[i];
        let took = p.connected_at.map(|t| t - arena.start - at);
        eprintln!("honest client {i}: connected after {took:?}");
        assert!(
            took.is_some_and(|t| t <= ms(2000)),
            "client {i}: {took:?} {:?}",
            p.ended
        );
    }
    let bound = handshake_state_bound(&ServerConfig {
        handshake_reads_per_second: BUDGET,
        ..ServerConfig::default()
    });
    let held = arena.server.handshake_state_bytes();
    eprintln!("handshake queue and spent cookies: {held} B (bound {bound} B)");
    assert!(held <= bound, "{held} > {bound}");
}

/// The most bytes the handshake queue and the spent-cookie filter may hold: two generations
/// of at most `rate × lifetime + burst` cookies (an 8-byte id and a reason byte each, in hash
/// tables at least 1/8 empty, so at most twice the entries in slots, plus a control byte), and
/// `max_pending_handshakes` Connects of at most a datagram each.
fn handshake_state_bound(s: &ServerConfig) -> usize {
    let rate = s.handshake_reads_per_second as usize;
    let per_lifetime = rate * s.cookie_lifetime.as_millis() as usize / 1000 + rate / 4;
    let spent = 2 * (2 * per_lifetime) * (std::mem::size_of::<(u64, u8)>() + 1);
    let pending = s.max_pending_handshakes * (2048 + 256);
    spent + pending
}

/// A client that gets a cookie, then sends Connects with random message 1: the first is read
/// (one X25519) and refused (`UnknownServerKey`: not written to this key), and the same cookie
/// with any other message is refused again from memory, without a read. So is a refused read
/// of a genuine message 1 (a Connect without a token to a server that wants one).
#[test]
fn a_cookie_pays_for_one_read() {
    let now = Instant::now();
    let policy = TokenPolicy {
        key: TokenKey::new([9; 32]),
        public_addresses: Vec::new(),
    };
    let mut server = Endpoint::new(
        EndpointConfig::new([5; 32]),
        Some(ServerConfig {
            connect_tokens: Some(policy),
            ..ServerConfig::default()
        }),
        now,
    )
    .expect("server");
    server.set_unix_time(now, Duration::from_secs(1_800_000_000));
    let from = addr(203, 0, 113, 7, 4000);
    let mut buf = Vec::new();
    let cookie_for = |server: &mut Endpoint, buf: &mut Vec<u8>, cid, nonce| {
        server.handle_datagram(now, from, &Arena::hello(cid, nonce));
        server.poll_transmit(now, buf).expect("a Challenge");
        match LongPacket::decode(buf) {
            Ok(LongPacket::Challenge { cookie, .. }) => cookie,
            other => panic!("{other:?}"),
        }
    };
    let connect =
        |cid, nonce, cookie: &[u8], handshake| connect_datagram((cid, 1, nonce), cookie, handshake);
    let refusals = |server: &mut Endpoint, buf: &mut Vec<u8>, why: RefuseReason| {
        let mut n = 0;
        while server.poll_transmit(now, buf).is_some() {
            if let Ok(LongPacket::Refuse { reason, .. }) = LongPacket::decode(buf) {
                assert_eq!(RefuseReason::from_code(reason), why);
                n += 1;
            }
        }
        n
    };
    let cid = ConnectionId::new(&[3; 8]).expect("cid");
    let cookie = cookie_for(&mut server, &mut buf, cid, 1);
    server.handle_datagram(
        now,
        from,
        &connect(cid, 1, &cookie, vec![0xab; GARBAGE_LEN]),
    );
    assert_eq!(server.pending_handshakes(), 1);
    assert_eq!(server.poll_timeout(), Some(now));
    server.handle_timeout(now);
    assert_eq!(server.stats().handshakes_attempted, 1);
    assert_eq!(server.stats().dropped_bad_handshake, 1);
    let unknown = RefuseReason::UnknownServerKey;
    assert_eq!(refusals(&mut server, &mut buf, unknown), 1);
    for fill in 0..5u8 {
        server.handle_datagram(
            now + ms(1),
            from,
            &connect(cid, 1, &cookie, vec![fill; GARBAGE_LEN]),
        );
    }
    assert_eq!(server.pending_handshakes(), 0, "nothing queued");
    assert_eq!(server.poll_timeout(), None, "nothing to do");
    server.handle_timeout(now + ms(2));
    assert_eq!(server.stats().handshakes_attempted, 1, "no second read");
    assert_eq!(server.stats().dropped_cookie_spent, 5);
    assert_eq!(refusals(&mut server, &mut buf, unknown), 5, "from memory");

    // a genuine message 1 without a token: refused once, and again from memory
    let cid = ConnectionId::new(&[4; 8]).expect("cid");
    let cookie = cookie_for(&mut server, &mut buf, cid, 2);
    let msg = message_1(&server.public_key().expect("key"), &cid, 1, 2);
    let datagram = connect(cid, 2, &cookie, msg);
    let invalid = RefuseReason::InvalidToken;
    server.handle_datagram(now, from, &datagram);
    server.handle_timeout(now);
    assert_eq!(refusals(&mut server, &mut buf, invalid), 1);
    server.handle_datagram(now, from, &datagram);
    assert_eq!(
        refusals(&mut server, &mut buf, invalid),
        1,
        "the refusal again"
    );
    assert_eq!(server.stats().handshakes_attempted, 2, "one read each");
}

/// A token server admits 100 token holders from one address (a carrier-grade NAT, a load
/// test): the token's client id is the admission, not the address's share.
#[test]
fn a_hundred_token_holders_behind_one_address_all_get_in() {
    let key = TokenKey::new([42; 32]);
    let policy = TokenPolicy {
        key: key.clone(),
        public_addresses: Vec::new(),
    };
    let mut arena = Arena::new(
        ServerConfig {
            connect_tokens: Some(policy),
            ..ServerConfig::default()
        },
        2,
    );
    let unix = Duration::from_secs(1_800_000_000);
    arena.server.set_unix_time(arena.now, unix);
    let server_key = arena.server.public_key().expect("server").0;
    for i in 0..100u64 {
        let claims = TokenClaims {
            client_id: 1000 + i,
            user_data: Vec::new(),
        };
        let token = ConnectToken::mint(
            &key,
            &claims,
            server_key,
            &[arena.server_addr],
            unix.as_secs() + 60,
            [i as u8; 24],
        )
        .expect("mint");
        let mut ep = arena.player_endpoint();
        let conn = ep
            .connect_with_token(arena.now, &token, &[ChannelKind::ReliableOrdered])
            .expect("connect");
        arena.add(addr(100, 64, 0, 1, 20_000 + i as u16), ep, conn);
    }
    arena.run_for(ms(4000));
    let connected = arena
        .players
        .iter()
        .filter(|p| p.connected_at.is_some())
        .count();
    assert_eq!(connected, 100, "{:?}", arena.server.stats());
    assert_eq!(arena.server.connection_count(), 100);
}

/// Without tokens one address holds at most `max_connections_per_source` (64): the 65th
/// client is refused, and its application is told why in words it can print.
#[test]
fn the_sixty_fifth_client_from_one_address_is_refused_and_told_why() {
    let mut arena = Arena::new(ServerConfig::default(), 3);
    for i in 0..65u16 {
        arena.connect(addr(100, 64, 0, 1, 20_000 + i));
        arena.run_for(ms(30));
    }
    arena.run_for(ms(1000));
    let connected = arena
        .players
        .iter()
        .filter(|p| p.connected_at.is_some())
        .count();
    assert_eq!(connected, 64);
    let last = &arena.players[64];
    let reason = last.ended.clone().expect("refused");
    assert_eq!(
        reason,
        DisconnectReason::Refused(RefuseReason::TooManyFromSource)
    );
    let text = reason.to_string();
    assert_eq!(
        text,
        "refused by the server: too many connections from this address (the server's per-address limit)"
    );
}

/// Under table pressure the network holding the most connections is refused first: four
/// players from four networks are in; then 60 addresses of one /24 get 52 places (the table
/// then holds 56 of 64, 7/8) and are refused `BusyNetwork` after that, while clients from
/// other networks still get the last eight places; then the server is full. A network alone
/// (a load test from one host) is not refused for its prefix: it is the only one.
#[test]
fn one_network_cannot_take_the_last_places() {
    let mut arena = Arena::new(
        ServerConfig {
            max_connections: 64,
            ..ServerConfig::default()
        },
        4,
    );
    for i in 0..4u8 {
        arena.connect(addr(10, 100 + i, 0, 1, 9000));
    }
    arena.run_for(ms(200));
    for i in 0..60u8 {
        arena.connect(addr(10, 1, 1, i + 1, 9000));
    }
    arena.run_for(ms(1000));
    let count = |arena: &Arena, r: Option<RefuseReason>| {
        arena
            .players
            .iter()
            .filter(|p| match r {
                None => p.connected_at.is_some(),
                Some(r) => p.ended == Some(DisconnectReason::Refused(r)),
            })
            .count()
    };
    assert_eq!(count(&arena, None), 56);
    assert_eq!(count(&arena, Some(RefuseReason::BusyNetwork)), 8);
    for i in 0..8u8 {
        arena.connect(addr(10, 2 + i, 0, 1, 9000));
    }
    arena.run_for(ms(1000));
    assert_eq!(count(&arena, None), 64);
    arena.connect(addr(10, 20, 0, 1, 9000));
    arena.run_for(ms(1000));
    assert_eq!(count(&arena, Some(RefuseReason::ServerFull)), 1);
    let stats = arena.server.stats();
    assert_eq!(stats.refused_busy_network, 8);
    assert_eq!(
        DisconnectReason::Refused(RefuseReason::BusyNetwork).to_string(),
        "refused by the server: server nearly full: too many connections from this network"
    );
}

/// The cost the default read budget is based on (`ServerConfig::handshake_reads_per_second`):
/// wall-clock time of a failed message-1 read (random bytes: one X25519) and of a whole
/// handshake on the server side. Prints only; run with
/// `cargo test -p thinwire-proto --release measure_handshake_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_handshake_cost() {
    let server = ServerKey::generate([3; 32]);
    let cid = ConnectionId::new(&[1; 8]).expect("cid");
    let prologue = crypto::prologue(wire::VERSION, &cid, 1, 2);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    const N: u32 = 2000;
    let msgs: Vec<Vec<u8>> = (0..N)
        .map(|_| {
            let mut m = vec![0u8; GARBAGE_LEN];
            rng.fill_bytes(&mut m);
            m
        })
        .collect();
    let t = std::time::Instant::now();
    let failed = msgs
        .iter()
        .filter(|m| Responder::read(&server, &prologue, [7; 32], m).is_none())
        .count();
    let read = t.elapsed() / N;
    assert_eq!(failed, N as usize);
    let good: Vec<Vec<u8>> = (0..N)
        .map(|i| {
            let seed = [(i % 251) as u8; 32];
            crypto::Initiator::start(&server.public(), &prologue, seed, &[0; 40])
                .expect("msg 1")
                .1
        })
        .collect();
    let t = std::time::Instant::now();
    for m in &good {
        let (r, _) = Responder::read(&server, &prologue, [7; 32], m).expect("reads");
        r.finish(&[0; 40]).expect("msg 2");
    }
    let whole = t.elapsed() / N;
    eprintln!("failed message-1 read: {read:?}; server side of a whole handshake: {whole:?}");
}
