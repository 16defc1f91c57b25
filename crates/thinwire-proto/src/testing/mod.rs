//! A two-endpoint harness in simulated time over the [`thinwire_netmodel`] links.
//!
//! One client [`Endpoint`] and one server [`Endpoint`] are joined by two one-way
//! [`Link`](thinwire_netmodel::Link)s (delay, jitter, loss, duplication, reordering,
//! corruption, bandwidth and queues); a test can also intercept each datagram (drop, hold back)
//! with a [`Filter`]. Time only advances when [`Pair::step`] jumps to the next event, so runs are
//! deterministic for a seed.
//!
//! It is public so the lab and downstream crates can test against the real core.

pub mod fuzz;
mod side;

pub use side::{drop_first_containing, drop_next, Filter, Side, Verdict};

use std::time::{Duration, Instant};

use thinwire_netmodel::clock::{self, SimClock};

use crate::{
    ChannelKind, CipherSuite, ConnectionHandle, Endpoint, EndpointConfig, Event, PolicyCache,
    SendMode, ServerConfig, TransportConfig,
};
use thinwire_netmodel::LinkConfig;

/// The payload [`Pair::warm_up`] sends.
pub const WARM_UP: &[u8] = b"warm-up";

/// A client and a server endpoint joined by two simulated links.
#[derive(Debug)]
pub struct Pair {
    time: Instant,
    client: Side,
    server: Side,
    server_static: crate::ServerKey,
    server_suites: Vec<CipherSuite>,
    policy_cache: PolicyCache,
    buf: Vec<u8>,
}

/// Builds a [`Pair`].
#[derive(Debug, Clone)]
pub struct PairBuilder {
    seed: u64,
    up: LinkConfig,
    down: LinkConfig,
    transport: TransportConfig,
    server_transport: Option<TransportConfig>,
    suites: Option<Vec<CipherSuite>>,
    server_config: ServerConfig,
    server_memory: Option<crate::MemoryBudget>,
    policy_cache: PolicyCache,
}

impl PairBuilder {
    /// The server's configuration (its `key` is replaced by the pair's).
    pub fn server_config(mut self, config: ServerConfig) -> Self {
        self.server_config = config;
        self
    }

    /// The cipher suites of both endpoints (default: each endpoint's default list).
    pub fn cipher_suites(mut self, suites: Vec<CipherSuite>) -> Self {
        self.suites = Some(suites);
        self
    }

    /// The policy cache of both endpoints (default: a fresh one for the pair). Pairs
    /// built one after another with one cache solve each policy once; sharing is invisible to
    /// behaviour.
    pub fn policy_cache(mut self, cache: PolicyCache) -> Self {
        self.policy_cache = cache;
        self
    }

    /// Both directions with the same link model.
    pub fn link(mut self, link: LinkConfig) -> Self {
        self.up = link.clone();
        self.down = link;
        self
    }

    /// The client-to-server link.
    pub fn uplink(mut self, link: LinkConfig) -> Self {
        self.up = link;
        self
    }

    /// The server-to-client link.
    pub fn downlink(mut self, link: LinkConfig) -> Self {
        self.down = link;
        self
    }

    /// Transport configuration of both endpoints.
    pub fn transport(mut self, transport: TransportConfig) -> Self {
        self.transport = transport;
        self
    }

    /// Transport configuration of the server only.
    pub fn server_transport(mut self, transport: TransportConfig) -> Self {
        self.server_transport = Some(transport);
        self
    }

    /// The server endpoint's memory budget (default: [`crate::MemoryBudget::default`]).
    pub fn server_memory(mut self, budget: crate::MemoryBudget) -> Self {
        self.server_memory = Some(budget);
        self
    }

    /// Creates the pair at an arbitrary epoch.
    pub fn build(self) -> Pair {
        let time = Instant::now();
        let seeds = split_seed(self.seed);
        let suites = self.suites;
        let policy_cache = self.policy_cache;
        let mk = |seed: [u8; 32], t: TransportConfig| {
            let mut c = EndpointConfig::new(seed);
            c.transport = std::sync::Arc::new(t);
            c.policy_cache = policy_cache.clone();
            if let Some(s) = &suites {
                c.cipher_suites = s.clone();
            }
            c
        };
        let client_cfg = mk(seeds[0], self.transport.clone());
        let mut server_cfg = mk(seeds[1], self.server_transport.unwrap_or(self.transport));
        if let Some(memory) = self.server_memory {
            server_cfg.memory = memory;
        }
        let server_suites = server_cfg.cipher_suites.clone();
        let server_static = crate::ServerKey::generate(seeds[1]);
        let server_config = ServerConfig {
            key: Some(server_static.clone()),
            ..self.server_config
        };
        let client = Endpoint::new(client_cfg, None, time).expect("valid client config");
        let server =
            Endpoint::new(server_cfg, Some(server_config), time).expect("valid server config");
        Pair {
            server_static,
            server_suites,
            policy_cache,
            time,
            client: Side::new(
                client,
                "127.0.0.1:40000".parse().expect("addr"),
                self.up,
                self.seed ^ 0x5151,
            ),
            server: Side::new(
                server,
                "127.0.0.1:4433".parse().expect("addr"),
                self.down,
                self.seed ^ 0xa7a7,
            ),
            buf: Vec::with_capacity(2048),
        }
    }
}

