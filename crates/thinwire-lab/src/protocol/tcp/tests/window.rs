//! Tests of Linux 2.6.23's window validation and of when a message first
//! goes on the wire.

use super::*;

#[test]
fn linux_2_6_23_validates_an_unused_window_down_to_the_initial_one() {
    // A burst grows the window; then one small message per 50 ms (less than
    // the RTO apart, so no restart after idle) keeps one packet in flight.
    let run = |cfg: TcpConfig| {
        let (mut p, t1) = warmed(cfg, 10 * MS);
        for i in 0..6 {
            p.a.send_message(&msg(10 + i, 1000));
        }
        p.run_until(t1 + 50 * MS);
        let grown = p.a.cwnd();
        for i in 0..40u32 {
            p.a.send_message(&msg(20 + u64::from(i), 50));
            p.run_until(t1 + 50 * MS * (i + 2));
        }
        (grown, p.a.cwnd())
    };
    let l26 = TcpVariant::Linux2623.config();
    let (grown, validated) = run(l26);
    assert!(grown > 3.0, "{grown}");
    assert_eq!(validated, 3.0);
    let (_, kept) = run(TcpConfig {
        cwnd_validation: false,
        ..l26
    });
    assert_eq!(kept, grown);
}

#[test]
fn a_message_counts_as_sent_when_it_first_leaves_the_window() {
    let mut p = Pair::with(TcpVariant::Linux2623.config(), 10 * MS);
    p.a = TcpConn::reporting(TcpVariant::Linux2623.config());
    let t0 = p.now;
    // Five one-segment messages into an initial window of 3; the first is lost.
    p.drop_a_data = vec![0];
    for id in 1..=5 {
        p.a.send_message(&msg(id, 1446));
    }
    p.flush();
    let first: Vec<u64> = std::iter::from_fn(|| p.a.poll_first_sent()).collect();
    assert_eq!(first, [1, 2, 3]);
    p.run_until(t0 + 1000 * MS);
    let later: Vec<u64> = std::iter::from_fn(|| p.a.poll_first_sent()).collect();
    assert_eq!(later, [4, 5], "retransmissions are not first transmissions");
    assert!(p.a.stats().retransmissions >= 1);
}
