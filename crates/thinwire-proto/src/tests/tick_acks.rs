//! ACKs on the tick (`TransportConfig::with_tick_acks`): a 30 Hz exchange takes two datagrams
//! per tick instead of four, a lost input is still found by the gap and repaired without a
//! timeout, and a silent peer's held ACKs come before the sender's timer fires.

use std::time::Duration;

use bytes::Bytes;

use crate::testing::{drop_first_containing, Pair};
use crate::{ChannelKind, SendMode, TransportConfig};
use thinwire_netmodel::LinkConfig;

const MARK: &[u8] = b"LOSTLOSTLOSTLOSTLOSTLOST";
const TICKS: u8 = 60;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn period() -> Duration {
    Duration::from_micros(33_333)
}

fn transport(tick: bool) -> TransportConfig {
    let t = TransportConfig {
        // one message per packet and no copies: the datagrams are what is counted
        bundling: false,
        repair: None,
        ..TransportConfig::default()
    };
    if tick {
        t.with_tick_acks(period())
    } else {
        t
    }
}

/// The client's input of tick `i` (the 31st carries [`MARK`]).
fn input(i: u8) -> Vec<u8> {
    if i == 30 {
        MARK.to_vec()
    } else {
        vec![i; 40]
    }
}

/// What one run of [`ticks`] saw.
struct Run {
    pair: Pair,
    /// Datagrams the client and the server sent during the ticks.
    sent: (usize, usize),
    /// Inputs the server got and updates the client got.
    got: (Vec<Bytes>, Vec<Bytes>),
}

/// 60 ticks at 30 Hz over 20 ms each way: each tick the client sends a 40-byte input, and
/// half a period later the server sends a 40-byte update (unless `server_silent`).
/// `drop_mark` drops the first datagram carrying [`MARK`], the 31st input.
fn ticks(tick: bool, drop_mark: bool, server_silent: bool) -> Run {
    ticks_with((tick, tick), drop_mark, server_silent)
}

/// [`ticks`] with ACKs on the tick set on the client and the server as `ends` says.
fn ticks_with(ends: (bool, bool), drop_mark: bool, server_silent: bool) -> Run {
    let mut p = Pair::builder(9)
        .link(LinkConfig::default().with_delay(ms(20)))
        .transport(transport(ends.0))
        .server_transport(transport(ends.1))
        .cipher_suites(vec![crate::CipherSuite::InsecureCleartext])
        .build();
    let (c, s) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, ms(50));
    p.run_for(ms(200));
    p.server_mut().take_messages(0);
    if drop_mark {
        p.client_mut().set_filter(Some(drop_first_containing(MARK)));
    }
    p.client_mut().set_log_sent(true);
    p.server_mut().set_log_sent(true);
    for i in 0..TICKS {
        let now = p.now();
        p.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(input(i)), SendMode::Plain)
            .unwrap();
        p.run_for(period() / 2);
        if !server_silent {
            let now = p.now();
            p.server_mut()
                .endpoint_mut()
                .send(now, s, 0, Bytes::from(vec![!i; 40]), SendMode::Plain)
                .unwrap();
        }
        p.run_for(period() - period() / 2);
    }
    let sent = (p.client().sent_log().len(), p.server().sent_log().len());
    p.run_for(ms(1000));
    let inputs = p.server_mut().take_messages(0).into_iter().map(|m| m.data);
    let updates = p.client_mut().take_messages(0).into_iter().map(|m| m.data);
    let got = (inputs.collect(), updates.collect());
    Run { pair: p, sent, got }
}

/// The client's loss-recovery counters: (timeouts fired, losses, spurious losses).
fn client_recovery(p: &Pair) -> (u64, u64, u64) {
    let c = p.client().endpoint().connections().next().unwrap();
    let r = p.client().endpoint().connection_stats(c).unwrap().recovery;
    (r.rto_expirations, r.packets_lost, r.spurious_losses)
}

