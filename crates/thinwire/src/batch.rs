//! [`SendBatch`]: many messages, to one or many connections of an [`Endpoint`], queued under
//! one lock and with one wake-up of the driver, as a server's tick sends them.

use std::sync::{Arc, MutexGuard};

use bytes::Bytes;
use thinwire_proto::SendMode;

use crate::connection::Connection;
use crate::endpoint::Endpoint;
use crate::error::SendError;
use crate::shared::{EndpointRef, State};

/// Messages queued together: made by [`Endpoint::batch`], filled by [`send`](Self::send),
/// handed to the driver when dropped.
///
/// [`Connection::send`] takes the endpoint's lock once per message, and wakes the driver,
/// which then competes for that lock with the sends that follow; a batch takes the lock once,
/// and wakes the driver once, when it is dropped, so a server that answers every client each
/// tick pays for one lock however many messages it sends. The messages are the same as those
/// `Connection::send` would queue, in the same order, with the same errors (both check the
/// connection through one function first).
///
/// While a batch lives the endpoint is locked: its driver does not run, and
/// [`Connection::send`], [`Connection::try_recv`] and the endpoint's other calls wait for it
/// (from the same thread they would deadlock). Fill it and drop it; it cannot be held across
/// an `.await` in a spawned task (it is not `Send`).
pub struct SendBatch<'a> {
    ep: &'a Arc<EndpointRef>,
    /// `None` only once dropped.
    st: Option<MutexGuard<'a, State>>,
    queued: usize,
}

impl std::fmt::Debug for SendBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendBatch")
            .field("queued", &self.queued)
            .finish()
    }
}

impl<'a> SendBatch<'a> {
    pub(crate) fn new(ep: &'a Arc<EndpointRef>) -> Self {
        Self {
            ep,
            st: Some(ep.0.lock()),
            queued: 0,
        }
    }

    /// Queues `data` on `channel` of `conn`, as [`Connection::send`] does. A connection of
    /// another endpoint is refused ([`thinwire_proto::SendError::UnknownConnection`]); a
    /// refused message leaves those queued before it queued.
    pub fn send(
        &mut self,
        conn: &Connection,
        channel: u8,
        data: impl Into<Bytes>,
        mode: SendMode,
    ) -> Result<(), SendError> {
        if !Arc::ptr_eq(conn.endpoint_ref(), self.ep) {
            return Err(thinwire_proto::SendError::UnknownConnection.into());
        }
        let st = self.st.as_mut().expect("a live batch holds the lock");
        let h = conn.handle();
        st.engine_for(h)?.send(h, channel, data.into(), mode)?;
        self.queued += 1;
        Ok(())
    }

    /// Messages queued by this batch so far.
    pub fn queued(&self) -> usize {
        self.queued
    }
}

impl Drop for SendBatch<'_> {
    fn drop(&mut self) {
        if let Some(st) = self.st.take() {
            if self.queued > 0 {
                self.ep.0.wake_driver(st);
            }
        }
    }
}

impl Endpoint {
    /// A batch of messages to this endpoint's connections, queued under one lock and sent on
    /// one wake-up of the driver (see [`SendBatch`]).
    ///
    /// ```no_run
    /// # async fn tick(endpoint: &thinwire::Endpoint, clients: &[thinwire::Connection]) {
    /// use thinwire::SendMode;
    /// let mut batch = endpoint.batch();
    /// for c in clients {
    ///     // a refused message (a full send buffer, a closed connection) skips that client
    ///     let _ = batch.send(c, 0, &b"state of the world"[..], SendMode::Plain);
    /// }
    /// drop(batch); // the driver sends them now
    /// # }
    /// ```
    pub fn batch(&self) -> SendBatch<'_> {
        SendBatch::new(self.endpoint_ref())
    }
}
