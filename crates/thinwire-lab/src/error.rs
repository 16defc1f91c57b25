//! Errors of the lab.

use std::path::PathBuf;

/// An error of the lab: bad input files, unknown names, I/O.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A malformed input file (scenario, trace, CSV, pcap) at a location.
    #[error("{}:{location}: {msg}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// Where in the file: a line number, or e.g. `packet 12`.
        location: String,
        /// What is wrong.
        msg: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A scenario name that is neither built in nor an existing file.
    #[error(
        "unknown scenario `{0}`: not a built-in name (see `thinwire lab list`) and no such file"
    )]
    UnknownScenario(String),
    /// An invalid parameter value outside any file (e.g. a command-line flag).
    #[error("{0}")]
    Invalid(String),
}

impl LabError {
    /// An input error at a 1-based line.
    pub fn at_line(path: impl Into<PathBuf>, line: usize, msg: impl Into<String>) -> Self {
        LabError::Input {
            path: path.into(),
            location: line.to_string(),
            msg: msg.into(),
        }
    }

    /// An I/O error on a file.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LabError::Io {
            path: path.into(),
            source,
        }
    }
}
