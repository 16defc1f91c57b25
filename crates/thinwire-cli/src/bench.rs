//! `thinwire bench`: the arguments, then `thinwire_bench::run` and the table it prints.

use std::path::PathBuf;
use std::time::Instant;

use thinwire_bench::BenchOptions;

/// The arguments of `thinwire bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Output directory (results.json, report.html).
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Seconds per throughput, round-trip and sweep measurement.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Repetitions; each runs thinwire, ENet, KCP and GNS once, interleaved.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Idle connections of the memory measurement.
    #[arg(long, default_value_t = 2000)]
    idle: usize,
    /// Client counts of the 30 Hz server sweep (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,5000,10000")]
    sweep: Vec<usize>,
    /// Run only these sections (comma-separated: memory, throughput, round_trip, sweep,
    /// gateway).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Run only these transports (comma-separated: thinwire, enet, kcp, gns); for
    /// profiling one stack. Default: all four.
    #[arg(long, value_delimiter = ',')]
    stacks: Vec<String>,
    /// A short run that checks everything works (0.2 s measurements, 20 idle connections,
    /// a sweep of 50 clients, one repetition): for CI, not for numbers.
    #[arg(long)]
    quick: bool,
    /// thinwire uses the INSECURE cleartext opt-out on both ends (what encryption costs).
    #[arg(long)]
    insecure_cleartext: bool,
    /// The 30 Hz sweep's server thread and client process share every core instead of each
    /// keeping to its own (how the sweep ran before; for comparisons).
    #[arg(long)]
    shared_cores: bool,
    /// thinwire's low-latency mode: every thinwire host spins this many microseconds on its
    /// socket before it blocks (`Config::busy_poll`; 0, the default, turns it off).
    #[arg(long, value_name = "MICROS", default_value_t = 0)]
    thinwire_busy_poll: u64,
    /// In the 30 Hz sweep, thinwire's server and clients acknowledge on the tick
    /// (`TransportConfig::with_tick_acks`): each ACK rides the next update or input instead
    /// of going alone, two datagrams per client and tick instead of four.
    #[arg(long)]
    thinwire_tick_acks: bool,
    /// Internal: run as the client process of a memory or sweep measurement.
    #[arg(long, hide = true, value_name = "SPEC")]
    child: Option<String>,
}

/// Runs `thinwire bench` (or, with `--child`, one of its client processes).
pub(crate) fn run(args: BenchArgs) -> Result<(), String> {
    if let Some(spec) = &args.child {
        return thinwire_bench::child_main(spec);
    }
    let stacks = args
        .stacks
        .iter()
        .map(|s| {
            thinwire_bench::Protocol::from_label(s).ok_or_else(|| {
                let known: Vec<_> = thinwire_bench::Protocol::ALL.map(|p| p.label()).into();
                format!("unknown stack `{s}` (known: {})", known.join(", "))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let exe = std::env::current_exe().map_err(|e| format!("locating this program: {e}"))?;
    let opts = BenchOptions {
        out: args.out,
        seconds: args.seconds,
        reps: args.reps,
        idle: args.idle,
        sweep: args.sweep,
        quick: args.quick,
        insecure_cleartext: args.insecure_cleartext,
        shared_cores: args.shared_cores,
        thinwire_busy_poll_us: args.thinwire_busy_poll,
        thinwire_tick_acks: args.thinwire_tick_acks,
        sections: args.only,
        stacks,
        child_command: vec![exe.into(), "bench".into()],
        progress: |line| eprintln!("{line}"),
        ..BenchOptions::default()
    };
    let t0 = Instant::now();
    let results = thinwire_bench::run(&opts)?;
    println!();
    print!("{}", thinwire_bench::terminal_table(&results));
    let m = &results.machine;
    println!(
        "\n{} cores ({}), {}; load average {:.2} at the start, {:.2} at the end; {:.0} s",
        m.cores,
        m.cpu_model,
        m.kernel,
        m.load_average_start[0],
        m.load_average_end[0],
        t0.elapsed().as_secs_f64()
    );
    println!("wrote {}", opts.out.join("results.json").display());
    println!("wrote {}", opts.out.join("report.html").display());
    Ok(())
}
