//! Each bound, in isolation.

use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle};

use crate::trunk::early::Early;
use crate::trunk::flow::{Arrival, Flow, FlowState};
use crate::trunk::hold::{per_item, Hold, Item, Pushed};
use crate::trunk::inbound::{Budget, Inbound, Outcome, ENTRY_COST, LATEST_KEYS};
use crate::trunk::GatewayStats;

fn item(flow: u32, kind: ChannelKind, len: usize, now: Instant) -> Item {
    Item {
        flow,
        channel: 0,
        kind,
        key: kind.has_key().then_some(1),
        data: Bytes::from(vec![0u8; len]),
        since: now,
        deadline: None,
    }
}

#[test]
fn hold_bounds_each_flow_and_releases_on_push() {
    let now = Instant::now();
    let mut hold = Hold::new(Duration::from_millis(10), 1000, 32 << 20);
    let k = ChannelKind::ReliableOrdered;
    assert!(hold.push(now, item(1, k, 400, now)));
    assert!(hold.push(now, item(1, k, 400, now)));
    assert!(
        !hold.push(now, item(1, k, 400, now)),
        "flow 1 is over 1000 bytes"
    );
    assert!(
        hold.push(now, item(2, k, 400, now)),
        "flow 2 has its own budget"
    );
    assert!(!hold.due(now));
    let tick = hold.poll_timeout().expect("a batch is held");
    assert!(tick > now && tick <= now + Duration::from_millis(10));
    let mut stats = GatewayStats::default();
    hold.drain(tick, usize::MAX, &mut stats, per_item(|_| Pushed::Sent));
    assert_eq!(hold.len(), 0);
    assert_eq!(stats.held_messages, 3);
    assert_eq!(stats.held_delay_max, tick - now);
    assert!(hold.push(tick, item(1, k, 900, tick)), "budget released");
}

#[test]
fn hold_pushes_urgent_first_and_gates_bulk() {
    let now = Instant::now();
    let mut hold = Hold::new(Duration::ZERO, 1 << 20, 32 << 20);
    hold.push(now, item(1, ChannelKind::ReliableOrdered, 100, now));
    hold.push(now, item(1, ChannelKind::ReliableOrdered, 100, now));
    hold.push(now, item(1, ChannelKind::UnreliableSequenced, 10, now));
    hold.push(now, item(1, ChannelKind::LatestReliable, 10, now));
    let mut order = Vec::new();
    let mut stats = GatewayStats::default();
    // the trunk's reliable queue leaves room for one bulk message only
    hold.drain(
        now,
        100,
        &mut stats,
        per_item(|i| {
            order.push(i.kind);
            Pushed::Sent
        }),
    );
    use ChannelKind::*;
    assert_eq!(
        order,
        [UnreliableSequenced, LatestReliable, ReliableOrdered]
    );
    assert_eq!(hold.len(), 1);
    assert!(
        hold.poll_timeout().is_some(),
        "the rest waits for the next tick"
    );
    // a full trunk send buffer keeps bulk messages for later, in order
    hold.drain(now, usize::MAX, &mut stats, per_item(|_| Pushed::Blocked));
    assert_eq!(hold.len(), 1);
}

#[test]
fn reorder_buffer_is_bounded() {
    let mut flow = Flow::new(
        ConnectionHandle(0),
        vec![ChannelKind::ReliableOrdered],
        FlowState::Open,
    );
    let limit = 10 * (100 + ENTRY_COST);
    let mut out = Vec::new();
    // seq 0 missing: 1..=10 are held, 11 is one too many
    for seq in 1..=10 {
        let a = flow.arrive(
            (0, Some(seq), None),
            Bytes::from(vec![1; 100]),
            limit,
            &mut out,
        );
        assert_eq!(a, Arrival::Ok { stale: false });
    }
    assert_eq!(flow.held_bytes(), limit);
    let a = flow.arrive(
        (0, Some(11), None),
        Bytes::from(vec![1; 100]),
        limit,
        &mut out,
    );
    assert_eq!(a, Arrival::Overflow);
    assert!(out.is_empty());
    let a = flow.arrive(
        (0, Some(0), None),
        Bytes::from(vec![0; 100]),
        limit,
        &mut out,
    );
    assert_eq!(a, Arrival::Ok { stale: false });
    assert_eq!(out.len(), 11, "the gap filled: everything in order");
    assert_eq!(flow.held_bytes(), 0);
}

#[test]
fn pending_before_upstream_is_bounded() {
    let mut flow = Flow::new(
        ConnectionHandle(0),
        vec![ChannelKind::ReliableUnordered],
        FlowState::AwaitingUpstream,
    );
    let limit = 3 * (100 + ENTRY_COST);
    let mut out = Vec::new();
    for _ in 0..3 {
        let a = flow.arrive(
            (0, Some(0), None),
            Bytes::from(vec![1; 100]),
            limit,
            &mut out,
        );
        assert_eq!(a, Arrival::Ok { stale: false });
    }
    let a = flow.arrive(
        (0, Some(0), None),
        Bytes::from(vec![1; 100]),
        limit,
        &mut out,
    );
    assert_eq!(a, Arrival::Overflow);
    assert!(out.is_empty());
    assert_eq!(flow.open().len(), 3);
    assert_eq!(flow.held_bytes(), 0);
}

