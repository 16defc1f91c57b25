//! # thinwire-bench
//!
//! `thinwire bench`: thinwire, ENet, KCP and GameNetworkingSockets (GNS) side by side on
//! loopback, in one run, each measurement repeated with the transports interleaved
//! (thinwire, ENet, KCP, GNS, thinwire, …), and thinwire's results as ratios to ENet's.
//! thinwire and GNS encrypt (both by default), ENet and KCP do not.
//!
//! ```text
//! run(opts) ─┬─ memory      server host here, N idle connections from a child process
//!            ├─ throughput  server thread ◀── client thread (1 or 100 sockets), bursts
//!            ├─ round trip  echo thread ◀──▶ one client, back to back
//!            ├─ sweep       30 Hz server tick loop here ◀──▶ N clients in a child process
//!            └─ gateway     players → edge → trunk → server gateway → game, one thread,
//!                           each gateway's own time per message (sans-IO, in memory)
//!                 │
//!                 └─▶ BenchResults ─▶ results.json, report.html, the terminal table
//! ```
//!
//! Every measurement is written once, against `BenchHost` (`src/host.rs`), the loopback face
//! of `thinwire-peers`' `PeerHost`, which the emulator drives too: a socket with connections
//! driven by its thread through `service` / `send` / `flush`, the shape of ENet's
//! `enet_host_service`. thinwire runs through its blocking `thinwire::Host` (the same shape:
//! one single-threaded host per side, as ENet's), ENet through `thinwire-enet`, KCP through
//! a small host over one UDP socket, GNS through `thinwire-gns` (loaded at run time from
//! the library `tools/build-gns.sh SRC_DIR` builds, or `THINWIRE_GNS_LIB`; without it its
//! cells say "GNS not built"). GNS is the one stack with threads of its own: it receives,
//! decrypts, encrypts and sends on its service thread, so its rows of per-thread CPU count
//! only the calling thread's share. The memory and sweep clients run in a child process
//! (this program again, with `--child`): a host that embeds this crate calls
//! [`child_main`] when it sees that argument.
//!
//! [`floor`] measures the kernel's own round trip (bare UDP, no protocol), the floor under
//! the round-trip section's figures (the example `udp_floor` runs it).
//!
//! Nothing here asserts a timing: the results are measurements to read, and the CI run
//! (`--quick`) only checks that every section produced numbers.

mod child;
pub mod floor;
mod gateway;
mod host;
mod memory;
mod plots;
mod report;
pub mod results;
mod rtt;
mod runner;
mod sweep;
mod sys;
mod table;
mod throughput;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

pub use host::Protocol;
pub use results::{BenchResults, Cell, OptionsRecord, Row, Section};
pub use sys::Machine;

/// The sections of a run, in run order.
pub const SECTIONS: [&str; 5] = ["memory", "throughput", "round_trip", "sweep", "gateway"];

/// What `thinwire bench` runs.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Output directory (`results.json`, `report.html`).
    pub out: PathBuf,
    /// Seconds per throughput, round-trip and sweep measurement.
    pub seconds: f64,
    /// Repetitions (each runs every transport once).
    pub reps: usize,
    /// Idle connections of the memory measurement.
    pub idle: usize,
    /// The sweep's client counts.
    pub sweep: Vec<usize>,
    /// Messages queued per flush by a throughput client.
    pub burst: usize,
    /// The short run for CI: 0.2 s measurements, 20 idle connections, a sweep of 50
    /// clients, 20 players behind the gateway, one repetition (overrides those options).
    pub quick: bool,
    /// thinwire with the INSECURE cleartext opt-out on both ends (what encryption costs).
    pub insecure_cleartext: bool,
    /// thinwire's hosts spin this many microseconds on their sockets before blocking (the
    /// low-latency mode, `thinwire::Config::busy_poll`); zero: off.
    pub thinwire_busy_poll_us: u64,
    /// In the 30 Hz sweep, thinwire's server and clients acknowledge on the tick
    /// (`TransportConfig::with_tick_acks`): ACKs ride the updates and the inputs.
    pub thinwire_tick_acks: bool,
    /// The sweep's server thread and client process share every core instead of each
    /// keeping to its own (how the sweep ran before it pinned them; for comparisons).
    pub shared_cores: bool,
    /// The sections to run (of [`SECTIONS`]); empty runs all.
    pub sections: Vec<String>,
    /// The transports to run, in [`Protocol::ALL`]'s order whatever the order given; empty
    /// runs all. For profiling one stack; the published page runs all four.
    pub stacks: Vec<Protocol>,
    /// The command that runs this program as a bench child; `--child SPEC` is appended and
    /// the program must pass SPEC to [`child_main`]. For `thinwire`: the executable and
    /// `bench`.
    pub child_command: Vec<OsString>,
    /// Where a line of progress goes (a measurement's result as it comes, or its failure);
    /// the library prints nothing itself. Default: nowhere. `thinwire bench`: stderr.
    pub progress: fn(&str),
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            out: PathBuf::from("bench-out"),
            seconds: 3.0,
            reps: 3,
            idle: 2000,
            sweep: vec![1000, 2000, 5000, 10_000],
            burst: 64,
            quick: false,
            insecure_cleartext: false,
            thinwire_busy_poll_us: 0,
            thinwire_tick_acks: false,
            shared_cores: false,
            sections: Vec::new(),
            stacks: Vec::new(),
            child_command: Vec::new(),
            progress: |_| {},
        }
    }
}

