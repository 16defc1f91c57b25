//! Tests of the repair policy on a connection: copies per stage at the measured loss, the
//! COPIES marker, and what a lost ACK counts as.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::testing::{drop_next, Pair};
use crate::{ChannelKind, ConnectionStats, Event, SendMode, TransportConfig};
use thinwire_netmodel::LinkConfig;

/// One-way delay of the test path (RTT 200 ms, as the AO-like emulator scenario).
const ONE_WAY: Duration = Duration::from_millis(100);

/// What an AO-like thin stream over a lossy path did: the sender's statistics and how many
/// messages arrived later than one-way delay + 1.5 RTT.
struct Outcome {
    client: ConnectionStats,
    server: ConnectionStats,
    late: usize,
    delivered: usize,
}

/// Records the arrival time of every message the server delivered since the last call.
fn drain(p: &mut Pair, arrived: &mut HashMap<u32, Instant>) {
    let now = p.now();
    for (_, e) in p.server_mut().events_mut().drain(..) {
        if let Event::Message(m) = e {
            let id = u32::from_be_bytes(m.data[..4].try_into().unwrap());
            arrived.entry(id).or_insert(now);
        }
    }
}

/// `count` messages of 100 bytes, one every 500 ms (no later message reveals a loss), over a
/// path losing `loss` of the packets each way.
fn thin_stream(transport: TransportConfig, loss: f64, count: usize, seed: u64) -> Outcome {
    let link = LinkConfig::default()
        .with_delay(ONE_WAY)
        .with_bernoulli_loss(loss);
    let mut p = Pair::builder(seed).link(link).transport(transport).build();
    let (c, s) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    let step = Duration::from_millis(5);
    let mut sent_at: HashMap<u32, Instant> = HashMap::new();
    let mut arrived: HashMap<u32, Instant> = HashMap::new();
    for i in 0..count as u32 {
        let mut data = vec![0u8; 100];
        data[..4].copy_from_slice(&i.to_be_bytes());
        sent_at.insert(i, p.now());
        let now = p.now();
        p.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(data), SendMode::Plain)
            .unwrap();
        for _ in 0..100 {
            p.run_for(step);
            drain(&mut p, &mut arrived);
        }
    }
    for _ in 0..1000 {
        p.run_for(step);
        drain(&mut p, &mut arrived);
    }
    // one-way delay + 1.5 RTT, plus the 5 ms the arrival time may be off by
    let bound = ONE_WAY * 4 + step;
    let late = arrived
        .iter()
        .filter(|(id, at)| at.saturating_duration_since(sent_at[id]) > bound)
        .count();
    Outcome {
        client: p.client().endpoint().connection_stats(c).unwrap(),
        server: p.server().endpoint().connection_stats(s).unwrap(),
        late,
        delivered: arrived.len(),
    }
}

#[test]
fn five_percent_loss_sends_the_first_retransmission_twice() {
    const N: usize = 3000;
    let copies = thin_stream(TransportConfig::default(), 0.05, N, 3);
    let plain = thin_stream(
        TransportConfig {
            repair: None,
            ..TransportConfig::default()
        },
        0.05,
        N,
        3,
    );
    assert_eq!(copies.delivered, N, "{:?}", copies.client);
    assert_eq!(plain.delivered, N);
    let (c, pc) = (&copies.client, &plain.client);
    assert_eq!(c.path.repair_plan, vec![1, 2], "{c:?}");
    // about one copy per first retransmission (later ones send one)
    assert!(
        c.recovery.repair_copies * 10 >= c.frames.retransmitted * 7,
        "copies {} retransmissions {}",
        c.recovery.repair_copies,
        c.frames.retransmitted
    );
    assert_eq!(pc.recovery.repair_copies, 0);
    assert!(pc.path.repair_plan.is_empty());
    // the double loss (0.25% of messages) is what misses the bound without copies
    assert!(
        plain.late >= 3 && copies.late * 3 <= plain.late,
        "late: {} with copies, {} without",
        copies.late,
        plain.late
    );
    assert!(
        c.recovery.repairs_in_time > c.recovery.repairs_late,
        "{c:?}"
    );
    // copies cost about a tenth more packets, not a doubling
    let extra = c.udp.packets_sent as f64 / pc.udp.packets_sent as f64;
    assert!(extra < 1.15, "{extra}");
    // a packet of copies only is marked, and the server does not acknowledge it when it
    // already has the message: about one ACK per message, copies or not
    let acks = copies.server.udp.packets_sent as f64 / plain.server.udp.packets_sent as f64;
    assert!(acks < 1.03, "{acks}");
}

#[test]
fn two_percent_loss_needs_no_copy() {
    let o = thin_stream(TransportConfig::default(), 0.02, 1500, 4);
    assert_eq!(o.client.path.repair_plan, vec![1, 1], "{:?}", o.client);
    // the estimate may stray above 3% for a while (a 256-packet window): a few copies
    assert!(
        o.client.recovery.repair_copies * 4 <= o.client.frames.retransmitted,
        "{:?}",
        o.client
    );
}

/// A lost ACK: the message arrived, the timeout retransmits it, and the acknowledgement of
/// the retransmission acknowledges the original too. A spurious loss, not a spurious
/// timeout: the timer was right to fire, and the RTT estimate stays where it was.
#[test]
fn a_lost_ack_is_a_spurious_loss_not_a_late_one() {
    let link = LinkConfig::default().with_delay(Duration::from_millis(50));
    let mut p = Pair::builder(21)
        .link(link)
        .transport(TransportConfig::default())
        .build();
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, Duration::from_millis(150));
    let before = p.client().endpoint().connection_stats(c).unwrap();
    // the server's next datagram (the ACK of the message below) is lost
    p.server_mut().set_filter(Some(drop_next()));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"lost-ack"), SendMode::Plain)
        .unwrap();
    p.run_for(Duration::from_millis(600));
    let after = p.client().endpoint().connection_stats(c).unwrap();
    assert_eq!(
        after.recovery.rto_expirations - before.recovery.rto_expirations,
        1
    );
    assert_eq!(
        after.recovery.spurious_losses - before.recovery.spurious_losses,
        1
    );
    assert_eq!(after.recovery.spurious_timeouts, 0);
    assert!(after.path.ack_loss_estimate > 0.0);
    assert!(
        after.path.srtt < Duration::from_millis(110),
        "{:?}",
        after.path.srtt
    );
    assert!(
        after.path.loss_estimate < 1e-9,
        "the loss was taken back: {}",
        after.path.loss_estimate
    );
}
