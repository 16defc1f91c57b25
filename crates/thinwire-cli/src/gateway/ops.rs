//! What every gateway process does around its gateway: its settings (flags over the
//! configuration file), its key, stopping on SIGTERM / SIGINT / `--for`, the periodic report
//! and the Prometheus endpoint.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use thinwire_gateway::run::metrics::REFRESH;
use thinwire_gateway::run::{load_or_create_key, Metrics, MetricsServer, Stop};
use thinwire_proto::ServerKey;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use super::addr::resolve;
use super::config::{missing, Loaded, OpsFile};
use super::Ops;

/// What every process reads from its options: its key, its period, how long to run, how
/// often to report, where to serve metrics.
pub(crate) struct Prepared {
    pub(crate) key: ServerKey,
    pub(crate) period: Duration,
    pub(crate) run_for: Option<Duration>,
    pub(crate) every: Option<Duration>,
    pub(crate) metrics: Option<SocketAddr>,
}

fn seconds(s: f64, what: &str) -> Result<Option<Duration>, String> {
    if s == 0.0 {
        return Ok(None);
    }
    if !(s.is_finite() && s > 0.0 && s < 1e7) {
        return Err(format!("{what} {s}: must be a positive number of seconds"));
    }
    Ok(Some(Duration::from_secs_f64(s)))
}

/// Settles the common options (flags over `f`), loads (or creates) the key file and prints
/// its public half.
pub(crate) fn prepare<T>(
    ops: &Ops,
    l: &Loaded<T>,
    f: OpsFile<'_>,
    default_period_ms: u64,
) -> Result<Prepared, String> {
    let key_file = match (&ops.key_file, f.key_file) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => l.path(p),
        (None, None) => return Err(missing("key-file")),
    };
    let metrics = l
        .pick(ops.metrics.as_deref(), "metrics", f.metrics)
        .map(|(what, spec)| resolve(&what, &spec, None))
        .transpose()?;
    let key = load_or_create_key(&key_file).map_err(|e| e.to_string())?;
    println!("public key: {}", key.public());
    let run_for = match ops.run_for {
        Some(s) => seconds(s, "--for")?,
        None => None,
    };
    let every = ops.report_every.or(f.report_every).unwrap_or(10.0);
    Ok(Prepared {
        key,
        period: Duration::from_millis(ops.period_ms.or(f.period_ms).unwrap_or(default_period_ms)),
        run_for,
        every: seconds(every, "--report-every")?,
        metrics,
    })
}

/// Resolves when the process should stop: SIGTERM, SIGINT (Ctrl-C), or `run_for` passed.
/// The handlers are installed before this returns, so a signal that arrives while the
/// process starts is not lost.
fn stop_signal(run_for: Option<Duration>) -> std::io::Result<impl Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        let timer = async {
            match run_for {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = term.recv() => eprintln!("SIGTERM: stopping"),
            _ = int.recv() => eprintln!("SIGINT: stopping"),
            () = timer => {}
        }
    })
}

/// Runs `process` on a current-thread runtime until `run_for` has passed or a SIGTERM or
/// SIGINT arrives (then it returns its final statistics); serves `metrics` meanwhile.
fn until_stopped<T, E: std::fmt::Display, F>(
    run_for: Option<Duration>,
    metrics: Option<(SocketAddr, Metrics)>,
    process: impl FnOnce(watch::Receiver<bool>) -> F,
) -> Result<T, String>
where
    F: Future<Output = Result<T, E>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    rt.block_on(async move {
        let stopped = stop_signal(run_for).map_err(|e| format!("signal handlers: {e}"))?;
        if let Some((addr, m)) = metrics {
            let server = MetricsServer::bind(addr)
                .await
                .map_err(|e| format!("--metrics {addr}: {e}"))?;
            let at = server.local_addr().map_err(|e| e.to_string())?;
            println!("metrics: http://{at}/metrics");
            tokio::spawn(server.serve(m, rx.clone()));
        }
        tokio::spawn(async move {
            stopped.await;
            stop.stop();
        });
        process(rx).await.map_err(|e| e.to_string())
    })
}

/// A periodic report: how often, and what to call with the statistics `S` (the shape of
/// `run::Report` and `run::TcmReport`).
pub(crate) type Tick<S> = (Duration, Box<dyn FnMut(&S) + Send>);

/// A periodic report of a process with statistics `S`: prints `line` every `every`, and
/// with `metrics` refreshes them every [`REFRESH`] too.
fn ticker<S: 'static>(
    every: Option<Duration>,
    metrics: Option<Metrics>,
    line: fn(&S) -> String,
    set: fn(&Metrics, &S),
) -> Option<Tick<S>> {
    let Some(m) = metrics else {
        return every.map(|d| {
            let print = move |s: &S| eprintln!("{}", line(s));
            (d, Box::new(print) as Box<dyn FnMut(&S) + Send>)
        });
    };
    let mut printed = Instant::now();
    let tick = move |s: &S| {
        set(&m, s);
        if every.is_some_and(|d| printed.elapsed() + REFRESH / 2 >= d) {
            eprintln!("{}", line(s));
            printed = Instant::now();
        }
    };
    let period = every.map_or(REFRESH, |d| d.min(REFRESH));
    Some((period, Box::new(tick)))
}

/// How a process's statistics `S` are exported and printed: a new [`Metrics`] for a role,
/// updating it, one line of text.
pub(crate) type StatsOut<S> = (fn(&str) -> Metrics, fn(&Metrics, &S), fn(&S) -> String);

/// Runs a process of `role` until stopped: reports its statistics `S` (`line`), serves them
/// as metrics when asked (`new` makes them, `set` updates them), prints the final line.
pub(crate) fn serve<S: 'static, E: std::fmt::Display, F>(
    ready: &Prepared,
    role: &str,
    (new, set, line): StatsOut<S>,
    process: impl FnOnce(watch::Receiver<bool>, Option<Tick<S>>) -> F,
) -> Result<(), String>
where
    F: Future<Output = Result<S, E>>,
{
    let metrics = ready.metrics.map(|a| (a, new(role)));
    let m = metrics.as_ref().map(|(_, m)| m.clone());
    let report = ticker(ready.every, m, line, set);
    let stats = until_stopped(ready.run_for, metrics, |rx| process(rx, report))?;
    println!("{}", line(&stats));
    Ok(())
}
