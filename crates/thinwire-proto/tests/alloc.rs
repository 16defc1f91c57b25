//! What the hot path and an idle connection cost in heap memory, counted by a global allocator
//! that tallies every allocation of this test binary.
//!
//! Two endpoints are joined by a lossless, instantaneous "wire" (every datagram is handed to the
//! other side at once); time only moves when the test says so. The counters are process-wide,
//! so the tests run one at a time under a lock.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, SendMode, ServerConfig,
};

/// Counts the allocations of the thread that set `COUNTING` (the test harness's other threads
/// allocate too), and live bytes always.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.with(Cell::get)
}
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are atomics.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocator's counters are process-wide: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Allocations made while `f` runs.
fn allocations_in<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCS.load(Ordering::SeqCst) - before)
}

fn live_bytes() -> isize {
    LIVE.load(Ordering::SeqCst)
}

const SERVER: &str = "10.0.0.1:4000";
const CLIENT: &str = "10.0.0.2:5000";

/// A server endpoint and a client endpoint over an instantaneous wire.
struct Wire {
    now: Instant,
    server: Endpoint,
    client: Option<Endpoint>,
    buf: Vec<u8>,
    delivered: usize,
}

impl Wire {
    fn new(max_connections: usize) -> Self {
        let now = Instant::now();
        let server_cfg = ServerConfig {
            max_connections,
            trusted_sources: vec![CLIENT.parse::<SocketAddr>().unwrap().ip()],
            // every handshake read in the same turn, as the connections' timers line up
            handshake_reads_per_second: 10_000,
            ..ServerConfig::default()
        };
        let server = Endpoint::new(EndpointConfig::new([1; 32]), Some(server_cfg), now).unwrap();
        let client = Endpoint::new(EndpointConfig::new([2; 32]), None, now).unwrap();
        Self {
            now,
            server,
            client: Some(client),
            buf: Vec::with_capacity(2048),
            delivered: 0,
        }
    }

    fn client(&mut self) -> &mut Endpoint {
        self.client.as_mut().expect("client present")
    }

    /// Moves every datagram across and counts (then drops) every event, until both sides are
    /// quiet.
    fn exchange(&mut self) {
        let (s_addr, c_addr): (SocketAddr, SocketAddr) =
            (SERVER.parse().unwrap(), CLIENT.parse().unwrap());
        loop {
            let mut moved = false;
            while let Some(t) = self.server.poll_transmit(self.now, &mut self.buf) {
                moved = true;
                if let Some(c) = self.client.as_mut() {
                    c.handle_datagram(self.now, s_addr, &self.buf[..t.size]);
                }
            }
            if let Some(c) = self.client.as_mut() {
                while let Some(t) = c.poll_transmit(self.now, &mut self.buf) {
                    moved = true;
                    self.server
                        .handle_datagram(self.now, c_addr, &self.buf[..t.size]);
                }
            }
            while let Some((_, e)) = self.server.poll_event() {
                if matches!(e, Event::Message(_)) {
                    self.delivered += 1;
                }
            }
            if let Some(c) = self.client.as_mut() {
                while c.poll_event().is_some() {}
            }
            if !moved {
                break;
            }
        }
    }

    /// Advances time by `d`, firing due timers on both sides.
    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.server.handle_timeout(self.now);
        if let Some(c) = self.client.as_mut() {
            c.handle_timeout(self.now);
        }
        self.exchange();
        // the server reads queued Connects a few per `handle_timeout`: call it while it is due
        while self.server.poll_timeout().is_some_and(|t| t <= self.now) {
            self.server.handle_timeout(self.now);
            self.exchange();
        }
    }

    fn connect(&mut self, channels: &[ChannelKind]) -> ConnectionHandle {
        let key = self.server.public_key().unwrap();
        let now = self.now;
        let h = self
            .client()
            .connect(now, SERVER.parse().unwrap(), &key, channels)
            .unwrap();
        self.exchange();
        h
    }
}

/// Bytes an idle server connection may cost (see the test below): 1 KiB.
const IDLE_BUDGET: usize = 1024;

const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::ReliableUnordered,
    ChannelKind::Unreliable,
];

/// An established connection that has done nothing since its handshake but keepalives costs
/// the server at most [`IDLE_BUDGET`] bytes of heap and table space: measured as the server's
/// live bytes with N connections minus its live bytes with none, over N, once every
/// connection has been quiet long enough to give back its idle memory (expanded AES keys,
/// the boxed send queues and scratch lists, the kept Accept) and pack its counters, loss
/// recovery and acknowledgement state.
///
/// 1,000 B when this bound was set: the connection struct, 616 B (624 B since each connection
/// keeps its own events, `endpoint/events.rs`; see
/// `connection/layout.rs`); its packed loss recovery and ACK state, 66-74 B; the endpoint's
/// two connection indexes, by our id and by the peer's, 16 B an entry each in tables that
/// grow by doubling; its table slot, 56 B, and timer entries, 16 B each; for a while after
/// the handshakes, the spent-cookie filter, which remembers each handshake for a cookie
/// lifetime; and here, where the 1,000 connections open in the same instant, the endpoint's
/// event queue, which that burst of events grew (about 57 B a connection; since
/// `endpoint/events.rs`, a queue of 8-byte handles, each connection's event waiting in its
/// own queue, which gives its room back once taken).
#[test]
fn an_idle_connection_stays_within_its_memory_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 1000;
    let before_server = live_bytes();
    let mut wire = Wire::new(N + 10);
    wire.advance(Duration::from_millis(1));
    let empty_server = live_bytes();
    for _ in 0..N {
        wire.connect(&CHANNELS);
    }
    // settle: past the handshake timeout (the Accept is kept until the client cannot ask
    // for it again), keepalives going both ways...
    for _ in 0..75 {
        wire.advance(Duration::from_millis(100));
    }
    // ...then on to a moment 1.2 s after the last keepalive exchange, when every connection
    // has trimmed (at most one keepalive interval more)
    let mut quiet = 0;
    let mut last = wire.server.stats().datagrams_received + wire.server.stats().datagrams_sent;
    for _ in 0..30 {
        if quiet >= 12 {
            break;
        }
        wire.advance(Duration::from_millis(100));
        let now = wire.server.stats().datagrams_received + wire.server.stats().datagrams_sent;
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
    }
    assert!(quiet >= 12, "the connections never went quiet");
    assert_eq!(wire.server.connection_count(), N);
    // what remains is the server alone: the client endpoint and its connections go
    let client_bytes_before_drop = live_bytes();
    wire.client = None;
    let server_only = live_bytes();
    let per_conn = (server_only - empty_server) as f64 / N as f64;
    eprintln!(
        "server: empty {} B; {N} idle connections {} B more, {per_conn:.0} B each \
         (client side held {} B)",
        empty_server - before_server,
        server_only - empty_server,
        client_bytes_before_drop - server_only
    );
    assert!(
        per_conn <= IDLE_BUDGET as f64,
        "an idle connection costs {per_conn:.0} B, more than {IDLE_BUDGET} B"
    );
}

