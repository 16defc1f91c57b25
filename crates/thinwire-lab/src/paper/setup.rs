//! Whether a run kept the paper's setup: the scenario settings that a run's options
//! replaced, so that a report claims "at the paper's setup" only when none was.

use std::fmt;
use std::time::Duration;

/// A setting of a paper's setup (the scenario as written) that a run's options replaced.
///
/// Only options that change the experiment count: `--seed` picks another random draw of the
/// same setup and `--runs` another number of repetitions of it, so neither is an override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupOverride {
    /// `--duration`: simulated seconds of traffic.
    Duration {
        /// The scenario's (the paper's setup).
        setup: Duration,
        /// The run's.
        run: Duration,
    },
}

impl SetupOverride {
    /// The duration override of a run of `run` seconds of a scenario of `setup` seconds, or
    /// `None` when they are the same.
    pub fn duration(setup: Duration, run: Duration) -> Option<SetupOverride> {
        (setup != run).then_some(SetupOverride::Duration { setup, run })
    }

    /// The option as given, e.g. `--duration 30 s`.
    pub fn option(&self) -> String {
        match self {
            SetupOverride::Duration { run, .. } => format!("--duration {}", seconds(*run)),
        }
    }

    /// Whether the run is shorter than the paper's setup.
    pub fn shortens(&self) -> bool {
        match self {
            SetupOverride::Duration { setup, run } => run < setup,
        }
    }
}

/// `30 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl fmt::Display for SetupOverride {
    /// E.g. `shortened with --duration 30 s (the paper's setup: 300 s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupOverride::Duration { setup, .. } => write!(
                f,
                "{} with {} (the paper's setup: {})",
                if self.shortens() {
                    "shortened"
                } else {
                    "lengthened"
                },
                self.option(),
                seconds(*setup)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_override_says_what_it_changed() {
        let s = Duration::from_secs;
        assert_eq!(SetupOverride::duration(s(300), s(300)), None);
        let short = SetupOverride::duration(s(300), s(30)).unwrap();
        assert!(short.shortens());
        assert_eq!(short.option(), "--duration 30 s");
        assert_eq!(
            short.to_string(),
            "shortened with --duration 30 s (the paper's setup: 300 s)"
        );
        let long = SetupOverride::duration(s(30), Duration::from_millis(45_500)).unwrap();
        assert_eq!(
            long.to_string(),
            "lengthened with --duration 45.5 s (the paper's setup: 30 s)"
        );
    }
}
