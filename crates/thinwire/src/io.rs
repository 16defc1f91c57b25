//! Batched UDP socket I/O on top of `quinn-udp`: `recvmmsg` with GRO on receive and GSO on
//! send where the platform has them (Linux), one datagram per system call elsewhere.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState, BATCH_SIZE};

/// Room for one receive slot: any UDP datagram (and any GRO train, which the kernel caps at
/// 64 KiB) fits whole, so nothing is ever truncated.
const SLOT: usize = 1 << 16;

/// Largest GSO train handed to one `sendmsg` (the kernel's limit is 64 KiB of payload).
const MAX_GSO_BYTES: usize = 60_000;

/// Creates a UDP socket bound to `addr`, non-blocking, with quinn-udp's per-socket state
/// (GRO, GSO detection, don't-fragment).
pub(crate) fn bind(
    addr: SocketAddr,
    buffer: Option<usize>,
) -> io::Result<(UdpSocket, UdpSocketState)> {
    let socket = UdpSocket::bind(addr)?;
    let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
    if let Some(size) = buffer {
        // best effort: the system caps these
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), size);
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), size);
    }
    socket.set_nonblocking(true)?;
    Ok((socket, state))
}

/// Receive buffers for one batch: [`BATCH_SIZE`] slots of 64 KiB. The memory is allocated
/// zeroed and only touched as far as datagrams reach, so small datagrams cost a page per slot.
pub(crate) struct RecvBuf {
    buf: Vec<u8>,
    meta: [RecvMeta; BATCH_SIZE],
    filled: usize,
}

impl std::fmt::Debug for RecvBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBuf")
            .field("filled", &self.filled)
            .finish()
    }
}

impl RecvBuf {
    pub(crate) fn new() -> Self {
        Self {
            buf: vec![0; SLOT * BATCH_SIZE],
            meta: [RecvMeta::default(); BATCH_SIZE],
            filled: 0,
        }
    }

    /// One batched receive (`recvmmsg` on Linux). Returns the number of slots filled, or
    /// `WouldBlock` when nothing is waiting.
    pub(crate) fn recv(
        &mut self,
        state: &UdpSocketState,
        socket: UdpSockRef<'_>,
    ) -> io::Result<usize> {
        self.filled = 0;
        let mut chunks = self.buf.chunks_mut(SLOT);
        let mut iovs: [IoSliceMut<'_>; BATCH_SIZE] =
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
        let n = state.recv(socket, &mut iovs, &mut self.meta)?;
        self.filled = n;
        Ok(n)
    }

    /// The datagrams of the last receive, GRO trains split at their stride.
    pub(crate) fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> + '_ {
        self.meta[..self.filled]
            .iter()
            .enumerate()
            .flat_map(move |(i, m)| {
                let slot = &self.buf[i * SLOT..i * SLOT + m.len.min(SLOT)];
                let stride = if m.stride == 0 {
                    slot.len().max(1)
                } else {
                    m.stride
                };
                slot.chunks(stride).map(move |d| (m.addr, d))
            })
    }
}

#[derive(Debug, Clone, Copy)]
struct Train {
    destination: SocketAddr,
    start: usize,
    len: usize,
    segment: usize,
    count: usize,
}

/// Datagrams waiting to be sent, grouped into GSO trains: consecutive datagrams to the same
/// destination of the same size (the last of a train may be shorter) go in one `sendmsg`.
#[derive(Debug, Default)]
pub(crate) struct TxBatch {
    buf: Vec<u8>,
    trains: Vec<Train>,
    /// Trains already handed to the socket.
    sent: usize,
}

impl TxBatch {
    pub(crate) fn is_empty(&self) -> bool {
        self.sent >= self.trains.len()
    }

    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.trains.clear();
        self.sent = 0;
    }

    /// Appends one datagram; `max_segments` is the socket's GSO limit (1 without GSO).
    pub(crate) fn push(&mut self, destination: SocketAddr, datagram: &[u8], max_segments: usize) {
        let len = datagram.len();
        let start = self.buf.len();
        self.buf.extend_from_slice(datagram);
        let unsent = self.trains.len() > self.sent;
        if let Some(t) = self.trains.last_mut() {
            let full = t.len == t.segment * t.count; // every segment so far is full size
            if unsent
                && t.destination == destination
                && full
                && len <= t.segment
                && len > 0
                && t.count < max_segments
                && t.len + len <= MAX_GSO_BYTES
            {
                t.len += len;
                t.count += 1;
                return;
            }
        }
        self.trains.push(Train {
            destination,
            start,
            len,
            segment: len,
            count: 1,
        });
    }

    /// The next train to send, if any.
    pub(crate) fn next(&self) -> Option<(Transmit<'_>, usize)> {
        let t = self.trains.get(self.sent)?;
        Some((
            Transmit {
                destination: t.destination,
                ecn: None,
                contents: &self.buf[t.start..t.start + t.len],
                segment_size: (t.count > 1).then_some(t.segment),
                src_ip: None,
            },
            t.count,
        ))
    }

    /// Marks the train returned by [`next`](Self::next) as handed to the socket.
    pub(crate) fn advance(&mut self) {
        self.sent += 1;
        if self.is_empty() {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trains_group_equal_sizes_to_one_destination() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let mut t = TxBatch::default();
        t.push(a, &[1; 100], 10);
        t.push(a, &[2; 100], 10);
        t.push(a, &[3; 40], 10); // short last segment closes the train
        t.push(a, &[4; 100], 10);
        t.push(b, &[5; 100], 10);
        t.push(b, &[6; 200], 10); // larger than the segment: new train
        let mut got = Vec::new();
        while let Some((tx, n)) = t.next() {
            got.push((tx.destination, tx.contents.len(), tx.segment_size, n));
            t.advance();
        }
        assert_eq!(
            got,
            vec![
                (a, 240, Some(100), 3),
                (a, 100, None, 1),
                (b, 100, None, 1),
                (b, 200, None, 1)
            ]
        );
        assert!(t.is_empty());
    }

    #[test]
    fn no_gso_means_one_datagram_per_train() {
        let a: SocketAddr = "[::1]:1".parse().unwrap();
        let mut t = TxBatch::default();
        for _ in 0..3 {
            t.push(a, &[0; 50], 1);
        }
        let mut n = 0;
        while let Some((tx, c)) = t.next() {
            assert_eq!((tx.segment_size, c), (None, 1));
            n += 1;
            t.advance();
        }
        assert_eq!(n, 3);
    }
}
