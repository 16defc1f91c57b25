//! Batched UDP socket I/O: `recvmmsg` with GRO on receive, and on send the GSO trains of a
//! whole flush in one `sendmmsg` (Linux, `mmsg.rs`); elsewhere, and on send when `sendmmsg`
//! fails, through `quinn-udp` (one datagram or train per system call).

use std::io;
#[cfg(not(target_os = "linux"))]
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};

#[cfg(not(target_os = "linux"))]
use quinn_udp::RecvMeta;
use quinn_udp::{Transmit, UdpSockRef, UdpSocketState};

use crate::stats::IoStats;

#[cfg(target_os = "linux")]
mod mmsg;

/// A socket a [`TxBatch`] can be sent on: the std socket of a `Host`, the tokio socket of a
/// driver.
#[cfg(unix)]
pub(crate) trait Socket: std::os::fd::AsFd {}
#[cfg(unix)]
impl<T: std::os::fd::AsFd> Socket for T {}
/// A socket a [`TxBatch`] can be sent on: the std socket of a `Host`, the tokio socket of a
/// driver.
#[cfg(windows)]
pub(crate) trait Socket: std::os::windows::io::AsSocket {}
#[cfg(windows)]
impl<T: std::os::windows::io::AsSocket> Socket for T {}

/// Room for one receive slot: any UDP datagram (and any GRO train, which the kernel caps at
/// 64 KiB) fits whole, so nothing is ever truncated.
const SLOT: usize = 1 << 16;

/// Slots per batched receive: fewer than `quinn_udp::BATCH_SIZE` (32 on Linux), so that a host's
/// receive buffer is 512 KiB rather than 2 MiB (a server's largest fixed allocation, counted
/// against ENet's 0.9 MB of host heap). A GRO slot holds up to 64 datagrams of one flow, and
/// the service loops call `recv` again while datagrams wait, so a batch of 8 costs one system
/// call per 8 datagrams from distinct clients instead of one per 32.
const RECV_SLOTS: usize = 8;

/// Most batched receives a `Host` pass or a driver wake-up reads before timers and transmits
/// get a turn, so a flood cannot starve them: 64 of [`RECV_SLOTS`], up to 512 datagrams (more
/// when GRO joins them).
pub(crate) const RECV_BATCHES_PER_TURN: usize = 64;

/// Largest GSO train handed to one `sendmsg` (the kernel's limit is 64 KiB of payload).
const MAX_GSO_BYTES: usize = 60_000;

/// Creates a UDP socket bound to `addr`, non-blocking, with quinn-udp's per-socket state
/// (GRO, GSO detection, don't-fragment); on Linux without the receive options thinwire does
/// not read (`mmsg::drop_unread_control`).
pub(crate) fn bind(
    addr: SocketAddr,
    buffer: Option<usize>,
) -> io::Result<(UdpSocket, UdpSocketState)> {
    let socket = UdpSocket::bind(addr)?;
    let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
    #[cfg(target_os = "linux")]
    mmsg::drop_unread_control(std::os::fd::AsFd::as_fd(&socket));
    if let Some(size) = buffer {
        // best effort: the system caps these
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), size);
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), size);
    }
    socket.set_nonblocking(true)?;
    Ok((socket, state))
}

/// Receive buffers for one batch: [`RECV_SLOTS`] slots of 64 KiB. The memory is allocated
/// zeroed and only touched as far as datagrams reach, so small datagrams cost a page per slot.
pub(crate) struct RecvBuf {
    buf: Vec<u8>,
    meta: [Received; RECV_SLOTS],
    filled: usize,
}

