//! The "paper vs thinwire lab" section (published figures beside ours, the
//! published rankings, the setup choices), the repetitions table, and the
//! one-page report of `thinwire lab run papers`.

use std::fmt::Write as _;

use thinwire_report::escape;
use thinwire_report::html::{figure, page_end, page_start};

use super::plots::{order_curves, published_ratios};
use crate::metrics::{Estimate, Repetitions};
use crate::paper::{Comparison, PaperOutcome, SetupOverride, Verdict};

/// Decimals that suit a value's size.
fn digits(v: f64) -> usize {
    let a = v.abs();
    if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    }
}

fn estimate(e: Option<Estimate>) -> String {
    e.map_or("-".to_owned(), |e| e.display(digits(e.mean)))
}

fn verdict_cell(v: Verdict) -> String {
    let class = match v {
        Verdict::Matches => "ok",
        Verdict::Differs => "bad",
        Verdict::Missing => "muted",
    };
    format!("<td class=\"{class}\">{}</td>", v.as_str())
}

/// Figures within tolerance, and figures measured.
pub(crate) fn score(comparisons: &[Comparison]) -> (usize, usize) {
    (
        comparisons
            .iter()
            .filter(|c| c.verdict == Verdict::Matches)
            .count(),
        comparisons
            .iter()
            .filter(|c| c.verdict != Verdict::Missing)
            .count(),
    )
}

/// The rows of the published-figures table (also used by the papers summary).
fn comparison_rows(html: &mut String, comparisons: &[Comparison], paper: Option<&str>) {
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
            verdict_cell(c.verdict),
            escape(&extra.join("; ")),
            escape(&p.note),
        );
    }
}

const COMPARISON_HEAD: &str = "<th>#</th><th>figure</th><th>source</th><th>protocol</th>\
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
        "<p>{ok} of {measured} published figures within tolerance; ours is the mean over {runs} \
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

/// One paper's run for the combined report.
#[derive(Debug)]
pub struct PaperRun<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// Its paper tables.
    pub paper: Option<&'a PaperOutcome>,
    /// Its repetitions, with more than one run.
    pub repetitions: Option<&'a Repetitions>,
    /// Link to its own report, relative to the combined report.
    pub report_href: String,
}

/// A reproduction with a report of its own, linked from the papers report.
#[derive(Debug, Clone)]
pub struct LinkedReport {
    /// What it reproduces.
    pub title: String,
    /// Link to its report, relative to the combined report.
    pub href: String,
}

