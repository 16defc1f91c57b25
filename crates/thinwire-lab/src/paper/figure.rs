//! A published figure of a reproduction that runs outside the scenario runner (the gateway
//! reproductions): the figure, ours, and the verdict.

use serde::Serialize;

use super::{confidence_interval, Estimate, FigureKind, Tolerance, Verdict};

/// A published figure and ours, for a reproduction with its own runner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// What the figure is, in words.
    pub what: String,
    /// Where the paper gives it (section, table, figure), with the words relied on.
    pub source: String,
    /// The published value, in `unit`.
    pub published: f64,
    /// The unit of both values (`ms`, `%`, `kbit/s`, or empty).
    pub unit: String,
    /// Ours: the mean over runs with its 95% interval (`None`: not measured).
    pub ours: Option<Estimate>,
    /// How close ours must be.
    #[serde(skip)]
    pub tolerance: Tolerance,
    /// Whether the figure counts.
    pub kind: FigureKind,
    /// How the published value was read, or why ours may differ.
    pub note: String,
}

impl Figure {
    /// A figure measured in one run (`ours` = that run's value).
    pub fn one_run(
        what: &str,
        source: &str,
        published: f64,
        unit: &str,
        ours: Option<f64>,
        tolerance: Tolerance,
    ) -> Figure {
        Figure {
            what: what.to_owned(),
            source: source.to_owned(),
            published,
            unit: unit.to_owned(),
            ours: ours
                .filter(|v| v.is_finite())
                .and_then(|v| confidence_interval(&[v])),
            tolerance,
            kind: FigureKind::Measured,
            note: String::new(),
        }
    }

    /// The same figure with a note.
    pub fn with_note(mut self, note: &str) -> Figure {
        self.note = note.to_owned();
        self
    }

    /// The same figure with another kind.
    pub fn with_kind(mut self, kind: FigureKind) -> Figure {
        self.kind = kind;
        self
    }

    /// `matches`, `differs` or `missing`.
    pub fn verdict(&self) -> Verdict {
        match self.ours {
            None => Verdict::Missing,
            Some(e) if self.tolerance.holds(self.published, e.mean) => Verdict::Matches,
            Some(_) => Verdict::Differs,
        }
    }

    /// Ours over published.
    pub fn ratio(&self) -> Option<f64> {
        let o = self.ours?;
        (self.published != 0.0).then(|| o.mean / self.published)
    }

    /// The tolerance in words (`±15%`, `±3 pts`).
    pub fn tolerance_text(&self) -> String {
        self.tolerance.describe(&self.unit)
    }
}

/// The figures of several independent runs (each run's list in the same order, as the
/// same code produces it) as one list: ours is the mean over the runs where it is defined,
/// with a 95% interval. Runs whose list differs in length or names are an error of the
/// caller and are ignored past the first run's figures.
pub fn merge_runs(runs: &[Vec<Figure>]) -> Vec<Figure> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.get(i))
                .filter(|g| g.what == f.what)
                .filter_map(|g| g.ours.map(|e| e.mean))
                .collect();
            Figure {
                ours: confidence_interval(&values),
                ..f.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(ours: Option<f64>) -> Figure {
        Figure::one_run(
            "saving",
            "Table 1",
            30.0,
            "%",
            ours,
            Tolerance::Absolute(3.0),
        )
    }

    #[test]
    fn verdicts_follow_the_tolerance() {
        assert_eq!(fig(Some(32.9)).verdict(), Verdict::Matches);
        assert_eq!(fig(Some(33.2)).verdict(), Verdict::Differs);
        assert_eq!(fig(None).verdict(), Verdict::Missing);
        assert_eq!(fig(Some(f64::NAN)).verdict(), Verdict::Missing);
    }

    #[test]
    fn runs_merge_into_a_mean_with_an_interval() {
        let m = merge_runs(&[
            vec![fig(Some(28.0))],
            vec![fig(Some(32.0))],
            vec![fig(None)],
        ]);
        let e = m[0].ours.unwrap();
        assert_eq!(e.runs, 2);
        assert!((e.mean - 30.0).abs() < 1e-9);
        assert!(e.ci95.unwrap() > 10.0);
        assert_eq!(m[0].verdict(), Verdict::Matches);
    }
}
