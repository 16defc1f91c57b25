//! Per-packet loss/delay traces.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// One packet's fate in a [`Trace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEntry {
    /// One-way delay of the packet if it is delivered.
    pub delay: Duration,
    /// Whether the packet is lost.
    pub lost: bool,
}

/// A per-packet loss/delay trace, applied to packets in send order and cycled
/// when exhausted.
///
/// Text format: one packet per line, `delay_ms,lost` where `delay_ms` is a
/// non-negative decimal number and `lost` is `0` or `1`. Blank lines and lines
/// starting with `#` are ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    entries: Vec<TraceEntry>,
}

/// A malformed trace line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

/// Failure to load a trace file.
#[derive(Debug, thiserror::Error)]
pub enum TraceLoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file has a malformed line.
    #[error("{path}:{}: {}", .source.line, .source.msg)]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: TraceError,
    },
}

impl Trace {
    /// Builds a trace from entries. Returns `None` when `entries` is empty.
    pub fn from_entries(entries: Vec<TraceEntry>) -> Option<Trace> {
        if entries.is_empty() {
            None
        } else {
            Some(Trace { entries })
        }
    }

    /// Parses the text format described on [`Trace`].
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut entries = Vec::new();
        for (idx, raw) in text.lines().enumerate() {
            let line = idx + 1;
            let s = raw.trim();
            if s.is_empty() || s.starts_with('#') {
                continue;
            }
            let err = |msg: String| TraceError { line, msg };
            let mut fields = s.split(',').map(str::trim);
            let (Some(d), Some(l), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(err(format!("expected `delay_ms,lost`, got `{s}`")));
            };
            let delay_ms: f64 = d
                .parse()
                .map_err(|_| err(format!("delay `{d}` is not a number")))?;
            if !(0.0..=1e9).contains(&delay_ms) {
                return Err(err(format!("delay `{d}` must be between 0 and 1e9 ms")));
            }
            let lost = match l {
                "0" => false,
                "1" => true,
                _ => return Err(err(format!("lost flag `{l}` must be 0 or 1"))),
            };
            entries.push(TraceEntry {
                delay: Duration::from_secs_f64(delay_ms / 1000.0),
                lost,
            });
        }
        Trace::from_entries(entries).ok_or(TraceError {
            line: text.lines().count().max(1),
            msg: "trace has no entries".into(),
        })
    }

    /// Reads and parses a trace file.
    pub fn from_file(path: &Path) -> Result<Trace, TraceLoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceLoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        Trace::parse(&text).map_err(|source| TraceLoadError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// The entries in order.
    pub fn entries(&self) -> &[TraceEntry] {
        &self.entries
    }

    /// Number of entries (one cycle).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always `false`: a trace has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry for the `n`-th packet (0-based), cycling.
    pub fn entry(&self, n: u64) -> TraceEntry {
        self.entries[(n % self.entries.len() as u64) as usize]
    }
}
