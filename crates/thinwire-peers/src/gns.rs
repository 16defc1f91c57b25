//! Valve's GameNetworkingSockets through `thinwire-gns` (loaded at run time; without the
//! library [`GnsHost::open`] fails with the reason), encrypted as GNS always is by default.
//! No lanes: every message goes on GNS's one lane with the send flag its class asks for:
//! reliable (ordered) for the reliable and latest-value classes, unreliable for the
//! unreliable ones; a received message comes back on the first channel of the spec of its
//! class (the bench has one of each). Nagle stays on, so `send` queues and `flush` puts on
//! the wire what was queued (`FlushMessagesOnConnection`), as ENet's send and flush do.
//! GNS's send-rate limits are raised to their maximum (see `thinwire-gns`).
//!
//! GNS has no call that blocks until something arrives (its own thread receives): `service`
//! polls, yielding the CPU between polls for its first [`GnsWait::spin`], then sleeping
//! [`GnsWait::nap`] at a time. The default (500 µs, 50 µs) is the bench's, where one host
//! per process must answer at once; the emulator, with a hundred hosts in one process, naps
//! longer so that their polling does not take the CPU the other peers measure with.

use std::net::{SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use thinwire_gns::{ConnId, EventRef, Host};

use crate::{
    is_reliable, reliable_channel, tag_of, Event, HostSpec, Outgoing, PeerHost, Role, ServerInfo,
};

/// How a GNS host waits in `service` (GNS has no blocking receive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GnsWait {
    /// How long `service` polls back to back (yielding) before it sleeps between polls.
    pub spin: Duration,
    /// The sleep between polls after that: the most a message waits in GNS's queue.
    pub nap: Duration,
}

impl Default for GnsWait {
    /// The bench's: 500 µs of polling, then 50 µs naps.
    fn default() -> Self {
        Self {
            spin: Duration::from_micros(500),
            nap: Duration::from_micros(50),
        }
    }
}
/// Bytes queued on a connection and not yet sent above which it counts as backlogged (a
/// sender backs off; GNS's own limit is its 512 KiB send buffer).
const BACKLOG: usize = 64 * 1024;

/// A GNS host: a listen socket (servers) or a client, each outgoing connection with a socket
/// of its own (GNS opens one per connection).
#[derive(Debug)]
pub struct GnsHost {
    host: Host,
    /// Per channel: whether its messages are reliable.
    reliable: Vec<bool>,
    /// The channel a received message is reported on: reliable, unreliable.
    inbound: [u8; 2],
    /// A client's address as opened (GNS does not report an outgoing socket's port).
    bind: SocketAddrV4,
    wait: GnsWait,
}

impl GnsHost {
    /// Hands what one poll found to `out`; returns how many events.
    fn poll(&mut self, out: &mut Vec<Event<ConnId>>) -> usize {
        let inbound = self.inbound;
        self.host.poll(|e| {
            out.push(match e {
                EventRef::Connected(c) => Event::Connected(c),
                EventRef::Message {
                    conn,
                    reliable,
                    data,
                } => Event::Message {
                    conn,
                    channel: inbound[usize::from(!reliable)],
                    len: data.len(),
                    tag: tag_of(data),
                },
                EventRef::Disconnected(c) => Event::Disconnected(c),
            })
        })
    }
}

/// The first channel of the class (`reliable` or not) in `reliable`, else 0.
fn first(reliable: &[bool], class: bool) -> u8 {
    let i = reliable.iter().position(|&r| r == class).unwrap_or(0);
    u8::try_from(i).unwrap_or(0)
}

impl PeerHost for GnsHost {
    type Conn = ConnId;
    type Settings = GnsWait;

    /// A server listens on `spec.bind`; a client opens a socket per connection. GNS
    /// allocates per connection: `spec.capacity` is not used.
    fn open(spec: &HostSpec, wait: &GnsWait) -> Result<Self, String> {
        let host = match spec.role {
            Role::Server => Host::listen(spec.bind),
            Role::Client => Host::client(),
        }
        .map_err(|e| e.to_string())?;
        let reliable: Vec<bool> = spec.channels.iter().map(|&k| is_reliable(k)).collect();
        Ok(Self {
            host,
            inbound: [first(&reliable, true), first(&reliable, false)],
            reliable,
            bind: spec.bind,
            wait: *wait,
        })
    }

    /// A server's listening address; a client's is the address it was opened with.
    fn info(&self) -> ServerInfo {
        ServerInfo {
            addr: self.host.local_addr().unwrap_or(self.bind),
            key: None,
        }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<ConnId, String> {
        self.host.connect(to.addr).map_err(|e| format!("GNS: {e}"))
    }

    fn remote(&self, conn: ConnId) -> Option<SocketAddr> {
        self.host.remote(conn).map(SocketAddr::V4)
    }

    fn service(&mut self, timeout: Duration, out: &mut Vec<Event<ConnId>>) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if self.poll(out) > 0 {
                return Ok(());
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Ok(());
            }
            if waited < self.wait.spin {
                std::thread::yield_now();
            } else {
                std::thread::sleep(self.wait.nap.min(timeout - waited));
            }
        }
    }

    fn send(&mut self, conn: ConnId, channel: u8, msg: Outgoing<'_>) -> Result<bool, String> {
        let reliable = reliable_channel(&self.reliable, channel, "GNS")?;
        self.host
            .send(conn, msg.data, reliable)
            .map_err(|e| format!("GNS send: {e}"))
    }

    fn backlogged(&self, conn: ConnId) -> bool {
        self.host.pending(conn) > BACKLOG
    }

    fn flush(&mut self) {
        self.host.flush();
    }
}