/// How the papers' experiments were run, after "Every paper's experiment": " at the
/// paper's setup, simulated" when no run's options replaced a setting of it, otherwise
/// which options did, e.g. ", simulated, shortened with --duration 30 s: not the paper's
/// setup".
fn setup_phrase(papers: &[PaperRun<'_>]) -> String {
    let overrides: Vec<SetupOverride> = papers
        .iter()
        .filter_map(|p| p.paper)
        .flat_map(|o| o.overrides.iter().copied())
        .collect();
    if overrides.is_empty() {
        return " at the paper's setup, simulated".to_owned();
    }
    let mut options: Vec<String> = Vec::new();
    for o in &overrides {
        let option = o.option();
        if !options.contains(&option) {
            options.push(option);
        }
    }
    let verb = if overrides.iter().all(SetupOverride::shortens) {
        "shortened"
    } else if overrides.iter().any(SetupOverride::shortens) {
        "changed"
    } else {
        "lengthened"
    };
    format!(
        ", simulated, {verb} with {}: not the paper's setup (each section says by how much)",
        options.join(", ")
    )
}

/// The one-page report of `thinwire lab run papers`: a summary table of every
/// published figure of every paper, the linked reproductions that have
/// reports of their own, then a section per paper.
pub fn render_papers_report(papers: &[PaperRun<'_>], linked: &[LinkedReport]) -> String {
    let mut html = String::with_capacity(256 * 1024);
    page_start(&mut html, "thinwire lab: the papers reproduced");
    let _ = writeln!(
        html,
        "<h1>The papers reproduced</h1>\n<p>Every paper's experiment{}; each published \
         figure beside ours. One section per paper below, and each scenario's full report \
         behind its link.</p>",
        escape(&setup_phrase(papers))
    );
    html.push_str(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n<tr><th>scenario</th><th>paper</th>\
         <th>figures within tolerance</th><th>rankings that hold everywhere</th></tr>\n",
    );
    for p in papers {
        let Some(o) = p.paper else { continue };
        let (ok, n) = score(&o.comparisons);
        let orders_ok = o
            .orders
            .iter()
            .filter(|x| {
                let (k, n) = x.score();
                k == n && n > 0
            })
            .count();
        let _ = writeln!(
            html,
            "<tr><td><a href=\"#{s}\">{s}</a></td><td>{}</td><td class=\"num\">{ok} of {n}</td>\
             <td class=\"num\">{orders_ok} of {}</td></tr>",
            escape(o.info.as_ref().map_or("", |i| i.title.as_str())),
            o.orders.len(),
            s = escape(p.scenario),
        );
    }
    html.push_str("</table>\n");
    if !linked.is_empty() {
        html.push_str("<p>Reproduced with reports of their own:</p>\n<ul>\n");
        for l in linked {
            let _ = writeln!(
                html,
                "<li><a href=\"{}\">{}</a></li>",
                escape(&l.href),
                escape(&l.title)
            );
        }
        html.push_str("</ul>\n");
    }
    let _ = writeln!(
        html,
        "<h3>Every published figure</h3>\n<table>\n<tr><th>scenario</th>{COMPARISON_HEAD}</tr>"
    );
    for p in papers {
        if let Some(o) = p.paper {
            comparison_rows(&mut html, &o.comparisons, Some(p.scenario));
        }
    }
    html.push_str("</table>\n</section>\n");
    for p in papers {
        let _ = writeln!(
            html,
            "<section id=\"{s}\">\n<h2>{s}</h2>\n<p><a href=\"{}\">full report</a> \
             (summary table, latency distributions, per-class and wire figures)</p>",
            escape(&p.report_href),
            s = escape(p.scenario)
        );
        if let Some(o) = p.paper {
            let runs = p.repetitions.map_or(1, |r| r.runs);
            paper_section(&mut html, o, runs, &format!("{}-", p.scenario));
        }
        if let Some(r) = p.repetitions {
            repetitions_section(&mut html, r, &format!("{}-", p.scenario));
        }
        html.push_str("</section>\n");
    }
    page_end(&mut html);
    html
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::paper::PaperInfo;

    fn outcome(overrides: Vec<SetupOverride>) -> PaperOutcome {
        PaperOutcome {
            info: Some(PaperInfo {
                title: "A paper".into(),
                ..PaperInfo::default()
            }),
            comparisons: Vec::new(),
            orders: Vec::new(),
            overrides,
        }
    }

    fn render(outcome: &PaperOutcome) -> String {
        let run = PaperRun {
            scenario: "a-paper",
            paper: Some(outcome),
            repetitions: None,
            report_href: "a-paper/report.html".into(),
        };
        // The text as a reader sees it (apostrophes are escaped in the HTML).
        render_papers_report(&[run], &[]).replace("&#39;", "'")
    }

    #[test]
    fn the_summary_claims_the_papers_setup_only_without_overrides() {
        let html = render(&outcome(Vec::new()));
        assert!(html.contains("Every paper's experiment at the paper's setup, simulated"));
        assert!(!html.contains("Not the paper's setup"));

        let short = SetupOverride::duration(Duration::from_secs(300), Duration::from_secs(30));
        let html = render(&outcome(short.into_iter().collect()));
        assert!(!html.contains("at the paper's setup"), "{html}");
        assert!(html.contains(
            "Every paper's experiment, simulated, shortened with --duration 30 s: not the \
             paper's setup (each section says by how much); each published figure"
        ));
        // The paper's own section says by how much.
        assert!(html.contains(
            "<b>Not the paper's setup</b>: shortened with --duration 30 s (the paper's \
             setup: 300 s)."
        ));
    }
}
