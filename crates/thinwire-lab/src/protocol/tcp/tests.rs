//! Tests of the TCP model against its definition.

use super::*;

const MS: Duration = Duration::from_millis(1);

fn msg(id: u64, size: u32) -> OutMessage {
    OutMessage {
        id,
        class: 0,
        size,
        key: 0,
        deadline: None,
        target: crate::workload::DEFAULT_DEADLINE_TARGET,
    }
}

/// Two endpoints joined by a fixed one-way delay; `drop` decides per data
/// segment (by send order from A) whether it is lost.
struct Pair {
    a: TcpConn,
    b: TcpConn,
    now: Instant,
    delay: Duration,
    /// (arrival, to_b, segment)
    wire: Vec<(Instant, bool, TcpSegment)>,
    a_data_sent: Vec<(Instant, u64, u32)>,
    drop_a_data: Vec<usize>,
    delivered_b: Vec<(Instant, u64)>,
}

impl Pair {
    fn new(delay: Duration) -> Self {
        let cfg = TcpConfig::default();
        Pair {
            a: TcpConn::new(cfg, 0),
            b: TcpConn::new(cfg, 0),
            now: Instant::now(),
            delay,
            wire: Vec::new(),
            a_data_sent: Vec::new(),
            drop_a_data: Vec::new(),
            delivered_b: Vec::new(),
        }
    }

    fn flush(&mut self) {
        while let Some(s) = self.a.poll_segment(self.now) {
            if s.len > 0 {
                let idx = self.a_data_sent.len();
                self.a_data_sent.push((self.now, s.seq, s.len));
                if self.drop_a_data.contains(&idx) {
                    continue;
                }
            }
            self.wire.push((self.now + self.delay, true, s));
        }
        while let Some(s) = self.b.poll_segment(self.now) {
            self.wire.push((self.now + self.delay, false, s));
        }
        while let Some(id) = self.b.poll_message() {
            self.delivered_b.push((self.now, id));
        }
    }

    /// Runs the event loop until `until`.
    fn run_until(&mut self, until: Instant) {
        loop {
            self.flush();
            let next_wire = self.wire.iter().map(|w| w.0).min();
            let next = [next_wire, self.a.next_timeout(), self.b.next_timeout()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next.filter(|&t| t <= until) else {
                self.now = until;
                self.flush();
                return;
            };
            self.now = t;
            if let Some(i) = self.wire.iter().position(|w| w.0 <= t) {
                let (_, to_b, seg) = self.wire.remove(i);
                if to_b {
                    self.b.on_segment(t, seg);
                } else {
                    self.a.on_segment(t, seg);
                }
                continue;
            }
            if self.a.next_timeout().is_some_and(|x| x <= t) {
                self.a.on_timeout(t);
            }
            if self.b.next_timeout().is_some_and(|x| x <= t) {
                self.b.on_timeout(t);
            }
        }
    }
}

#[test]
fn lossless_exchange_delivers_in_order_with_delayed_acks() {
    let mut p = Pair::new(10 * MS);
    let t0 = p.now;
    p.a.send_message(&msg(1, 100));
    p.run_until(t0 + 5 * MS);
    p.run_until(t0 + 1000 * MS);
    assert_eq!(p.delivered_b, vec![(t0 + 10 * MS, 1)]);
    // One data segment, its acknowledgement delayed by 200 ms.
    assert_eq!(p.b.stats().pure_acks, 1);
    assert_eq!(p.a.stats().retransmissions, 0);
    assert_eq!(p.a.stats().payload_bytes, 100);
}

#[test]
fn single_loss_with_one_packet_in_flight_waits_for_the_rto_and_backoff_doubles() {
    let mut p = Pair::new(10 * MS);
    let t0 = p.now;
    // Two segments at once: the receiver acknowledges immediately (every
    // second segment), giving a clean 20 ms RTT sample.
    p.a.send_message(&msg(1, 50));
    p.run_until(t0);
    p.a.send_message(&msg(2, 50));
    p.run_until(t0 + 100 * MS);
    assert_eq!(
        p.a.rto(),
        200 * MS,
        "floor of 200 ms applies to a 20 ms RTT"
    );

    // One message, lost twice: the retransmissions wait 200 ms then 400 ms.
    let t1 = t0 + 1000 * MS;
    p.run_until(t1);
    p.drop_a_data = vec![2, 3];
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 2000 * MS);
    let sends: Vec<Instant> = p.a_data_sent[2..].iter().map(|s| s.0).collect();
    assert_eq!(sends.len(), 3, "{sends:?}");
    assert_eq!(sends[1] - sends[0], 200 * MS);
    assert_eq!(sends[2] - sends[1], 400 * MS);
    assert_eq!(p.a.stats().timeouts, 2);
    let (at, id) = *p.delivered_b.last().expect("delivered");
    assert_eq!(id, 3);
    assert_eq!(at - t1, 610 * MS);
}

