//! Tests of the TCP model against its definition.

use super::*;
use thinwire_netmodel::Corruptible;

mod window;

const MS: Duration = Duration::from_millis(1);

fn msg(id: u64, size: u32) -> OutMessage {
    crate::protocol::test_message(id, size)
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
    /// Segments from B (any kind, by send order) lost on the way.
    b_sent: usize,
    drop_b: Vec<usize>,
    delivered_b: Vec<(Instant, u64)>,
}

impl Pair {
    fn new(delay: Duration) -> Self {
        Self::with(TcpConfig::default(), delay)
    }

    fn with(cfg: TcpConfig, delay: Duration) -> Self {
        Pair {
            a: TcpConn::new(cfg, 0),
            b: TcpConn::new(cfg, 0),
            now: Instant::now(),
            delay,
            wire: Vec::new(),
            a_data_sent: Vec::new(),
            drop_a_data: Vec::new(),
            b_sent: 0,
            drop_b: Vec::new(),
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
            self.b_sent += 1;
            if !self.drop_b.contains(&(self.b_sent - 1)) {
                self.wire.push((self.now + self.delay, false, s));
            }
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
        sack: Vec::new(),
        ends: vec![(10, 1)],
        fresh: true,
        corrupted: false,
        ts_val: None,
        ts_ecr: None,
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

/// A pair of `variant` endpoints over `delay` one way, warmed up with one
/// 50-byte message (id 1) at time 0; returns the pair and the time 1 s later.
fn warmed(cfg: TcpConfig, delay: Duration) -> (Pair, Instant) {
    let mut p = Pair::with(cfg, delay);
    let t0 = p.now;
    p.a.send_message(&msg(1, 50));
    p.run_until(t0 + 1000 * MS);
    (p, t0 + 1000 * MS)
}

fn linux() -> TcpConfig {
    TcpVariant::Linux.config()
}

fn sends_after(p: &Pair, from: usize) -> Vec<Instant> {
    p.a_data_sent[from..].iter().map(|s| s.0).collect()
}

#[test]
fn variants_parse_by_name_and_differ_only_where_documented() {
    for v in TcpVariant::ALL {
        assert_eq!(TcpVariant::parse(v.name()), Some(v));
    }
    assert_eq!(TcpConfig::default(), TcpVariant::Generic.config());
    let (l, t, r) = (
        linux(),
        TcpVariant::Thin.config(),
        TcpVariant::LinearRto.config(),
    );
    assert_eq!(l.rto_style, RtoStyle::Linux);
    assert!(t.rdb && t.thin_dupack && t.thin_linear_timeouts && !t.linear_rto);
    assert!(r.linear_rto && !r.rdb && !r.thin_dupack && !r.thin_linear_timeouts);
    let l26 = TcpVariant::Linux2623.config();
    assert_eq!(
        TcpConfig {
            rdb: false,
            thin_dupack: false,
            thin_linear_timeouts: false,
            ..t
        },
        l26
    );
    assert_eq!(
        TcpConfig {
            congestion: Congestion::Reno,
            gso_cwnd_limited: false,
            cwnd_validation: false,
            dsack_undo: false,
            ..l26
        },
        l
    );
    let lts = TcpVariant::LinuxTs.config();
    assert_eq!(
        TcpConfig {
            linear_rto: false,
            ..r
        },
        lts
    );
    assert_eq!(
        TcpConfig {
            timestamps: false,
            ..lts
        },
        l
    );
    let w = TcpVariant::Windows.config();
    assert_eq!(
        (w.min_rto, w.initial_rto, w.initial_cwnd),
        (300 * MS, 3000 * MS, 2)
    );
    assert_eq!(
        TcpConfig {
            min_rto: 200 * MS,
            initial_rto: 1000 * MS,
            initial_cwnd: 10,
            ..w
        },
        TcpConfig::default()
    );
}

#[test]
fn windows_waits_3_s_before_a_sample_and_300_ms_at_least_after() {
    let mut p = Pair::with(TcpVariant::Windows.config(), 10 * MS);
    let t0 = p.now;
    // The first segment is lost: no RTT sample yet, so the initial RTO (3 s).
    p.drop_a_data = vec![0];
    p.a.send_message(&msg(1, 50));
    p.run_until(t0 + 4000 * MS);
    assert_eq!(sends_after(&p, 0)[1] - t0, 3000 * MS);
    // Two segments at once are acknowledged at once: a clean 20 ms sample.
    let t1 = p.now;
    p.a.send_message(&msg(2, 50));
    p.run_until(t1);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 1000 * MS);
    assert_eq!(p.a.rto(), 300 * MS, "Windows' 300 ms floor on a 20 ms RTT");
    // A lone message lost once waits the floor.
    let t2 = p.now;
    p.drop_a_data = vec![4];
    p.a.send_message(&msg(4, 50));
    p.run_until(t2 + 1000 * MS);
    let sends = sends_after(&p, 4);
    assert_eq!(sends[1] - sends[0], 300 * MS);
}

#[test]
fn linux_rto_keeps_200_ms_above_the_srtt() {
    // The first data segment of a Linux receiver is acknowledged at once
    // (quickack), so the sample is the 20 ms RTT: SRTT 20, RTTVAR 10.
    let (p, _) = warmed(linux(), 10 * MS);
    assert_eq!(p.a.srtt(), Some(20 * MS));
    assert_eq!(p.a.rto(), 220 * MS, "SRTT + max(4 RTTVAR, 200 ms)");
    // The generic receiver delays the lone segment's ACK by 200 ms: a 220 ms
    // sample, RTO 220 + 4·110.
    let (g, _) = warmed(TcpConfig::default(), 10 * MS);
    assert_eq!(g.a.rto(), 660 * MS);
}

#[test]
fn linux_receiver_delays_acks_40_ms_and_acks_at_once_after_idle() {
    let (mut p, t1) = warmed(linux(), 10 * MS);
    // 1 s after the last data: within the receiver's RTO (1 s, no sample):
    // the ACK waits for the 40 ms timer, so the sender samples 60 ms.
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 500 * MS);
    assert_eq!(p.a.srtt(), Some(25 * MS), "20·7/8 + 60/8");
    // After 2 s of silence the receiver acknowledges at once (20 ms sample).
    p.run_until(t1 + 2600 * MS);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 3000 * MS);
    assert_eq!(p.a.srtt(), Some(Duration::from_micros(24_375)));
    assert_eq!(p.b.stats().pure_acks, 3);
}

