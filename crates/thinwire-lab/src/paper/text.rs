//! The paper comparison as plain text (terminal) and as JSON (`paper.json`).

use serde::Serialize;

use super::{Comparison, Estimate, OrderComparison};

fn cell(e: Option<Estimate>) -> String {
    e.map_or("-".to_owned(), |e| {
        let d = if e.mean.abs() >= 100.0 {
            0
        } else if e.mean.abs() >= 10.0 {
            1
        } else {
            2
        };
        e.display(d)
    })
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
            c.verdict.as_str()
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

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
