//! Bar charts: grouped bars per category (per-class tails, deadline misses) and horizontal
//! bars of bytes on the wire, drawn by the report kit's bar family.

use thinwire_report::plot::bars::{horizontal_bars, HBar};
use thinwire_report::plot::frame::message_figure;
use thinwire_report::plot::{self, bars};

use super::{all_protos, Panel, PlotResult};

pub(crate) use thinwire_report::plot::bars::GroupedBars;

/// Draws a [`GroupedBars`] figure over `panels` (bar `i` of a group is the panel's
/// protocol `i`), with one y range for all panels.
pub(crate) fn grouped_bars(spec: &GroupedBars<'_>, panels: &[Panel<'_>]) -> PlotResult {
    let series: Vec<plot::Panel<plot::Series>> = panels
        .iter()
        .map(|p| plot::Panel {
            title: p.title.clone(),
            items: p.items.iter().map(|p| p.series()).collect(),
        })
        .collect();
    bars::grouped_bars(spec, &series)
}

/// Horizontal bars of bytes on the wire per protocol (all panels' protocols, full names),
/// labelled with kB and packets.
pub(crate) fn wire_bytes(panels: &[Panel<'_>]) -> PlotResult {
    let title = "Bytes on the wire (headers included)";
    let bars: Vec<HBar> = all_protos(panels)
        .map(|p| {
            let kb = p.run.wire.bytes as f64 / 1000.0;
            HBar {
                label: p.full_label.to_owned(),
                value: kb,
                color: p.color,
                note: format!("{kb:.1} kB · {} packets", p.run.wire.packets),
            }
        })
        .collect();
    if bars.is_empty() {
        return message_figure(title, "No protocol: nothing to plot.");
    }
    horizontal_bars(title, "kB on the wire (1 kB = 1000 bytes)", &bars)
}
