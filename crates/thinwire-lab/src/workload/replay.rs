//! Replay of recorded traffic: a CSV trace (`time_ms,direction,size,class`)
//! or packet timing and sizes imported from a pcap file (see [`super::pcap`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::dist::Clamped;
use super::{
    AppEvent, ClassId, Direction, InstanceParams, MessageSpec, Semantics, Source, WorkloadInstance,
};
use crate::error::LabError;

/// One recorded message.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// Time since the start of the trace.
    pub at: Duration,
    /// Direction.
    pub dir: Direction,
    /// Payload size in bytes.
    pub size: u32,
    /// Message class name.
    pub class: String,
    /// Optional deadline.
    pub deadline: Option<Duration>,
}

/// Semantics inferred from a class name: `move`, `position`, `state` and
/// `update` are latest-value; `attack` and `event` unordered; anything else
/// ordered.
pub fn semantics_for(class: &str) -> Semantics {
    match class {
        "move" | "position" | "state" | "update" => Semantics::Latest,
        "attack" | "event" => Semantics::Unordered,
        _ => Semantics::Ordered,
    }
}

fn parse_ms(field: &str) -> Option<Duration> {
    let v: f64 = field.parse().ok()?;
    (v.is_finite() && (0.0..1e12).contains(&v)).then(|| Duration::from_secs_f64(v / 1000.0))
}

/// Parses a CSV trace. Columns: `time_ms,direction,size,class[,deadline_ms]`;
/// `direction` is `up` (client to server) or `down`; an optional header line
/// starting with `time` and lines starting with `#` are skipped. Times must
/// not decrease.
pub fn parse_trace_csv(text: &str, path: &Path) -> Result<Vec<TraceRow>, LabError> {
    let mut rows = Vec::new();
    let mut last = Duration::ZERO;
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let s = raw.trim();
        if s.is_empty() || s.starts_with('#') || (rows.is_empty() && s.starts_with("time")) {
            continue;
        }
        let err = |msg: String| LabError::at_line(path, line, msg);
        let f: Vec<&str> = s.split(',').map(str::trim).collect();
        if f.len() < 4 || f.len() > 5 {
            return Err(err(format!(
                "expected `time_ms,direction,size,class[,deadline_ms]`, got {} fields",
                f.len()
            )));
        }
        let at = parse_ms(f[0]).ok_or_else(|| {
            err(format!(
                "time `{}` is not a non-negative number of ms",
                f[0]
            ))
        })?;
        if at < last {
            return Err(err(format!("time {} ms goes backwards", f[0])));
        }
        last = at;
        let dir = match f[1].to_ascii_lowercase().as_str() {
            "up" | "c2s" | "client" => Direction::Up,
            "down" | "s2c" | "server" => Direction::Down,
            other => return Err(err(format!("direction `{other}` must be `up` or `down`"))),
        };
        let size: u32 = f[2]
            .parse()
            .ok()
            .filter(|&s| s > 0 && s <= 1_000_000)
            .ok_or_else(|| {
                err(format!(
                    "size `{}` must be an integer between 1 and 1000000",
                    f[2]
                ))
            })?;
        if f[3].is_empty() {
            return Err(err("class is empty".into()));
        }
        let deadline = match f.get(4) {
            Some(d) if !d.is_empty() => Some(
                parse_ms(d).ok_or_else(|| err(format!("deadline `{d}` is not a number of ms")))?,
            ),
            _ => None,
        };
        rows.push(TraceRow {
            at,
            dir,
            size,
            class: f[3].to_owned(),
            deadline,
        });
    }
    if rows.is_empty() {
        return Err(LabError::at_line(
            path,
            text.lines().count().max(1),
            "trace has no rows",
        ));
    }
    Ok(rows)
}

/// Reads and parses a CSV trace file.
pub fn load_trace_csv(path: &Path) -> Result<Vec<TraceRow>, LabError> {
    let text = std::fs::read_to_string(path).map_err(|e| LabError::io(path, e))?;
    parse_trace_csv(&text, path)
}

/// Every client replays the same recorded rows.
#[derive(Debug, Clone)]
pub struct ReplayWorkload {
    /// The rows.
    pub rows: Arc<Vec<TraceRow>>,
    /// Where they came from (for reports).
    pub origin: String,
    /// Target success rate of the rows' deadlines (default
    /// [`DEFAULT_DEADLINE_TARGET`](super::DEFAULT_DEADLINE_TARGET)).
    pub target: f64,
    /// Each client starts at a random offset in `[0, phase)`.
    pub phase: Duration,
    /// Repeat the trace until the end of the run.
    pub looped: bool,
}

