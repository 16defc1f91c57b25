//! Paired acknowledgements (`TransportConfig::ack_pairs`): half the ACK-only packets of a
//! one-way stream, no spurious timeout, and a loss still found and repaired.

use std::time::Duration;

use bytes::Bytes;

use crate::testing::{drop_first_containing, Pair};
use crate::{ChannelKind, SendMode, TransportConfig};
use thinwire_netmodel::LinkConfig;

const MARK: &[u8] = b"LOSTLOSTLOSTLOSTLOSTLOST";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn transport(pairs: bool) -> TransportConfig {
    TransportConfig {
        ack_pairs: pairs,
        max_ack_delay: ms(25),
        // one packet per message: the count of ACKs is what is measured
        bundling: false,
        repair: None,
        ..TransportConfig::default()
    }
}

/// A one-way stream of 60 messages, one every 10 ms, over 50 ms each way; `drop_mark` drops
/// the first datagram carrying [`MARK`] (the 31st message). Returns the pair, the datagrams
/// the receiver sent during the stream, and the messages it got.
fn stream(pairs: bool, drop_mark: bool) -> (Pair, usize, Vec<Bytes>) {
    let mut p = Pair::builder(5)
        .link(LinkConfig::default().with_delay(ms(50)))
        .transport(transport(pairs))
        .cipher_suites(vec![crate::CipherSuite::InsecureCleartext])
        .build();
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, ms(150));
    p.server_mut().take_messages(0);
    if drop_mark {
        p.client_mut().set_filter(Some(drop_first_containing(MARK)));
    }
    p.server_mut().set_log_sent(true);
    p.server_mut().clear_sent_log();
    for i in 0..60u8 {
        let data = if i == 30 { MARK.to_vec() } else { vec![i; 40] };
        let now = p.now();
        p.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(data), SendMode::Plain)
            .unwrap();
        p.run_for(ms(10));
    }
    p.run_for(ms(1000));
    let acks = p.server().sent_log().len();
    let got = p
        .server_mut()
        .take_messages(0)
        .into_iter()
        .map(|m| m.data)
        .collect();
    (p, acks, got)
}

#[test]
fn paired_acks_halve_the_ack_packets_without_spurious_timeouts() {
    let (_, single, got) = stream(false, false);
    assert_eq!(got.len(), 60);
    let (p, paired, got) = stream(true, false);
    assert_eq!(got.len(), 60, "all delivered");
    assert!(single >= 58, "one ACK per packet unpaired: {single}");
    assert!(
        paired <= single * 6 / 10,
        "paired {paired}, single {single}"
    );
    let c = p.client().endpoint().connections().next().unwrap();
    let s = p.client().endpoint().connection_stats(c).unwrap();
    assert_eq!(
        s.recovery.rto_expirations, 0,
        "the even packets' held ACKs came in time"
    );
    assert_eq!(s.recovery.spurious_losses, 0);
}

#[test]
fn paired_acks_find_a_loss_by_the_gap_and_repair_it_in_order() {
    let (p, _, got) = stream(true, true);
    assert_eq!(got.len(), 60, "the lost message came again");
    assert_eq!(&got[30][..], MARK);
    for (i, m) in got.iter().enumerate().filter(|(i, _)| *i != 30) {
        assert_eq!(&m[..], &[i as u8; 40][..], "in order");
    }
    let c = p.client().endpoint().connections().next().unwrap();
    let s = p.client().endpoint().connection_stats(c).unwrap();
    assert_eq!(s.recovery.spurious_losses, 0);
    assert!(s.recovery.packets_lost >= 1);
}
