//! The server's side of a 30 Hz game tick, sans IO: N client connections (one client endpoint,
//! a trusted source) each send one 40-byte reliable message per tick; the server answers each
//! with a 40-byte reliable update; both sides ACK. Only the server endpoint's calls are timed
//! (receive, timers, send, transmit, events), in nanoseconds per client per tick: the
//! protocol's share of `thinwire bench`'s 30 Hz sweep, without sockets or the client load.
//!
//! Run: `cargo bench -p thinwire-proto --bench tick` (`-- 200,2000,10000` for other counts).
//! For profilers: `TICK_REPS` (runs per count, 5), `TICK_TICKS` (measured ticks per run, 60),
//! `TICK_BATCH` (datagrams handled before the server sends, all of a phase by default),
//! `TICK_DEBUG` (datagrams per phase on stderr), `TICK_PREFETCH` (set: the server makes
//! prefetch hints, see `World::prefetch_datagrams`; `TICK_PREFETCH_FROM`: from how many
//! connections on, `PREFETCH_FROM_CONNECTIONS` by default) and `TICK_ACKS` (set: both ends use
//! `TransportConfig::with_tick_acks`, so the ACKs ride the inputs and the updates and two
//! datagrams per client and tick pass through the server instead of four).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::Lookahead;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, SendMode, ServerConfig,
    ServerKey, TransportConfig,
};

const PERIOD: Duration = Duration::from_micros(33_333);
const ONE_WAY: Duration = Duration::from_millis(1);
const WARM_TICKS: usize = 20;
const TICKS: usize = 60;
const REPETITIONS: usize = 5;

struct World {
    client: Endpoint,
    server: Endpoint,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    now: Instant,
    client_conns: Vec<ConnectionHandle>,
    server_conns: Vec<ConnectionHandle>,
    buf: Vec<u8>,
    /// Datagrams the server handles before it sends what they called for.
    batch: usize,
    /// Datagrams per phase on stderr (`TICK_DEBUG`).
    debug: bool,
    /// The server endpoint gets a prefetcher (`TICK_PREFETCH` set), with which it hints the
    /// connections it writes datagrams for; the datagrams of a batch are hinted ahead too
    /// unless `TICK_PREFETCH` is `transmit`, and the server's sends as well if it is `all`.
    prefetch_datagrams: bool,
    prefetch_sends: bool,
    /// Time spent in the server endpoint's calls, by phase: client messages in (and ACKs
    /// out), updates out, ACKs in.
    phases: [Duration; 3],
}

impl World {
    fn new(n: usize, batch: usize, debug: bool, tick_acks: bool) -> World {
        let now = Instant::now();
        let mut seed = [7u8; 32];
        let config = |seed| {
            let mut c = EndpointConfig::new(seed);
            if tick_acks {
                c.transport = Arc::new(TransportConfig::default().with_tick_acks(PERIOD));
            }
            c
        };
        let client = Endpoint::new(config(seed), None, now).expect("client");
        seed[0] = 9;
        let server_addr: SocketAddr = "127.0.0.1:4433".parse().expect("addr");
        let client_addr: SocketAddr = "127.0.0.1:40000".parse().expect("addr");
        let server_config = ServerConfig {
            key: Some(ServerKey::generate([3; 32])),
            max_connections: n + 16,
            trusted_sources: vec![client_addr.ip()],
            // every client connects at once, in simulated time: no reason to pace the reads
            handshake_reads_per_second: 1_000_000,
            max_pending_handshakes: n + 16,
            handshakes_per_turn: 1_000,
            ..ServerConfig::default()
        };
        let mut server = Endpoint::new(config(seed), Some(server_config), now).expect("server");
        let prefetch = std::env::var("TICK_PREFETCH").ok();
        if prefetch.is_some() {
            server.set_prefetcher(
                Some(prefetch_lines),
                env_or(
                    "TICK_PREFETCH_FROM",
                    thinwire_proto::PREFETCH_FROM_CONNECTIONS,
                ),
            );
        }
        let mut w = World {
            client,
            server,
            client_addr,
            server_addr,
            now,
            client_conns: Vec::with_capacity(n),
            server_conns: Vec::with_capacity(n),
            buf: Vec::with_capacity(2048),
            batch: batch.max(1),
            debug,
            prefetch_datagrams: prefetch.as_deref().is_some_and(|p| p != "transmit"),
            prefetch_sends: prefetch.as_deref() == Some("all"),
            phases: [Duration::ZERO; 3],
        };
        let key = w.server.public_key().expect("server key");
        for _ in 0..n {
            let c = w
                .client
                .connect(w.now, server_addr, &key, &[ChannelKind::ReliableOrdered])
                .expect("connect");
            w.client_conns.push(c);
        }
        let deadline = w.now + Duration::from_secs(120);
        while w.server_conns.len() < n {
            assert!(
                w.now < deadline,
                "{} of {n} connected",
                w.server_conns.len()
            );
            w.exchange();
            w.now += Duration::from_millis(1);
            w.client.handle_timeout(w.now);
            w.server.handle_timeout(w.now);
        }
        w
    }