#[test]
fn frames_of_the_wrong_shape_are_bad() {
    let mut flow = Flow::new(
        ConnectionHandle(0),
        vec![ChannelKind::LatestReliable, ChannelKind::Unreliable],
        FlowState::Open,
    );
    let mut out = Vec::new();
    let d = Bytes::new;
    assert_eq!(
        flow.arrive((0, Some(0), None), d(), 1000, &mut out),
        Arrival::Bad
    );
    assert_eq!(
        flow.arrive((1, Some(0), None), d(), 1000, &mut out),
        Arrival::Bad
    );
    assert_eq!(
        flow.arrive((2, None, None), d(), 1000, &mut out),
        Arrival::Bad
    );
    assert!(out.is_empty());
}

#[test]
fn latest_value_keys_are_bounded() {
    let mut ch = Inbound::new(ChannelKind::LatestReliable);
    let mut held = 0;
    let mut out = Vec::new();
    let mut accept = |ch: &mut Inbound, seq: u64, key: u64| {
        let budget = Budget {
            held: &mut held,
            limit: 1 << 20,
        };
        ch.accept((Some(seq), Some(key)), Bytes::new(), budget, &mut out)
    };
    let n = LATEST_KEYS as u64 + 10;
    for k in 0..n {
        assert_eq!(accept(&mut ch, k + 100, k), Outcome::Taken);
    }
    let Inbound::Latest { newest, by_seq, .. } = &ch else {
        panic!("latest");
    };
    assert_eq!(newest.len(), LATEST_KEYS);
    assert_eq!(by_seq.len(), LATEST_KEYS);
    // an older value of an evicted key is still refused
    assert_eq!(accept(&mut ch, 50, 0), Outcome::Stale);
    // an older value of a remembered key too; a newer one passes
    assert_eq!(accept(&mut ch, 100 + n - 2, n - 1), Outcome::Stale);
    assert_eq!(accept(&mut ch, 100 + n, n - 1), Outcome::Taken);
}

#[test]
fn sequenced_drops_older_than_newest() {
    let mut ch = Inbound::new(ChannelKind::UnreliableSequenced);
    let mut held = 0;
    let mut out = Vec::new();
    for (seq, want) in [
        (3, Outcome::Taken),
        (1, Outcome::Stale),
        (3, Outcome::Stale),
        (4, Outcome::Taken),
    ] {
        let budget = Budget {
            held: &mut held,
            limit: 0,
        };
        assert_eq!(
            ch.accept((Some(seq), None), Bytes::new(), budget, &mut out),
            want
        );
    }
    assert_eq!(out.len(), 2);
}

#[test]
fn early_frames_are_bounded() {
    let mut early = Early::new(100, 4);
    let f = |n| Bytes::from(vec![0u8; n]);
    assert!(early.is_future(0));
    assert!(early.hold(0, f(40)));
    assert!(early.hold(3, f(40)));
    assert!(!early.hold(4, f(1)), "beyond the id window");
    assert!(!early.hold(1, f(40)), "beyond the byte bound");
    assert_eq!(early.bytes(), 80);
    assert_eq!(early.open(0).map(|v| v.len()), Some(1));
    assert_eq!(early.open(0), None, "ids only grow");
    assert!(!early.is_future(0));
    assert!(early.hold(4, f(40)), "the window moved");
    assert_eq!(early.open(5).map(|v| v.len()), Some(0));
    assert_eq!(early.bytes(), 0, "ids passed over are forgotten");
}

#[test]
fn event_queue_is_bounded() {
    use crate::trunk::relay::{Relay, MAX_EVENTS};
    use crate::trunk::{GatewayEvent, TrunkOptions};
    use thinwire_proto::{Endpoint, EndpointConfig};
    let now = Instant::now();
    let ep = |n| Endpoint::new(EndpointConfig::new([n; 32]), None, now).unwrap();
    let mut relay = Relay::new(TrunkOptions::default(), ep(1), ep(2));
    for _ in 0..=MAX_EVENTS {
        relay.event(GatewayEvent::TrunkUp { peer: 1 });
    }
    assert_eq!(relay.stats.events_dropped, 1);
    assert_eq!(
        std::iter::from_fn(|| relay.poll_event()).count(),
        MAX_EVENTS
    );
}

/// Many flows each at their backlog bound cannot add up past `max_held` (plus one item):
/// once it is reached, only flows within their fair share may add, and a flow that leaves
/// gives its bytes back.
#[test]
fn hold_bounds_the_flows_together_by_max_held() {
    let now = Instant::now();
    let (limit, max_total) = (64 << 10, 256 << 10);
    let mut hold = Hold::new(Duration::from_millis(10), limit, max_total);
    let k = ChannelKind::ReliableOrdered;
    let cost = 1000 + ENTRY_COST;
    let mut refused = std::collections::BTreeSet::new();
    // 16 flows that fill up in turn: 16 x 64 KiB would be 1 MiB
    for round in 0..80 {
        for flow in 0..16u32 {
            if !refused.contains(&flow) && !hold.push(now, item(flow, k, 1000, now)) {
                refused.insert(flow);
            }
        }
        assert!(
            hold.total() <= max_total + cost,
            "round {round}: {}",
            hold.total()
        );
    }
    // the share of 16 flows is 16 KiB: every flow got at least that before its refusal
    assert_eq!(refused.len(), 16);
    assert!((0..16).all(|f| hold.held(f) + cost > max_total / 16));
    // a newcomer is within its (smaller) share and gets in although the hold is full
    assert!(hold.push(now, item(99, k, 1000, now)));
    // a flow that leaves gives its bytes back
    let (before, gone) = (hold.total(), hold.held(3));
    hold.forget(3);
    assert_eq!(hold.total(), before - gone);
    hold.clear();
    assert_eq!(hold.total(), 0);
}
