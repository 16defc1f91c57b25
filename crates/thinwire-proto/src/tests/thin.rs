//! Tests that pin the thin-stream behaviour: linear timeouts, loss after one indication, and
//! redundant bundling repairing a loss with no retransmission.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::testing::{Pair, Verdict};
use crate::{ChannelKind, SendMode, TransportConfig};
use thinwire_netmodel::LinkConfig;

const MARK_A: &[u8] = b"AAAAAAAAAAAAAAAAAAAAAAAA";
const MARK_B: &[u8] = b"BBBBBBBBBBBBBBBBBBBBBBBB";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// In cleartext, so that a test can find message A on the wire (the suite does not change
/// recovery).
fn pair(transport: TransportConfig) -> Pair {
    Pair::builder(11)
        .link(LinkConfig::default().with_delay(Duration::from_millis(50)))
        .transport(transport)
        .cipher_suites(vec![crate::CipherSuite::InsecureCleartext])
        .build()
}

/// Send times of the datagrams carrying message A, when every one of them is dropped.
fn retransmission_times(transport: TransportConfig, count: usize) -> Vec<Instant> {
    let mut p = pair(transport);
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, Duration::from_millis(150));
    p.client_mut().set_log_sent(true);
    p.client_mut().clear_sent_log();
    p.client_mut().set_filter(Some(Box::new(|_, _, d| {
        if contains(d, MARK_A) {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    })));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(MARK_A), SendMode::Plain)
        .unwrap();
    p.run_while(Duration::from_secs(60), |p| {
        p.client()
            .sent_log()
            .iter()
            .filter(|(_, d)| contains(d, MARK_A))
            .count()
            >= count
    });
    p.client()
        .sent_log()
        .iter()
        .filter(|(_, d)| contains(d, MARK_A))
        .map(|(t, _)| *t)
        .collect()
}

fn intervals(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn thin_stream_timeouts_do_not_grow() {
    // the timeouts alone: no repair copies between the retransmissions
    let cfg = TransportConfig {
        repair: None,
        ..TransportConfig::default()
    };
    let times = retransmission_times(cfg, 7);
    assert_eq!(times.len(), 7);
    let iv = intervals(&times);
    let min = *iv.iter().min().unwrap();
    let max = *iv.iter().max().unwrap();
    assert!(max <= min + min / 10, "intervals grow: {iv:?}");
    // and the timeout is close to the 100 ms RTT, not hundreds of ms
    assert!(max < Duration::from_millis(150), "{iv:?}");
}

#[test]
fn standard_mode_backs_off_exponentially() {
    let mut cfg = TransportConfig::tcp_like();
    // keep the comparison about backoff alone
    cfg.min_rto = Duration::from_millis(5);
    let times = retransmission_times(cfg, 6);
    let iv = intervals(&times);
    for w in iv.windows(2) {
        let ratio = w[1].as_secs_f64() / w[0].as_secs_f64();
        assert!((1.9..2.1).contains(&ratio), "not doubling: {iv:?}");
    }
}

/// Drops the first datagram carrying A; B follows 5 ms later and gets through.
fn one_loss_then_indication(transport: TransportConfig) -> (Pair, Instant, Instant) {
    let mut p = pair(transport);
    let (c, _) = p
        .connect(&[ChannelKind::ReliableUnordered])
        .expect("connects");
    p.warm_up(c, 10, Duration::from_millis(150));
    let mut dropped = false;
    p.client_mut().set_filter(Some(Box::new(move |_, _, d| {
        if !dropped && contains(d, MARK_A) {
            dropped = true;
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    })));
    let sent_a = p.now();
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(MARK_A), SendMode::Plain)
        .unwrap();
    p.run_for(Duration::from_millis(5));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(MARK_B), SendMode::Plain)
        .unwrap();
    let mut arrived = None;
    p.run_while(Duration::from_secs(10), |p| {
        p.server()
            .events()
            .iter()
            .any(|(_, e)| matches!(e, crate::Event::Message(m) if m.data == MARK_A))
    });
    if p.server()
        .events()
        .iter()
        .any(|(_, e)| matches!(e, crate::Event::Message(m) if m.data == MARK_A))
    {
        arrived = Some(p.now());
    }
    (p, sent_a, arrived.expect("A arrives"))
}

#[test]
fn one_loss_indication_triggers_retransmission_before_timeout() {
    let cfg = TransportConfig {
        bundling: false,
        ..TransportConfig::default()
    };
    let (p, sent_a, arrived) = one_loss_then_indication(cfg);
    let c = p
        .client()
        .endpoint()
        .connection_stats(crate::ConnectionHandle(0))
        .unwrap();
    assert_eq!(
        c.recovery.rto_expirations, 0,
        "recovered by timeout, not by the indication"
    );
    assert!(c.recovery.thin_fast_losses >= 1);
    assert_eq!(c.frames.retransmitted, 1);
    // B is sent at +5 ms and acked at +105 ms; A is declared lost one RTT plus the reordering
    // window (100/16 ms) after it was sent and lands at ~+156 ms. Its RTO (~+116 ms) never fired.
    let latency = arrived - sent_a;
    assert!(latency < Duration::from_millis(160), "{latency:?}");
}

