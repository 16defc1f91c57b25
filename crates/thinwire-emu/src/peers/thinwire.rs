//! thinwire in one of the lab's configurations, as the emulator runs it: the lab's
//! transport and security settings, the channels the configuration maps the classes to,
//! deadline delivery where it has it (as in the simulator). The host itself is
//! `thinwire-peers`' [`ThinwireHost`](thinwire_peers::ThinwireHost) (thinwire's blocking
//! `Host`), run by the [driver](super::driver). Encrypted like any thinwire deployment
//! (Noise NK handshake, AEAD-sealed packets) unless the configuration is the
//! `-insecure-cleartext` opt-out; the server holds the simulator's server key
//! ([`lab_server_key`](thinwire_lab::protocol::lab_server_key)), which the clients connect
//! with.

use super::book::{merge_counters, HostReport};
use super::driver::{Lanes, Stack};
use thinwire_lab::protocol::{lab_server_key, ThinwireProtocol};
use thinwire_lab::workload::ClassSpec;

/// The port of every thinwire host.
pub(super) const THINWIRE_PORT: u16 = 7300;

/// The runtime configuration of configuration `t` (a server's with `server`).
pub(super) fn config(t: ThinwireProtocol, server: bool) -> thinwire::Config {
    let mut config = if server {
        thinwire::Config::server().with_server_key(lab_server_key().clone())
    } else {
        thinwire::Config::client()
    }
    .with_transport(t.transport());
    if t.insecure_cleartext {
        config = config.insecure_cleartext();
    }
    config
}

/// The channels configuration `t` maps `classes` to, and its deadline delivery.
pub(super) fn lanes(t: ThinwireProtocol, classes: &[ClassSpec]) -> Lanes {
    let (channels, per_class) = t.channels(classes);
    Lanes {
        channels,
        of_class: per_class.iter().map(|&(ch, _)| ch).collect(),
        deadline: t.deadline.map(|p| p.mode()),
    }
}

/// Configuration `t` on the server's host (`server`) or a client's.
pub(super) fn stack(
    t: ThinwireProtocol,
    server: bool,
    classes: &[ClassSpec],
) -> Stack<thinwire::Config> {
    Stack {
        settings: config(t, server),
        port: THINWIRE_PORT,
        key: Some(lab_server_key().public().to_string()),
        lanes: lanes(t, classes),
    }
}

/// The named counters of one connection's `ConnectionStats`.
fn stats_counters(st: &thinwire::ConnectionStats) -> [(&'static str, u64); 16] {
    [
        ("packets_sent", st.packets_sent),
        ("packets_lost", st.packets_lost),
        ("thin_fast_losses", st.thin_fast_losses),
        ("rto_expirations", st.rto_expirations),
        ("spurious_losses", st.spurious_losses),
        (
            "payload_bytes_retransmitted",
            st.payload_bytes_retransmitted,
        ),
        ("payload_bytes_bundled", st.payload_bytes_bundled),
        ("payload_bytes_parity", st.payload_bytes_parity),
        ("spurious_timeouts", st.spurious_timeouts),
        ("frames_retransmitted", st.frames_retransmitted),
        ("repair_copies", st.repair_copies),
        ("payload_bytes_copies", st.payload_bytes_copies),
        ("repairs_in_time", st.repairs_in_time),
        ("repairs_late", st.repairs_late),
        ("ack_repeats", st.ack_repeats),
        ("frames_bundled", st.frames_bundled),
    ]
}

/// The connections' `ConnectionStats`, summed.
pub(super) fn report(stats: &[thinwire::ConnectionStats]) -> HostReport {
    let mut report = HostReport::default();
    for st in stats {
        report.payload_bytes_sent += st.payload_bytes_sent();
        merge_counters(&mut report.counters, &stats_counters(st));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use thinwire_lab::protocol::RecoveryCounters;

    #[test]
    fn counters_include_every_recovery_counter_under_its_lab_name() {
        let st = thinwire::ConnectionStats {
            rto_expirations: 3,
            spurious_timeouts: 1,
            repairs_in_time: 2,
            ack_repeats: 5,
            ..Default::default()
        };
        let named = stats_counters(&st);
        let get = |n: &str| named.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        for name in RecoveryCounters::NAMES {
            assert!(get(name).is_some(), "{name}");
        }
        let r = RecoveryCounters::from_named(get).expect("recovery counters");
        assert_eq!(r, RecoveryCounters::from_stats(&st));
        assert_eq!((r.rto_expirations, r.ack_repeats), (3, 5));
    }
}
