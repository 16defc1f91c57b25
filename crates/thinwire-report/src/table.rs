//! Table markup: a table in its horizontally scrolling wrapper, header rows, and rows of
//! text and number cells, all escaped.

use std::fmt::Write as _;

use crate::html::escape;

/// Opens `<div class="wide"><table>` (with `class` on the table, if any) and a newline.
pub fn open(html: &mut String, class: Option<&str>) {
    match class {
        Some(c) => {
            let _ = writeln!(html, "<div class=\"wide\"><table class=\"{c}\">");
        }
        None => html.push_str("<div class=\"wide\"><table>\n"),
    }
}

/// Closes what [`open`] opened.
pub fn close(html: &mut String) {
    html.push_str("</table></div>\n");
}

/// A header row: `<tr><th>...</th>...</tr>` and a newline.
pub fn header<'a>(html: &mut String, headers: impl IntoIterator<Item = &'a str>) {
    html.push_str("<tr>");
    for h in headers {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>\n");
}

/// The `<td>`s of one row: the first `text_columns` cells as text, the others as numbers
/// (`<td class="num">`, right-aligned).
pub fn cells(html: &mut String, cells: &[String], text_columns: usize) {
    for (i, cell) in cells.iter().enumerate() {
        if i < text_columns {
            let _ = write!(html, "<td>{}</td>", escape(cell));
        } else {
            let _ = write!(html, "<td class=\"num\">{}</td>", escape(cell));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table() {
        let mut h = String::new();
        open(&mut h, Some("summary"));
        header(&mut h, ["name", "p99 <ms>"]);
        h.push_str("<tr>");
        cells(&mut h, &["a&b".into(), "1.5".into()], 1);
        h.push_str("</tr>\n");
        close(&mut h);
        assert_eq!(
            h,
            "<div class=\"wide\"><table class=\"summary\">\n<tr><th>name</th><th>p99 &lt;ms&gt;\
             </th></tr>\n<tr><td>a&amp;b</td><td class=\"num\">1.5</td></tr>\n</table></div>\n"
        );
    }
}
