//! The endpoint's and its connections' counters for Prometheus (feature `metrics`).
//!
//! ```text
//!  Registry ── register_collector(EndpointCollector::new(&endpoint))
//!     │ at each scrape: Endpoint::stats() + Endpoint::connection_counters()
//!     ▼
//!  serve(listener, registry, shutdown) ── GET /metrics ──► Prometheus text format
//! ```
//!
//! [`EndpointCollector`] reads the endpoint at scrape time (nothing is copied in between, and
//! the driver never waits for a scrape longer than one look at each connection). Every
//! counter of the core is exported, named after its field, with its doc comment as help:
//!
//! * `thinwire_endpoint_<counter>_total`: [`thinwire_proto::EndpointStats`] (datagrams,
//!   drops by reason, challenges, refusals, connections accepted, ...);
//! * `thinwire_connection_<part>_<counter>_total`: the [`ConnectionCounters`] of every
//!   connection summed, those already closed included (`udp`, `recovery`, `frames`,
//!   `payload_bytes`, `deadline`, `security`);
//! * gauges `thinwire_connections` (held now, in any state) and `thinwire_memory_held_bytes`.
//!
//! Several endpoints in one registry: register each under its own label with
//! [`Registry::sub_registry_with_label`]. [`serve`] answers `GET /metrics` on a TCP listener;
//! [`render`] gives the text for another HTTP stack.
//!
//! ```no_run
//! # async fn demo(endpoint: thinwire::Endpoint) -> std::io::Result<()> {
//! use std::sync::Arc;
//! use prometheus_client::registry::Registry;
//! use thinwire::metrics::{serve, EndpointCollector};
//!
//! let mut registry = Registry::default();
//! registry.register_collector(Box::new(EndpointCollector::new(&endpoint)));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9100").await?;
//! serve(listener, Arc::new(registry), std::future::pending()).await
//! # }
//! ```

mod http;

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use thinwire_proto::ConnectionCounters;

use crate::Endpoint;

pub use http::{render, serve, CONTENT_TYPE};

/// A [`Collector`] of one [`Endpoint`]'s counters, read at each scrape. It holds a clone of
/// the endpoint, which keeps it running: drop the registry to let it go.
#[derive(Debug)]
pub struct EndpointCollector {
    endpoint: Endpoint,
}

impl EndpointCollector {
    /// A collector of `endpoint` (see the [module docs](self) for the names it exports).
    pub fn new(endpoint: &Endpoint) -> Self {
        Self {
            endpoint: endpoint.clone(),
        }
    }
}

/// Writes one counter `name` (the encoder appends `_total`) with the doc comment `doc`.
fn counter(e: &mut DescriptorEncoder, name: &str, doc: &str, value: u64) -> fmt::Result {
    let m = ConstCounter::new(value);
    m.encode(e.encode_descriptor(name, doc.trim(), None, m.metric_type())?)
}

/// Writes one gauge.
fn gauge(
    e: &mut DescriptorEncoder,
    (name, help, unit): (&str, &str, Option<&Unit>),
    value: u64,
) -> fmt::Result {
    let m = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    m.encode(e.encode_descriptor(name, help, unit, m.metric_type())?)
}

impl Collector for EndpointCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        let stats = self.endpoint.stats();
        let counters = self.endpoint.connection_counters();
        let held = (
            "thinwire_connections",
            "Connections held now, in any state.",
            None,
        );
        gauge(&mut e, held, stats.connections as u64)?;
        let memory = (
            "thinwire_memory_held",
            "Bytes of the memory budget all connections hold now.",
            Some(&Unit::Bytes),
        );
        gauge(&mut e, memory, stats.protocol.memory_held)?;
        let mut r = Ok(());
        let docs = thinwire_proto::EndpointStats::DOCS.iter();
        let mut docs = docs.copied();
        stats.protocol.for_each(|name, v| {
            let doc = docs.next().unwrap_or_default();
            if r.is_ok() {
                r = counter(&mut e, &format!("thinwire_endpoint_{name}"), doc, v);
            }
        });
        r?;
        let mut docs = ConnectionCounters::DOCS.iter().copied();
        counters.for_each(|name, v| {
            let doc = docs.next().unwrap_or_default();
            if r.is_ok() {
                let name = format!("thinwire_connection_{}", name.replace('.', "_"));
                r = counter(&mut e, &name, doc, v);
            }
        });
        r
    }
}

/// A registry with the collector of `endpoint` in it: what [`serve`] needs for one endpoint.
pub fn registry(endpoint: &Endpoint) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(EndpointCollector::new(endpoint)));
    registry
}
