//! The gateway's statistics for Prometheus: [`Metrics`] keeps the latest snapshot of a
//! process's counters ([`GatewayStats`], or [`TcmProcessStats`] in TCM mode) and renders it in
//! the Prometheus text exposition format (version 0.0.4); [`MetricsServer`] answers
//! `GET /metrics` with it on a local TCP port.
//!
//! The process updates the snapshot from its report callback (`thinwire gateway` does it every
//! [`REFRESH`]), so a scrape costs the gateway loop nothing: the machine is never locked by
//! the HTTP side. Every metric is named `thinwire_gateway_…` and labelled with the process's
//! `role` (`edge`, `server`, `tcm-local`, `tcm-remote`); counters end in `_total`. The help
//! texts ([`GATEWAY_METRICS`], [`TCM_METRICS`]) say what each one counts.
//!
//! Formatting is the Prometheus project's own Rust client (`prometheus-client`, its
//! `Collector` for values read at scrape time); the HTTP side is the runtime's minimal
//! responder ([`thinwire::metrics::serve`]: one request per connection, bounded size, time and
//! concurrency), enough for a scraper on loopback or a management network. Bind it to a
//! private address: it has no authentication.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::tcm::TcmProcessStats;
use crate::trunk::GatewayStats;

/// How often `thinwire gateway` refreshes the snapshot a scrape reads.
pub const REFRESH: Duration = Duration::from_millis(500);

/// The `Content-Type` of the answer (the Prometheus text format 0.0.4).
pub use thinwire::metrics::CONTENT_TYPE;

/// A counter or a gauge, and how to read it.
#[derive(Clone, Copy)]
enum Read<S> {
    /// A count only ever growing (`_total` is appended to its name).
    Counter(fn(&S) -> u64),
    /// A duration only ever growing, in seconds (`_total` appended).
    Seconds(fn(&S) -> Duration),
    /// A value that goes up and down.
    Gauge(fn(&S) -> u64),
    /// A duration that goes up and down, in seconds.
    GaugeSeconds(fn(&S) -> Duration),
}

/// One exported metric: its name (after `thinwire_gateway_`, before `_total`), its help text,
/// and how it is read.
pub struct MetricDef<S> {
    /// The name, without the `thinwire_gateway_` prefix and a counter's `_total` suffix.
    pub name: &'static str,
    /// What it means (the `# HELP` line).
    pub help: &'static str,
    read: Read<S>,
}

impl<S> MetricDef<S> {
    /// Whether this is a counter (its exported name ends in `_total`).
    pub fn is_counter(&self) -> bool {
        matches!(self.read, Read::Counter(_) | Read::Seconds(_))
    }

    fn encode(&self, s: &S, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        macro_rules! put {
            ($m:expr) => {{
                let m = $m;
                m.encode(e.encode_descriptor(self.name, self.help, None, m.metric_type())?)
            }};
        }
        match self.read {
            Read::Counter(f) => put!(ConstCounter::new(f(s))),
            Read::Seconds(f) => put!(ConstCounter::new(f(s).as_secs_f64())),
            Read::Gauge(f) => put!(ConstGauge::new(i64::try_from(f(s)).unwrap_or(i64::MAX))),
            Read::GaugeSeconds(f) => put!(ConstGauge::new(f(s).as_secs_f64())),
        }
    }
}

macro_rules! def {
    ($kind:ident, $name:literal, $help:literal, |$s:ident| $e:expr) => {
        MetricDef {
            name: $name,
            help: $help,
            read: Read::$kind(|$s| $e),
        }
    };
}

