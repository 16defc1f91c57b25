//! `sendmmsg(2)` and `recvmmsg(2)` (Linux).
//!
//! Sending: quinn-udp sends one `sendmsg` per train; a server fanning out to many clients
//! (different destinations, so no GSO) would pay one system call per datagram. Here each
//! `mmsghdr` carries one train, with a `UDP_SEGMENT` control message when it holds several
//! segments, so GSO and the batching across destinations add up.
//!
//! Receiving ([`recv`]): quinn-udp's `recvmmsg` zeroes the headers of its whole batch (32,
//! 2 KiB) on every call and keeps room for every control message it can parse; thinwire reads
//! a batch of 8 and only GRO's segment size, having turned the other receive options off
//! ([`drop_unread_control`]). The only unsafe code of the crate.
#![allow(unsafe_code)]

use std::io;
use std::mem::{self, MaybeUninit};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::Received;

/// Most messages (trains) handed to one `sendmmsg`; the kernel takes up to 1024
/// (`UIO_MAXIOV`). 64 amortises the call over a large fan-out while the per-call arrays stay
/// small on the stack (about 9 KiB).
pub(crate) const MAX_MESSAGES: usize = 64;

/// One message: a train of `contents.len() / segment` datagrams to `destination`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    pub(crate) destination: SocketAddr,
    pub(crate) contents: &'a [u8],
    /// The GSO segment size, when the train holds more than one datagram.
    pub(crate) segment: Option<u16>,
}

/// A socket address in the layout the kernel reads.
#[repr(C)]
#[derive(Clone, Copy)]
union RawAddr {
    v4: libc::sockaddr_in,
    v6: libc::sockaddr_in6,
}

/// `addr` as a C socket address and its length.
fn raw_addr(addr: SocketAddr) -> (RawAddr, libc::socklen_t) {
    match addr {
        SocketAddr::V4(a) => (
            RawAddr {
                v4: libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                },
            },
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ),
        SocketAddr::V6(a) => (
            RawAddr {
                v6: libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    // as std and socket2 (so quinn-udp) pass it: unconverted
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                },
            },
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
        ),
    }
}

/// Room for one `UDP_SEGMENT` control message, aligned for `cmsghdr`.
type Control = [libc::cmsghdr; 2];

// SAFETY: CMSG_SPACE is plain arithmetic on its argument.
const SEGMENT_SPACE: usize = unsafe { libc::CMSG_SPACE(mem::size_of::<u16>() as _) } as usize;
const _: () = assert!(SEGMENT_SPACE <= mem::size_of::<Control>());

