//! Exact latency samples, kept for the report's distribution plots.

/// The sorted delivered latencies of one row (protocol, class or all classes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleSeries {
    /// Protocol name.
    pub protocol: String,
    /// Whether the protocol is a simulator model.
    pub model: bool,
    /// Message class, or `None` for all classes of the protocol together.
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

/// Latency samples per (protocol, class), in the same order as [`super::Results::runs`].
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

    /// The series of `protocol` for `class` (`None`: all classes).
    pub fn get(&self, protocol: &str, class: Option<&str>) -> Option<&SampleSeries> {
        self.series
            .iter()
            .find(|s| s.protocol == protocol && s.class.as_deref() == class)
    }

    /// The all-classes series, one per protocol, in order.
    pub fn protocol_series(&self) -> impl Iterator<Item = &SampleSeries> {
        self.series.iter().filter(|s| s.class.is_none())
    }
}