impl ReplayWorkload {
    pub(super) fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams) {
        let mut class_ids: Vec<(String, ClassId)> = Vec::new();
        let mut row_class = Vec::with_capacity(self.rows.len());
        for r in self.rows.iter() {
            let id = match class_ids.iter().find(|(n, _)| *n == r.class) {
                Some(&(_, id)) => id,
                None => {
                    let id = inst.class(&r.class, semantics_for(&r.class));
                    class_ids.push((r.class.clone(), id));
                    id
                }
            };
            row_class.push(id);
        }
        let row_class = Arc::new(row_class);
        // Period of a loop: last time plus the mean gap.
        let span = self.rows.last().map_or(Duration::ZERO, |r| r.at);
        let period = span + span / (self.rows.len() as u32).max(1) + Duration::from_millis(1);
        for client in 0..p.clients {
            let mut rng = crate::seed::rng(p.seed, crate::seed::REPLAY, u64::from(client));
            let offset = if self.phase.is_zero() {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(
                    Clamped::uniform(0.0, self.phase.as_secs_f64()).sample(&mut rng),
                )
            };
            inst.sources.push(Box::new(ReplaySource {
                client,
                target: self.target,
                rows: Arc::clone(&self.rows),
                classes: Arc::clone(&row_class),
                idx: 0,
                base: offset,
                period,
                looped: self.looped,
                end: p.duration,
            }));
        }
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "replay of {} ({} rows{})",
            self.origin,
            self.rows.len(),
            if self.looped { ", looped" } else { "" }
        )
    }
}

struct ReplaySource {
    client: u32,
    target: f64,
    rows: Arc<Vec<TraceRow>>,
    classes: Arc<Vec<ClassId>>,
    idx: usize,
    base: Duration,
    period: Duration,
    looped: bool,
    end: Duration,
}

impl Source for ReplaySource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.idx >= self.rows.len() {
            if !self.looped {
                return None;
            }
            self.idx = 0;
            self.base += self.period;
        }
        let r = &self.rows[self.idx];
        let at = self.base + r.at;
        if at >= self.end {
            return None;
        }
        let class = self.classes[self.idx];
        self.idx += 1;
        Some(AppEvent {
            at,
            client: self.client,
            dir: r.dir,
            msg: MessageSpec {
                class,
                size: r.size,
                deadline: r.deadline,
                target: self.target,
                key: 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_and_skips_header_and_comments() {
        let text = "time_ms,direction,size,class\n# comment\n0,up,25,move\n10.5,down,114,state\n20,up,30,talk,500\n";
        let rows = parse_trace_csv(text, Path::new("t.csv")).expect("valid");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].at, Duration::from_micros(10_500));
        assert_eq!(rows[1].dir, Direction::Down);
        assert_eq!(rows[2].deadline, Some(Duration::from_millis(500)));
    }

    #[test]
    fn bad_rows_name_file_and_line() {
        let cases = [
            ("0,up,25,move\n5,sideways,10,x\n", 2, "direction"),
            ("0,up,25,move\nabc,up,10,x\n", 2, "time"),
            ("0,up,0,move\n", 1, "size"),
            ("10,up,5,move\n5,up,5,move\n", 2, "backwards"),
            ("0,up,5\n", 1, "fields"),
            ("# nothing\n", 1, "no rows"),
        ];
        for (text, line, needle) in cases {
            let e = parse_trace_csv(text, Path::new("bad.csv")).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("bad.csv:{line}:")), "{msg}");
            assert!(msg.contains(needle), "{msg}");
        }
    }

    #[test]
    fn replay_loops_and_offsets() {
        let rows = parse_trace_csv("0,down,10,a\n100,down,10,a\n", Path::new("t")).expect("valid");
        let w = ReplayWorkload {
            rows: Arc::new(rows),
            origin: "t".into(),
            target: crate::workload::DEFAULT_DEADLINE_TARGET,
            phase: Duration::ZERO,
            looped: true,
        };
        let mut inst = WorkloadInstance::new();
        w.instantiate(
            &mut inst,
            &InstanceParams {
                clients: 1,
                duration: Duration::from_millis(500),
                seed: 0,
            },
        );
        let ev: Vec<_> = std::iter::from_fn(|| inst.sources[0].next_event()).collect();
        let times: Vec<u128> = ev.iter().map(|e| e.at.as_millis()).collect();
        assert_eq!(times, vec![0, 100, 151, 251, 302, 402, 453]);
    }
}