/// The metrics of every gateway process (edge, server gateway, and the trunk of a TCM process).
pub const GATEWAY_METRICS: &[MetricDef<GatewayStats>] = &[
    def!(Gauge, "flows_open", "Flows (one per player) open now.", |s| s.flows_open as u64),
    def!(Counter, "flows_opened", "Flows opened since the process started.", |s| s.flows_total),
    def!(Counter, "flows_refused", "Flows refused: the flow table was full (max_flows) or the trunk was down.", |s| s.flows_refused),
    def!(Counter, "trunks_refused", "Trunks closed right after their handshake: a valid credential of a peer not listed (NOT_ADMITTED), or not a trunk's channels.", |s| s.trunks_refused),
    def!(Counter, "flows_parked", "Server gateway: flows of players with an identity parked when their trunk or player was lost (their game-server connection kept).", |s| s.flows_parked),
    def!(Counter, "flows_resumed", "Server gateway: flows taken over by the same client id through a trunk (a player moved between edges).", |s| s.flows_resumed),
    def!(Counter, "flows_resume_expired", "Server gateway: parked flows closed because nobody took them over within resume_grace.", |s| s.flows_resume_expired),
    def!(Counter, "flows_overflowed", "Flows closed because their backlog passed max_flow_backlog (or their share of max_held).", |s| s.flows_overflowed),
    def!(Counter, "messages_to_trunk", "Player messages pushed into the trunk.", |s| s.messages_to_trunk),
    def!(Counter, "messages_from_trunk", "Player messages received from the trunk (Data frames).", |s| s.messages_from_trunk),
    def!(Counter, "dropped_messages", "Messages dropped: for a closed flow, stale (older than one delivered), refused by a connection, or lost with their flow's overflowing backlog.", |s| s.dropped_messages),
    def!(Counter, "bad_frames", "Trunk frames that did not parse or broke the protocol (dropped).", |s| s.bad_frames),
    def!(Counter, "events_dropped", "Gateway events dropped because the process did not poll them in time (bounded queue).", |s| s.events_dropped),
    def!(Counter, "held_messages", "Messages that went through the period-T hold before entering the trunk.", |s| s.held_messages),
    def!(Seconds, "held_delay_seconds", "Sum of the hold times of those messages (divide by held_messages_total for the mean added delay).", |s| s.held_delay_total),
    def!(GaugeSeconds, "held_delay_max_seconds", "Longest hold time of a message since the process started.", |s| s.held_delay_max),
    def!(Counter, "trunk_packets_sent", "UDP datagrams sent on the trunk socket.", |s| s.trunk.packets_sent),
    def!(Counter, "trunk_bytes_sent", "UDP payload bytes sent on the trunk socket.", |s| s.trunk.bytes_sent),
    def!(Counter, "trunk_packets_received", "UDP datagrams received on the trunk socket (any sender, valid or not).", |s| s.trunk.packets_received),
    def!(Counter, "trunk_bytes_received", "UDP payload bytes received on the trunk socket.", |s| s.trunk.bytes_received),
    def!(Counter, "local_packets_sent", "UDP datagrams sent on the local socket (to players at an edge, to the game server at a server gateway).", |s| s.local.packets_sent),
    def!(Counter, "local_bytes_sent", "UDP payload bytes sent on the local socket.", |s| s.local.bytes_sent),
    def!(Counter, "local_packets_received", "UDP datagrams received on the local socket (any sender, valid or not).", |s| s.local.packets_received),
    def!(Counter, "local_bytes_received", "UDP payload bytes received on the local socket.", |s| s.local.bytes_received),
];

/// The metrics a TCM process adds to [`GATEWAY_METRICS`] (of its trunk): the multiplexer
/// (TUN → trunk), the demultiplexer (trunk → TUN) and the TUN device.
pub const TCM_METRICS: &[MetricDef<TcmProcessStats>] = &[
    def!(Counter, "tcm_packets_in", "IP packets pushed into the multiplexer (read from the TUN device toward the trunk).", |s| s.mux.packets_in),
    def!(Counter, "tcm_bytes_in", "IP bytes of those packets.", |s| s.mux.bytes_in),
    def!(Counter, "tcm_bundles_out", "Bundles the multiplexer sent into the trunk.", |s| s.mux.bundles_out),
    def!(Counter, "tcm_bundle_bytes_out", "Bytes of those bundles (without the trunk's own overhead).", |s| s.mux.bundle_bytes_out),
    def!(Counter, "tcm_buffer_drops", "Packets the multiplexer's buffer policy dropped.", |s| s.mux.buffer_drops),
    def!(Seconds, "tcm_hold_seconds", "Sum of the time packets were held by the multiplexer (over the packets that left, about tcm_packets_in_total: the mean added delay).", |s| s.mux.hold_total),
    def!(GaugeSeconds, "tcm_hold_max_seconds", "Longest time a packet was held by the multiplexer.", |s| s.mux.hold_max),
    def!(Counter, "tcm_bundles_in", "Bundles from the trunk handed to the demultiplexer.", |s| s.demux.bundles_in),
    def!(Counter, "tcm_restored", "IP packets the demultiplexer restored.", |s| s.demux.restored),
    def!(Counter, "tcm_context_losses", "Compressed records dropped because their context was missing (a bundle was lost; heals at the next FULL record).", |s| s.demux.context_losses),
    def!(Counter, "tcm_check_failures", "Compressed records dropped because the restored packet failed its checksum.", |s| s.demux.check_failures),
    def!(Counter, "tcm_malformed", "Records and bundles from the trunk that could not be parsed.", |s| s.demux.malformed_records + s.demux.malformed_bundles),
    def!(Counter, "tun_packets_read", "Packets read from the TUN device.", |s| s.tun.packets_read),
    def!(Counter, "tun_bytes_read", "Bytes of the packets read from the TUN device.", |s| s.tun.bytes_read),
    def!(Counter, "tun_packets_written", "Restored packets written to the TUN device.", |s| s.tun.packets_written),
    def!(Counter, "tun_write_errors", "Restored packets the TUN device refused (its queue was full).", |s| s.tun.write_errors),
    def!(Counter, "tun_trunk_down_drops", "Packets read from the TUN device while the trunk was down (dropped).", |s| s.tun.trunk_down_drops),
    def!(Counter, "tun_bundles_lost", "Bundles the trunk refused (it went down, or its buffer was full).", |s| s.tun.bundles_lost),
    def!(Counter, "tun_foreign_sources", "Restored packets not written because their source lies outside the routes.", |s| s.tun.foreign_sources),
    def!(Counter, "tun_refused", "Packets the multiplexer refused (empty or too long) or emitted native (dropped).", |s| s.tun.refused + s.tun.natives_dropped),
];