/// Derives endpoint seeds from one test seed.
fn split_seed(seed: u64) -> [[u8; 32]; 2] {
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    a[..8].copy_from_slice(&seed.to_le_bytes());
    b[..8].copy_from_slice(&seed.to_le_bytes());
    a[8] = 1;
    b[8] = 2;
    [a, b]
}

impl Pair {
    /// The current simulated time.
    pub fn now(&self) -> Instant {
        self.time
    }

    /// The client side (it sends on its outbound link to the server).
    pub fn client(&self) -> &Side {
        &self.client
    }

    /// The client side, to drive its endpoint or set its filter.
    pub fn client_mut(&mut self) -> &mut Side {
        &mut self.client
    }

    /// The server side.
    pub fn server(&self) -> &Side {
        &self.server
    }

    /// The server side, to drive its endpoint or set its filter.
    pub fn server_mut(&mut self) -> &mut Side {
        &mut self.server
    }

    /// A builder with a perfect network and default transport configuration.
    pub fn builder(seed: u64) -> PairBuilder {
        PairBuilder {
            seed,
            up: LinkConfig::default(),
            down: LinkConfig::default(),
            transport: TransportConfig::default(),
            server_transport: None,
            suites: None,
            server_config: ServerConfig::default(),
            server_memory: None,
            policy_cache: PolicyCache::default(),
        }
    }

    /// Opens a connection with `channels` and runs until both sides report it (or 10 simulated
    /// seconds pass). Returns (client handle, server handle) if it connected.
    pub fn connect(
        &mut self,
        channels: &[ChannelKind],
    ) -> Option<(ConnectionHandle, ConnectionHandle)> {
        let key = self.server_key();
        let c = self
            .client
            .endpoint_mut()
            .connect(self.time, self.server.addr(), &key, channels)
            .ok()?;
        let deadline = self.time + Duration::from_secs(10);
        let mut client_ok = false;
        let mut server_h = None;
        while self.time < deadline && !(client_ok && server_h.is_some()) {
            if !self.step() {
                break;
            }
            client_ok |= self
                .client
                .events()
                .iter()
                .any(|(h, e)| *h == c && matches!(e, Event::Connected { .. }));
            server_h = server_h.or_else(|| {
                self.server
                    .events()
                    .iter()
                    .find(|(_, e)| matches!(e, Event::Connected { .. }))
                    .map(|(h, _)| *h)
            });
        }
        self.client
            .events_mut()
            .retain(|(_, e)| !matches!(e, Event::Connected { .. }));
        self.server
            .events_mut()
            .retain(|(_, e)| !matches!(e, Event::Connected { .. }));
        Some((c, server_h?)).filter(|_| client_ok)
    }

    /// Sends everything both endpoints want to send now and collects their events.
    pub fn flush(&mut self) {
        let (client_addr, server_addr) = (self.client.addr(), self.server.addr());
        self.client.flush(server_addr, self.time, &mut self.buf);
        self.server.flush(client_addr, self.time, &mut self.buf);
    }

