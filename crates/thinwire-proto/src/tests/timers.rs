//! When the connections' timers are worked out: not after each call but when the endpoint is
//! asked for its next timer (`poll_timeout`, `handle_timeout`), once for every connection the
//! calls since changed.

use std::net::SocketAddr;
use std::time::Instant;

use crate::{ChannelKind, Endpoint, EndpointConfig, ServerKey};

/// A connection that goes while its timers wait to be worked out leaves its slot to the next
/// connection, whose timers are armed all the same (the slot's mark that its timers wait is
/// cleared with the connection; were it kept, the new connection would never be queued and
/// its handshake would never be retried or given up).
#[test]
fn a_slot_reused_before_the_timers_are_worked_out_arms_the_new_connection() {
    let now = Instant::now();
    let mut client = Endpoint::new(EndpointConfig::new([1; 32]), None, now).expect("client");
    let server = ServerKey::generate([2; 32]).public();
    let to: SocketAddr = "127.0.0.1:4433".parse().expect("addr");
    let channels = [ChannelKind::ReliableOrdered];
    let first = client.connect(now, to, &server, &channels).expect("first");
    // nothing has asked for the timers yet: the first connection's wait to be worked out
    client.close(now, first, 0, b"");
    assert_eq!(
        client.connection_count(),
        0,
        "closed before its handshake: gone at once"
    );
    let second = client.connect(now, to, &server, &channels).expect("second");
    assert_eq!(
        second.0 & u64::from(u32::MAX),
        first.0 & u64::from(u32::MAX),
        "the second connection takes the first one's slot"
    );
    assert_ne!(second, first);
    let next = client.poll_timeout();
    assert!(next.is_some(), "the second connection's handshake is timed");
    // as for the same connection on an endpoint that never had another
    let mut fresh = Endpoint::new(EndpointConfig::new([1; 32]), None, now).expect("fresh");
    fresh.connect(now, to, &server, &channels).expect("alone");
    assert_eq!(next, fresh.poll_timeout());
}

/// `timer_expired` tells what was armed when the timers were last worked out, and nothing of
/// the connections changed since: a runtime asks it before it sends, so that a timer that fell
/// due before the application's calls is still handled first.
#[test]
fn timer_expired_sees_what_was_armed_and_not_what_changed_since() {
    let now = Instant::now();
    let mut client = Endpoint::new(EndpointConfig::new([3; 32]), None, now).expect("client");
    let to: SocketAddr = "127.0.0.1:4433".parse().expect("addr");
    let server = ServerKey::generate([4; 32]).public();
    client
        .connect(now, to, &server, &[ChannelKind::Unreliable])
        .expect("connect");
    let far = now + std::time::Duration::from_secs(3600);
    assert!(
        !client.timer_expired(far),
        "not worked out yet: nothing armed"
    );
    let due = client.poll_timeout().expect("the handshake is timed");
    assert!(client.timer_expired(due));
    assert!(!client.timer_expired(due - std::time::Duration::from_nanos(1)));
}
