//! Sealing and opening, key updates, and when expanded keys are kept.

use super::*;
use crate::crypto::aead::TEST_SIZES;

/// `secs` seconds from the base (the keys only compare moments).
fn at(secs: u64) -> Stamp {
    Stamp(Duration::from_secs(secs).as_nanos() as i64)
}

fn pair(suite: CipherSuite) -> (PacketKeys, PacketKeys) {
    let (a, b) = ([1u8; 32], [2u8; 32]);
    (
        PacketKeys::new(suite, &a, &b, u64::MAX),
        PacketKeys::new(suite, &b, &a, u64::MAX),
    )
}

#[test]
fn sealed_packets_open_only_unchanged_with_the_right_number() {
    for suite in [CipherSuite::ChaCha20Poly1305, CipherSuite::Aes256Gcm] {
        let (mut alice, mut bob) = pair(suite);
        let mut buf = b"\x40hdr\x07frames here".to_vec();
        alice.seal(7, &mut buf, 5);
        assert_eq!(buf.len(), 5 + 11 + TAG_LEN);
        assert_ne!(&buf[5..16], b"frames here", "{suite:?}: body encrypted");
        let mut open = |pn: u64, d: &[u8]| {
            let mut d = d.to_vec();
            let (h, b) = d.split_at_mut(5);
            bob.open(at(0), pn, (h, b), None).map(|n| b[..n].to_vec())
        };
        assert_eq!(open(7, &buf), Some(b"frames here".to_vec()));
        assert_eq!(open(8, &buf), None, "{suite:?}: wrong packet number");
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                open(7, &bad),
                None,
                "{suite:?}: bit flip at byte {i} accepted"
            );
        }
        // the sender's own key does not open its packets (directions are separate)
        let mut d = buf.clone();
        let (h, b) = d.split_at_mut(5);
        assert_eq!(alice.open(at(0), 7, (h, b), None), None);
        assert_eq!(open(7, &buf[..10]), None, "truncated");
    }
}

/// Packet keys open what they sealed, and nothing with one bit changed, at every test size
/// from empty to a full datagram (`aead.rs`), in both suites.
#[test]
fn packets_open_at_every_size() {
    for suite in [CipherSuite::Aes256Gcm, CipherSuite::ChaCha20Poly1305] {
        packets_open_at_every_size_in(suite);
    }
}

fn packets_open_at_every_size_in(suite: CipherSuite) {
    let (mut alice, mut bob) = pair(suite);
    for (pn, len) in TEST_SIZES.into_iter().enumerate() {
        let pn = pn as u64;
        let mut buf = vec![0x40, 0xaa, pn as u8];
        buf.extend((0..len).map(|i| i as u8));
        let plain = buf[3..].to_vec();
        alice.seal(pn, &mut buf, 3);
        assert_eq!(buf.len(), 3 + len + TAG_LEN);
        let mut open = |d: &[u8]| {
            let mut d = d.to_vec();
            let (h, b) = d.split_at_mut(3);
            bob.open(at(0), pn, (h, b), None).map(|n| b[..n].to_vec())
        };
        for i in [0, 3, 3 + len / 2, buf.len() - 1] {
            let mut bad = buf.clone();
            bad[i] ^= 0x80;
            assert_eq!(
                open(&bad),
                None,
                "{suite:?} {len} B: bit flip at byte {i} accepted"
            );
        }
        assert_eq!(open(&buf), Some(plain), "{suite:?} {len} B");
    }
}

