//! Memory per idle connection: a child process opens N connections from one socket to a
//! server host in this process, and the server's heap in use (glibc's `mallinfo2`: Rust's
//! allocations and ENet's C ones alike) grows by what it keeps per connection. The resident
//! set is recorded beside it. The server is driven by this thread only, so nothing is
//! allocated between the readings but by the host.

use std::time::{Duration, Instant};

use thinwire_peers::Event;

use crate::child::{Child, ChildSpec, Role};
use crate::host::{with_host, BenchHost, Protocol};
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric};
use crate::sys::{heap_in_use, release_free_heap, rss_bytes, settled_heap};

/// The connections are given this long to open.
const CONNECT_LIMIT: Duration = Duration::from_secs(150);

/// One run's result, in bytes.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Heap growth from the connections, per connection.
    per_conn: f64,
    /// The same, with the host's preallocated peer slots counted (ENet's `peerCount`).
    with_slots: f64,
    /// Resident set growth from the connections, per connection.
    rss_per_conn: f64,
    /// The server host's own heap before any connection.
    host: f64,
}

/// How long the connections idle before the heap is read: the measurement time, so that
/// they live through keepalives and thinwire's trim of idle memory (after 1 s of quiet).
fn idle_time(ctx: &Ctx) -> Duration {
    ctx.seconds.max(ctx.warmup).max(Duration::from_millis(100))
}

fn run<H: BenchHost>(p: Protocol, n: usize, ctx: &Ctx) -> Result<Sample, String> {
    let heap = || heap_in_use().ok_or("no heap statistics on this platform (glibc only)");
    let mut evs = Vec::with_capacity(65_536);
    let heap0 = settled_heap().ok_or("no heap statistics on this platform (glibc only)")?;
    // ENet preallocates exactly the peers it may hold
    let mut host = H::server(n, ctx.host)?;
    let spec = ChildSpec {
        proto: p,
        server: host.info(),
        host: ctx.host,
        role: Role::Idle { n },
        cpus: Vec::new(),
    };
    let mut child = Child::spawn(ctx, &spec)?;
    // nothing reaches the host before it is serviced: this is its cost with no connection
    // (the pages earlier measurements freed go back first, so that the resident set grows by
    // what the connections touch)
    release_free_heap();
    let (heap1, rss1) = (heap()?, rss_bytes());
    let mut connected = 0usize;
    let deadline = Instant::now() + CONNECT_LIMIT;
    while connected < n || !child.ready()? {
        if Instant::now() > deadline {
            return Err(format!(
                "{connected} of {n} connections in {CONNECT_LIMIT:?}"
            ));
        }
        host.service(Duration::from_millis(1), &mut evs)?;
        for e in evs.drain(..) {
            match e {
                Event::Connected(_) => connected += 1,
                Event::Disconnected(_) => connected = connected.saturating_sub(1),
                Event::Message { .. } => {}
            }
        }
    }
    // idle: the handshakes' leftovers (retransmissions, acknowledgements) settle, and the
    // connections live as idle ones do, with their keepalives (thinwire gives back a quiet
    // connection's working memory after 1 s)
    let settle = Instant::now() + idle_time(ctx);
    while Instant::now() < settle {
        host.service(Duration::from_millis(5), &mut evs)?;
        evs.clear();
    }
    let (heap2, rss2) = (heap()?, rss_bytes());
    child.finish()?;
    drop(host);
    let n = n as f64;
    let per_conn = heap2.saturating_sub(heap1) as f64 / n;
    let host_bytes = heap1.saturating_sub(heap0) as f64;
    Ok(Sample {
        per_conn,
        with_slots: if p == Protocol::Enet {
            heap2.saturating_sub(heap0) as f64 / n
        } else {
            per_conn
        },
        rss_per_conn: rss2.saturating_sub(rss1) as f64 / n,
        host: host_bytes,
    })
}

const METRICS: [Metric<Sample>; 4] = [
    Metric {
        key: "heap",
        label: "heap per idle connection",
        unit: "B",
        read: |s| s.per_conn,
    },
    Metric {
        key: "heap_with_slots",
        label: "heap per idle connection, preallocated peer slots counted",
        unit: "B",
        read: |s| s.with_slots,
    },
    Metric {
        key: "rss",
        label: "resident set per idle connection",
        unit: "B",
        read: |s| s.rss_per_conn,
    },
    Metric {
        key: "host",
        label: "server host's own heap, no connection",
        unit: "B",
        read: |s| s.host,
    },
];

/// Memory per idle connection for every transport.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let n = ctx.idle.max(1);
    let out = ctx.interleave(
        &format!("memory, {n} idle connections"),
        |p| p.not_applicable(true, n),
        |p: Protocol| with_host!(p, H => run::<H>(p, n, ctx)),
        |s: &Sample| {
            format!(
                "{:.0} B per connection ({:.0} B with preallocated slots), RSS {:.0} B",
                s.per_conn, s.with_slots, s.rss_per_conn
            )
        },
    );
    let rows = METRICS
        .iter()
        .map(|m| {
            Row::new(
                format!("memory/{}", m.key),
                format!("{} ({n})", m.label),
                m.unit,
                None,
                cells(&out, m.read),
            )
        })
        .collect();
    Section {
        id: "memory".into(),
        title: "Memory per idle connection".into(),
        method: format!(
            "A child process opens {n} connections from one socket to a server host in the \
             bench process; once all are up and have settled, the growth of the server \
             process's heap in use (glibc mallinfo2: Rust and C allocations, small and mmapped \
             chunks) is divided by {n}, after the connections have idled for {:.1} s, keepalives \
             going (thinwire gives back a connection's working memory after 1 s of quiet and \
             keeps it given back through keepalives). ENet's host is created with exactly {n} peer slots \
             (enet_host_create's peerCount), allocated up front: the second row counts them \
             (the heap grown from before the host was created), the first only what connecting \
             added; thinwire, KCP and GNS preallocate nothing per connection, so their two rows \
             are the same (GNS's process-wide set-up, done once before any measurement, is in \
             neither). mallinfo2 sees only glibc's main arena: what GNS's own socket thread \
             allocates in its arena is not counted, so GNS's figure is a lower bound (one arena \
             for every thread would count it, but slows ENet's and KCP's in-process servers \
             2-4x in the later sections). Each measurement starts once the heap has stopped \
             moving (what an earlier one left, such as GNS's gracefully closing connections, \
             is freed first, instead of reading as a negative cost). The host's own \
             heap (no connection yet) is the last row; thinwire's includes its receive batch \
             buffer (8 slots of 64 KiB, touched only as far as datagrams reach). The \
             resident set (VmRSS) moves by pages and is shown as a check; the pages of heap \
             that earlier measurements freed are given back to the system (glibc malloc_trim) \
             before its first reading, so that the connections' memory shows as growth \
             rather than reusing them.",
            idle_time(ctx).as_secs_f64()
        ),
        rows,
    }
}