#[test]
fn standard_mode_waits_for_timeout_with_one_indication() {
    let mut cfg = TransportConfig::tcp_like();
    cfg.min_rto = Duration::from_millis(5);
    let (p, sent_a, arrived) = one_loss_then_indication(cfg);
    let c = p
        .client()
        .endpoint()
        .connection_stats(crate::ConnectionHandle(0))
        .unwrap();
    // a single indication is not enough in standard mode: only the RTO recovers A
    assert_eq!(c.recovery.thin_fast_losses, 0);
    assert_eq!(c.recovery.rto_expirations, 1);
    assert!(
        arrived - sent_a >= Duration::from_millis(150),
        "{:?}",
        arrived - sent_a
    );
}

/// Bundling as it works without a repair target: every unacknowledged chunk rides again once.
#[test]
fn bundling_repairs_a_single_loss_without_retransmission() {
    let cfg = TransportConfig {
        repair: None,
        ..TransportConfig::default()
    };
    let (p, sent_a, arrived) = one_loss_then_indication(cfg);
    let c = p
        .client()
        .endpoint()
        .connection_stats(crate::ConnectionHandle(0))
        .unwrap();
    assert_eq!(c.frames.retransmitted, 0);
    assert_eq!(c.recovery.rto_expirations, 0);
    assert!(c.frames.bundled >= 1);
    // A rides in B's packet: it arrives one-way (50 ms) after B was sent (+5 ms)
    assert_eq!(arrived - sent_a, Duration::from_millis(55));
    let s = p
        .server()
        .endpoint()
        .connection_stats(crate::ConnectionHandle(0))
        .unwrap();
    assert!(s.frames.duplicate <= c.frames.bundled);
}

/// The RTO after 20 clean exchanges 100 ms apart on the 100 ms RTT path, and whether the
/// connection counts as thin.
fn settled_rto(cfg: TransportConfig) -> (Duration, bool) {
    let mut p = pair(cfg);
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 20, Duration::from_millis(100));
    let st = p.client().endpoint().connection_stats(c).unwrap();
    (st.path.rto, st.path.thin)
}

#[test]
fn thin_rto_is_near_rtt_and_standard_rto_has_floor() {
    let (rto, thin) = settled_rto(TransportConfig::default());
    assert!(thin);
    assert!(rto < Duration::from_millis(130), "{rto:?}");
    let (rto, _) = settled_rto(TransportConfig::tcp_like());
    assert!(rto >= Duration::from_millis(200), "{rto:?}");
}

/// A connection with a message every 5 ms over a 100 ms RTT (about 20 packets in flight),
/// congestion weight `weight`, every datagram carrying A dropped: whether it counted as thin
/// and the intervals between A's retransmissions.
fn busy_retransmissions(weight: u32) -> (bool, Vec<Duration>) {
    let mut p = pair(TransportConfig {
        repair: None,
        ..TransportConfig::default()
    });
    let (c, _) = p
        .connect(&[ChannelKind::ReliableUnordered])
        .expect("connects");
    p.client_mut()
        .endpoint_mut()
        .set_congestion_weight(c, weight)
        .unwrap();
    let filler = |p: &mut Pair, ms: u64| {
        for _ in 0..ms / 5 {
            let now = p.now();
            p.client_mut()
                .endpoint_mut()
                .send(now, c, 0, Bytes::from_static(b"filler"), SendMode::Plain)
                .unwrap();
            p.run_for(Duration::from_millis(5));
        }
    };
    filler(&mut p, 500);
    let thin = p
        .client()
        .endpoint()
        .connection_stats(c)
        .expect("open")
        .path
        .thin;
    p.client_mut().set_log_sent(true);
    p.client_mut().clear_sent_log();
    p.client_mut().set_filter(Some(Box::new(|_, _, d| {
        if contains(d, MARK_A) {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    })));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(MARK_A), SendMode::Plain)
        .unwrap();
    filler(&mut p, 1500);
    let times: Vec<Instant> = p
        .client()
        .sent_log()
        .iter()
        .filter(|(_, d)| contains(d, MARK_A))
        .map(|(t, _)| *t)
        .collect();
    (thin, intervals(&times))
}

#[test]
fn a_weighted_connection_is_thin_while_its_flows_would_be() {
    // weight 8: thin below 32 packets in flight, so ~20 in flight is thin: linear timeouts
    let (thin, iv) = busy_retransmissions(8);
    assert!(thin);
    assert!(iv.len() >= 4, "{iv:?}");
    // (the first retransmission may come from a later packet's acknowledgement, sooner)
    let rtos = &iv[1..];
    let (min, max) = (rtos.iter().min().unwrap(), rtos.iter().max().unwrap());
    assert!(
        *max <= *min + *min / 5,
        "weighted thin timeouts grow: {iv:?}"
    );
    // weight 1: the same load is not thin (no repair copies, no bundling, standard timeouts)
    let (thin, _) = busy_retransmissions(1);
    assert!(!thin);
}
