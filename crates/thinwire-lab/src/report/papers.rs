//! The one-page report of `thinwire lab run papers`: the score over every paper, a summary
//! per paper, every published figure (the gateway reproductions' too), then each paper's
//! section.

use std::fmt::Write as _;

use thinwire_report::escape;
use thinwire_report::html::{page_end, page_start};

use super::paper::{
    comparison_rows, figure_rows, paper_section, repetitions_section, COMPARISON_HEAD,
};
use crate::metrics::Repetitions;
use crate::paper::{Figure, FigureKind, PaperJson, PaperOutcome, SetupOverride, Verdict};

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

/// A reproduction with a runner and a report of its own (the gateway's), linked from the
/// papers report; its published figures join the summary.
#[derive(Debug, Clone)]
pub struct LinkedReport {
    /// Its name where a scenario's would stand (e.g. `gateway-tcm`).
    pub name: String,
    /// What it reproduces.
    pub title: String,
    /// Link to its report, relative to the combined report.
    pub href: String,
    /// Its published figures beside ours.
    pub figures: Vec<Figure>,
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

/// The one-page report of `thinwire lab run papers`: the score, a summary table of every
/// paper, every published figure (the linked reproductions' too), then a section per paper.
pub fn render_papers_report(papers: &[PaperRun<'_>], linked: &[LinkedReport]) -> String {
    let mut html = String::with_capacity(256 * 1024);
    page_start(&mut html, "thinwire lab: the papers reproduced");
    let mut json = PaperJson::default();
    for p in papers {
        if let Some(o) = p.paper {
            json.add(p.scenario, &o.comparisons, &o.orders);
        }
    }
    for l in linked {
        json.add_figures(&l.name, &l.figures);
    }
    let _ = writeln!(
        html,
        "<h1>The papers reproduced</h1>\n<p>Every paper's experiment{}; each published \
         figure beside ours. One section per paper below, and each scenario's full report \
         behind its link.</p>\n<p><b>{}.</b> A figure the configuration itself determines \
         (e.g. a share that is one minus the configured loss) is shown with its verdict but \
         not counted; a figure measured on a population of our own making is counted \
         apart.</p>",
        escape(&setup_phrase(papers)),
        escape(&json.score().line())
    );
    summary_table(&mut html, papers, linked);
    let _ = writeln!(
        html,
        "<h3>Every published figure</h3>\n<table>\n<tr><th>scenario</th>{COMPARISON_HEAD}</tr>"
    );
    for p in papers {
        if let Some(o) = p.paper {
            comparison_rows(&mut html, &o.comparisons, Some(p.scenario));
        }
    }
    for l in linked {
        figure_rows(&mut html, &l.figures, &l.name);
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

/// The summary: one row per paper's scenario and per linked reproduction.
fn summary_table(html: &mut String, papers: &[PaperRun<'_>], linked: &[LinkedReport]) {
    html.push_str(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n<tr><th>scenario</th><th>paper</th>\
         <th>counted figures within tolerance</th><th>not counted</th>\
         <th>rankings that hold everywhere</th></tr>\n",
    );
    for p in papers {
        let Some(o) = p.paper else { continue };
        let kinds: Vec<FigureKind> = o.comparisons.iter().map(|c| c.published.kind).collect();
        let verdicts: Vec<Verdict> = o.comparisons.iter().map(|c| c.verdict).collect();
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
            "<tr><td><a href=\"#{s}\">{s}</a></td><td>{}</td>{}<td class=\"num\">{orders_ok} of {}</td></tr>",
            escape(o.info.as_ref().map_or("", |i| i.title.as_str())),
            score_cells(&kinds, &verdicts),
            o.orders.len(),
            s = escape(p.scenario),
        );
    }
    for l in linked {
        let kinds: Vec<FigureKind> = l.figures.iter().map(|f| f.kind).collect();
        let verdicts: Vec<Verdict> = l.figures.iter().map(Figure::verdict).collect();
        let _ = writeln!(
            html,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td>{}<td class=\"num\">-</td></tr>",
            escape(&l.href),
            escape(&l.name),
            escape(&l.title),
            score_cells(&kinds, &verdicts),
        );
    }
    html.push_str("</table>\n");
}

/// `k of n` counted figures within tolerance, and what is not counted.
fn score_cells(kinds: &[FigureKind], verdicts: &[Verdict]) -> String {
    let count = |kind: FigureKind| {
        let of_kind = || kinds.iter().zip(verdicts).filter(move |(k, _)| **k == kind);
        let ok = of_kind().filter(|(_, v)| **v == Verdict::Matches).count();
        (ok, of_kind().count())
    };
    let (ok, n) = count(FigureKind::Measured);
    let mut apart = Vec::new();
    let (fk, fixed) = count(FigureKind::FixedBySetup);
    if fixed > 0 {
        apart.push(format!(
            "{fixed} fixed by the setup ({fk} within tolerance)"
        ));
    }
    let (sk, synthetic) = count(FigureKind::SyntheticPopulation);
    if synthetic > 0 {
        apart.push(format!(
            "{synthetic} on a synthetic population ({sk} within tolerance)"
        ));
    }
    format!(
        "<td class=\"num\">{ok} of {n}</td><td>{}</td>",
        escape(&apart.join("; "))
    )
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