#[test]
fn acks_ride_the_tick_two_datagrams_per_tick_instead_of_four() {
    let default = ticks(false, false, false);
    let tick = ticks(true, false, false);
    for run in [&default, &tick] {
        assert_eq!(run.got.0.len(), usize::from(TICKS), "every input");
        assert_eq!(run.got.1.len(), usize::from(TICKS), "every update");
        for (i, (input, update)) in run.got.0.iter().zip(&run.got.1).enumerate() {
            assert_eq!(&input[..], &self::input(i as u8)[..], "inputs in order");
            assert_eq!(&update[..], &[!(i as u8); 40][..], "updates in order");
        }
    }
    let total = |r: &Run| r.sent.0 + r.sent.1;
    // immediate ACKs: each side sends its message and the ACK of the other's
    assert!(
        total(&default) >= 4 * usize::from(TICKS) - 4,
        "default: {:?}",
        default.sent
    );
    // on the tick: the messages only, each carrying the ACK of the other side's last one
    assert!(
        total(&tick) <= 2 * usize::from(TICKS) + 4,
        "on the tick: {:?}",
        tick.sent
    );
    assert_eq!(
        client_recovery(&tick.pair),
        (0, 0, 0),
        "no timeout, no loss"
    );
    let c = tick.pair.client().endpoint().connections().next().unwrap();
    let srtt = tick
        .pair
        .client()
        .endpoint()
        .connection_stats(c)
        .unwrap()
        .path
        .srtt;
    // the held ACKs' delay is taken out of the RTT samples
    assert!(srtt < ms(45), "srtt {srtt:?} over a 40 ms round trip");
}

#[test]
fn a_lost_input_is_found_by_the_gap_and_repaired_without_a_timeout() {
    let run = ticks(true, true, false);
    let inputs = &run.got.0;
    assert_eq!(
        inputs.len(),
        usize::from(TICKS),
        "the lost input came again"
    );
    for (i, m) in inputs.iter().enumerate() {
        assert_eq!(&m[..], &input(i as u8)[..], "in order");
    }
    let (timeouts, lost, spurious) = client_recovery(&run.pair);
    assert_eq!(lost, 1, "one loss declared");
    assert_eq!(
        timeouts, 0,
        "found by the next input's gap, not by the timer"
    );
    assert_eq!(spurious, 0);
}

#[test]
fn a_silent_peer_still_acknowledges_before_the_senders_timer() {
    let run = ticks(true, false, true);
    assert_eq!(run.got.0.len(), usize::from(TICKS));
    assert!(run.got.1.is_empty());
    // nothing to ride on: ACK-only packets, one for every two inputs (two unacknowledged
    // packets are acknowledged at once), none held past the sender's timeout
    let acks = run.sent.1;
    assert!(
        (usize::from(TICKS) / 2 - 2..=usize::from(TICKS) / 2 + 4).contains(&acks),
        "{acks} ACK-only packets for {TICKS} inputs"
    );
    assert_eq!(client_recovery(&run.pair), (0, 0, 0));
}

#[test]
fn a_peer_announcing_a_longer_ack_delay_is_allowed_it_by_an_end_that_acks_at_once() {
    // only the server holds its ACKs; the client, on the defaults, learns the server's
    // 50 ms from the handshake and allows it, though its own ACKs go at once
    let run = ticks_with((false, true), false, true);
    assert_eq!(run.got.0.len(), usize::from(TICKS));
    let acks = run.sent.1;
    assert!(
        (usize::from(TICKS) / 2 - 2..=usize::from(TICKS) / 2 + 4).contains(&acks),
        "{acks} ACK-only packets for {TICKS} inputs"
    );
    assert_eq!(client_recovery(&run.pair), (0, 0, 0), "no spurious timeout");
}

#[test]
fn an_ack_delay_above_what_a_peer_allows_is_refused_at_setup() {
    let ok = TransportConfig::default().with_tick_acks(Duration::from_secs(6));
    assert_eq!(ok.max_ack_delay, Duration::from_secs(9));
    assert_eq!(ok.validate(), Ok(()));
    let too_long = TransportConfig::default().with_tick_acks(Duration::from_secs(7));
    assert_eq!(
        too_long.validate(),
        Err(crate::ConfigError::AckDelay(Duration::from_millis(10_500)))
    );
    let mut config = crate::EndpointConfig::new([1; 32]);
    config.transport = std::sync::Arc::new(too_long);
    assert!(crate::Endpoint::new(config, None, std::time::Instant::now()).is_err());
}