/// A direction keeps its expanded keys from its second packet since the last release on,
/// so a resting connection that wakes for one keepalive each way keeps nothing, and a busy
/// one expands its keys once.
#[test]
fn expanded_keys_are_kept_from_the_second_packet_after_a_release() {
    let (mut alice, mut bob) = pair(CipherSuite::Aes256Gcm);
    let kept = |k: &PacketKeys| (k.tx.is_kept(), k.rx.is_kept());
    let exchange = |alice: &mut PacketKeys, bob: &mut PacketKeys, pn: u64| {
        let mut buf = vec![0x40, 0xaa, pn as u8, 0x01];
        alice.seal(pn, &mut buf, 3);
        let (h, b) = buf.split_at_mut(3);
        assert_eq!(bob.open(at(0), pn, (h, b), None), Some(1), "packet {pn}");
    };
    for round in 0..2u64 {
        exchange(&mut alice, &mut bob, 10 * round);
        assert_eq!((kept(&alice), kept(&bob)), ((false, false), (false, false)));
        exchange(&mut alice, &mut bob, 10 * round + 1);
        assert_eq!((kept(&alice), kept(&bob)), ((true, false), (false, true)));
        exchange(&mut alice, &mut bob, 10 * round + 2);
        assert_eq!((kept(&alice), kept(&bob)), ((true, false), (false, true)));
        alice.release_idle();
        bob.release_idle();
        assert_eq!((kept(&alice), kept(&bob)), ((false, false), (false, false)));
    }
    // a packet that does not open counts as a first packet too: forged packets cost one
    // expansion each only until the next genuine packet keeps its keys
    let mut forged = vec![0x40, 0xaa, 30, 0x01];
    forged.extend_from_slice(&[0u8; TAG_LEN]);
    let (h, b) = forged.split_at_mut(3);
    assert_eq!(bob.open(at(0), 30, (h, b), None), None);
    assert!(!kept(&bob).1);
    exchange(&mut alice, &mut bob, 31);
    assert!(
        kept(&bob).1,
        "the genuine packet after a forged one keeps its keys"
    );
}

/// A key update does not make a busy direction start over: the first packet under the
/// new key keeps its keys at once, on both ends.
#[test]
fn kept_keys_are_kept_across_key_updates() {
    let mut alice = PacketKeys::new(CipherSuite::Aes256Gcm, &[1; 32], &[2; 32], 3);
    let mut bob = PacketKeys::new(CipherSuite::Aes256Gcm, &[2; 32], &[1; 32], 3);
    for pn in 0..10u64 {
        let mut buf = vec![0x40, 0xaa, pn as u8, 0x01];
        alice.seal(pn, &mut buf, 3);
        let (h, b) = buf.split_at_mut(3);
        let largest = pn.checked_sub(1);
        assert_eq!(
            bob.open(at(pn), pn, (h, b), largest),
            Some(1),
            "packet {pn}"
        );
        let kept = (alice.tx.is_kept(), bob.rx.is_kept());
        assert_eq!(kept, (pn > 0, pn > 0), "after packet {pn}");
    }
    assert_eq!((alice.updates_sent, bob.updates_received), (3, 3));
}

#[test]
fn keys_update_every_n_packets_and_late_packets_still_open() {
    for suite in [CipherSuite::ChaCha20Poly1305, CipherSuite::Aes256Gcm] {
        let mut alice = PacketKeys::new(suite, &[1; 32], &[2; 32], 3);
        let mut bob = PacketKeys::new(suite, &[2; 32], &[1; 32], 3);
        let sealed: Vec<Vec<u8>> = (0..10u64)
            .map(|pn| {
                let mut buf = vec![0x40, 0xaa, pn as u8, 0x01];
                alice.seal(pn, &mut buf, 3);
                buf
            })
            .collect();
        // phases 0 0 0 1 1 1 0 0 0 1: three updates
        let phases: Vec<bool> = sealed.iter().map(|d| d[0] & KEY_PHASE_BIT != 0).collect();
        assert_eq!(
            phases,
            [false, false, false, true, true, true, false, false, false, true]
        );
        assert_eq!(alice.updates_sent, 3);
        // a second between packets: each update is past the minimum time under a key
        let mut open = |pn: u64, largest: Option<u64>| {
            let mut d = sealed[pn as usize].clone();
            let (h, b) = d.split_at_mut(3);
            bob.open(at(pn), pn, (h, b), largest)
        };
        assert_eq!(open(0, None), Some(1));
        assert_eq!(open(1, Some(0)), Some(1));
        // packet 3 is the first of the next generation; 2 arrives after it
        assert_eq!(open(3, Some(1)), Some(1));
        assert_eq!(
            open(2, Some(3)),
            Some(1),
            "{suite:?}: a late packet of the old phase"
        );
        assert_eq!(open(4, Some(3)), Some(1));
        assert_eq!(open(6, Some(4)), Some(1));
        assert_eq!(open(9, Some(6)), Some(1));
        assert_eq!(bob.updates_received, 3);
        // a forged phase flip on a new packet number opens with nothing and changes nothing
        let mut forged = sealed[9].clone();
        forged[0] ^= KEY_PHASE_BIT;
        let (h, b) = forged.split_at_mut(3);
        assert_eq!(bob.open(at(20), 10, (h, b), Some(9)), None);
        assert_eq!(bob.updates_received, 3);
    }
}

