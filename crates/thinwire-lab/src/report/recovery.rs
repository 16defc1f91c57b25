//! The "thinwire loss recovery" section: the loss-recovery counters of every
//! thinwire configuration at every sweep point, which explain its tail (how
//! many losses a timeout found, how many acknowledgements were lost or late,
//! how much was sent again and whether the repairs came in time).

use std::fmt::Write as _;

use thinwire_proto::ConnectionCounters;
use thinwire_report::table;

use super::html::protocol_cell;
use crate::metrics::RunKey;

/// A column: its header and the counter it shows.
type Column = (&'static str, fn(&ConnectionCounters) -> u64);

/// The table's columns, in order.
const COLUMNS: [Column; 12] = [
    ("packets lost", |c| c.recovery.packets_lost),
    ("thin fast losses", |c| c.recovery.thin_fast_losses),
    ("RTO expirations", |c| c.recovery.rto_expirations),
    ("spurious losses (lost ACK)", |c| c.recovery.spurious_losses),
    ("spurious timeouts (late ACK)", |c| {
        c.recovery.spurious_timeouts
    }),
    ("frames retransmitted", |c| c.frames.retransmitted),
    ("repair copies", |c| c.recovery.repair_copies),
    ("repair copy bytes", |c| c.payload_bytes.copies),
    ("repairs in time", |c| c.recovery.repairs_in_time),
    ("repairs late", |c| c.recovery.repairs_late),
    ("ACK repeats", |c| c.recovery.ack_repeats),
    ("frames bundled", |c| c.frames.bundled),
];

/// The section, `<table class="recovery">` with one row per `(run, counters)`
/// in `rows`; nothing without rows (no thinwire configuration).
pub(super) fn recovery_section(html: &mut String, rows: &[(RunKey, ConnectionCounters)]) {
    if rows.is_empty() {
        return;
    }
    html.push_str("<h2 id=\"recovery\">thinwire loss recovery</h2>\n");
    table::open(html, Some("recovery"));
    table::header(
        html,
        ["protocol"].into_iter().chain(COLUMNS.map(|(h, _)| h)),
    );
    for (key, counters) in rows {
        let _ = write!(
            html,
            "<tr><td class=\"proto\">{}</td>",
            protocol_cell(&key.to_string(), false)
        );
        for (_, value) in COLUMNS {
            let _ = write!(html, "<td class=\"num\">{}</td>", value(counters));
        }
        html.push_str("</tr>\n");
    }
    table::close(html);
    html.push_str(
        "<p class=\"note\">thinwire loss recovery: the counters of thinwire's connection \
         statistics, summed over the server's and the clients' endpoints (every connection, \
         closed ones included; the tables' first run). The side that sends the messages counts \
         the losses, timeouts, retransmissions, repair copies, bundled frames and repairs; the \
         side that acknowledges them counts the ACK repeats. <i>Thin fast losses</i>: losses \
         declared after a single indication (thin-stream fast retransmit). <i>Spurious \
         losses</i>: packets declared lost and acknowledged afterwards (the ACK was lost). \
         <i>Spurious timeouts</i>: retransmission timeouts whose acknowledgement was only late \
         (the RTT estimate is raised). <i>Repair copies</i>: extra copies the repair policy \
         sent beyond one per stage. <i>Repairs in time / late</i>: fragments acknowledged \
         through a retransmission within / after their channel's repair target ((1 + rtts) \
         smoothed RTTs from the first transmission). <i>ACK repeats</i>: acknowledgement-only \
         packets sent a second time.</p>\n",
    );
}