#[test]
fn linux_backs_off_and_counts_retransmission_delays() {
    let (mut p, t1) = warmed(linux(), 10 * MS);
    p.drop_a_data = vec![1, 2];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 3000 * MS);
    let s = sends_after(&p, 1);
    assert_eq!(s, vec![t1, t1 + 220 * MS, t1 + 660 * MS]);
    let mut c = Counters::new();
    p.a.add_counters(&mut c);
    assert_eq!(c["tcp_data_packets"], 2.0);
    assert_eq!(c["tcp_rtx1_self"], 1.0);
    assert_eq!(c["tcp_rtx2_total"], 1.0);
    assert_eq!(c["tcp_rtx1_acked"], 0.0);
    assert_eq!(c["tcp_rtx2_acked"], 1.0);
    assert_eq!(c["tcp_rtx2_delay_sum_ms"], 660.0);
    assert_eq!(c["tcp_timeouts"], 2.0);
}

#[test]
fn thin_linear_timeouts_keep_the_rto_constant() {
    let (mut p, t1) = warmed(TcpVariant::Thin.config(), 10 * MS);
    p.drop_a_data = vec![1, 2, 3];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 3000 * MS);
    let s = sends_after(&p, 1);
    assert_eq!(
        s,
        vec![t1, t1 + 220 * MS, t1 + 440 * MS, t1 + 660 * MS],
        "no backoff with 1 packet in flight"
    );
    assert_eq!(p.delivered_b.last(), Some(&(t1 + 670 * MS, 2)));
}

#[test]
fn thin_linear_timeouts_back_off_with_four_packets_in_flight() {
    let (mut p, t1) = warmed(
        TcpConfig {
            thin_linear_timeouts: true,
            // Room for four segments at once.
            initial_cwnd: 10,
            ..linux()
        },
        10 * MS,
    );
    // Four segments lost, twice each: the RTO doubles as in plain Linux.
    p.drop_a_data = vec![1, 2, 3, 4, 5];
    for i in 0..4 {
        p.a.send_message(&msg(2 + i, 1000));
        p.run_until(t1);
    }
    p.run_until(t1 + 3000 * MS);
    assert_eq!(p.a_data_sent[4].2, 1002, "four segments in flight");
    let s = sends_after(&p, 5);
    assert_eq!(
        s[..2],
        [t1 + 220 * MS, t1 + 660 * MS],
        "220 ms, then 440 ms"
    );
}

