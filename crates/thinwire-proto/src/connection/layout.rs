//! The connection's size and its parts' (`cargo test -p thinwire-proto layout -- --nocapture`
//! prints them): every idle connection holds one of each.

use std::mem::size_of;

use super::*;

/// Bytes of the connection struct, which each connection holds in one heap chunk: a bound on
/// what is built, so that a field that makes it grow is noticed.
const CONNECTION_BOUND: usize = 624;

#[test]
fn layout_of_a_connection() {
    macro_rules! sizes {
        ($($t:ty),*) => { $(eprintln!("{:>6} B {}", size_of::<$t>(), stringify!($t));)* };
    }
    sizes!(
        Connection,
        HandshakeInfo,
        Option<PacketKeys>,
        path::PathState,
        LazyActive,
        active::Active,
        Parked<Flow>,
        Recovery,
        ReceivedPackets,
        Timers,
        State,
        Due,
        CloseTimes,
        ConnectionCounters,
        counters::Counters,
        crate::recovery::SentPackets,
        crate::recovery::RttEstimator,
        crate::recovery::Congestion,
        crate::recovery::LossEstimates,
        PolicyCache,
        CloseTimes,
        Option<Vec<u8>>
    );
    assert!(
        size_of::<Connection>() <= CONNECTION_BOUND,
        "a connection is {} B, over {CONNECTION_BOUND} B",
        size_of::<Connection>()
    );
}