/// One datagram, or one GRO train of datagrams from one source, in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    pub(crate) from: SocketAddr,
    /// Bytes in the slot.
    pub(crate) len: usize,
    /// Bytes per datagram of a GRO train (the last may be shorter); `len` when the slot holds
    /// one datagram.
    pub(crate) stride: usize,
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
        let nothing = Received {
            from: SocketAddr::from(([0, 0, 0, 0], 0)),
            len: 0,
            stride: 0,
        };
        Self {
            buf: vec![0; SLOT * RECV_SLOTS],
            meta: [nothing; RECV_SLOTS],
            filled: 0,
        }
    }

    /// One batched receive: thinwire's `recvmmsg` on Linux, elsewhere as many datagrams as
    /// quinn-udp reads in one call. Returns the number of slots filled, or `WouldBlock` when
    /// nothing is waiting.
    pub(crate) fn recv<S: Socket>(
        &mut self,
        state: &UdpSocketState,
        socket: &S,
    ) -> io::Result<usize> {
        self.filled = 0;
        #[cfg(target_os = "linux")]
        {
            let _ = state; // set the socket up; the receive needs nothing of it here
            self.filled = mmsg::recv(socket.as_fd(), &mut self.buf, &mut self.meta)?;
        }
        #[cfg(not(target_os = "linux"))]
        {
            let mut chunks = self.buf.chunks_mut(SLOT);
            let mut iovs: [IoSliceMut<'_>; RECV_SLOTS] =
                std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
            let mut metas = [RecvMeta::default(); RECV_SLOTS];
            let n = state.recv(UdpSockRef::from(socket), &mut iovs, &mut metas)?;
            for (out, m) in self.meta.iter_mut().zip(&metas[..n]) {
                *out = Received {
                    from: m.addr,
                    len: m.len,
                    stride: m.stride,
                };
            }
            self.filled = n;
        }
        Ok(self.filled)
    }

    /// Whether the last receive emptied the socket's queue: it filled fewer slots than one
    /// receive can. Where the system reads one datagram per call (`quinn_udp::BATCH_SIZE` is
    /// 1: Windows, macOS without its batched path) a receive always fills all it can, and
    /// this says no.
    pub(crate) fn drained(&self) -> bool {
        #[cfg(target_os = "linux")]
        let batch = RECV_SLOTS;
        #[cfg(not(target_os = "linux"))]
        let batch = RECV_SLOTS.min(quinn_udp::BATCH_SIZE);
        self.filled < batch
    }

    /// The datagrams of the last receive, GRO trains split at their stride.
    pub(crate) fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> + Clone + '_ {
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
                slot.chunks(stride).map(move |d| (m.from, d))
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

/// What [`TxBatch::send`] handed to the socket, to add to the [`IoStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    /// Successful send system calls.
    pub(crate) calls: u64,
    pub(crate) datagrams: u64,
    pub(crate) bytes: u64,
    /// Trains the system refused (dropped).
    pub(crate) errors: u64,
    /// `sendmmsg` calls refused (not for a full buffer), whose first train was then sent alone.
    pub(crate) fallbacks: u64,
}

impl Sent {
    /// Adds these counts to `io`.
    pub(crate) fn record(&self, io: &mut IoStats) {
        io.send_calls += self.calls;
        io.datagrams_sent += self.datagrams;
        io.bytes_sent += self.bytes;
        io.send_errors += self.errors;
        io.send_fallbacks += self.fallbacks;
    }
}

impl std::ops::AddAssign for Sent {
    fn add_assign(&mut self, other: Sent) {
        self.calls += other.calls;
        self.datagrams += other.datagrams;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.fallbacks += other.fallbacks;
    }
}

/// Datagrams waiting to be sent, grouped into GSO trains: consecutive datagrams to the same
/// destination of the same size (the last of a train may be shorter) go as one message. On
/// Linux one `sendmmsg` takes up to 64 trains (any destinations); elsewhere each train is one
/// `sendmsg`.
#[derive(Debug, Default)]
pub(crate) struct TxBatch {
    buf: Vec<u8>,
    trains: Vec<Train>,
    /// Trains already handed to the socket.
    sent: usize,
    /// `sendmmsg` does not exist here (`ENOSYS`): one train per call from now on.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    single: bool,
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

    /// Takes every queued datagram, in order, as if the socket had sent them (tests without a
    /// socket).
    #[cfg(test)]
    pub(crate) fn take_datagrams(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        for t in &self.trains[self.sent..] {
            let train = &self.buf[t.start..t.start + t.len];
            out.extend(train.chunks(t.segment).map(|d| (t.destination, d.to_vec())));
        }
        self.clear();
        out
    }

