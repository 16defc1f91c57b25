//! The part shared by the async [`Endpoint`](crate::Endpoint) driver and the blocking
//! [`Host`](crate::Host): the sans-IO core, the fault-injection links around it and the I/O
//! counters. No sockets here: datagrams and `now` go in, a [`TxBatch`] and the next wake-up
//! come out.
//!
//! Addresses: the core always sees peers by their canonical address (an IPv4 peer as IPv4,
//! also on a dual-stack IPv6 socket, where its datagrams arrive from the IPv4-mapped
//! address); [`Engine::collect`] maps IPv4 destinations back for an IPv6 socket.

use std::net::{IpAddr, SocketAddr};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use rand::Rng;
use thinwire_netmodel::Link;
use thinwire_proto::{ConnectionHandle, EndpointConfig, SendMode, Transmit};

use crate::config::{Config, FaultConfig};
use crate::error::BindError;
use crate::io::TxBatch;
use crate::stats::{EndpointStats, FaultStats, IoStats};

type FaultLink = Link<(SocketAddr, Vec<u8>)>;

#[derive(Debug)]
struct Faults {
    outbound: FaultLink,
    inbound: FaultLink,
}

/// The core plus what the runtime wraps around it.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) core: thinwire_proto::Endpoint,
    faults: Option<Faults>,
    scratch: Vec<u8>,
    pub(crate) io: IoStats,
    /// The socket is IPv6: IPv4 destinations leave as IPv4-mapped addresses.
    ipv6_socket: bool,
}

/// `addr` with an IPv4-mapped IPv6 address turned into the IPv4 address.
pub(crate) fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// The destination to give a socket bound to an IPv6 address (`ipv6_socket`) for `addr`.
fn on_socket(addr: SocketAddr, ipv6_socket: bool) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(v4) if ipv6_socket => SocketAddr::new(v4.to_ipv6_mapped().into(), addr.port()),
        _ => addr,
    }
}