    /// Client to server and back until nothing is in flight; collects the server's new
    /// connections.
    fn exchange(&mut self) {
        let (mut up, mut down) = (Datagrams::default(), Datagrams::default());
        loop {
            up.clear();
            down.clear();
            drain(&mut self.client, self.now, &mut self.buf, &mut up);
            while self.client.poll_event().is_some() {}
            for d in up.iter() {
                self.server.handle_datagram(self.now, self.client_addr, d);
            }
            drain(&mut self.server, self.now, &mut self.buf, &mut down);
            while let Some((h, e)) = self.server.poll_event() {
                if matches!(e, Event::Connected { .. }) {
                    self.server_conns.push(h);
                }
            }
            if up.is_empty() && down.is_empty() {
                return;
            }
            for d in down.iter() {
                self.client.handle_datagram(self.now, self.server_addr, d);
            }
        }
    }

    /// The server handles `incoming`, sending what each batch of it calls for into `out`;
    /// returns the messages delivered.
    fn serve(&mut self, incoming: &Datagrams, out: &mut Datagrams) -> usize {
        let mut messages = 0;
        for batch in incoming.all[..incoming.len].chunks(self.batch) {
            // as `thinwire`'s runtime hints a batch (no lookups at all without hints)
            let lead = batch.iter().skip(1).map(|d| &d[..]);
            let mut ahead = self
                .prefetch_datagrams
                .then(|| Lookahead::new(&self.server, lead));
            for d in batch {
                if let Some(ahead) = &mut ahead {
                    ahead.hint(&self.server);
                }
                self.server.handle_datagram(self.now, self.client_addr, d);
            }
            drain(&mut self.server, self.now, &mut self.buf, out);
            while let Some((_, e)) = self.server.poll_event() {
                messages += usize::from(matches!(e, Event::Message(_)));
            }
        }
        messages
    }

    /// One tick: every client sends, the server receives, sends its updates, the clients
    /// receive and ACK. The buffers in `d` are reused from tick to tick (no allocation).
    fn tick(&mut self, payload: &Bytes, d: &mut [Datagrams; 5]) {
        let [up, acks, down, client_acks, rest] = d;
        for b in [
            &mut *up,
            &mut *acks,
            &mut *down,
            &mut *client_acks,
            &mut *rest,
        ] {
            b.clear();
        }
        for &c in &self.client_conns {
            self.client
                .send(self.now, c, 0, payload.clone(), SendMode::Plain)
                .expect("client send");
        }
        drain(&mut self.client, self.now, &mut self.buf, up);
        self.now += ONE_WAY;
        let t0 = Instant::now();
        self.server.handle_timeout(self.now);
        let messages = self.serve(up, acks);
        self.lap(0, t0);
        assert_eq!(
            messages,
            self.client_conns.len(),
            "every client message arrives"
        );
        self.now += ONE_WAY;
        for d in acks.iter() {
            self.client.handle_datagram(self.now, self.server_addr, d);
        }
        // the server's tick
        self.now += PERIOD / 2;
        let t0 = Instant::now();
        self.server.handle_timeout(self.now);
        for (i, &s) in self.server_conns.iter().enumerate() {
            if self.prefetch_sends {
                for k in 1..=3 {
                    if let Some(&n) = self.server_conns.get(i + k) {
                        self.server.prefetch_connection(n, (3 - k) as u8, false);
                    }
                }
            }
            self.server
                .send(self.now, s, 0, payload.clone(), SendMode::Plain)
                .expect("server send");
        }
        drain(&mut self.server, self.now, &mut self.buf, down);
        self.lap(1, t0);
        self.now += ONE_WAY;
        for d in down.iter() {
            self.client.handle_datagram(self.now, self.server_addr, d);
        }
        while self.client.poll_event().is_some() {}
        drain(&mut self.client, self.now, &mut self.buf, client_acks);
        self.now += ONE_WAY;
        let t0 = Instant::now();
        self.serve(client_acks, rest);
        self.lap(2, t0);
        for d in rest.iter() {
            self.client.handle_datagram(self.now, self.server_addr, d);
        }
        if self.debug {
            eprintln!(
                "up {} acks {} down {} client_acks {} rest {}",
                up.len, acks.len, down.len, client_acks.len, rest.len,
            );
        }
        self.now += PERIOD - PERIOD / 2 - 3 * ONE_WAY;
        self.client.handle_timeout(self.now);
    }

