//! The state an endpoint's handles and its driver task share: the sans-IO core (inside the
//! [`Engine`]), one mailbox per connection, and the notifications between them.
//!
//! What the runtime adds to each connection, beyond the core's: a [`Slot`] (56 bytes on 64-bit
//! targets) in the endpoint's map, the `Arc<Notify>` its waiters sleep on (48 bytes of heap),
//! and the application's [`Connection`](crate::Connection) (88 bytes of heap). A slot holds no
//! heap while idle: its message queue is allocated by the first delivery and given back when a
//! burst has drained, and the reason a connection ended is boxed, as it is needed only once.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use quinn_udp::UdpSocketState;
use thinwire_proto::{ConnectionHandle, DisconnectReason, Event, Message};
use tokio::sync::Notify;

use crate::engine::Engine;
use crate::error::{ConnectionError, SendError};

/// Close code used when a [`Connection`](crate::Connection) is dropped without an explicit close.
pub const DROP_CLOSE_CODE: u64 = 0;

/// Most entries a drained queue keeps room for: a burst (a thousand connects, a second of
/// messages nobody read) must not pin its peak memory for the life of the connection.
const KEEP_DRAINED: usize = 16;

/// Gives back the memory of `queue` once it is empty and larger than [`KEEP_DRAINED`] entries.
pub(crate) fn release_drained<T>(queue: &mut VecDeque<T>) {
    if queue.is_empty() && queue.capacity() > KEEP_DRAINED {
        *queue = VecDeque::new();
    }
}

/// One connection's mailbox in the endpoint.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Delivered messages not yet read (each knows its channel).
    pub(crate) messages: VecDeque<Message>,
    /// Why the connection ended, once it has.
    pub(crate) end: Option<Box<DisconnectReason>>,
    pub(crate) notify: Arc<Notify>,
    /// The handshake completed.
    pub(crate) connected: bool,
    /// A [`Connection`] exists for it (or will, once accepted); otherwise messages are dropped
    /// and the slot goes away when the connection ends.
    pub(crate) owned: bool,
}

impl Slot {
    pub(crate) fn new(connected: bool) -> Self {
        Self {
            messages: VecDeque::new(),
            end: None,
            notify: Arc::new(Notify::new()),
            connected,
            owned: true,
        }
    }

    /// The next delivered message; the queue's memory goes back once a burst has drained.
    pub(crate) fn pop(&mut self) -> Option<Message> {
        let m = self.messages.pop_front();
        release_drained(&mut self.messages);
        m
    }
}

/// Hashes [`ConnectionHandle`]s for the slot map, on every send and delivery. The core hands
/// handles out itself (no peer chooses them), so a keyed hash (SipHash, to resist flooding)
/// buys nothing: one multiplication spreads them, and its low bits, which pick the bucket,
/// are a permutation of the handle's low bits.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // 2^64 / the golden ratio (Knuth's multiplicative hashing)
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The connection slots of an endpoint, by handle.
pub(crate) type Slots = HashMap<ConnectionHandle, Slot, BuildHasherDefault<HandleHasher>>;

/// Everything behind the endpoint's lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) engine: Engine,
    pub(crate) conns: Slots,
    /// Connections accepted by the core and not yet by the application, with the peer's
    /// address when the handshake completed.
    pub(crate) incoming: VecDeque<(ConnectionHandle, SocketAddr)>,
    /// Why the driver stopped, once it has.
    pub(crate) stopped: Option<ConnectionError>,
    /// Set when the last handle is gone: close everything, stop at the latest at this instant.
    pub(crate) shutdown: Option<Instant>,
    /// The driver has been woken and has not yet taken the lock since: a burst of sends wakes
    /// it once.
    pub(crate) wake_pending: bool,
}

impl State {
    /// The engine, to act on connection `h`: unless `h` has ended (why it ended) or the
    /// endpoint stopped (why it stopped). What every send checks first, one at a time
    /// ([`Connection::send`](crate::Connection::send)) or in a batch.
    pub(crate) fn engine_for(&mut self, h: ConnectionHandle) -> Result<&mut Engine, SendError> {
        if let Some(Slot { end: Some(r), .. }) = self.conns.get(&h) {
            return Err(ConnectionError::Disconnected((**r).clone()).into());
        }
        if let Some(e) = &self.stopped {
            return Err(e.clone().into());
        }
        Ok(&mut self.engine)
    }