#[test]
fn three_duplicate_acks_trigger_fast_retransmit() {
    let mut p = Pair::new(10 * MS);
    let t0 = p.now;
    p.drop_a_data = vec![0];
    for i in 0..5 {
        p.run_until(t0 + MS * (i as u32));
        p.a.send_message(&msg(i, 100));
    }
    p.run_until(t0 + 500 * MS);
    assert_eq!(p.a.stats().fast_retransmits, 1);
    assert_eq!(p.a.stats().timeouts, 0);
    // The retransmission left right after the third duplicate ack (sent by
    // the receiver on the 4th segment's arrival at 13 ms, back at 23 ms),
    // well before the 1 s initial RTO.
    let rtx = p.a_data_sent[5];
    assert_eq!(rtx.1, 0);
    assert_eq!(rtx.0, t0 + 23 * MS);
    // Head-of-line blocking: everything is delivered when the hole is filled.
    let ids: Vec<u64> = p.delivered_b.iter().map(|d| d.1).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);
    assert!(p.delivered_b.iter().all(|d| d.0 == t0 + 33 * MS));
}

#[test]
fn large_messages_are_segmented_at_the_mss() {
    let mut p = Pair::new(5 * MS);
    let t0 = p.now;
    p.a.send_message(&msg(7, 4000));
    p.run_until(t0 + 1000 * MS);
    let lens: Vec<u32> = p.a_data_sent.iter().map(|s| s.2).collect();
    assert_eq!(lens, vec![1448, 1448, 1106]);
    assert_eq!(p.delivered_b, vec![(t0 + 5 * MS, 7)]);
    assert_eq!(p.a.stats().payload_bytes, 4000);
}

#[test]
fn corrupted_segments_are_dropped() {
    let mut c = TcpConn::new(TcpConfig::default(), 0);
    let now = Instant::now();
    let mut s = TcpSegment {
        seq: 0,
        len: 10,
        ack: 0,
        ends: vec![(10, 1)],
        corrupted: false,
    };
    s.flip_bit(3);
    c.on_segment(now, s);
    assert_eq!(c.poll_message(), None);
}

#[test]
fn an_ack_covering_a_retransmission_gives_no_rtt_sample() {
    let mut p = Pair::new(10 * MS);
    let t0 = p.now;
    p.a.send_message(&msg(1, 50));
    p.run_until(t0);
    p.a.send_message(&msg(2, 50));
    p.run_until(t0 + 1000 * MS);
    assert_eq!(p.a.rto(), 200 * MS, "20 ms RTT under the 200 ms floor");

    // Message 3 is lost; message 4 follows 50 ms later and waits out of order.
    // The RTO (200 ms) resends 3, and the acknowledgement that answers the
    // resend covers 4 as well: 4 was sent once, 170 ms before that ack. Taking that as
    // an RTT sample would lift the RTO above its floor.
    let t1 = p.now;
    p.drop_a_data = vec![2];
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 50 * MS);
    p.a.send_message(&msg(4, 50));
    p.run_until(t1 + 1000 * MS);
    assert_eq!(p.a.stats().timeouts, 1);
    let ids: Vec<u64> = p.delivered_b.iter().map(|d| d.1).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    assert_eq!(
        p.delivered_b[3].0 - t1,
        210 * MS,
        "4 delivered with the resent 3"
    );
    assert_eq!(
        p.a.rto(),
        200 * MS,
        "no sample from the ambiguous acknowledgement"
    );
}
