//! The async [`Connection`]: one peer of an [`Endpoint`](crate::Endpoint), its send calls,
//! its message queue and how it ended.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, CipherSuite, ConnectionHandle, ConnectionStats, Message, SendMode, TokenClaims,
};
use tokio::sync::Notify;

use crate::engine::Engine;
use crate::error::{ConnectError, ConnectionError, SendError};
use crate::shared::{EndpointRef, Shared, Slot, DROP_CLOSE_CODE};

struct ConnInner {
    ep: Arc<EndpointRef>,
    handle: ConnectionHandle,
    remote: SocketAddr,
    notify: Arc<Notify>,
    channels: Box<[ChannelKind]>,
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        let shared = &self.ep.0;
        let mut st = shared.lock();
        let ended = match st.conns.get_mut(&self.handle) {
            Some(s) => {
                s.owned = false;
                s.messages = Default::default();
                s.end.is_some()
            }
            None => return,
        };
        if ended {
            st.conns.remove(&self.handle);
        } else if st.stopped.is_none() {
            st.engine.core.close(
                Instant::now(),
                self.handle,
                DROP_CLOSE_CODE,
                b"connection dropped",
            );
            shared.dispatch(&mut st);
            shared.wake_driver(st);
        }
    }
}

/// A connection to one peer. Cheap to clone (all clones are the same connection); closed
/// gracefully with code [`DROP_CLOSE_CODE`] when the last clone is dropped.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<ConnInner>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.inner.handle)
            .field("remote", &self.inner.remote)
            .finish()
    }
}

impl Connection {
    pub(crate) fn new(
        ep: Arc<EndpointRef>,
        handle: ConnectionHandle,
        remote: SocketAddr,
        notify: Arc<Notify>,
        channels: Box<[ChannelKind]>,
    ) -> Self {
        Self {
            inner: Arc::new(ConnInner {
                ep,
                handle,
                remote,
                notify,
                channels,
            }),
        }
    }