impl Engine {
    /// The engine of an endpoint whose socket is bound to `local`.
    pub(crate) fn new(config: &Config, now: Instant, local: SocketAddr) -> Result<Self, BindError> {
        // The core's randomness (connection ids, nonces, cookie key, handshake keys, and the
        // server key when none is configured) is seeded from the OS.
        let mut os = rand::rng();
        let seed: [u8; 32] = os.random();
        // a fresh policy cache: this endpoint's connections share it
        let ep_config = EndpointConfig {
            transport: config.transport.clone(),
            cid_len: config.cid_len,
            cipher_suites: config.cipher_suites.clone(),
            memory: config.memory,
            ..EndpointConfig::new(seed)
        };
        let mut core = thinwire_proto::Endpoint::new(ep_config, config.server.clone(), now)?;
        core.set_prefetcher(
            crate::prefetch::PREFETCHER,
            thinwire_proto::PREFETCH_FROM_CONNECTIONS,
        );
        // connect-token expiry needs the wall clock; the core follows it from `now` on
        if let Ok(unix) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
            core.set_unix_time(now, unix);
        }
        tracing::debug!(
            %local,
            server = config.server.is_some(),
            faults = config.faults.is_some(),
            "endpoint bound"
        );
        let faults = match &config.faults {
            Some(f) => Some(Self::faults(f, os.random())?),
            None => None,
        };
        Ok(Self {
            core,
            faults,
            scratch: Vec::with_capacity(2048),
            io: IoStats::default(),
            ipv6_socket: local.is_ipv6(),
        })
    }

    fn faults(f: &FaultConfig, os_seed: u64) -> Result<Faults, BindError> {
        let seed = f.seed.unwrap_or(os_seed);
        Ok(Faults {
            outbound: Link::try_new(f.outbound.clone(), seed)?,
            inbound: Link::try_new(
                f.inbound.clone(),
                seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1),
            )?,
        })
    }

    /// One datagram from the socket.
    pub(crate) fn on_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let from = canonical(from);
        self.io.datagrams_received += 1;
        self.io.bytes_received += datagram.len() as u64;
        match &mut self.faults {
            Some(f) => {
                f.inbound
                    .send(now, (from, datagram.to_vec()), datagram.len());
            }
            None => self.core.handle_datagram(now, from, datagram),
        }
    }

    /// Every datagram of a receive batch, in order. While the core makes prefetch hints
    /// ([`thinwire_proto::prefetch`]: a prefetcher, and enough connections), the connections
    /// of the next three datagrams are hinted at their stages before a datagram is handled
    /// ([`Lookahead`](thinwire_proto::Lookahead)), so that their state is on its
    /// way while this one's is worked on.
    pub(crate) fn on_datagrams<'a, I>(&mut self, now: Instant, batch: I)
    where
        I: Iterator<Item = (SocketAddr, &'a [u8])> + Clone,
    {
        if !self.core.prefetching() || self.faults.is_some() {
            for (from, d) in batch {
                self.on_datagram(now, from, d);
            }
            return;
        }
        let lead = batch.clone().skip(1).map(|(_, d)| d);
        let mut ahead = thinwire_proto::Lookahead::new(&self.core, lead);
        for (from, d) in batch {
            ahead.hint(&self.core);
            self.on_datagram(now, from, d);
        }
    }

    /// Queues a message ([`thinwire_proto::Endpoint::send_with`]), reading the clock only for
    /// a send that starts something timed (a deadline message): a clock reading per message
    /// was 4% of a client's CPU time in `thinwire bench`'s messages per second.
    pub(crate) fn send(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
        mode: SendMode,
    ) -> Result<(), thinwire_proto::SendError> {
        self.core.send_with(Instant::now, conn, channel, data, mode)
    }

    /// Expired timers: the core's, and datagrams the inbound fault link releases now. The
    /// core's `handle_timeout` also reads at most `ServerConfig::handshakes_per_turn` queued
    /// Connects (one X25519 each): the driver and the [`Host`](crate::Host) call this after
    /// the datagrams of each turn, so established connections go first and a Connect flood
    /// costs a turn at most that many reads.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        if let Some(f) = &mut self.faults {
            while let Some((from, d)) = f.inbound.poll_deliver(now) {
                self.core.handle_datagram(now, from, &d);
            }
        }
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
    }

    /// Whether [`on_timeout`](Self::on_timeout) may have work at `now` without looking at
    /// the connections changed since the timers were last worked out: a timer armed then that
    /// expired ([`thinwire_proto::Endpoint::timer_expired`]), or a datagram the fault links
    /// release.
    fn overdue(&self, now: Instant) -> bool {
        self.core.timer_expired(now) || self.fault_deliveries().any(|t| t <= now)
    }

    /// When the fault links next release a datagram, each way (none without fault injection).
    fn fault_deliveries(&self) -> impl Iterator<Item = Instant> {
        let f = self.faults.as_ref();
        [
            f.and_then(|f| f.inbound.next_delivery()),
            f.and_then(|f| f.outbound.next_delivery()),
        ]
        .into_iter()
        .flatten()
    }

    /// Works out the timers of the connections the calls since the last time changed, so that
    /// [`overdue`](Self::overdue) sees them.
    fn settle(&mut self) {
        let _ = self.core.poll_timeout();
    }

    /// One pass of a host: timers and transmits, each batch handed to `send` (which empties it
    /// into the socket and counts what went into the I/O statistics).
    ///
    /// When no timer armed by the last pass has expired ([`overdue`](Self::overdue)), what the
    /// application queued since goes first and the timers after: working out the timers of the
    /// connections its calls changed (the core does it when asked for the next one) then runs
    /// after the send system call, off the path from a datagram's arrival to its answer, and
    /// what it finds due at once goes at the end of the same pass. A timer that expired since
    /// the last pass (a retransmission timeout while the application was busy) is handled
    /// first, so its retransmission goes before new data and with it; for that, each pass
    /// ends by working out the timers of what it changed itself.
    pub(crate) fn pump(
        &mut self,
        now: Instant,
        batch: &mut TxBatch,
        max_segments: usize,
        mut send: impl FnMut(&mut TxBatch, &mut IoStats),
    ) {
        if !self.overdue(now) {
            self.collect(now, batch, max_segments);
            send(batch, &mut self.io);
        }
        self.on_timeout(now);
        self.collect(now, batch, max_segments);
        send(batch, &mut self.io);
        self.settle();
    }

    /// Drains the core's transmits into `batch` (through the outbound fault link when there is
    /// one), plus whatever the fault link releases now.
    pub(crate) fn collect(&mut self, now: Instant, batch: &mut TxBatch, max_segments: usize) {
        while let Some(Transmit { destination, size }) =
            self.core.poll_transmit(now, &mut self.scratch)
        {
            let datagram = &self.scratch[..size.min(self.scratch.len())];
            let destination = on_socket(destination, self.ipv6_socket);
            match &mut self.faults {
                Some(f) => {
                    f.outbound
                        .send(now, (destination, datagram.to_vec()), datagram.len());
                }
                None => batch.push(destination, datagram, max_segments),
            }
        }
        if let Some(f) = &mut self.faults {
            while let Some((to, d)) = f.outbound.poll_deliver(now) {
                batch.push(to, &d, max_segments);
            }
        }
    }

    /// When the engine next has work without new input.
    pub(crate) fn next_wakeup(&mut self) -> Option<Instant> {
        let timer = self.core.poll_timeout();
        timer.into_iter().chain(self.fault_deliveries()).min()
    }

    pub(crate) fn stats(&self) -> EndpointStats {
        EndpointStats {
            protocol: self.core.stats().clone(),
            connections: self.core.connection_count(),
            io: self.io.clone(),
            faults: self.faults.as_ref().map(|f| FaultStats {
                outbound: *f.outbound.stats(),
                inbound: *f.inbound.stats(),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
