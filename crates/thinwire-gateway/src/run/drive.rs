//! The driver loop shared by every gateway process: one screen, the runtime's shape.
//!
//! Besides the machine's two sockets, the loop takes an optional third [`Input`]: a packet
//! source with a timer of its own (TCM's TUN device and multiplexer, `tcm.rs`). Edge and
//! server gateways pass [`Events`], which reads nothing and only sees the events.

use std::future::pending;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::net::UdpSocket;
use tokio::sync::watch;

use crate::trunk::{EdgeGateway, GatewayEvent, GatewayStats, ServerGateway, Side};

/// What the driver needs of a sans-IO gateway (both kinds have exactly this). Public only as
/// the bound of the processes' `run` methods; nothing outside the crate can name it.
#[allow(unreachable_pub)]
pub trait Machine {
    fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, datagram: &[u8]);
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&mut self) -> Option<Instant>;
    fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<(Side, thinwire_proto::Transmit)>;
    fn poll_event(&mut self) -> Option<GatewayEvent>;
    fn stats(&self) -> &GatewayStats;
    fn set_unix_time(&mut self, now: Instant, unix: Duration);
}

macro_rules! machine {
    ($t:ty) => {
        impl Machine for $t {
            fn handle_datagram(&mut self, now: Instant, side: Side, from: SocketAddr, d: &[u8]) {
                <$t>::handle_datagram(self, now, side, from, d)
            }
            fn handle_timeout(&mut self, now: Instant) {
                <$t>::handle_timeout(self, now)
            }
            fn poll_timeout(&mut self) -> Option<Instant> {
                <$t>::poll_timeout(self)
            }
            fn poll_transmit(
                &mut self,
                now: Instant,
                buf: &mut Vec<u8>,
            ) -> Option<(Side, thinwire_proto::Transmit)> {
                <$t>::poll_transmit(self, now, buf)
            }
            fn poll_event(&mut self) -> Option<GatewayEvent> {
                <$t>::poll_event(self)
            }
            fn stats(&self) -> &GatewayStats {
                <$t>::stats(self)
            }
            fn set_unix_time(&mut self, now: Instant, unix: Duration) {
                <$t>::set_unix_time(self, now, unix)
            }
        }
    };
}
machine!(EdgeGateway);
machine!(ServerGateway);

/// The loop's third input, beside the two sockets: a packet source (a TUN device), a timer,
/// and the machine's events. Its calls may feed the machine (e.g. `send_bundle`); the loop
/// flushes the machine's transmits after each.
pub(crate) trait Input<M> {
    /// Waits for the next packet and reads it into `buf`; returns its length. Must be
    /// cancel-safe (the loop drops it when another input wins).
    async fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// A packet `recv` read.
    fn handle_packet(&mut self, m: &mut M, now: Instant, packet: &[u8]);
    /// An event of the machine.
    fn handle_event(&mut self, m: &mut M, now: Instant, event: GatewayEvent);
    /// When [`handle_timeout`](Self::handle_timeout) is due.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The input's timer expired.
    fn handle_timeout(&mut self, m: &mut M, now: Instant);
}

/// The input of the edge and server gateways: no packets, a closure sees the events.
pub(crate) struct Events<F>(pub(crate) F);

impl<M, F: FnMut(&mut M, GatewayEvent)> Input<M> for Events<F> {
    async fn recv(&mut self, _: &mut [u8]) -> io::Result<usize> {
        pending().await
    }
    fn handle_packet(&mut self, _: &mut M, _: Instant, _: &[u8]) {}
    fn handle_event(&mut self, m: &mut M, _: Instant, event: GatewayEvent) {
        (self.0)(m, event)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _: &mut M, _: Instant) {}
}

/// A periodic report: how often, and what to call with the statistics.
pub type Report = (Duration, Box<dyn FnMut(&GatewayStats) + Send>);

/// The two sockets of a gateway.
pub(crate) struct Sockets {
    pub(crate) local: UdpSocket,
    pub(crate) trunk: UdpSocket,
}

