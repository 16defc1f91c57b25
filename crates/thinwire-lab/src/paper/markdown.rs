//! `docs/results/papers.md`: the comparison of `thinwire lab run papers` as Markdown, written
//! by `thinwire lab run papers --markdown FILE`, with the command, the commit, the machine and
//! the date that produced it; [`figure_rows_of_markdown`] reads the figures back (the test
//! that keeps the document and the scenarios listing the same figures).

use std::fmt::Write as _;

use super::{decimals, FigureJson, FigureKind, PaperJson};

/// Where and how a results document was produced.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// The command that wrote it.
    pub command: String,
    /// The commit measured (`git rev-parse --short HEAD`), if known.
    pub commit: Option<String>,
    /// The machine, e.g. `2 cores, AMD EPYC 7B13`.
    pub machine: String,
    /// The date, `YYYY-MM-DD`.
    pub date: String,
    /// Wall time of the run.
    pub wall: String,
}

/// One scenario's or reproduction's calibrations, for the document's list.
#[derive(Debug, Clone)]
pub struct Calibrations {
    /// Scenario or reproduction name.
    pub name: String,
    /// Each calibration in words.
    pub items: Vec<String>,
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn value(v: f64) -> String {
    format!("{v:.*}", decimals(v))
}

fn ours(f: &FigureJson) -> String {
    match (f.ours, f.ci95) {
        (Some(o), Some(h)) => format!("{} ± {}", value(o), value(h)),
        (Some(o), None) => value(o),
        _ => "-".to_owned(),
    }
}

/// The header of the figure tables (the first two columns are what
/// [`figure_rows_of_markdown`] reads).
const HEAD: &str = "| scenario | published figure | source | published | ours (± 95% CI) | \
                    ours / published | tolerance | verdict |\n|---|---|---|---|---|---|---|---|\n";

fn table(out: &mut String, figures: &[&FigureJson]) {
    out.push_str(HEAD);
    for f in figures {
        let ratio = match f.ours {
            Some(o) if f.published != 0.0 => format!("{:.2}", o / f.published),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&f.scenario),
            cell(&f.what),
            cell(&f.source),
            value(f.published),
            ours(f),
            ratio,
            cell(&f.tolerance),
            f.verdict
        );
    }
}

/// The whole document.
pub fn papers_markdown(
    json: &PaperJson,
    calibrations: &[Calibrations],
    how: &Provenance,
) -> String {
    let mut out = String::from("# The papers reproduced\n\n");
    let most = json.figures.iter().map(|f| f.runs).max().unwrap_or(0);
    let least = json
        .figures
        .iter()
        .map(|f| f.runs)
        .filter(|&r| r > 0)
        .min()
        .unwrap_or(most);
    let runs = if least == most {
        format!("{most}")
    } else {
        format!("{least} to {most} (a scenario whose paper's figures need more runs asks for them)")
    };
    let _ =
        writeln!(
        out,
        "Written by `{}` at commit `{}` on {} ({}; {} wall time). Ours is the mean over {runs} \
         independent seeds{} with its 95% confidence interval (Student's t). The full report, \
         with every section, ranking, setup choice and figure, is `lab-out/report.html`; how \
         each experiment is set up and why ours differs where it does: \
         [../REPRODUCING.md](../REPRODUCING.md).\n",
        how.command,
        how.commit.as_deref().unwrap_or("unknown"),
        how.date,
        how.machine,
        how.wall,
        if most == 1 { " (one seed: no interval)" } else { "" },
    );
    let score = json.score();
    let _ = writeln!(
        out,
        "**{}.** A figure is *counted* when it is measured at the paper's setup. A figure the \
         configuration itself determines (e.g. a share equal to one minus the configured loss \
         rate) is listed apart and not counted; a figure measured on a population of our own \
         making (constrained by what the paper publishes about its population) is counted \
         apart. The tolerance is the one each scenario states.\n",
        score.line()
    );
    let of = |kind: FigureKind| -> Vec<&FigureJson> {
        json.figures.iter().filter(|f| f.kind == kind).collect()
    };
    for (kind, title) in [
        (FigureKind::Measured, "Counted figures"),
        (
            FigureKind::FixedBySetup,
            "Figures the setup fixes (not counted)",
        ),
        (
            FigureKind::SyntheticPopulation,
            "Figures on a synthetic population (counted apart)",
        ),
    ] {
        let figures = of(kind);
        if figures.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {title}\n");
        table(&mut out, &figures);
        out.push('\n');
    }
    if !json.orders.is_empty() {
        out.push_str("## Published rankings\n\n| scenario | ranking (best first) | holds at |\n|---|---|---|\n");
        for o in &json.orders {
            let _ = writeln!(
                out,
                "| {} | {} | {} of {} points |",
                cell(&o.scenario),
                cell(&o.what),
                o.holds,
                o.points
            );
        }
        out.push('\n');
    }
    if calibrations.iter().any(|c| !c.items.is_empty()) {
        out.push_str(
            "## Calibrations\n\nEach sets a free parameter of a setup so that the setup meets a \
             fact the paper states about it (a loss rate, a load), never a result.\n\n",
        );
        for c in calibrations.iter().filter(|c| !c.items.is_empty()) {
            for item in &c.items {
                let _ = writeln!(out, "- **{}**: {}", c.name, item.replace('\n', " "));
            }
        }
        out.push('\n');
    }
    out
}

/// The (scenario, figure) pairs of every figure table of a document [`papers_markdown`]
/// wrote, in order.
pub fn figure_rows_of_markdown(text: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| scenario | published figure |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let cells = split_cells(line);
        if cells.len() >= 2 {
            rows.push((cells[0].clone(), cells[1].clone()));
        }
    }
    rows
}

/// The cells of a Markdown table row, `\|` unescaped.
fn split_cells(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = line.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_owned()),
            c => cur.push(c),
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(scenario: &str, what: &str, kind: FigureKind, verdict: &str) -> FigureJson {
        FigureJson {
            scenario: scenario.into(),
            what: what.into(),
            source: "Table 2".into(),
            published: 30.0,
            ours: Some(29.0),
            ci95: Some(1.5),
            runs: 10,
            verdict: verdict.into(),
            tolerance: "±3 pts".into(),
            kind,
        }
    }

    #[test]
    fn the_document_lists_every_figure_and_reads_back() {
        let json = PaperJson {
            figures: vec![
                fig("wu", "GSI | ratio", FigureKind::Measured, "matches"),
                fig("petlund", "98% share", FigureKind::FixedBySetup, "matches"),
                fig("wild", "p99", FigureKind::SyntheticPopulation, "differs"),
            ],
            orders: Vec::new(),
        };
        let md = papers_markdown(&json, &[], &Provenance::default());
        assert!(
            md.contains("1 of 1 counted figures within tolerance"),
            "{md}"
        );
        assert!(md.contains("## Figures the setup fixes (not counted)"));
        assert!(md.contains("29.0 ± 1.50"));
        let rows = figure_rows_of_markdown(&md);
        let want: Vec<(String, String)> = json
            .figures
            .iter()
            .map(|f| (f.scenario.clone(), f.what.clone()))
            .collect();
        assert_eq!(rows, want);
    }
}
