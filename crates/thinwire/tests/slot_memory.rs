//! What the async runtime adds to an idle connection beyond the core's `Connection`, in heap
//! bytes, measured with a counting allocator.
//!
//! The blocking [`Host`] keeps nothing per connection outside the core, and the async
//! [`Endpoint`] runs the same core; so the same `N` idle connections measured once with a
//! `Host` server and once with an `Endpoint` server (whose application holds every accepted
//! [`Connection`]) differ by exactly the runtime's per-connection part: its slot in the
//! endpoint's map, the connection's wake-up handle and the `Connection` itself. The client is a
//! `Host` in both runs, so its share cancels out.
//!
//! Run with `--nocapture` to see the numbers.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use thinwire::{
    ChannelKind, Config, Connection, Endpoint, Host, HostEvent, ServerConfig, TransportConfig,
};

/// Counts the bytes allocated and not yet freed (as requested, without the allocator's own
/// rounding and headers).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to the system allocator unchanged; the counter is only arithmetic.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as for `dealloc`; `new_size` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Idle connections per measurement: enough that the maps' doubling averages out.
const N: usize = 1000;
const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::LatestReliable,
    ChannelKind::ReliableUnordered,
    ChannelKind::ReliableOrdered,
];

/// Idle without keep-alives: by default each side pings after 2 s of silence, which for 1000
/// connections keeps hundreds of pings and their records in flight, a share of the heap that
/// depends on how quickly a loaded machine answers them (and differs between the two runs).
fn quiet() -> TransportConfig {
    TransportConfig {
        keepalive_interval: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(1200),
        ..TransportConfig::default()
    }
}

fn server_config() -> Config {
    // every connection comes from 127.0.0.1: lift the per-source limits meant for the Internet
    Config::server()
        .with_transport(quiet())
        .with_server(ServerConfig {
            trusted_sources: vec!["127.0.0.1".parse().unwrap()],
            ..ServerConfig::default()
        })
}

/// Opens `n` connections from one client `Host` to `server`, servicing the client and calling
/// `server_side` (which services the server and says whether it holds all it should) until all
/// are established; then lets acknowledgements settle.
fn connect_all(
    n: usize,
    server: std::net::SocketAddr,
    key: thinwire::PublicKey,
    mut server_side: impl FnMut() -> bool,
) -> Host {
    let client_config = Config::client().with_transport(quiet());
    let mut client = Host::bind("127.0.0.1:0".parse().unwrap(), client_config).unwrap();
    let mut connected = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    for _ in 0..n {
        client.connect(server, key, &CHANNELS).unwrap();
    }
    loop {
        let all = server_side();
        if connected == n && all {
            break;
        }
        assert!(Instant::now() < deadline, "{connected} of {n} connected");
        while let Some(e) = client.service(Duration::from_millis(1)).unwrap() {
            match e {
                HostEvent::Connected { .. } => connected += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    // acknowledgements and the last handshake packets settle: until the heap stays the same
    // for three rounds of 100 ms in a row, however long a loaded machine takes
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut last, mut quiet_rounds) = (live(), 0);
    while quiet_rounds < 3 {
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until {
            assert!(client.service(Duration::from_millis(5)).unwrap().is_none());
            server_side();
        }
        let now = live();
        quiet_rounds = if now == last { quiet_rounds + 1 } else { 0 };
        last = now;
        assert!(Instant::now() < deadline, "the heap did not settle in 60 s");
    }
    client
}

/// Heap bytes per connection with a blocking `Host` as the server (the core only).
fn with_host_server() -> f64 {
    let mut server = Host::bind("127.0.0.1:0".parse().unwrap(), server_config()).unwrap();
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let mut accepted = 0;
    let mut server_side = |want: usize| {
        while let Some(e) = server.service(Duration::ZERO).unwrap() {
            match e {
                HostEvent::Connected { .. } => accepted += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        accepted == want
    };
    // one connection first, so that what is allocated once (lazily) is not counted
    let warm = connect_all(1, addr, key, || server_side(1));
    let before = live();
    let client = connect_all(N, addr, key, || server_side(N + 1));
    let after = live();
    assert_eq!(server.connection_count(), N + 1);
    drop((warm, client));
    (after - before) as f64 / N as f64
}

/// Heap bytes per connection with an async `Endpoint` as the server, the application holding
/// every accepted `Connection`.
fn with_endpoint_server() -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = {
        let _guard = rt.enter();
        Endpoint::bind("127.0.0.1:0".parse().unwrap(), server_config()).unwrap()
    };
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let held: Arc<Mutex<Vec<Connection>>> = Arc::new(Mutex::new(Vec::with_capacity(N + 1)));
    let accept = {
        let (server, held) = (server.clone(), held.clone());
        rt.spawn(async move {
            while let Some(conn) = server.accept().await {
                held.lock().unwrap().push(conn);
            }
        })
    };
    // one connection first, so that what is allocated once (lazily: the driver's receive
    // buffers, the runtime's timers) is not counted
    let warm = connect_all(1, addr, key, || held.lock().unwrap().len() == 1);
    let before = live();
    let client = connect_all(N, addr, key, || held.lock().unwrap().len() == N + 1);
    let after = live();
    assert_eq!(server.connection_count(), N + 1);
    accept.abort();
    drop((warm, client));
    drop(held);
    drop(server);
    rt.shutdown_timeout(Duration::from_secs(1));
    (after - before) as f64 / N as f64
}

#[test]
fn runtime_part_of_an_idle_connection() {
    let core_only = with_host_server();
    let with_runtime = with_endpoint_server();
    let runtime = with_runtime - core_only;
    println!(
        "heap per idle connection, server and client together ({N} connections): \
         Host server {core_only:.0} B, Endpoint server {with_runtime:.0} B; \
         the async runtime's part: {runtime:.0} B"
    );
    // x86-64 Linux: 272 B = the slot map (64 B entries, half full just after doubling: 133 B),
    // the Arc<Notify> (48 B) and the Connection (88 B + 3 B of channel classes). It was 403 B
    // with 120 B entries; the bound catches a slot growing back.
    if cfg!(target_pointer_width = "64") {
        assert!(runtime < 350.0, "{runtime:.0} B per connection");
    }
}
