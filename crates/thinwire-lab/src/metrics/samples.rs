//! Exact latency samples, kept for the report's distribution plots.

use super::results::RunKey;

/// The sorted delivered latencies of one row (run, class or all classes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleSeries {
    /// The run: protocol and sweep point.
    pub key: RunKey,
    /// Whether the protocol is a simulator model.
    pub model: bool,
    /// Message class, or `None` for all classes of the run together.
    pub class: Option<String>,
    /// Delivered latencies in microseconds, ascending.
    pub latencies_us: Vec<u64>,
}

impl SampleSeries {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.latencies_us.len()
    }

    /// Whether the series has no sample (nothing delivered).
    pub fn is_empty(&self) -> bool {
        self.latencies_us.is_empty()
    }
}

/// Latency samples per (run, class), in the same order as [`super::Results::runs`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    series: Vec<SampleSeries>,
}

impl Samples {
    /// Builds a sample set from series, sorting each series' latencies.
    ///
    /// Meant for the recorder and for tests and tools that synthesise samples.
    pub fn from_series(mut series: Vec<SampleSeries>) -> Samples {
        for s in &mut series {
            s.latencies_us.sort_unstable();
        }
        Samples { series }
    }

    /// All series, in row order.
    pub fn series(&self) -> &[SampleSeries] {
        &self.series
    }

    /// The series of the run `key` for `class` (`None`: all classes).
    pub fn get(&self, key: &RunKey, class: Option<&str>) -> Option<&SampleSeries> {
        self.series
            .iter()
            .find(|s| s.key == *key && s.class.as_deref() == class)
    }

    /// The all-classes series, one per run, in order.
    pub fn protocol_series(&self) -> impl Iterator<Item = &SampleSeries> {
        self.series.iter().filter(|s| s.class.is_none())
    }
}
