//! The paper comparison as plain text (terminal) and as JSON (`paper.json`).

use serde::Serialize;

use super::{decimals, Comparison, Estimate, Figure, FigureKind, OrderComparison, Verdict};

fn cell(e: Option<Estimate>) -> String {
    e.map_or("-".to_owned(), |e| e.display(decimals(e.mean)))
}

/// A terminal table: figure, published, ours, ratio, verdict; then the rankings.
pub fn comparison_table(comparisons: &[Comparison], orders: &[OrderComparison]) -> String {
    let mut out = String::new();
    if !comparisons.is_empty() {
        out.push_str(&format!(
            "{:<3} {:<58} {:>11} {:>18} {:>7} {:>9}\n",
            "#", "published figure", "published", "ours", "ratio", "verdict"
        ));
    }
    for (i, c) in comparisons.iter().enumerate() {
        let mut what = c.published.what.clone();
        if what.chars().count() > 58 {
            what = what.chars().take(57).collect::<String>() + "…";
        }
        out.push_str(&format!(
            "{:<3} {:<58} {:>11} {:>18} {:>7} {:>9}\n",
            i + 1,
            what,
            format!("{}{}", c.published.value, c.published.metric.unit()),
            cell(c.ours()),
            c.ratio().map_or("-".to_owned(), |r| format!("{r:.2}")),
            match c.published.kind {
                FigureKind::Measured => c.verdict.as_str().to_owned(),
                kind => format!("{} ({})", c.verdict.as_str(), kind.label()),
            }
        ));
        for (point, e) in c.columns.iter().skip(1) {
            out.push_str(&format!(
                "{:<3} {:<58} {:>11} {:>18}\n",
                "",
                format!("  at {point}"),
                "",
                cell(*e)
            ));
        }
    }
    for o in orders {
        let (k, n) = o.score();
        out.push_str(&format!(
            "ranking `{}`: holds at {k} of {n} points\n",
            o.order.what
        ));
    }
    out
}

/// One figure of `paper.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FigureJson {
    /// Scenario.
    pub scenario: String,
    /// The figure in words.
    pub what: String,
    /// Where the paper gives it.
    pub source: String,
    /// The published value.
    pub published: f64,
    /// Ours at the paper's setup (mean over runs).
    pub ours: Option<f64>,
    /// Half-width of the 95% confidence interval.
    pub ci95: Option<f64>,
    /// Runs that gave a value.
    pub runs: usize,
    /// `matches`, `differs` or `missing`.
    pub verdict: String,
    /// The tolerance (`±15%`, `±3 pts`).
    pub tolerance: String,
    /// Whether the figure counts: `measured` figures are counted, `fixed_by_setup` ones are
    /// not, `synthetic_population` ones are counted apart.
    pub kind: FigureKind,
}

/// One ranking of `paper.json`.
#[derive(Debug, Clone, Serialize)]
pub struct OrderJson {
    /// Scenario.
    pub scenario: String,
    /// The ranking in words.
    pub what: String,
    /// Points where it holds.
    pub holds: usize,
    /// Points checked.
    pub points: usize,
}

/// How many figures match, by kind ([`PaperJson::score`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PaperScore {
    /// Counted figures (measured at the paper's setup).
    pub counted: usize,
    /// Counted figures within tolerance.
    pub counted_matches: usize,
    /// Figures the configuration fixes (not counted).
    pub fixed: usize,
    /// Of those, within tolerance.
    pub fixed_matches: usize,
    /// Figures on a synthetic population (counted apart).
    pub synthetic: usize,
    /// Of those, within tolerance.
    pub synthetic_matches: usize,
}

impl PaperScore {
    /// One line: `38 of 70 counted figures within tolerance; 7 fixed by the setup (not
    /// counted); synthetic population: 20 of 42`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} of {} counted figures within tolerance",
            self.counted_matches, self.counted
        );
        if self.fixed > 0 {
            s.push_str(&format!(
                "; {} fixed by the setup (not counted, {} within tolerance)",
                self.fixed, self.fixed_matches
            ));
        }
        if self.synthetic > 0 {
            s.push_str(&format!(
                "; on a synthetic population (counted apart): {} of {}",
                self.synthetic_matches, self.synthetic
            ));
        }
        s
    }
}

/// The machine-readable comparison of one or more scenarios.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PaperJson {
    /// Every published figure.
    pub figures: Vec<FigureJson>,
    /// Every published ranking.
    pub orders: Vec<OrderJson>,
}

impl PaperJson {
    /// Adds a scenario's comparisons.
    pub fn add(&mut self, scenario: &str, comparisons: &[Comparison], orders: &[OrderComparison]) {
        for c in comparisons {
            let e = c.ours();
            self.figures.push(FigureJson {
                scenario: scenario.to_owned(),
                what: c.published.what.clone(),
                source: c.published.source.clone(),
                published: c.published.value,
                ours: e.map(|e| e.mean),
                ci95: e.and_then(|e| e.ci95),
                runs: e.map_or(0, |e| e.runs),
                verdict: c.verdict.as_str().to_owned(),
                tolerance: c.published.tolerance.describe(c.published.metric.unit()),
                kind: c.published.kind,
            });
        }
        for o in orders {
            let (holds, points) = o.score();
            self.orders.push(OrderJson {
                scenario: scenario.to_owned(),
                what: o.order.what.clone(),
                holds,
                points,
            });
        }
    }

    /// Adds the figures of a reproduction with its own runner (`section` names it where a
    /// scenario's name would stand, e.g. `gateway-tcm`).
    pub fn add_figures(&mut self, section: &str, figures: &[Figure]) {
        for f in figures {
            self.figures.push(FigureJson {
                scenario: section.to_owned(),
                what: f.what.clone(),
                source: f.source.clone(),
                published: f.published,
                ours: f.ours.map(|e| e.mean),
                ci95: f.ours.and_then(|e| e.ci95),
                runs: f.ours.map_or(0, |e| e.runs),
                verdict: f.verdict().as_str().to_owned(),
                tolerance: f.tolerance_text(),
                kind: f.kind,
            });
        }
    }

    /// Matches and totals by kind of figure.
    pub fn score(&self) -> PaperScore {
        let mut s = PaperScore::default();
        for f in &self.figures {
            let ok = f.verdict == Verdict::Matches.as_str();
            let (m, n) = match f.kind {
                FigureKind::Measured => (&mut s.counted_matches, &mut s.counted),
                FigureKind::FixedBySetup => (&mut s.fixed_matches, &mut s.fixed),
                FigureKind::SyntheticPopulation => (&mut s.synthetic_matches, &mut s.synthetic),
            };
            *n += 1;
            *m += usize::from(ok);
        }
        s
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
