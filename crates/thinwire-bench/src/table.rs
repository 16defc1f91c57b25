//! The terminal table: per metric, every transport's range over the repetitions and the
//! thinwire/ENet ratio; the shared number formatting of the table and the report.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::host::Protocol;
use crate::results::{BenchResults, Cell, Row};

/// A value in its unit, compactly: `1.42 M` msg/s, `15.5` µs, `4240` B.
pub(crate) fn value(v: f64, unit: &str) -> String {
    match unit {
        "msg/s" if v >= 1e6 => format!("{:.2} M", v / 1e6),
        "msg/s" if v >= 1e3 => format!("{:.1} k", v / 1e3),
        "µs" | "%" | "Hz" => format!("{v:.1}"),
        "ms" => format!("{v:.2}"),
        _ => format!("{v:.0}"),
    }
}

/// `lo-hi` over the repetitions (one value when they agree in print).
pub(crate) fn range(values: &[f64], unit: &str) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (value(lo, unit), value(hi, unit));
    if a == b {
        return a;
    }
    // `1.40 M-1.44 M` reads better as `1.40-1.44 M`
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((x, s1)), Some((y, s2))) if s1 == s2 => format!("{x}-{y} {s1}"),
        _ => format!("{a}-{b}"),
    }
}

/// A cell as shown: the range, `n/a` or `FAILED`.
pub(crate) fn cell(c: Option<&Cell>, unit: &str) -> String {
    match c {
        Some(Cell::Values(v)) if !v.is_empty() => range(v, unit),
        Some(Cell::Values(_)) | None => "-".into(),
        Some(Cell::NotApplicable(_)) => "n/a".into(),
        Some(Cell::Failed(_)) => "FAILED".into(),
    }
}

/// The thinwire/ENet ratio as shown.
pub(crate) fn ratio(r: Option<[f64; 2]>) -> String {
    match r {
        Some([lo, hi]) if format!("{lo:.2}") == format!("{hi:.2}") => format!("{lo:.2}"),
        Some([lo, hi]) => format!("{lo:.2}-{hi:.2}"),
        None => "-".into(),
    }
}

fn cells_of(row: &Row) -> Vec<String> {
    let mut v = vec![row.label.clone(), row.unit.clone()];
    v.extend(
        Protocol::ALL
            .iter()
            .map(|p| cell(row.cells.get(p), &row.unit)),
    );
    v.push(ratio(row.ratio));
    v
}

/// The whole table, sections one after another, then why cells are n/a or failed.
pub(crate) fn terminal_table(results: &BenchResults) -> String {
    let mut head = vec!["metric".to_owned(), "unit".to_owned()];
    head.extend(Protocol::ALL.iter().map(|p| p.label().to_owned()));
    head.push("thinwire/ENet".into());
    let rows: Vec<Vec<String>> = results
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().map(cells_of))
        .collect();
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cols.iter().zip(&width).enumerate() {
            let pad = w.saturating_sub(c.chars().count());
            if i == 0 {
                let _ = write!(s, "{c}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {}{c}", " ".repeat(pad));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(&head);
    out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * (width.len() - 1)));
    out.push('\n');
    let mut rows = rows.into_iter();
    for s in &results.sections {
        let _ = writeln!(out, "[{}]", s.title);
        for r in rows.by_ref().take(s.rows.len()) {
            out.push_str(&line(&r));
        }
    }
    let mut why = BTreeSet::new();
    for r in results.sections.iter().flat_map(|s| &s.rows) {
        for (p, c) in &r.cells {
            match c {
                Cell::NotApplicable(w) => why.insert(format!("{} n/a: {w}", p.label())),
                Cell::Failed(e) => why.insert(format!("{} FAILED ({}): {e}", p.label(), r.label)),
                Cell::Values(_) => false,
            };
        }
    }
    for w in why {
        let _ = writeln!(out, "  {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_share_their_suffix() {
        assert_eq!(range(&[1.40e6, 1.44e6], "msg/s"), "1.40-1.44 M");
        assert_eq!(range(&[15.5, 15.5], "µs"), "15.5");
        assert_eq!(range(&[330.0, 340.0], "B"), "330-340");
        assert_eq!(ratio(Some([0.331, 0.334])), "0.33");
    }
}