/// In steady state, sending small messages (the application's `Bytes` already made) and
/// flushing them, receiving the acknowledgements, and the peer receiving the packets, allocate
/// nothing per message: the only allocation left is the receiver's one shared copy of each
/// datagram that carries messages (two allocations: the bytes and their reference count),
/// which every message of the datagram is handed out as a slice of. For every channel class.
#[test]
fn the_hot_path_allocates_nothing_per_message() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let channels = [
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableUnordered,
        ChannelKind::Unreliable,
        ChannelKind::UnreliableSequenced,
        ChannelKind::LatestReliable,
    ];
    let mut wire = Wire::new(10);
    let conn = wire.connect(&channels);
    let payload = Bytes::from(vec![7u8; 24]);
    let _shared = payload.clone(); // promotes the buffer to shared: later clones never allocate
    const BURST: usize = 64;
    const ROUNDS: usize = 200;
    let round = |wire: &mut Wire, ch: u8| {
        for i in 0..BURST {
            let now = wire.now;
            let mode = if channels[ch as usize] == ChannelKind::LatestReliable {
                SendMode::Latest { key: i as u64 }
            } else {
                SendMode::Plain
            };
            let r = wire.client().send(now, conn, ch, payload.clone(), mode);
            r.expect("room in the send window");
        }
        wire.advance(Duration::from_millis(1));
    };
    for ch in 0..channels.len() as u8 {
        // warm up: every queue, table and pool reaches its steady size
        for _ in 0..ROUNDS {
            round(&mut wire, ch);
        }
        let delivered = wire.delivered;
        let datagrams = wire.server.stats().datagrams_received;
        let ((), allocs) = allocations_in(|| {
            for _ in 0..ROUNDS {
                round(&mut wire, ch);
            }
        });
        let messages = wire.delivered - delivered;
        let datagrams = (wire.server.stats().datagrams_received - datagrams) as usize;
        eprintln!(
            "{:?}: {messages} messages in {datagrams} datagrams, {allocs} allocations",
            channels[ch as usize]
        );
        assert_eq!(messages, BURST * ROUNDS, "every message delivered");
        assert!(
            allocs <= 2 * datagrams,
            "{:?}: {allocs} allocations for {messages} messages in {datagrams} datagrams",
            channels[ch as usize]
        );
    }
}

/// Idle connections whose keepalives are spread in time, as a real server's are, cost on
/// average at most a tenth more than [`IDLE_BUDGET`]: a trimmed connection that exchanges a
/// keepalive and its ACK gives back the working memory the exchange made again (expanded keys,
/// the boxed queues, the unpacked counters) as soon as it settles, instead of holding it for
/// another second of quiet, that is for about half of every keepalive interval (2.5 KB a
/// connection on average, measured before this).
///
/// Both ends are in this process, so what is measured is the two endpoints' live bytes over
/// twice the connections, sampled every 100 ms over 5 s (two keepalive intervals of each
/// side), and averaged.
#[test]
fn idle_connections_stay_trimmed_through_their_keepalives() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 500;
    let mut wire = Wire::new(N + 10);
    wire.advance(Duration::from_millis(1));
    let empty = live_bytes();
    // 5 ms apart: the keepalives of the N connections spread over 2.5 s
    for _ in 0..N {
        wire.connect(&CHANNELS);
        wire.advance(Duration::from_millis(5));
    }
    // past the handshake timeout (the Accept is kept until then) and the first trims
    for _ in 0..100 {
        wire.advance(Duration::from_millis(100));
    }
    assert_eq!(wire.server.connection_count(), N);
    let (mut sum, mut most) = (0.0, 0.0f64);
    const SAMPLES: usize = 50;
    for _ in 0..SAMPLES {
        let traffic = wire.server.stats().datagrams_received;
        wire.advance(Duration::from_millis(100));
        // the keepalives are spread: some connection talks in every 100 ms
        assert!(wire.server.stats().datagrams_received > traffic);
        let per_conn = (live_bytes() - empty) as f64 / (2 * N) as f64;
        sum += per_conn;
        most = most.max(per_conn);
    }
    let mean = sum / SAMPLES as f64;
    eprintln!(
        "{N} idle connections, keepalives spread: {mean:.0} B each on average, at most {most:.0} B"
    );
    let bound = IDLE_BUDGET as f64 * 1.1;
    assert!(
        mean <= bound,
        "idle connections cost {mean:.0} B each on average, more than {bound:.0} B"
    );
}