    /// The next train to send, if any, and how many datagrams it holds.
    fn next(&self) -> Option<(Transmit<'_>, usize)> {
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

    /// Marks the next `n` trains as handed to the socket (or dropped), counting them into
    /// `sent` as delivered to it; releases the buffers once everything went.
    fn advance(&mut self, n: usize, sent: &mut Sent) {
        for t in &self.trains[self.sent..self.sent + n] {
            sent.datagrams += t.count as u64;
            sent.bytes += t.len as u64;
        }
        self.sent += n;
        if self.is_empty() {
            self.clear();
        }
    }

    /// Drops the next train (the socket would not take it); counts it as a send error.
    pub(crate) fn drop_next(&mut self) -> Sent {
        let mut sent = Sent::default();
        if !self.is_empty() {
            self.sent += 1;
            sent.errors = 1;
            if self.is_empty() {
                self.clear();
            }
        }
        sent
    }

    /// Hands the socket as many queued trains as one system call takes: up to 64 in one
    /// `sendmmsg` on Linux, one train through quinn-udp elsewhere or when `sendmmsg` failed
    /// for another reason than a full buffer (then quinn-udp's own fallbacks apply: GSO off
    /// after `EIO`). A partial `sendmmsg` keeps the rest for the next call.
    ///
    /// `Err` only for `WouldBlock`: nothing went, wait until `socket` is writable. A train the
    /// system refuses otherwise is dropped and counted in [`Sent::errors`]; the protocol
    /// recovers as from any loss.
    pub(crate) fn send<S: Socket>(
        &mut self,
        state: &UdpSocketState,
        socket: &S,
    ) -> io::Result<Sent> {
        let mut sent = Sent::default();
        if self.is_empty() {
            return Ok(sent);
        }
        #[cfg(target_os = "linux")]
        if !self.single {
            let messages = self.trains[self.sent..].iter().map(|t| mmsg::Message {
                destination: t.destination,
                contents: &self.buf[t.start..t.start + t.len],
                // a train is at most MAX_GSO_BYTES long, so a segment fits in u16
                segment: (t.count > 1).then_some(t.segment as u16),
            });
            match mmsg::send(socket.as_fd(), messages) {
                Ok(n) => {
                    sent.calls = 1;
                    self.advance(n, &mut sent);
                    return Ok(sent);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
                Err(e) => {
                    sent.fallbacks = 1;
                    if e.raw_os_error() == Some(libc::ENOSYS) {
                        self.single = true;
                    }
                }
            }
        }
        let Some((t, _)) = self.next() else {
            return Ok(sent);
        };
        match state.try_send(UdpSockRef::from(socket), &t) {
            Ok(()) => {
                sent.calls += 1;
                self.advance(1, &mut sent);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
            Err(_) => sent += self.drop_next(),
        }
        Ok(sent)
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
            t.advance(1, &mut Sent::default());
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
            t.advance(1, &mut Sent::default());
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn a_flush_to_many_destinations_takes_few_calls_and_survives_a_bad_one() {
        let (socket, state) = bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let peers: Vec<UdpSocket> = (0..100)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut batch = TxBatch::default();
        for (i, p) in peers.iter().enumerate() {
            batch.push(p.local_addr().unwrap(), &[i as u8; 40], 64);
            if i == 50 {
                // an IPv6 destination on an IPv4 socket: the system refuses this one
                batch.push("[::1]:9".parse().unwrap(), &[0; 40], 64);
            }
        }
        let mut total = Sent::default();
        while !batch.is_empty() {
            total += batch.send(&state, &socket).expect("loopback takes it");
        }
        assert_eq!((total.datagrams, total.errors), (100, 1));
        #[cfg(target_os = "linux")]
        {
            // 51 datagrams, the refused one alone (then through sendmsg), the other 49
            assert_eq!((total.calls, total.fallbacks), (2, 1), "{total:?}");
        }
        #[cfg(not(target_os = "linux"))]
        assert_eq!(total.calls, 100);
        let mut buf = [0u8; 64];
        for (i, p) in peers.iter().enumerate() {
            p.set_read_timeout(Some(std::time::Duration::from_secs(1)))
                .unwrap();
            let n = p.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i as u8; 40][..]);
        }
    }

    #[test]
    fn gso_trains_keep_their_segments_in_a_batch() {
        let (socket, state) = bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let gso = state.max_gso_segments();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut batch = TxBatch::default();
        for i in 0..5u8 {
            batch.push(a.local_addr().unwrap(), &[i; 100], gso);
        }
        batch.push(b.local_addr().unwrap(), b"single", gso);
        let mut total = Sent::default();
        while !batch.is_empty() {
            total += batch.send(&state, &socket).unwrap();
        }
        assert_eq!((total.datagrams, total.errors), (6, 0));
        #[cfg(target_os = "linux")]
        assert_eq!(total.calls, 1, "{total:?}");
        let mut buf = [0u8; 256];
        for i in 0..5u8 {
            a.set_read_timeout(Some(std::time::Duration::from_secs(1)))
                .unwrap();
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i; 100][..]);
        }
        b.set_read_timeout(Some(std::time::Duration::from_secs(1)))
            .unwrap();
        let n = b.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"single");
    }
}
