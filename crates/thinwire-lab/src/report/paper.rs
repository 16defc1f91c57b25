//! The "paper vs thinwire lab" section (published figures beside ours, the
//! published rankings, the setup choices and calibrations) and the repetitions table.

use std::fmt::Write as _;

use thinwire_report::escape;
use thinwire_report::html::figure;

use super::plots::{order_curves, published_ratios};
use crate::metrics::{decimals, Estimate, Repetitions};
use crate::paper::{Comparison, Figure, FigureKind, PaperOutcome, Verdict};

fn estimate(e: Option<Estimate>) -> String {
    e.map_or("-".to_owned(), |e| e.display(decimals(e.mean)))
}

/// The verdict, and for a figure that is not counted, why.
fn verdict_cell(v: Verdict, kind: FigureKind) -> String {
    let class = match (v, kind) {
        (_, FigureKind::FixedBySetup) | (Verdict::Missing, _) => "muted",
        (Verdict::Matches, _) => "ok",
        (Verdict::Differs, _) => "bad",
    };
    match kind {
        FigureKind::Measured => format!("<td class=\"{class}\">{}</td>", v.as_str()),
        _ => format!(
            "<td class=\"{class}\">{} ({}: {})</td>",
            v.as_str(),
            kind.label(),
            match kind {
                FigureKind::FixedBySetup => "not counted",
                _ => "counted apart",
            }
        ),
    }
}

/// Counted figures (measured at the paper's setup) within tolerance, and counted figures
/// measured.
pub(crate) fn score(comparisons: &[Comparison]) -> (usize, usize) {
    let counted = || {
        comparisons
            .iter()
            .filter(|c| c.published.kind == FigureKind::Measured)
    };
    (
        counted().filter(|c| c.verdict == Verdict::Matches).count(),
        counted().filter(|c| c.verdict != Verdict::Missing).count(),
    )
}

/// The rows of the published-figures table (also used by the papers summary).
pub(super) fn comparison_rows(html: &mut String, comparisons: &[Comparison], paper: Option<&str>) {
    for (i, c) in comparisons.iter().enumerate() {
        let p = &c.published;
        let unit = p.metric.unit();
        let who = match &p.baseline {
            Some(b) => format!("{} / {}", p.protocol, b),
            None => p.protocol.clone(),
        };
        let extra: Vec<String> = c
            .columns
            .iter()
            .skip(1)
            .map(|(point, e)| format!("{point}: {}", estimate(*e)))
            .collect();
        html.push_str("<tr>");
        if let Some(paper) = paper {
            let _ = write!(html, "<td>{}</td>", escape(paper));
        }
        let _ = writeln!(
            html,
            "<td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
            i + 1,
            escape(&p.what),
            escape(&p.source),
            escape(&who),
            p.value,
            escape(unit),
            escape(&estimate(c.ours())),
            c.ratio().map_or("-".to_owned(), |r| format!("{r:.2}")),
            escape(&p.tolerance.describe(unit)),
            verdict_cell(c.verdict, p.kind),
            escape(&extra.join("; ")),
            escape(&p.note),
        );
    }
}

/// The rows of a reproduction with its own runner (`section` in the first column), in the
/// columns of [`COMPARISON_HEAD`].
pub(super) fn figure_rows(html: &mut String, figures: &[Figure], section: &str) {
    for (i, f) in figures.iter().enumerate() {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>-</td>\
             <td class=\"num\">{} {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{}</td>{}<td></td><td>{}</td></tr>",
            escape(section),
            i + 1,
            escape(&f.what),
            escape(&f.source),
            f.published,
            escape(&f.unit),
            escape(&estimate(f.ours)),
            f.ratio().map_or("-".to_owned(), |r| format!("{r:.2}")),
            escape(&f.tolerance_text()),
            verdict_cell(f.verdict(), f.kind),
            escape(&f.note),
        );
    }
}

pub(super) const COMPARISON_HEAD: &str =
    "<th>#</th><th>figure</th><th>source</th><th>protocol</th>\
    <th>published</th><th>ours</th><th>ours / published</th><th>tolerance</th><th>verdict</th>\
    <th>other setups (same figure)</th><th>note</th>";