    /// The next instant anything happens (a delivery or a timer).
    pub fn next_event(&mut self) -> Option<Instant> {
        [
            self.client.endpoint_mut().poll_timeout(),
            self.server.endpoint_mut().poll_timeout(),
            self.client.outbound().next_delivery(),
            self.server.outbound().next_delivery(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Advances to the next event and processes everything due then. Returns false when nothing
    /// is scheduled at all.
    pub fn step(&mut self) -> bool {
        self.flush();
        let Some(next) = self.next_event() else {
            return false;
        };
        self.time = self.time.max(next);
        self.process_due();
        true
    }

    fn process_due(&mut self) {
        let now = self.time;
        self.client.deliver(now, self.server.endpoint_mut());
        self.server.deliver(now, self.client.endpoint_mut());
        self.client.handle_timeout(now);
        self.server.handle_timeout(now);
        self.flush();
    }

    /// Runs every event up to `until`, then sets the time to `until`.
    pub fn run_until(&mut self, until: Instant) {
        clock::run_until(self, until);
    }

    /// Runs for `d` of simulated time.
    pub fn run_for(&mut self, d: Duration) {
        clock::run_for(self, d);
    }

    /// Runs until `done` holds or `limit` of simulated time passes; returns whether it held.
    pub fn run_while(&mut self, limit: Duration, done: impl FnMut(&Pair) -> bool) -> bool {
        clock::run_while(self, limit, done)
    }

    /// Settles the RTT estimate: `count` small messages (the 7 bytes `warm-up`, channel 0) from
    /// the client on `conn`, `gap` apart; then forgets the server's events.
    pub fn warm_up(&mut self, conn: ConnectionHandle, count: usize, gap: Duration) {
        for _ in 0..count {
            self.client
                .endpoint_mut()
                .send(
                    self.time,
                    conn,
                    0,
                    bytes::Bytes::from_static(WARM_UP),
                    SendMode::Plain,
                )
                .expect("warm-up send on channel 0");
            self.run_for(gap);
        }
        self.server.events_mut().clear();
    }

    /// Sends from the client on `conn` at the pair's current time: the client endpoint's
    /// [`send`](Endpoint::send) without the borrow of [`now`](Self::now) around it.
    pub fn client_send(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        data: bytes::Bytes,
        mode: crate::SendMode,
    ) -> Result<(), crate::SendError> {
        let now = self.now();
        self.client_mut()
            .endpoint_mut()
            .send(now, conn, channel, data, mode)
    }

    /// The server's static public key (what a client must know to connect).
    pub fn server_key(&self) -> crate::PublicKey {
        self.server
            .endpoint()
            .public_key()
            .expect("the server side is a server")
    }

    /// Replaces the server endpoint with a fresh one (a restart: all its state is gone but its
    /// static key, which a real server keeps).
    pub fn restart_server(&mut self, seed: u64) {
        let mut cfg = EndpointConfig::new(split_seed(seed)[1]);
        cfg.transport = std::sync::Arc::new(self.server.endpoint().transport_config().clone());
        cfg.cipher_suites = self.server_suites.clone();
        cfg.policy_cache = self.policy_cache.clone();
        let server = ServerConfig {
            key: Some(self.server_static.clone()),
            ..ServerConfig::default()
        };
        *self.server.endpoint_mut() =
            Endpoint::new(cfg, Some(server), self.time).expect("valid config");
        self.server.events_mut().clear();
    }
}

/// The packet protection and the handshake on their own, for benchmarks (the runtime never
/// needs them: the endpoint applies them).
pub mod crypto {
    use std::time::Instant;

    use crate::crypto::{prologue, Initiator, PacketKeys, Responder};
    use crate::wire::ConnectionId;
    use crate::{CipherSuite, ServerKey};

    /// Both directions' keys of one side, under fixed test keys, and the first moment it
    /// opened a packet (the keys count time from there).
    #[derive(Debug)]
    pub struct PacketCipher(PacketKeys, Option<Instant>);

    impl PacketCipher {
        /// A side that sends with key `[1; 32]` and receives with `[2; 32]` (`mirror` swaps
        /// them: the other side).
        pub fn new(suite: CipherSuite, mirror: bool) -> Self {
            let (a, b) = ([1u8; 32], [2u8; 32]);
            let never = u64::MAX;
            if mirror {
                Self(PacketKeys::new(suite, &b, &a, never), None)
            } else {
                Self(PacketKeys::new(suite, &a, &b, never), None)
            }
        }

        /// Seals `buf` (header of `header_len` bytes, then frames) as packet `pn`.
        pub fn seal(&mut self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
            self.0.seal(pn, buf, header_len);
        }

        /// Opens a sealed body in place at `now`; the frames' length, or `None`.
        pub fn open(
            &mut self,
            now: Instant,
            pn: u64,
            header: &[u8],
            body: &mut [u8],
        ) -> Option<usize> {
            let base = *self.1.get_or_insert(now);
            let at = crate::stamp::Stamp(crate::stamp::signed_nanos(now, base));
            self.0.open(at, pn, (header, body), None)
        }
    }

    /// One whole Noise NK handshake between a client and `server` (both sides' work), with
    /// payloads of `payload` bytes. Returns the two messages' lengths.
    pub fn handshake(server: &ServerKey, seed: u8, payload: usize) -> (usize, usize) {
        let cid = ConnectionId::new(&[seed; 8]).expect("8 bytes");
        let p = prologue(crate::wire::VERSION, &cid, 1, 2);
        let data = vec![7u8; payload];
        let (mut client, m1) =
            Initiator::start(&server.public(), &p, [seed; 32], &data).expect("message 1");
        let (resp, _) = Responder::read(server, &p, [seed ^ 1; 32], &m1).expect("read 1");
        let (m2, _) = resp.finish(&data).expect("message 2");
        client.finish(&m2).expect("read 2");
        (m1.len(), m2.len())
    }
}

impl SimClock for Pair {
    fn time_mut(&mut self) -> &mut Instant {
        &mut self.time
    }
    fn flush(&mut self) {
        Pair::flush(self);
    }
    fn next_event(&mut self) -> Option<Instant> {
        Pair::next_event(self)
    }
    fn process_due(&mut self) {
        Pair::process_due(self);
    }
}
