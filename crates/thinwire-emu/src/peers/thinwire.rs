//! thinwire in one of the lab's configurations, as the emulator runs it: the lab's
//! transport and security settings, the channels the configuration maps the classes to,
//! deadline delivery where it has it (as in the simulator). The host itself is
//! `thinwire-peers`' [`ThinwireHost`](thinwire_peers::ThinwireHost) (thinwire's blocking
//! `Host`), run by the [driver](super::driver). Encrypted like any thinwire deployment
//! (Noise NK handshake, AEAD-sealed packets) unless the configuration is the
//! `-insecure-cleartext` opt-out; the server holds the simulator's server key
//! ([`lab_server_key`](thinwire_lab::protocol::lab_server_key)), which the clients connect
//! with.

use super::book::HostReport;
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

/// The connections' payload bytes sent and their counters, summed.
pub(super) fn report(stats: &[thinwire::ConnectionStats]) -> HostReport {
    let mut report = HostReport::default();
    let mut total = thinwire::proto::ConnectionCounters::default();
    for st in stats {
        report.payload_bytes_sent += st.payload_bytes.total();
        total += st.counters();
    }
    report.thinwire = Some(total);
    report
}