/// Sends the first [`MAX_MESSAGES`] of `messages` in one `sendmmsg` on the non-blocking
/// `socket`. Returns how many went (at least one; the rest are for the next call), or the
/// error of the first, which then did not go (`WouldBlock`: the socket buffer is full).
pub(crate) fn send<'a>(
    socket: BorrowedFd<'_>,
    messages: impl IntoIterator<Item = Message<'a>>,
) -> io::Result<usize> {
    let mut addrs = [MaybeUninit::<RawAddr>::uninit(); MAX_MESSAGES];
    let mut iovs = [MaybeUninit::<libc::iovec>::uninit(); MAX_MESSAGES];
    let mut controls = [MaybeUninit::<Control>::uninit(); MAX_MESSAGES];
    let mut hdrs = [MaybeUninit::<libc::mmsghdr>::uninit(); MAX_MESSAGES];
    let mut n = 0;
    for m in messages.into_iter().take(MAX_MESSAGES) {
        let (addr, addr_len) = raw_addr(m.destination);
        let addr = addrs[n].write(addr);
        let iov = iovs[n].write(libc::iovec {
            // the kernel only reads through it
            iov_base: m.contents.as_ptr().cast_mut().cast(),
            iov_len: m.contents.len(),
        });
        // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths); zeroing also
        // clears the private padding fields some C libraries add.
        let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
        hdr.msg_name = (addr as *mut RawAddr).cast();
        hdr.msg_namelen = addr_len;
        hdr.msg_iov = iov;
        hdr.msg_iovlen = 1;
        if let Some(segment) = m.segment {
            // SAFETY: all-zero is a valid cmsghdr.
            let control = controls[n].write(unsafe { mem::zeroed() });
            hdr.msg_control = control.as_mut_ptr().cast();
            hdr.msg_controllen = SEGMENT_SPACE as _;
            // SAFETY: `msg_control` points to `SEGMENT_SPACE` writable, cmsghdr-aligned bytes
            // (checked against `Control` above), enough for one header and a u16, so the
            // first header and its data are in bounds; the data may be unaligned for u16.
            unsafe {
                let cmsg = libc::CMSG_FIRSTHDR(&hdr);
                (*cmsg).cmsg_level = libc::SOL_UDP;
                (*cmsg).cmsg_type = libc::UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as _) as _;
                libc::CMSG_DATA(cmsg).cast::<u16>().write_unaligned(segment);
            }
        }
        hdrs[n].write(libc::mmsghdr {
            msg_hdr: hdr,
            msg_len: 0,
        });
        n += 1;
    }
    if n == 0 {
        return Ok(0);
    }
    loop {
        // SAFETY: the first `n` headers are initialised, and every pointer in them (address,
        // iovec, payload, control message) points into `addrs`, `iovs`, `controls` or the
        // caller's buffers, all alive and unmoved until this call returns; the kernel writes
        // only the headers' `msg_len`.
        let sent = unsafe {
            libc::sendmmsg(
                socket.as_raw_fd(),
                hdrs.as_mut_ptr().cast::<libc::mmsghdr>(),
                n as _,
                0,
            )
        };
        if sent > 0 {
            return Ok(sent as usize);
        }
        let e = if sent == 0 {
            // not for n > 0; never spin on it
            io::Error::from(io::ErrorKind::WriteZero)
        } else {
            io::Error::last_os_error()
        };
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Room for the control messages of one received datagram: GRO's segment size (an int, 24
/// bytes with its header), and those of the options [`drop_unread_control`] turns off should
/// something turn them on again (quinn-udp's setup does; the kernel writes the socket-level
/// ones, such as a 32-byte timestamp, before GRO's, and a dual-stack socket receiving IPv4
/// gets both families' packet information and traffic class): 176 bytes in all, so 256.
/// [`recv`] reads only GRO's, and skips a train whose segment size did not fit
/// (`MSG_CTRUNC`).
type RecvControl = [libc::cmsghdr; 16];

/// The address at `addr` as a socket address, if it is IPv4 or IPv6.
///
/// # Safety
/// `addr` points to a `sockaddr_storage` of which the kernel wrote the first `len` bytes.
unsafe fn socket_addr(
    addr: *const libc::sockaddr_storage,
    len: libc::socklen_t,
) -> Option<SocketAddr> {
    let len = len as usize;
    if len < mem::size_of::<libc::sa_family_t>() {
        return None;
    }
    // SAFETY (all three reads): the caller's promise, and each read stays within the `len`
    // bytes written (checked before it); sockaddr_storage is aligned for every address type.
    match libc::c_int::from(unsafe { (*addr).ss_family }) {
        libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
            let a = unsafe { addr.cast::<libc::sockaddr_in>().read() };
            Some(SocketAddr::new(
                std::net::Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()).into(),
                u16::from_be(a.sin_port),
            ))
        }
        libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
            let a = unsafe { addr.cast::<libc::sockaddr_in6>().read() };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// GRO's segment size in the control messages of `hdr`, if the kernel joined datagrams.
fn gro_stride(hdr: &libc::msghdr) -> Option<usize> {
    // SAFETY: `hdr` is a header the kernel filled: `msg_control` points to a live buffer of
    // which `msg_controllen` bytes hold well-formed control messages, and the CMSG macros stay
    // within them; the data of a UDP_GRO message is an int, possibly unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let whole = (*cmsg).cmsg_len as usize
                >= libc::CMSG_LEN(mem::size_of::<libc::c_int>() as _) as usize;
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO && whole {
                let size = libc::CMSG_DATA(cmsg).cast::<libc::c_int>().read_unaligned();
                return usize::try_from(size).ok().filter(|&s| s > 0);
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    None
}

/// The datagram size of a slot of `len` bytes whose header the kernel filled (`hdr`): GRO's
/// segment size for a train, `len` for one datagram; `None` to skip the slot: a datagram cut
/// short by it (`MSG_TRUNC`), or control messages cut short (`MSG_CTRUNC`) with no whole
/// segment size among them, perhaps a train whose datagrams cannot be told apart (read as one,
/// they would all fail to open).
fn slot_stride(hdr: &libc::msghdr, len: usize) -> Option<usize> {
    if hdr.msg_flags & libc::MSG_TRUNC != 0 {
        return None;
    }
    match gro_stride(hdr) {
        Some(stride) => Some(stride),
        None if hdr.msg_flags & libc::MSG_CTRUNC != 0 => None,
        None => Some(len),
    }
}

/// Reads up to `N` datagrams (or GRO trains) in one `recvmmsg` on the non-blocking `socket`,
/// the `i`th into the `i`th of `N` equal slots of `buf` (`buf.len() / N` bytes each), and
/// describes them in `out`. Returns how many slots it filled, or `WouldBlock` when nothing
/// waits. A datagram cut short by its slot, a GRO train whose segment size the control
/// messages lost (it cannot be split), or a datagram from an address that is neither IPv4 nor
/// IPv6 is skipped: it fills no slot (the slots after it move up). If every datagram read was
/// skipped it returns 0, though more may wait (the caller's wait reports the socket readable
/// again).
///
/// # Panics
/// If `N` is 0 or `buf` is shorter than `N` bytes.
pub(crate) fn recv<const N: usize>(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
    out: &mut [Received; N],
) -> io::Result<usize> {
    assert!(
        N > 0 && buf.len() >= N,
        "recv: {N} slots in {} bytes",
        buf.len()
    );
    let slot = buf.len() / N;
    let mut names = [MaybeUninit::<libc::sockaddr_storage>::uninit(); N];
    let mut iovs = [MaybeUninit::<libc::iovec>::uninit(); N];
    let mut controls = [MaybeUninit::<RecvControl>::uninit(); N];
    let mut hdrs = [MaybeUninit::<libc::mmsghdr>::uninit(); N];
    for (i, chunk) in buf.chunks_exact_mut(slot).take(N).enumerate() {
        let iov = iovs[i].write(libc::iovec {
            iov_base: chunk.as_mut_ptr().cast(),
            iov_len: chunk.len(),
        });
        // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths), and clears the
        // private padding fields some C libraries add.
        let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
        hdr.msg_name = names[i].as_mut_ptr().cast();
        hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        hdr.msg_iov = iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = controls[i].as_mut_ptr().cast();
        hdr.msg_controllen = mem::size_of::<RecvControl>() as _;
        hdrs[i].write(libc::mmsghdr {
            msg_hdr: hdr,
            msg_len: 0,
        });
    }
    let got = loop {
        // SAFETY: the `N` headers are initialised, and every pointer in them points into
        // `names`, `iovs`, `controls` or `buf`, all alive and unmoved until this call returns,
        // with the lengths given; the kernel writes only within them and the headers.
        let got = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                hdrs.as_mut_ptr().cast::<libc::mmsghdr>(),
                N as _,
                0,
                std::ptr::null_mut(),
            )
        };
        if got >= 0 {
            break got as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut filled = 0;
    for (i, h) in hdrs[..got].iter().enumerate() {
        // SAFETY: written above (the kernel updated its lengths and flags).
        let h = unsafe { h.assume_init_ref() };
        let len = h.msg_len as usize;
        let Some(stride) = slot_stride(&h.msg_hdr, len) else {
            continue;
        };
        // SAFETY: the kernel wrote `msg_namelen` bytes of this datagram's source address.
        let Some(from) = (unsafe { socket_addr(names[i].as_ptr(), h.msg_hdr.msg_namelen) }) else {
            continue;
        };
        if filled != i {
            buf.copy_within(i * slot..i * slot + len, filled * slot);
        }
        out[filled] = Received { from, len, stride };
        filled += 1;
    }
    Ok(filled)
}

/// Receive options quinn-udp's socket setup turns on and thinwire never reads: the arrival
/// time (`SO_TIMESTAMPNS`), the ECN bits (`IP_RECVTOS`, `IPV6_RECVTCLASS`) and the destination
/// address (`IP_PKTINFO`, `IPV6_RECVPKTINFO`; thinwire sends from the address the system
/// picks). Each makes the kernel build a control message for every datagram received, and a
/// timestamp also makes it read the clock for every packet the machine receives.
const UNREAD: [(libc::c_int, libc::c_int); 5] = [
    (libc::SOL_SOCKET, libc::SO_TIMESTAMPNS),
    (libc::IPPROTO_IP, libc::IP_RECVTOS),
    (libc::IPPROTO_IP, libc::IP_PKTINFO),
    (libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS),
    (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO),
];

/// Turns the [`UNREAD`] options off on `socket`, so a receive returns only the address, the
/// bytes and GRO's segment size. Best effort: an option the socket's family does not have
/// (the IPv6 ones on an IPv4 socket) is refused and skipped, and one left on costs time:
/// [`recv`] keeps room for all five, and skips a GRO train whose segment size did not fit.
pub(crate) fn drop_unread_control(socket: BorrowedFd<'_>) {
    let off: libc::c_int = 0;
    for (level, name) in UNREAD {
        // SAFETY: `off` is a live c_int and its size is passed; the kernel only reads it.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                level,
                name,
                (&off as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Whether the boolean option `name` at `level` is on for `socket` (`None`: the socket has no
/// such option).
#[cfg(test)]
fn flag(socket: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> Option<bool> {
    let mut value: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are live and `len` holds the size of `value`; the kernel
    // writes at most that many bytes and the length it wrote.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(value != 0)
}

#[cfg(test)]
mod tests;
