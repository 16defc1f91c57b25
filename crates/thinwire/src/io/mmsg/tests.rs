//! The system calls on loopback sockets, and the reading of a header the kernel filled.

use super::*;
use std::net::UdpSocket;
use std::os::fd::AsFd;

#[test]
fn one_call_reaches_several_destinations_with_and_without_segments() {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let train = [7u8; 300]; // three segments of 100
    let msgs = [
        Message {
            destination: a.local_addr().unwrap(),
            contents: b"hello a",
            segment: None,
        },
        Message {
            destination: b.local_addr().unwrap(),
            contents: &train,
            segment: Some(100),
        },
    ];
    assert_eq!(send(tx.as_fd(), msgs).unwrap(), 2);
    let mut buf = [0u8; 1000];
    let n = a.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello a");
    // GSO splits the train into three datagrams (or the kernel refused GSO, which a
    // machine without it reports as an error above rather than here)
    for _ in 0..3 {
        assert_eq!(b.recv(&mut buf).unwrap(), 100);
    }
}

#[test]
fn a_bound_socket_keeps_gro_and_asks_for_no_control_message_it_does_not_read() {
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let Ok((socket, state)) = crate::io::bind(addr.parse().unwrap(), None) else {
            continue; // no IPv6 loopback here
        };
        let fd = socket.as_fd();
        for (level, name) in UNREAD {
            // an option of the other family reads as absent or off
            assert_ne!(
                flag(fd, level, name),
                Some(true),
                "{addr}: {level}/{name} is on"
            );
        }
        // GRO stays as quinn-udp set it (where the kernel has it)
        let gro = state.gro_segments() > 1;
        let on = flag(fd, libc::SOL_UDP, libc::UDP_GRO) == Some(true);
        assert_eq!(on, gro, "{addr}");
    }
}

/// Waits up to 2 s for `rx` to be readable (loopback may hand a datagram over after the
/// send returns); whether it is.
fn readable(rx: &UdpSocket) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(rx, PollFlags::IN)];
    let two_s = Timespec {
        tv_sec: 2,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&two_s)).unwrap_or(0) > 0
}

