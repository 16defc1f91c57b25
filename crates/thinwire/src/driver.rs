//! The driver task of an async endpoint: timers, transmits and events under the lock, then
//! the socket: receive what is readable, send what the core produced, sleep until the next
//! timer or a wake-up from the application.
//!
//! One turn: timers and at most `handshakes_per_turn` queued handshake reads
//! ([`Engine::on_timeout`](crate::engine::Engine::on_timeout)), transmits, then at most
//! [`RECV_BATCHES_PER_TURN`] batches of datagrams. While Connects wait, the core's next timer
//! is due at once, so the loop turns again without sleeping: handshakes are read a few at a
//! time between the datagrams of established connections.
//!
//! Like [`Host::service`](crate::Host::service), the driver hands what arrived to the
//! application before it sends the acknowledgements those datagrams ask for: after a receive
//! that delivered a message it waits up to [`ACK_HOLD`] for the application to queue something
//! (its [`Connection::send`](crate::Connection::send) wakes the driver), so that an answer
//! carries the ACKs in the same datagram. A receiver that does not answer delays its ACKs by
//! that much at most.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::Interest;

use crate::error::ConnectionError;
use crate::host::ACK_HOLD;
use crate::io::{RecvBuf, Sent, TxBatch, RECV_BATCHES_PER_TURN};
use crate::shared::Shared;

/// Consecutive failed receives after which the socket is considered broken.
const MAX_RECV_ERRORS: u32 = 64;

/// The task: runs until the endpoint shuts down or its socket fails.
pub(crate) async fn drive(shared: Arc<Shared>) {
    // The guard also runs when the task is dropped without finishing (its runtime shut down):
    // waiters learn the endpoint is gone instead of waiting forever.
    let guard = DriverGuard {
        shared,
        result: None,
    };
    let mut rx = RecvBuf::new();
    let mut tx = TxBatch::default();
    let result = run(&guard.shared, &mut rx, &mut tx).await;
    let mut guard = guard;
    guard.result = Some(result);
}

struct DriverGuard {
    shared: Arc<Shared>,
    result: Option<io::Result<()>>,
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        let shared = &self.shared;
        let mut st = shared.lock();
        let local = shared.local_addr;
        st.stopped = Some(match self.result.take() {
            Some(Err(e)) => {
                tracing::error!(%local, error = %e, "endpoint stopped: its socket failed");
                ConnectionError::EndpointFailed(Arc::new(e))
            }
            Some(Ok(())) | None => {
                tracing::debug!(%local, "endpoint stopped");
                ConnectionError::EndpointClosed
            }
        });
        for s in st.conns.values() {
            s.notify.notify_waiters();
        }
        drop(st);
        shared.accept.notify_waiters();
        shared.idle.notify_waiters();
    }
}

async fn run(shared: &Shared, rx: &mut RecvBuf, tx: &mut TxBatch) -> io::Result<()> {
    let mut recv_errors = 0u32;
    loop {
        let (deadline, done) = {
            let mut st = shared.lock();
            // what the application queues from here on needs a new wake-up
            st.wake_pending = false;
            let now = Instant::now();
            st.engine.io.wakeups += 1;
            st.engine.on_timeout(now);
            st.engine.collect(now, tx, shared.udp.max_gso_segments());
            shared.dispatch(&mut st);
            let done = st
                .shutdown
                .is_some_and(|limit| st.engine.core.connection_count() == 0 || now >= limit);
            (st.engine.next_wakeup(), done)
        };
        send_all(shared, tx).await;
        if done {
            return Ok(());
        }
        let sleep_to = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            r = shared.socket.readable() => {
                r?;
                if receive(shared, rx, &mut recv_errors)? {
                    hold_acks(shared).await;
                }
            }
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep_until(sleep_to.into()) => {}
        }
    }
}

/// Hands what the last receive delivered to the application and waits until it queues
/// something (a wake-up) or [`ACK_HOLD`] has passed, whichever is first; the next turn then
/// sends the ACKs, with the answer when there is one. Returns at once when nothing was
/// delivered (only ACKs, handshakes, probes arrived).
async fn hold_acks(shared: &Shared) {
    let delivered = {
        let mut st = shared.lock();
        shared.dispatch(&mut st)
    };
    if delivered {
        let until = Instant::now() + ACK_HOLD;
        tokio::select! {
            biased;
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep_until(until.into()) => {}
        }
    }
}

/// Reads what the socket holds (a bounded number of batches) and feeds it to the core;
/// whether any datagram was read.
fn receive(shared: &Shared, rx: &mut RecvBuf, errors: &mut u32) -> io::Result<bool> {
    let mut read = false;
    for _ in 0..RECV_BATCHES_PER_TURN {
        let r = shared
            .socket
            .try_io(Interest::READABLE, || rx.recv(&shared.udp, &shared.socket));
        match r {
            Ok(_) => {
                *errors = 0;
                read = true;
                let mut st = shared.lock();
                let now = Instant::now();
                st.engine.io.recv_calls += 1;
                st.engine.on_datagrams(now, rx.datagrams());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(read),
            Err(e) => {
                shared.lock().engine.io.recv_errors += 1;
                *errors += 1;
                tracing::debug!(error = %e, consecutive = *errors, "receive failed");
                if *errors >= MAX_RECV_ERRORS {
                    return Err(e);
                }
                return Ok(read);
            }
        }
    }
    Ok(read)
}

/// Hands every queued train to the socket (a flush's worth per `sendmmsg` on Linux), waiting
/// for writability when the socket is full. Send errors lose the datagrams (counted); the
/// protocol recovers as from any loss.
async fn send_all(shared: &Shared, tx: &mut TxBatch) {
    let mut sent = Sent::default();
    while !tx.is_empty() {
        let r = shared
            .socket
            .async_io(Interest::WRITABLE, || tx.send(&shared.udp, &shared.socket))
            .await;
        match r {
            Ok(s) => sent += s,
            // not from the socket (which only reports WouldBlock, handled by async_io): the
            // reactor failed; drop a train so that the loop ends
            Err(_) => sent += tx.drop_next(),
        }
    }
    if sent != Sent::default() {
        sent.record(&mut shared.lock().engine.io);
    }
}
