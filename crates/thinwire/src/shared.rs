//! The state an endpoint's handles and its driver task share: the sans-IO core (inside the
//! [`Engine`]), one mailbox per connection, and the notifications between them.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use quinn_udp::UdpSocketState;
use thinwire_proto::{ConnectionHandle, DisconnectReason, Event, Message};
use tokio::sync::Notify;

use crate::engine::Engine;
use crate::error::ConnectionError;

/// Close code used when a [`Connection`](crate::Connection) is dropped without an explicit close.
pub const DROP_CLOSE_CODE: u64 = 0;

/// One connection's mailbox in the endpoint.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) messages: VecDeque<(u8, Message)>,
    pub(crate) end: Option<DisconnectReason>,
    pub(crate) connected: bool,
    pub(crate) remote: SocketAddr,
    pub(crate) notify: Arc<Notify>,
    /// A [`Connection`] exists for it (or will, once accepted); otherwise messages are dropped
    /// and the slot goes away when the connection ends.
    pub(crate) owned: bool,
}

impl Slot {
    pub(crate) fn new(remote: SocketAddr, connected: bool) -> Self {
        Self {
            messages: VecDeque::new(),
            end: None,
            connected,
            remote,
            notify: Arc::new(Notify::new()),
            owned: true,
        }
    }
}

/// Everything behind the endpoint's lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) engine: Engine,
    pub(crate) conns: HashMap<ConnectionHandle, Slot>,
    pub(crate) incoming: VecDeque<ConnectionHandle>,
    /// Why the driver stopped, once it has.
    pub(crate) stopped: Option<ConnectionError>,
    /// Set when the last handle is gone: close everything, stop at the latest at this instant.
    pub(crate) shutdown: Option<Instant>,
}

impl State {
    /// Moves the core's events into the connection slots and wakes whoever waits for them.
    pub(crate) fn dispatch(&mut self, shared_accept: &Notify, idle: &Notify) {
        while let Some((h, ev)) = self.engine.core.poll_event() {
            match ev {
                Event::Connected {
                    remote,
                    incoming: true,
                } => {
                    let mut slot = Slot::new(remote, true);
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
                        self.incoming.push_back(h);
                        shared_accept.notify_waiters();
                    }
                }
                Event::Connected {
                    incoming: false,
                    remote,
                } => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        s.connected = true;
                        s.remote = remote;
                        s.notify.notify_waiters();
                    }
                }
                Event::Message(m) => {
                    if let Some(s) = self.conns.get_mut(&h) {
                        if s.owned {
                            s.messages.push_back((m.channel, m));
                            s.notify.notify_waiters();
                        }
                    }
                }
                Event::Disconnected { reason } => {
                    let orphan = match self.conns.get_mut(&h) {
                        Some(s) => {
                            s.end = Some(reason);
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

    pub(crate) fn dispatch(&self, st: &mut State) {
        st.dispatch(&self.accept, &self.idle);
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
        drop(st);
        shared.wake.notify_one();
    }
}