/// `count` datagrams read from `rx` through [`crate::io::RecvBuf`] (waiting for each
/// batch), GRO trains split; and whether a slot held a train (stride below its length).
fn read(
    rx: &UdpSocket,
    state: &quinn_udp::UdpSocketState,
    count: usize,
) -> (Vec<(SocketAddr, Vec<u8>)>, bool) {
    let mut buf = crate::io::RecvBuf::new();
    let (mut got, mut train) = (Vec::new(), false);
    while got.len() < count && readable(rx) {
        match buf.recv(state, rx) {
            Ok(_) => {
                let slots = &buf.meta[..buf.filled];
                train |= slots.iter().any(|m| m.stride < m.len);
                got.extend(buf.datagrams().map(|(a, d)| (a, d.to_vec())));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
    (got, train)
}

#[test]
fn one_receive_reads_several_sources_and_splits_gro_trains() {
    for any in ["127.0.0.1:0", "[::1]:0"] {
        let Ok((rx, state)) = crate::io::bind(any.parse().unwrap(), None) else {
            continue; // no IPv6 loopback here
        };
        let a_socket = UdpSocket::bind(any).unwrap();
        let b = UdpSocket::bind(any).unwrap();
        let to = rx.local_addr().unwrap();
        let train: Vec<u8> = (0..250).map(|i| i as u8).collect(); // 100 + 100 + 50
        let msgs = [
            Message {
                destination: to,
                contents: b"from a",
                segment: None,
            },
            Message {
                destination: to,
                contents: &train,
                segment: Some(100),
            },
        ];
        let (a, b_addr) = (a_socket.local_addr().unwrap(), b.local_addr().unwrap());
        let want = vec![
            (a, b"from a".to_vec()),
            (a, train[..100].to_vec()),
            (a, train[100..200].to_vec()),
            (a, train[200..].to_vec()),
            (b_addr, b"from b".to_vec()),
        ];
        // where the kernel joins datagrams (GRO), the train arrives whole in one slot
        let gro = state.gro_segments() > 1;
        assert_eq!(send(a_socket.as_fd(), msgs).unwrap(), 2);
        b.send_to(b"from b", to).unwrap();
        assert_eq!(read(&rx, &state, 5), (want.clone(), gro), "{any}");
        // with every receive option on again (as quinn-udp's setup leaves them), the
        // other control messages fit beside GRO's
        let _ = quinn_udp::UdpSocketState::new((&rx).into()).unwrap();
        assert_eq!(send(a_socket.as_fd(), msgs).unwrap(), 2);
        assert_eq!(
            read(&rx, &state, 4),
            (want[..4].to_vec(), gro),
            "{any}, options on"
        );
    }
}

#[test]
fn a_batch_takes_at_most_its_slots_and_skips_what_a_slot_cannot_hold() {
    let (rx, _) = crate::io::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let nothing = Received {
        from: rx.local_addr().unwrap(),
        len: 0,
        stride: 0,
    };
    let mut out = [nothing; 2];
    let mut buf = [0u8; 2 * 64];
    let e = recv(rx.as_fd(), &mut buf, &mut out).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    // longer than a slot: cut short, so skipped, and what follows it in the same batch
    // moves up a slot
    let big = [9u8; 100];
    let sent = [&big[..], b"one", &big, b"two", b"three"];
    for d in sent {
        tx.send_to(d, rx.local_addr().unwrap()).unwrap();
    }
    let mut got = Vec::new();
    let mut reads = 0;
    while got.len() < 3 && reads < sent.len() && readable(&rx) {
        reads += 1;
        let n = recv(rx.as_fd(), &mut buf, &mut out).unwrap();
        assert!(n <= 2, "{n} datagrams in 2 slots");
        for (i, r) in out[..n].iter().enumerate() {
            // what fills a slot starts at that slot, whatever was skipped before it
            assert_eq!((r.from, r.stride), (tx.local_addr().unwrap(), r.len));
            got.push(buf[i * 64..i * 64 + r.len].to_vec());
        }
    }
    assert_eq!(got, [&b"one"[..], b"two", b"three"]);
}

#[test]
fn ipv6_destinations() {
    let Ok(tx) = UdpSocket::bind("[::1]:0") else {
        return; // no IPv6 loopback here
    };
    let rx = UdpSocket::bind("[::1]:0").unwrap();
    let msgs = [Message {
        destination: rx.local_addr().unwrap(),
        contents: b"six",
        segment: None,
    }];
    assert_eq!(send(tx.as_fd(), msgs).unwrap(), 1);
    let mut buf = [0u8; 16];
    let n = rx.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"six");
}

/// A control buffer holding one message at `level`/`ty` whose `cmsg_len` is `cmsg_len` (the
/// kernel writes the length it kept: a message cut short by the buffer's end has a shorter
/// one), followed by the int `data` in the bytes after the header (read only if the length
/// covers them).
fn control(level: libc::c_int, ty: libc::c_int, cmsg_len: usize, data: libc::c_int) -> RecvControl {
    // SAFETY: all-zero is a valid cmsghdr array.
    let mut c: RecvControl = unsafe { mem::zeroed() };
    c[0].cmsg_len = cmsg_len as _;
    c[0].cmsg_level = level;
    c[0].cmsg_type = ty;
    // SAFETY: the buffer is 256 bytes, cmsghdr-aligned; the int goes right after the header.
    unsafe {
        libc::CMSG_DATA(c.as_mut_ptr())
            .cast::<libc::c_int>()
            .write_unaligned(data);
    }
    c
}

/// A header as the kernel leaves it: `controllen` bytes of `control` written, `flags` set.
fn filled(control: &mut RecvControl, controllen: usize, flags: libc::c_int) -> libc::msghdr {
    // SAFETY: all-zero is a valid msghdr.
    let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
    hdr.msg_control = control.as_mut_ptr().cast();
    hdr.msg_controllen = controllen as _;
    hdr.msg_flags = flags;
    hdr
}

#[test]
fn a_slot_is_split_at_gro_s_segment_size_and_skipped_when_it_cannot_be_split() {
    // SAFETY: CMSG_LEN and CMSG_SPACE are plain arithmetic.
    let (whole, header) = unsafe {
        (
            libc::CMSG_LEN(mem::size_of::<libc::c_int>() as _) as usize,
            libc::CMSG_LEN(0) as usize,
        )
    };
    let gro = |len, data| control(libc::SOL_UDP, libc::UDP_GRO, len, data);
    // a train of 100-byte datagrams
    let mut c = gro(whole, 100);
    assert_eq!(slot_stride(&filled(&mut c, whole, 0), 250), Some(100));
    // one datagram, no control message
    let mut none = gro(0, 0);
    assert_eq!(slot_stride(&filled(&mut none, 0, 0), 57), Some(57));
    // GRO's message cut after its header (the buffer was full): its bytes after the header
    // are not the kernel's, and the train cannot be split
    let mut cut = gro(header, 32);
    let cut_hdr = filled(&mut cut, header, libc::MSG_CTRUNC);
    assert_eq!(gro_stride(&cut_hdr), None);
    assert_eq!(slot_stride(&cut_hdr, 250), None);
    // another option's message cut short: whether a segment size was lost is unknown
    let mut other = control(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, header, 0);
    assert_eq!(
        slot_stride(&filled(&mut other, header, libc::MSG_CTRUNC), 57),
        None
    );
    // the same message whole, nothing cut: one datagram
    let mut stamp = control(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, whole, 0);
    assert_eq!(slot_stride(&filled(&mut stamp, whole, 0), 57), Some(57));
    // a datagram longer than its slot
    assert_eq!(
        slot_stride(&filled(&mut c, whole, libc::MSG_TRUNC), 250),
        None
    );
}
