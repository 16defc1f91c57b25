use std::cell::RefCell;
use std::rc::Rc;

use super::*;

/// Which stack ran a slice, and whether it was measured.
type Log = Rc<RefCell<Vec<(Protocol, bool)>>>;

/// A stack whose every slice "measures" one round trip of `1 ms` times its slice number
/// and one [`SLICE`] of time, at once; it fails at slice `fail_at`.
struct Fake {
    protocol: Protocol,
    log: Log,
    slices: u64,
    fail_at: Option<u64>,
}

impl Trips for Fake {
    fn slice(&mut self, _until: Instant, tally: Option<&mut Tally>) -> Result<(), String> {
        self.slices += 1;
        self.log.borrow_mut().push((self.protocol, tally.is_some()));
        if Some(self.slices) == self.fail_at {
            return Err("the fake failed".into());
        }
        if let Some(t) = tally {
            t.hist.record(self.slices * 1_000_000).expect("in bounds");
            t.measured += SLICE;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        Ok(())
    }
}

fn turns(log: &Log, stacks: &[(Protocol, Option<u64>)]) -> Vec<Turn> {
    stacks
        .iter()
        .map(|&(protocol, fail_at)| Turn {
            protocol,
            pair: Box::new(Fake {
                protocol,
                log: log.clone(),
                slices: 0,
                fail_at,
            }),
            tally: Tally::new().expect("histogram"),
        })
        .collect()
}

#[test]
fn stacks_take_turns_each_round_starting_with_the_next() {
    use Protocol::{Enet as E, Thinwire as T};
    let log = Log::default();
    let warmup = SLICE * 2;
    let done = take_turns(turns(&log, &[(T, None), (E, None)]), warmup, SLICE * 3);
    let expect = vec![
        (T, false),
        (E, false),
        (E, false),
        (T, false),
        (T, true),
        (E, true),
        (E, true),
        (T, true),
        (T, true),
        (E, true),
    ];
    assert_eq!(*log.borrow(), expect);
    assert_eq!(done.len(), 2);
    for (_, result) in done {
        let s = result.expect("both stacks finish");
        // three measured slices: 3, 4 and 5 ms (the two warm-up slices left out)
        assert!((s.p50_us - 4000.0).abs() < 10.0, "{}", s.p50_us);
        let per_second = 3.0 / (SLICE * 3).as_secs_f64();
        assert!((s.rate - per_second).abs() < 1e-9, "{}", s.rate);
    }
}

/// A real pair (thinwire on loopback): a warm-up slice makes round trips and counts none, a
/// measured one counts each round trip it made once (answered or lost) and its time, and
/// closing joins the server thread.
#[test]
fn a_pair_counts_its_measured_round_trips_once() {
    let mut pair = Pair::<thinwire_peers::ThinwireHost>::open(true, HostOptions::default())
        .expect("a loopback pair");
    let mut tally = Tally::new().expect("histogram");
    let before = pair.seq;
    pair.slice(Instant::now() + SLICE / 4, None)
        .expect("warm-up");
    assert!(pair.seq > before, "the warm-up made round trips");
    let (before, start) = (pair.seq, Instant::now());
    pair.slice(start + SLICE / 4, Some(&mut tally))
        .expect("slice");
    let made = pair.seq - before;
    assert!(made > 0, "round trips on loopback");
    assert_eq!(
        tally.hist.len() + tally.lost,
        made,
        "each round trip counted once"
    );
    // the slice's own clock starts a moment after `start`
    let slack = Duration::from_millis(1);
    assert!(tally.measured + slack >= SLICE / 4 && tally.measured <= start.elapsed());
    pair.close().expect("the server ends cleanly");
    assert!(pair.server.is_none(), "joined");
}

#[test]
fn a_pair_that_did_not_open_says_why_the_server_failed() {
    let client = || "the echo server did not start".to_string();
    let failed: std::thread::Result<Result<(), String>> = Ok(Err("bind: in use".into()));
    assert_eq!(open_error(client(), failed), "bind: in use");
    assert_eq!(open_error(client(), Ok(Ok(()))), client());
    let panicked: std::thread::Result<Result<(), String>> = Err(Box::new("boom"));
    assert_eq!(open_error(client(), panicked), "echo server panicked");
}

#[test]
fn stacks_that_poll_when_idle_run_on_their_own() {
    use Protocol::{Enet as E, Gns as G, Kcp as K, Thinwire as T};
    let default = HostOptions::default();
    let all = [T, E, K, G];
    assert_eq!(groups(&all, &default), vec![vec![T, E, K], vec![G]]);
    let spinning = HostOptions {
        busy_poll: Duration::from_micros(1000),
        ..HostOptions::default()
    };
    assert_eq!(groups(&all, &spinning), vec![vec![E, K], vec![T], vec![G]]);
    assert_eq!(groups(&[T, G], &spinning), vec![vec![T], vec![G]]);
}

#[test]
fn a_failing_stack_leaves_and_the_others_finish() {
    use Protocol::{Enet as E, Kcp as K, Thinwire as T};
    let log = Log::default();
    let stacks = [(T, None), (E, Some(2)), (K, None)];
    let done = take_turns(turns(&log, &stacks), Duration::ZERO, SLICE * 3);
    let enet_slices = log.borrow().iter().filter(|(p, _)| *p == E).count();
    assert_eq!(enet_slices, 2, "no slice after the failure");
    for p in [T, K] {
        let slices = log.borrow().iter().filter(|(q, _)| *q == p).count();
        assert_eq!(slices, 3, "{p:?} measures its whole time");
    }
    let enet = done.iter().find(|(p, _)| *p == E).expect("reported");
    assert_eq!(
        enet.1.as_ref().err().map(String::as_str),
        Some("the fake failed")
    );
    assert!(done.iter().filter(|(p, _)| *p != E).all(|(_, r)| r.is_ok()));
}