/// An IPv4-mapped IPv6 address as IPv4 (the core sees canonical addresses).
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// Sends everything the machine has to send.
async fn flush<M: Machine>(m: &mut M, s: &Sockets, buf: &mut Vec<u8>) {
    while let Some((side, t)) = m.poll_transmit(Instant::now(), buf) {
        let socket = match side {
            Side::Local => &s.local,
            Side::Trunk => &s.trunk,
        };
        // a full socket buffer or an unreachable peer loses this datagram, as the network
        // could; the protocol recovers
        let _ = socket.send_to(&buf[..t.size], t.destination).await;
    }
}

/// Runs `m` on `s` until `stop` turns true. `on_event` sees every event (and may feed the
/// machine); `report` is called every `report_every` with the statistics.
pub(crate) async fn drive<M: Machine>(
    m: &mut M,
    s: &Sockets,
    on_event: impl FnMut(&mut M, GatewayEvent),
    stop: watch::Receiver<bool>,
    report: Option<Report>,
) -> io::Result<()> {
    let report = report.map(|(every, mut f)| (every, move |m: &M, _: &_| f(m.stats())));
    drive_with(m, s, &mut Events(on_event), stop, report).await
}

/// [`drive`] with a third input `x`; `report` sees the machine and the input.
pub(crate) async fn drive_with<M: Machine, X: Input<M>>(
    m: &mut M,
    s: &Sockets,
    x: &mut X,
    mut stop: watch::Receiver<bool>,
    report: Option<(Duration, impl FnMut(&M, &X))>,
) -> io::Result<()> {
    let (mut lbuf, mut tbuf, mut xbuf) = (vec![0u8; 65_536], vec![0u8; 65_536], vec![0; 65_536]);
    let mut out = Vec::new();
    let (every, mut report) = report.unzip();
    let mut next_report = every.map(|d| Instant::now() + d);
    // credentials and tokens expire by the wall clock; the machine extrapolates it from its
    // monotonic `now` afterwards
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    m.set_unix_time(Instant::now(), unix);
    while !*stop.borrow() {
        flush(m, s, &mut out).await;
        while let Some(ev) = m.poll_event() {
            if let Some(line) = ev.log_line() {
                tracing::info!("{line}");
            }
            x.handle_event(m, Instant::now(), ev);
        }
        flush(m, s, &mut out).await;
        let wake = [m.poll_timeout(), x.poll_timeout(), next_report];
        let wake = wake.into_iter().flatten().min();
        let sleep = async {
            match wake {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => pending().await,
            }
        };
        tokio::select! {
            r = s.local.recv_from(&mut lbuf) => {
                if let Ok((n, from)) = r {
                    m.handle_datagram(Instant::now(), Side::Local, canonical(from), &lbuf[..n]);
                }
            }
            r = s.trunk.recv_from(&mut tbuf) => {
                if let Ok((n, from)) = r {
                    m.handle_datagram(Instant::now(), Side::Trunk, canonical(from), &tbuf[..n]);
                }
            }
            r = x.recv(&mut xbuf) => {
                if let Ok(n) = r {
                    x.handle_packet(m, Instant::now(), &xbuf[..n]);
                }
            }
            _ = sleep => {
                let now = Instant::now();
                if m.poll_timeout().is_some_and(|t| t <= now) {
                    m.handle_timeout(now);
                }
                if x.poll_timeout().is_some_and(|t| t <= now) {
                    x.handle_timeout(m, now);
                }
                if let (Some(at), Some(d), Some(f)) = (next_report, every, report.as_mut()) {
                    if at <= now {
                        f(m, x);
                        next_report = Some(now + d);
                    }
                }
            }
            r = stop.changed() => {
                if r.is_err() {
                    break; // the stop handle is gone: nobody can stop this loop any more
                }
            }
        }
    }
    flush(m, s, &mut out).await;
    Ok(())
}