    /// Moves the core's events into the connection slots and wakes whoever waits for them.
    /// Returns whether a message was handed to a waiting application.
    pub(crate) fn dispatch(&mut self, shared_accept: &Notify, idle: &Notify) -> bool {
        let mut delivered = false;
        while let Some((h, ev)) = self.engine.core.poll_event() {
            match ev {
                Event::Connected {
                    remote,
                    incoming: true,
                } => {
                    let mut slot = Slot::new(true);
                    if self.shutdown.is_some() {
                        // nobody will accept it: close it, forget it when it ends
                        slot.owned = false;
                        self.conns.insert(h, slot);
                        self.engine.core.close(
                            Instant::now(),
                            h,
                            DROP_CLOSE_CODE,
                            b"endpoint closed",
                        );
                    } else {
                        self.conns.insert(h, slot);
                        self.incoming.push_back((h, remote));
                        shared_accept.notify_waiters();
                    }
                }
                Event::Connected {
                    incoming: false, ..
                } => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        s.connected = true;
                        s.notify.notify_waiters();
                    }
                }
                Event::Message(m) => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        if s.owned {
                            s.messages.push_back(m);
                            s.notify.notify_waiters();
                            delivered = true;
                        }
                    }
                }
                Event::Disconnected { reason } => {
                    let orphan = match self.conns.get_mut(&h) {
                        Some(s) => {
                            s.end = Some(Box::new(reason));
                            s.notify.notify_waiters();
                            !s.owned
                        }
                        None => false,
                    };
                    if orphan {
                        self.conns.remove(&h);
                    }
                }
            }
        }
        if self.engine.core.connection_count() == 0 {
            idle.notify_waiters();
        }
        delivered
    }

    /// Starts a graceful close of every connection that has not ended yet.
    pub(crate) fn close_open(&mut self, now: Instant, code: u64, reason: &[u8]) {
        let open: Vec<ConnectionHandle> = self
            .conns
            .iter()
            .filter(|(_, s)| s.end.is_none())
            .map(|(h, _)| *h)
            .collect();
        for h in open {
            self.engine.core.close(now, h, code, reason);
        }
    }
}

/// What the handles and the driver task share.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) socket: tokio::net::UdpSocket,
    pub(crate) udp: UdpSocketState,
    pub(crate) local_addr: SocketAddr,
    pub(crate) is_server: bool,
    /// Wakes the driver (permit semantics: a wake before the driver waits is not lost).
    pub(crate) wake: Notify,
    pub(crate) accept: Notify,
    pub(crate) idle: Notify,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`State::dispatch`] with this endpoint's notifications: whether a message was delivered.
    pub(crate) fn dispatch(&self, st: &mut State) -> bool {
        st.dispatch(&self.accept, &self.idle)
    }

    /// Releases the lock and wakes the driver to act on what changed under it, unless it has
    /// been woken since it last took the lock (it will see this change too).
    pub(crate) fn wake_driver(&self, mut st: MutexGuard<'_, State>) {
        let first = !std::mem::replace(&mut st.wake_pending, true);
        drop(st);
        if first {
            self.wake.notify_one();
        }
    }
}

/// Keeps the driver alive; the last one dropped shuts the endpoint down gracefully.
pub(crate) struct EndpointRef(pub(crate) Arc<Shared>);

impl Drop for EndpointRef {
    fn drop(&mut self) {
        let shared = &self.0;
        let mut st = shared.lock();
        if st.stopped.is_some() {
            return;
        }
        let now = Instant::now();
        let linger = st.engine.core.transport_config().close_timeout + Duration::from_secs(1);
        st.shutdown = Some(now + linger);
        st.close_open(now, DROP_CLOSE_CODE, b"endpoint closed");
        shared.dispatch(&mut st);
        shared.wake_driver(st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drained queue keeps room for up to [`KEEP_DRAINED`] entries and gives back anything
    /// larger, so a connection's mailbox does not pin a burst's peak; a queue that is not
    /// empty keeps everything.
    #[test]
    fn a_drained_queue_keeps_room_up_to_its_allowance() {
        let burst = |n: usize| {
            let mut q: VecDeque<u64> = VecDeque::new();
            q.extend(0..n as u64);
            q.clear();
            q
        };
        let mut q = burst(KEEP_DRAINED);
        release_drained(&mut q);
        assert!(q.capacity() >= KEEP_DRAINED, "room kept: {}", q.capacity());
        let mut q = burst(64);
        release_drained(&mut q);
        assert_eq!(q.capacity(), 0, "over a mailbox's allowance");
        let mut q = burst(64);
        q.push_back(1);
        release_drained(&mut q);
        assert_eq!(q.len(), 1, "a queue that is not empty keeps everything");
        assert!(q.capacity() >= 64);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_slot_is_small() {
        // the map stores the handle beside it: 64 bytes an entry
        assert_eq!(std::mem::size_of::<Slot>(), 56);
    }

    #[test]
    fn a_drained_burst_gives_its_memory_back() {
        let mut s = Slot::new(true);
        for seq in 0..100 {
            s.messages.push_back(Message {
                channel: 0,
                seq: Some(seq),
                key: None,
                data: bytes::Bytes::new(),
                deadline: None,
            });
        }
        assert!(s.messages.capacity() >= 100);
        for seq in 0..100 {
            assert_eq!(s.pop().unwrap().seq, Some(seq));
        }
        assert!(s.pop().is_none());
        assert_eq!(s.messages.capacity(), 0);
    }

    #[test]
    fn handles_spread_over_the_buckets() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<HandleHasher>::default();
        // sequential handles, and the core's `generation << 32 | index` ones: distinct low bits
        for base in [0u64, 7 << 32] {
            let mut seen = std::collections::HashSet::new();
            for i in 0..1024 {
                seen.insert(b.hash_one(ConnectionHandle(base | i)) & 1023);
            }
            assert_eq!(seen.len(), 1024);
        }
    }
}
