//! What every real peer shares: the run's [`Plan`] of messages, the [`Book`]
//! of send and delivery stamps and the [`HostReport`].
//!
//! A payload carries its message's index in the plan as its tag, in its first
//! 8 bytes (`thinwire_peers::tagged`; payloads shorter than 8 bytes are padded
//! to 8), so the receiving thread can stamp the message it hands to the
//! application.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::net::host_index;
use thinwire_lab::workload::{AppEvent, ClassSpec, Direction};
use thinwire_proto::ConnectionCounters;

/// What one host of a peer's run reports: the payload bytes it sent (see
/// [`super::run_peer`]), a real stack's own counters by name, and thinwire's
/// connection counters.
#[derive(Debug, Default)]
pub(crate) struct HostReport {
    pub(crate) payload_bytes_sent: u64,
    pub(crate) counters: Vec<(&'static str, u64)>,
    pub(crate) thinwire: Option<ConnectionCounters>,
}

impl HostReport {
    /// A report with the payload bytes sent and no counters.
    pub(crate) fn sent(payload_bytes_sent: u64) -> Self {
        HostReport {
            payload_bytes_sent,
            counters: Vec::new(),
            thinwire: None,
        }
    }
}

/// Adds `more` into `into`, name by name, keeping first-seen order.
pub(crate) fn merge_counters(into: &mut Vec<(&'static str, u64)>, more: &[(&'static str, u64)]) {
    for &(k, v) in more {
        match into.iter_mut().find(|(n, _)| *n == k) {
            Some((_, x)) => *x += v,
            None => into.push((k, v)),
        }
    }
}

/// Send and delivery stamps of every message of a run (µs since `t0`, 0 = not yet).
#[derive(Debug)]
pub(crate) struct Book {
    pub(crate) t0: Instant,
    pub(crate) sent: Vec<AtomicU64>,
    pub(crate) delivered: Vec<AtomicU64>,
}

impl Book {
    pub(crate) fn new(t0: Instant, n: usize) -> Self {
        Book {
            t0,
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            delivered: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }
    fn stamp(&self, v: &AtomicU64) {
        let us = Instant::now()
            .saturating_duration_since(self.t0)
            .as_micros() as u64
            + 1;
        let _ = v.compare_exchange(0, us, Ordering::Relaxed, Ordering::Relaxed);
    }
    pub(crate) fn sent(&self, id: usize) {
        self.stamp(&self.sent[id]);
    }
    /// Stamps the delivery of the message `data` (its tag names it).
    pub(crate) fn delivered(&self, data: &[u8]) {
        if data.len() >= 8 {
            self.delivered_id(thinwire_peers::tag_of(data));
        }
    }
    /// Stamps the delivery of message `id` (a payload's tag).
    pub(crate) fn delivered_id(&self, id: u64) {
        if let Some(v) = usize::try_from(id).ok().and_then(|i| self.delivered.get(i)) {
            self.stamp(v);
        }
    }
}

/// The run's events and timing, shared by all peer threads.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) events: Vec<AppEvent>,
    pub(crate) classes: Vec<ClassSpec>,
    pub(crate) clients: u32,
    /// Edge gateways of the gateway peer (the scenario's `gateway_edges`).
    pub(crate) gateway_edges: u32,
    /// When the last peer thread stops.
    pub(crate) end: Duration,
}

impl Plan {
    fn ids(&self, dir: Direction, client: Option<u32>) -> Vec<usize> {
        (0..self.events.len())
            .filter(|&i| {
                let e = &self.events[i];
                e.dir == dir && client.is_none_or(|c| e.client == c)
            })
            .collect()
    }

    /// The messages one host sends: the server (`client` `None`) every
    /// downstream message, client `c` its own upstream ones.
    pub(crate) fn ids_of(&self, client: Option<u32>) -> Vec<usize> {
        match client {
            None => self.ids(Direction::Down, None),
            Some(c) => self.ids(Direction::Up, Some(c)),
        }
    }
}

/// The slot of the connection event `ev` goes out on: a client's only one
/// (0), or on the server the one of the event's client.
pub(crate) fn slot(client: Option<u32>, ev: &AppEvent) -> usize {
    if client.is_some() {
        0
    } else {
        ev.client as usize
    }
}

/// The 0-based client index of a peer that connected to the server from an
/// emulated client host (host `i + 1` is client `i`), if it is one.
pub(crate) fn client_slot(addr: SocketAddr) -> Option<usize> {
    match addr.ip() {
        std::net::IpAddr::V4(ip) => host_index(ip.octets())?.checked_sub(1),
        std::net::IpAddr::V6(_) => None,
    }
}

/// A single-threaded tokio runtime for one host's thread (the QUIC and thinwire peers).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_merge_by_name_in_first_seen_order() {
        let mut total = Vec::new();
        merge_counters(&mut total, &[("a", 1), ("b", 2)]);
        merge_counters(&mut total, &[("b", 10), ("c", 5), ("a", 1)]);
        assert_eq!(total, [("a", 2), ("b", 12), ("c", 5)]);
    }
}