#[test]
fn thin_dupack_retransmits_after_one_duplicate() {
    let cfg = TcpConfig {
        thin_dupack: true,
        ..linux()
    };
    let (mut p, t1) = warmed(cfg, 10 * MS);
    p.drop_a_data = vec![1];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 5 * MS);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 1000 * MS);
    // 3 arrives out of order at 15 ms; its SACK comes back at 25 ms.
    assert_eq!(sends_after(&p, 1), vec![t1, t1 + 5 * MS, t1 + 25 * MS]);
    assert_eq!(p.a.stats().fast_retransmits, 1);
    assert_eq!(p.delivered_b[1..], [(t1 + 35 * MS, 2), (t1 + 35 * MS, 3)]);

    // Plain Linux waits for the RTO, and resends only the hole (3 was SACKed).
    let (mut p, t1) = warmed(linux(), 10 * MS);
    p.drop_a_data = vec![1];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 5 * MS);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 1000 * MS);
    assert_eq!(sends_after(&p, 1), vec![t1, t1 + 5 * MS, t1 + 220 * MS]);
    assert_eq!(p.a_data_sent[3].2, 52, "no collapse with a SACKed segment");
    assert_eq!(p.a.stats().fast_retransmits, 0);
}

#[test]
fn linux_collapses_a_small_retransmission_with_the_next_segment() {
    let (mut p, t1) = warmed(linux(), 10 * MS);
    p.drop_a_data = vec![1, 2];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 5 * MS);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 1000 * MS);
    let rtx = p.a_data_sent[3];
    assert_eq!((rtx.0, rtx.2), (t1 + 220 * MS, 104), "both in one packet");
    assert_eq!(p.a.stats().retransmissions, 1);
    let mut c = Counters::new();
    p.a.add_counters(&mut c);
    assert_eq!((c["tcp_rtx1_self"], c["tcp_rtx1_incl"]), (1.0, 1.0));
    assert_eq!(c["tcp_rtx1_acked"], 2.0);
    assert_eq!(c["tcp_rtx1_delay_sum_ms"], 220.0 + 215.0);
}

#[test]
fn rdb_bundles_unacknowledged_data_so_a_loss_needs_no_retransmission() {
    let (mut p, t1) = warmed(TcpVariant::Thin.config(), 10 * MS);
    p.drop_a_data = vec![1];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 5 * MS);
    p.a.send_message(&msg(3, 50));
    p.run_until(t1 + 1000 * MS);
    let seq2 = p.a_data_sent[1].1;
    assert_eq!(p.a_data_sent[2], (t1 + 5 * MS, seq2, 104), "2 rides with 3");
    assert_eq!(p.delivered_b[1..], [(t1 + 15 * MS, 2), (t1 + 15 * MS, 3)]);
    let st = p.a.stats();
    assert_eq!((st.retransmissions, st.timeouts, st.rdb_bundles), (0, 0, 1));
    assert_eq!(
        st.payload_bytes,
        50 + 50 + 100,
        "the bundled copy is redundancy"
    );
    // New packets that arrived: the warm-up and the bundle (2 was lost).
    assert_eq!(p.b.stats().fresh_received, 2);
}

#[test]
fn rdb_stops_at_one_mss() {
    let (mut p, t1) = warmed(TcpVariant::Thin.config(), 10 * MS);
    p.a.send_message(&msg(2, 1000));
    p.run_until(t1 + 1 * MS);
    p.a.send_message(&msg(3, 500));
    p.run_until(t1 + 1000 * MS);
    let lens: Vec<u32> = p.a_data_sent[1..].iter().map(|s| s.2).collect();
    assert_eq!(lens, vec![1002, 502], "1002 + 502 > 1448: nothing bundled");
    assert_eq!(p.a.stats().rdb_bundles, 0);
}