    /// Counts the server's time since `t0` in phase `phase`.
    fn lap(&mut self, phase: usize, t0: Instant) {
        self.phases[phase] += t0.elapsed();
    }
}

/// The bench's prefetcher: `_mm_prefetch` over each 64-byte line (what `thinwire`'s runtime
/// gives its endpoints).
#[allow(unsafe_code)] // the one instruction a prefetcher issues
fn prefetch_lines(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in thinwire_proto::prefetch::cache_lines(p, len) {
        // SAFETY: a prefetch only hints; it reads nothing architecturally and never faults
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

/// The number in environment variable `name`, or `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default)
}

/// Datagrams in reused buffers, as a runtime's send batch holds them.
#[derive(Default)]
struct Datagrams {
    all: Vec<Vec<u8>>,
    len: usize,
}

impl Datagrams {
    fn clear(&mut self) {
        self.len = 0;
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, d: &[u8]) {
        if self.len == self.all.len() {
            self.all.push(Vec::with_capacity(1500));
        }
        let v = &mut self.all[self.len];
        v.clear();
        v.extend_from_slice(d);
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.all[..self.len].iter().map(Vec::as_slice)
    }
}

/// Everything `e` has to send now, appended to `out`.
fn drain(e: &mut Endpoint, now: Instant, buf: &mut Vec<u8>, out: &mut Datagrams) {
    while let Some(t) = e.poll_transmit(now, buf) {
        out.push(&buf[..t.size]);
    }
}

fn main() {
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| {
            a.split(',')
                .map(|n| n.parse().expect("a client count"))
                .collect()
        })
        .unwrap_or_else(|| vec![200, 2000]);
    let payload = Bytes::from(vec![0x5a; 40]);
    let reps = env_or("TICK_REPS", REPETITIONS).max(1);
    let ticks = env_or("TICK_TICKS", TICKS).max(1);
    let batch = env_or("TICK_BATCH", usize::MAX);
    let debug = std::env::var_os("TICK_DEBUG").is_some();
    let tick_acks = std::env::var_os("TICK_ACKS").is_some();
    for n in counts {
        // per run, ns per client per tick by phase
        let mut runs: Vec<[f64; 3]> = Vec::new();
        for _ in 0..reps {
            let mut w = World::new(n, batch, debug, tick_acks);
            let mut buffers = Default::default();
            for _ in 0..WARM_TICKS {
                w.tick(&payload, &mut buffers);
            }
            w.phases = [Duration::ZERO; 3];
            for _ in 0..ticks {
                w.tick(&payload, &mut buffers);
            }
            runs.push(w.phases.map(|d| d.as_nanos() as f64 / (n * ticks) as f64));
        }
        let total = |p: &[f64; 3]| p.iter().sum::<f64>();
        runs.sort_by(|a, b| total(a).total_cmp(&total(b)));
        let p = runs[reps / 2];
        println!(
            "tick/{n} clients: server {:.0} ns per client per tick (median of {reps}; {:.0}-{:.0})",
            total(&p),
            total(&runs[0]),
            total(&runs[reps - 1])
        );
        println!(
            "  of which: client messages in and ACKs out {:.0}, updates out {:.0}, ACKs in {:.0}",
            p[0], p[1], p[2]
        );
    }
}
