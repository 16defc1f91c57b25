//! The lab's cells of the report kit's tables: a protocol's name with its "model" badge,
//! and a row led by it.

use std::fmt::Write as _;

use thinwire_report::html::{badge, nowrap};
use thinwire_report::{escape, table};

/// The protocol cell: name, with a "model" badge for models. The protocol stays on one
/// line; a sweep point after it (`name [point]`) and the badge may wrap to the next.
pub(super) fn protocol_cell(name: &str, model: bool) -> String {
    let (protocol, point) = match name.split_once(" [") {
        Some((p, rest)) => (p, format!(" [{}", escape(rest))),
        None => (name, String::new()),
    };
    let cell = format!("{}{point}", nowrap(protocol));
    if model {
        format!("{cell} {}", badge("model"))
    } else {
        cell
    }
}

/// The `<td>`s of one table row: the first cell is the protocol (shown as
/// `name` with its model badge), the rest of the first `text_columns` cells
/// are text and the others numbers.
pub(super) fn table_cells(
    html: &mut String,
    name: &str,
    model: bool,
    cells: &[String],
    text_columns: usize,
) {
    if cells.is_empty() {
        return;
    }
    let _ = write!(
        html,
        "<td class=\"proto\">{}</td>",
        protocol_cell(name, model)
    );
    table::cells(html, &cells[1..], text_columns.saturating_sub(1));
}