/// The latest statistics of a process.
#[derive(Debug, Clone)]
enum Snapshot {
    Gateway(GatewayStats),
    Tcm(Box<TcmProcessStats>),
}

/// The scrape-time collector: encodes the snapshot.
#[derive(Debug)]
struct Latest(Arc<Mutex<Snapshot>>);

impl Collector for Latest {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let gateway = match &s {
            Snapshot::Gateway(g) => g,
            Snapshot::Tcm(t) => &t.gateway,
        };
        for m in GATEWAY_METRICS {
            m.encode(gateway, &mut e)?;
        }
        if let Snapshot::Tcm(t) = &s {
            for m in TCM_METRICS {
                m.encode(t, &mut e)?;
            }
        }
        Ok(())
    }
}

/// A process's exported statistics: update it with [`set_gateway`](Self::set_gateway) or
/// [`set_tcm`](Self::set_tcm), render it with [`render`](Self::render) (or serve it with
/// [`MetricsServer`]). Clones share the snapshot.
#[derive(Clone)]
pub struct Metrics {
    latest: Arc<Mutex<Snapshot>>,
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    fn with(role: &str, first: Snapshot) -> Self {
        let latest = Arc::new(Mutex::new(first));
        let labels = [("role".into(), role.to_owned().into())].into_iter();
        let mut registry = Registry::with_prefix_and_labels("thinwire_gateway", labels);
        registry.register_collector(Box::new(Latest(latest.clone())));
        Self {
            latest,
            registry: Arc::new(registry),
        }
    }

    /// The metrics of an edge or server gateway (`role` labels every sample), all zero.
    pub fn gateway(role: &str) -> Self {
        Self::with(role, Snapshot::Gateway(GatewayStats::default()))
    }

    /// The metrics of a TCM process, all zero.
    pub fn tcm(role: &str) -> Self {
        Self::with(role, Snapshot::Tcm(Box::default()))
    }

    fn set(&self, s: Snapshot) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = s;
    }

    /// Replaces the snapshot with an edge's or server gateway's statistics.
    pub fn set_gateway(&self, s: &GatewayStats) {
        self.set(Snapshot::Gateway(s.clone()));
    }

    /// Replaces the snapshot with a TCM process's statistics.
    pub fn set_tcm(&self, s: &TcmProcessStats) {
        self.set(Snapshot::Tcm(Box::new(s.clone())));
    }

    /// The snapshot in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        thinwire::metrics::render(&self.registry)
    }
}

/// A bound HTTP endpoint serving a [`Metrics`] at `GET /metrics` (the runtime's
/// [`thinwire::metrics::serve`]).
#[derive(Debug)]
pub struct MetricsServer {
    listener: TcpListener,
}

impl MetricsServer {
    /// Binds the endpoint (e.g. `127.0.0.1:9100`; port 0 picks one).
    pub async fn bind(addr: SocketAddr) -> io::Result<Self> {
        Ok(Self {
            listener: TcpListener::bind(addr).await?,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Answers scrapes of `metrics` until `stop` turns true (or its sender is dropped).
    pub async fn serve(self, metrics: Metrics, mut stop: watch::Receiver<bool>) {
        let stopped = async move {
            while !*stop.borrow() {
                if stop.changed().await.is_err() {
                    return;
                }
            }
        };
        if let Err(e) = thinwire::metrics::serve(self.listener, metrics.registry, stopped).await {
            tracing::warn!(error = %e, "metrics endpoint stopped");
        }
    }
}

#[cfg(test)]
mod tests;