impl BenchOptions {
    /// The options after `--quick` and checks.
    fn effective(&self) -> Result<Self, String> {
        let mut o = self.clone();
        if o.quick {
            o.seconds = 0.2;
            o.idle = 20;
            o.sweep = vec![50];
            o.reps = 1;
        }
        if !(o.seconds.is_finite() && o.seconds > 0.0 && o.seconds <= 3600.0) {
            return Err(format!("--seconds {}: must be in (0, 3600]", o.seconds));
        }
        if o.thinwire_busy_poll_us > 1_000_000 {
            return Err("--thinwire-busy-poll: at most 1000000 microseconds".into());
        }
        if o.reps == 0 || o.burst == 0 {
            return Err("--reps and the burst must be at least 1".into());
        }
        if o.sweep.iter().any(|&n| n == 0 || n > 50_000) {
            return Err("--sweep: client counts must be in 1..=50000".into());
        }
        if let Some(s) = o.sections.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
            return Err(format!(
                "unknown section `{s}` (known: {})",
                SECTIONS.join(", ")
            ));
        }
        if o.child_command.is_empty() {
            return Err("no child command to run the clients with".into());
        }
        Ok(o)
    }
}

/// Runs the bench, writes `results.json` and `report.html` into `opts.out`, and returns the
/// results (print [`terminal_table`] for the table).
pub fn run(opts: &BenchOptions) -> Result<BenchResults, String> {
    let o = opts.effective()?;
    let t0 = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut machine = Machine::read();
    let ctx = runner::Ctx {
        protocols: Protocol::ALL
            .into_iter()
            .filter(|p| o.stacks.is_empty() || o.stacks.contains(p))
            .collect(),
        reps: o.reps,
        seconds: Duration::from_secs_f64(o.seconds),
        warmup: if o.quick {
            Duration::from_millis(50)
        } else {
            Duration::from_millis(300)
        },
        burst: o.burst,
        host: host::HostOptions {
            cleartext: o.insecure_cleartext,
            busy_poll: Duration::from_micros(o.thinwire_busy_poll_us),
            tick: None,
        },
        tick_acks: o.thinwire_tick_acks,
        idle: o.idle,
        sweep: o.sweep.clone(),
        shared_cores: o.shared_cores,
        gateway_players: if o.quick { 20 } else { 200 },
        child: o.child_command.clone(),
        progress: o.progress,
    };
    let wanted = |s: &str| o.sections.is_empty() || o.sections.iter().any(|x| x == s);
    let mut sections = Vec::new();
    // memory first, while the heap is fresh
    if wanted("memory") {
        sections.push(memory::section(&ctx));
    }
    if wanted("throughput") {
        sections.push(throughput::section(&ctx));
    }
    if wanted("round_trip") {
        sections.push(rtt::section(&ctx));
    }
    if wanted("sweep") {
        sections.push(sweep::section(&ctx));
    }
    if wanted("gateway") {
        sections.push(gateway::section(&ctx));
    }
    machine.load_average_end = sys::load_average();
    let results = BenchResults {
        machine,
        options: OptionsRecord {
            seconds: o.seconds,
            reps: o.reps,
            idle: o.idle,
            sweep: o.sweep.clone(),
            burst: o.burst,
            quick: o.quick,
            insecure_cleartext: o.insecure_cleartext,
        },
        started_unix,
        elapsed_s: t0.elapsed().as_secs_f64(),
        sections,
    };
    write_outputs(&results, &o.out)?;
    Ok(results)
}

/// Writes `results.json` and `report.html` into `out` (created if needed).
pub fn write_outputs(results: &BenchResults, out: &Path) -> Result<(), String> {
    let e = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(out).map_err(|x| e(out, x))?;
    let json = serde_json::to_string_pretty(results).map_err(|x| x.to_string())?;
    let path = out.join("results.json");
    std::fs::write(&path, json).map_err(|x| e(&path, x))?;
    let path = out.join("report.html");
    std::fs::write(&path, report::report_html(results)).map_err(|x| e(&path, x))?;
    Ok(())
}

/// The terminal table: per metric, every transport's range over the repetitions and the
/// thinwire/ENet ratio, then why cells are n/a or failed.
pub fn terminal_table(results: &BenchResults) -> String {
    table::terminal_table(results)
}

/// Runs a bench child (the memory or sweep clients) from the spec a parent passed after
/// `--child`: it opens its connections, says `READY` on stdout, and runs until its stdin
/// closes.
pub fn child_main(spec: &str) -> Result<(), String> {
    child::child_main(spec)
}