    /// Waits for the handshake of a connection this side opened; dropping the future (or an
    /// error) drops `self`, which closes the half-open connection.
    pub(crate) async fn established(self) -> Result<Connection, ConnectError> {
        let shared = self.shared();
        let notify = self.inner.notify.clone();
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // decide under the lock, act (and maybe drop `self`, which locks) after it
            let outcome = {
                let st = shared.lock();
                match (st.conns.get(&self.inner.handle), &st.stopped) {
                    (Some(s), _) if s.connected => Some(Ok(())),
                    (Some(Slot { end: Some(r), .. }), _) => {
                        Some(Err(ConnectError::Handshake((**r).clone())))
                    }
                    (_, Some(e)) => Some(Err(ConnectError::Endpoint(e.clone()))),
                    (None, None) => {
                        Some(Err(ConnectError::Endpoint(ConnectionError::EndpointClosed)))
                    }
                    _ => None,
                }
            };
            match outcome {
                Some(Ok(())) => return Ok(self),
                Some(Err(e)) => return Err(e),
                None => notified.await,
            }
        }
    }

    fn shared(&self) -> &Shared {
        &self.inner.ep.0
    }

    /// The endpoint this connection belongs to.
    pub(crate) fn endpoint_ref(&self) -> &Arc<EndpointRef> {
        &self.inner.ep
    }

    /// The connection's handle within its endpoint.
    pub fn handle(&self) -> ConnectionHandle {
        self.inner.handle
    }

    /// The peer's address when the connection was opened.
    pub fn remote_address(&self) -> SocketAddr {
        self.inner.remote
    }

    /// The peer's address now: it moves (NAT rebinding) only after the new address answered a
    /// path challenge. `None` once the connection is gone.
    pub fn current_remote_address(&self) -> Option<SocketAddr> {
        self.shared()
            .lock()
            .engine
            .core
            .remote_address(self.inner.handle)
    }

    /// The channel classes, indexed by channel number.
    pub fn channels(&self) -> &[ChannelKind] {
        &self.inner.channels
    }

    /// Runs one call of the core that takes the present time on this connection (see
    /// [`with_engine`](Self::with_engine)).
    fn queue_with<T>(
        &self,
        call: impl FnOnce(
            &mut thinwire_proto::Endpoint,
            Instant,
            thinwire_proto::ConnectionHandle,
        ) -> Result<T, thinwire_proto::SendError>,
    ) -> Result<T, SendError> {
        self.with_engine(|engine, h| call(&mut engine.core, Instant::now(), h))
    }

    /// Runs `call` on the engine for this connection, unless the connection has ended or the
    /// endpoint stopped, then wakes the driver (once per driver pass: a burst of sends costs
    /// one wake-up). Per call: the endpoint's lock, one slot lookup (a multiplication, no
    /// SipHash), the call (a send reads the clock only for a deadline message).
    fn with_engine<T>(
        &self,
        call: impl FnOnce(
            &mut Engine,
            thinwire_proto::ConnectionHandle,
        ) -> Result<T, thinwire_proto::SendError>,
    ) -> Result<T, SendError> {
        let shared = self.shared();
        let mut st = shared.lock();
        let h = self.inner.handle;
        let out = call(st.engine_for(h)?, h)?;
        shared.wake_driver(st);
        Ok(out)
    }

    /// Makes every later [`SendMode::Plain`] [`send`](Self::send) on `channel` a deadline
    /// message with `opts` (`None`: back to the channel's own class).
    pub fn set_channel_deadline(
        &self,
        channel: u8,
        opts: Option<thinwire_proto::DeadlineOptions>,
    ) -> Result<(), SendError> {
        self.queue_with(|core, _, h| core.set_channel_deadline(h, channel, opts))
    }

    /// Sets the repair target of reliable `channel`: how late its messages may arrive, and
    /// how surely (`None`: plain retransmission). Every reliable channel starts with the
    /// transport's default, "one-way delay + 1.5 RTT at 99.9%" (see
    /// [`thinwire_proto::RepairTarget`]).
    pub fn set_channel_repair(
        &self,
        channel: u8,
        target: Option<thinwire_proto::RepairTarget>,
    ) -> Result<(), SendError> {
        self.queue_with(|core, _, h| core.set_channel_repair(h, channel, target))
    }

    /// Queues a message on `channel`, delivered as `mode` says: [`SendMode::Plain`] for the
    /// channel's own class (any but LatestReliable), [`SendMode::Latest`] for the newest value
    /// of a key on a LatestReliable channel (an older value the peer has not acknowledged is
    /// superseded, not retransmitted), [`SendMode::Deadline`] for erasure-coded shards sent in
    /// stages so that the message arrives within a deadline with a target probability, on a
    /// channel of any class (delivered with
    /// [`Message::deadline`](thinwire_proto::Message::deadline) set). It leaves with the next
    /// datagram the driver sends, bundled with whatever else is queued.
    pub fn send(
        &self,
        channel: u8,
        data: impl Into<Bytes>,
        mode: SendMode,
    ) -> Result<(), SendError> {
        let data = data.into();
        self.with_engine(|engine, h| engine.send(h, channel, data, mode))
    }

    /// The next message (its channel is [`Message::channel`]). Messages already received are
    /// returned even after the connection ended; then the error says why it ended.
    ///
    /// Delivered messages wait in a per-connection queue without bound until read: read
    /// continuously (a task per connection, or [`try_recv`](Self::try_recv) every tick).
    pub async fn recv(&self) -> Result<Message, ConnectionError> {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(m) = self.try_recv()? {
                return Ok(m);
            }
            notified.await;
        }
    }

    /// The next message if one is waiting, without waiting.
    pub fn try_recv(&self) -> Result<Option<Message>, ConnectionError> {
        let mut guard = self.shared().lock();
        let st = &mut *guard;
        match st.conns.get_mut(&self.inner.handle) {
            Some(s) => {
                if let Some(m) = s.pop() {
                    return Ok(Some(m));
                }
                if let Some(r) = &s.end {
                    return Err(ConnectionError::Disconnected((**r).clone()));
                }
                match &st.stopped {
                    Some(e) => Err(e.clone()),
                    None => Ok(None),
                }
            }
            None => Err(st
                .stopped
                .clone()
                .unwrap_or(ConnectionError::EndpointClosed)),
        }
    }

    /// Waits until the connection has ended and says why.
    pub async fn closed(&self) -> ConnectionError {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.shared().lock();
                match st.conns.get(&self.inner.handle) {
                    Some(Slot { end: Some(r), .. }) => {
                        return ConnectionError::Disconnected((**r).clone())
                    }
                    None => {
                        return st
                            .stopped
                            .clone()
                            .unwrap_or(ConnectionError::EndpointClosed)
                    }
                    _ => {}
                }
                if let Some(e) = &st.stopped {
                    return e.clone();
                }
            }
            notified.await;
        }
    }

    /// Why the connection ended, if it has.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        let st = self.shared().lock();
        match st.conns.get(&self.inner.handle) {
            Some(Slot { end: Some(r), .. }) => Some(ConnectionError::Disconnected((**r).clone())),
            Some(_) => st.stopped.clone(),
            None => Some(
                st.stopped
                    .clone()
                    .unwrap_or(ConnectionError::EndpointClosed),
            ),
        }
    }

    /// A snapshot of the connection's statistics (RTT, losses, retransmissions, queues);
    /// `None` once the connection is gone.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.shared()
            .lock()
            .engine
            .core
            .connection_stats(self.inner.handle)
    }

    /// The cipher suite protecting the connection's packets (`None` once it is gone).
    /// [`CipherSuite::InsecureCleartext`] only when both ends opted out of encryption.
    pub fn cipher_suite(&self) -> Option<CipherSuite> {
        self.shared()
            .lock()
            .engine
            .core
            .cipher_suite(self.inner.handle)
    }

    /// On a server: what the client's connect token said (the backend's client id and user
    /// data). `None` for a connection admitted without a token, or one that is gone.
    pub fn token_claims(&self) -> Option<TokenClaims> {
        self.shared()
            .lock()
            .engine
            .core
            .token_claims(self.inner.handle)
            .cloned()
    }

    /// Closes the connection gracefully: queued reliable data is delivered first (up to the
    /// transport's close timeout), then the peer is told `code` and `reason`. [`recv`](Self::recv)
    /// then reports [`DisconnectReason::LocallyClosed`](thinwire_proto::DisconnectReason::LocallyClosed).
    pub fn close(&self, code: u64, reason: &[u8]) {
        let shared = self.shared();
        let mut st = shared.lock();
        st.engine
            .core
            .close(Instant::now(), self.inner.handle, code, reason);
        shared.dispatch(&mut st);
        shared.wake_driver(st);
    }
}