/// The "paper vs thinwire lab" section of a scenario's report.
/// `prefix` keeps element ids apart when several sections share a page.
pub(super) fn paper_section(html: &mut String, outcome: &PaperOutcome, runs: u32, prefix: &str) {
    let _ = writeln!(
        html,
        "<section id=\"{prefix}paper\">\n<h2>Paper vs thinwire lab</h2>"
    );
    if let Some(info) = &outcome.info {
        let _ = writeln!(
            html,
            "<p><b>{}</b>{}</p>",
            escape(&info.title),
            if info.experiment.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&info.experiment))
            }
        );
    }
    if !outcome.overrides.is_empty() {
        let what: Vec<String> = outcome.overrides.iter().map(|o| o.to_string()).collect();
        let _ = writeln!(
            html,
            "<p class=\"note\"><b>Not the paper's setup</b>: {}. The verdicts below compare \
             this run with the paper's figures.</p>",
            escape(&what.join("; "))
        );
    }
    let (ok, measured) = score(&outcome.comparisons);
    let _ = writeln!(
        html,
        "<p>{ok} of {measured} counted figures within tolerance (a figure the configuration \
         fixes, or measured on a synthetic population, is marked and not counted with them); \
         ours is the mean over {runs} \
         run{} (± the 95% confidence interval when there is more than one). \"Other setups\" \
         shows the same figure at the other matching sweep points (e.g. bursty loss at the same \
         mean).</p>",
        if runs == 1 { "" } else { "s" }
    );
    if !outcome.comparisons.is_empty() {
        let _ = writeln!(html, "<table>\n<tr>{COMPARISON_HEAD}</tr>");
        comparison_rows(html, &outcome.comparisons, None);
        html.push_str("</table>\n");
        figure(
            html,
            &format!("{prefix}plot-paper-ratios"),
            published_ratios(&outcome.comparisons),
            "Ours over the published value for each figure of the table above (log scale): the \
             grey band is the tolerance, the bar the 95% confidence interval over runs.",
        );
    }
    orders_section(html, outcome, prefix);
    choices_section(html, outcome);
    html.push_str("</section>\n");
}

/// The published rankings: a table and one figure each.
fn orders_section(html: &mut String, outcome: &PaperOutcome, prefix: &str) {
    if !outcome.orders.is_empty() {
        html.push_str(
            "<h3>Published rankings</h3>\n<table>\n<tr><th>ranking (best first)</th><th>source</th>\
             <th>holds at</th><th>where it does not hold</th><th>note</th></tr>\n",
        );
        for o in &outcome.orders {
            let (k, n) = o.score();
            let broken: Vec<String> = o
                .checks
                .iter()
                .filter(|c| !c.holds)
                .map(|c| {
                    let vals: Vec<String> = c
                        .values
                        .iter()
                        .map(|(p, e)| format!("{p} {}", estimate(*e)))
                        .collect();
                    format!("{}: {}", c.point, vals.join(", "))
                })
                .collect();
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{k} of {n} points</td><td>{}</td><td>{}</td></tr>",
                escape(&o.order.what),
                escape(&o.order.source),
                if k == n && n > 0 { "ok" } else { "bad" },
                escape(&broken.join("; ")),
                escape(&o.order.note)
            );
        }
        html.push_str("</table>\n");
        for (i, o) in outcome.orders.iter().enumerate() {
            figure(
                html,
                &format!("{prefix}plot-paper-order-{}", i + 1),
                order_curves(o, o.order.metric.unit()),
                &format!(
                    "{}: ours at every sweep point (mean, bar: 95% CI over runs). Published: the \
                     order of the legend, best first ({}).",
                    escape(&o.order.what),
                    escape(&o.order.source)
                ),
            );
        }
    }
}

/// The setup choices and the differences from the paper.
fn choices_section(html: &mut String, outcome: &PaperOutcome) {
    if let Some(info) = &outcome.info {
        for (title, list) in [
            (
                "Calibrations (a free parameter of the setup set to meet a fact the paper \
                 states about its setup)",
                &info.calibrations,
            ),
            (
                "Choices where the paper is silent or ambiguous",
                &info.choices,
            ),
            (
                "Where this reproduction differs from the paper",
                &info.differences,
            ),
        ] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(html, "<h3>{title}</h3>\n<ul>");
            for c in list {
                let _ = writeln!(html, "<li>{}</li>", escape(c));
            }
            html.push_str("</ul>\n");
        }
    }
}

/// The repetitions table: every row's statistics over every run.
pub(super) fn repetitions_section(html: &mut String, reps: &Repetitions, prefix: &str) {
    let _ = writeln!(
        html,
        "<section id=\"{prefix}repetitions\">\n<h2>Repetitions</h2>\n<p>{} runs with independent seeds; \
         mean ± 95% confidence interval (Student's t) over the runs of each row's statistic \
         (all classes). Also in <code>runs.json</code>.</p>\n<table>\n<tr><th>protocol</th>\
         <th>mean (ms)</th><th>jitter (ms)</th><th>p99 (ms)</th><th>p99.9 (ms)</th>\
         <th>delivered (%)</th></tr>",
        reps.runs
    );
    for r in &reps.rows {
        let _ = writeln!(
            html,
            "<tr><td class=\"proto\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&r.key.to_string()),
            escape(&estimate(r.mean_ms)),
            escape(&estimate(r.jitter_ms)),
            escape(&estimate(r.p99_ms)),
            escape(&estimate(r.p999_ms)),
            escape(&estimate(r.delivered_pct)),
        );
    }
    html.push_str("</table>\n</section>\n");
}