#[test]
fn linear_rto_is_srtt_plus_half_srtt_without_backoff() {
    let (mut p, t1) = warmed(TcpVariant::LinearRto.config(), 100 * MS);
    // SRTT 200, RTTVAR 100: Linux would use 200 + 400 = 600 ms.
    assert_eq!(p.a.rto(), 300 * MS, "200 + min(200/2, 400)");
    p.drop_a_data = vec![1, 2];
    p.a.send_message(&msg(2, 50));
    p.run_until(t1 + 3000 * MS);
    assert_eq!(sends_after(&p, 1), vec![t1, t1 + 300 * MS, t1 + 600 * MS]);
    let (mut l, t1) = warmed(linux(), 100 * MS);
    assert_eq!(l.a.rto(), 600 * MS);
    l.drop_a_data = vec![1, 2];
    l.a.send_message(&msg(2, 50));
    l.run_until(t1 + 3000 * MS);
    assert_eq!(sends_after(&l, 1), vec![t1, t1 + 600 * MS, t1 + 1800 * MS]);
}

#[test]
fn linux_window_grows_only_when_full_and_restarts_after_idle() {
    // An application-limited stream (one small message per 100 ms, one packet
    // in flight) keeps Linux's initial window; the generic model's grows.
    let (mut p, t1) = warmed(linux(), 10 * MS);
    let (mut g, _) = warmed(TcpConfig::default(), 10 * MS);
    for i in 0..10u32 {
        for q in [&mut p, &mut g] {
            q.a.send_message(&msg(2 + u64::from(i), 50));
            q.run_until(t1 + 100 * MS * (i + 1));
        }
    }
    assert_eq!(p.a.cwnd(), 3.0);
    assert!(g.a.cwnd() > 10.0, "{}", g.a.cwnd());

    // Six 1000-byte segments at once fill the window: it grows.
    let t2 = t1 + 2000 * MS;
    p.run_until(t2);
    for i in 0..6 {
        p.a.send_message(&msg(20 + i, 1000));
        p.run_until(t2);
    }
    p.run_until(t2 + 500 * MS);
    assert!(p.a.cwnd() > 3.0, "{}", p.a.cwnd());
    // After 5 s of silence (many RTOs), new data starts from the initial window.
    p.run_until(t2 + 5500 * MS);
    p.a.send_message(&msg(30, 50));
    p.run_until(t2 + 5500 * MS);
    assert_eq!(p.a.cwnd(), 3.0);
}

#[test]
fn dsack_undoes_the_reduction_of_a_spurious_timeout() {
    for (cfg, undos) in [(TcpVariant::Linux2623.config(), 1), (linux(), 0)] {
        let (mut p, t1) = warmed(cfg, 10 * MS);
        let ssthresh = p.a.ssthresh;
        // The data arrives but its acknowledgement is lost: the timeout
        // retransmits data the receiver already holds.
        p.drop_b = vec![p.b_sent];
        p.a.send_message(&msg(2, 50));
        p.run_until(t1 + 2000 * MS);
        assert_eq!(p.a.stats().timeouts, 1);
        assert_eq!(p.a.stats().undos, undos);
        if undos == 1 {
            assert_eq!(p.a.ssthresh, ssthresh, "ssthresh restored");
        } else {
            assert!(p.a.ssthresh < ssthresh);
        }
    }
}

#[test]
fn timestamps_stop_resending_after_a_spurious_timeout() {
    for (cfg, resent, undos) in [(TcpVariant::LinuxTs.config(), 1, 1), (linux(), 2, 0)] {
        // SRTT 200 ms: the RTO is 200 + max(4 x 100, 200) = 600 ms.
        let (mut p, t1) = warmed(cfg, 100 * MS);
        // A (t1) arrives but its acknowledgement is lost; B (t1 + 450) and
        // C (t1 + 550) are in flight when A's timer fires at t1 + 600.
        p.drop_b = vec![p.b_sent];
        p.a.send_message(&msg(2, 800));
        p.run_until(t1 + 450 * MS);
        p.a.send_message(&msg(3, 800));
        p.run_until(t1 + 550 * MS);
        p.a.send_message(&msg(4, 800));
        p.run_until(t1 + 3000 * MS);
        assert_eq!(p.a.stats().timeouts, 1);
        // B's acknowledgement (t1 + 650) echoes B's clock, older than the
        // timeout: with timestamps C is not resent; without, it is.
        assert_eq!(p.a.stats().retransmissions, resent);
        assert_eq!(p.a.stats().loss_undos, undos);
        assert_eq!(p.delivered_b.len(), 4);
    }
}