/// A peer that flips its key phase on every packet (each flip costs the receiver an HMAC
/// and a trial decryption) is followed only after MIN_PACKETS_PER_KEY_PHASE packets under
/// the current key, or a second: before that a packet of the next phase is not tried.
#[test]
fn a_peer_updating_keys_on_every_packet_is_followed_at_most_once_per_phase() {
    let suite = CipherSuite::ChaCha20Poly1305;
    // the sender updates after every packet (below the configurable minimum, as only a
    // hostile peer would)
    let mut mallory = PacketKeys::new(suite, &[1; 32], &[2; 32], 1);
    let mut bob = PacketKeys::new(suite, &[2; 32], &[1; 32], 1 << 22);
    let mut opened = 0;
    for pn in 0..200u64 {
        let mut buf = vec![0x40, 0xaa, pn as u8, 0x01];
        mallory.seal(pn, &mut buf, 3);
        let (h, b) = buf.split_at_mut(3);
        // all within one second
        if bob.open(at(0), pn, (h, b), pn.checked_sub(1)).is_some() {
            opened += 1;
        }
    }
    assert_eq!(mallory.updates_sent, 199);
    // packet 0 opens under the first key; every later one is of another phase, and none
    // comes after 16 packets under the current key
    assert_eq!(opened, 1);
    assert_eq!(bob.updates_received, 0);
    // an honest sender: 64 packets per key, a quarter of them arriving
    let mut alice = PacketKeys::new(suite, &[3; 32], &[4; 32], 64);
    let mut carol = PacketKeys::new(suite, &[4; 32], &[3; 32], 1 << 22);
    let mut largest = None;
    for pn in 0..640u64 {
        let mut buf = vec![0x40, 0xaa, pn as u8, 0x01];
        alice.seal(pn, &mut buf, 3);
        if pn % 4 != 0 {
            continue;
        }
        let (h, b) = buf.split_at_mut(3);
        assert!(carol.open(at(0), pn, (h, b), largest).is_some(), "{pn}");
        largest = Some(pn);
    }
    assert_eq!(carol.updates_received, alice.updates_sent);
    assert_eq!(carol.updates_received, 9);
}

#[test]
fn codes_round_trip_and_cleartext_adds_nothing() {
    for s in [
        CipherSuite::ChaCha20Poly1305,
        CipherSuite::Aes256Gcm,
        CipherSuite::InsecureCleartext,
    ] {
        assert_eq!(CipherSuite::from_code(s.code()), Some(s));
    }
    assert_eq!(CipherSuite::from_code(9), None);
    assert!(!CipherSuite::default_preference().contains(&CipherSuite::InsecureCleartext));
    let (mut alice, mut bob) = pair(CipherSuite::InsecureCleartext);
    let mut buf = b"\x40hdr\x07frames".to_vec();
    alice.seal(1, &mut buf, 5);
    assert_eq!(&buf[5..], b"frames");
    let (h, b) = buf.split_at_mut(5);
    assert_eq!(bob.open(at(0), 1, (h, b), None), Some(6));
}
