//! Concurrent messaging: one large message per interval to every client, each
//! with a deadline.

use std::time::Duration;

use super::dist::Clamped;
use super::{
    ms, AppEvent, ClassId, Direction, InstanceParams, MessageSpec, Semantics, Source,
    WorkloadInstance, DEFAULT_DEADLINE_TARGET,
};

/// Parameters of the concurrent-messaging workload.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagingWorkload {
    /// Message size in bytes (default 2048).
    pub size: u32,
    /// Interval between messages to one client (default 1 s).
    pub interval: Duration,
    /// Deadline of every message (default 1 s).
    pub deadline: Duration,
    /// Wanted probability of meeting the deadline (default
    /// [`DEFAULT_DEADLINE_TARGET`], 0.999).
    pub target: f64,
    /// Time of the first message (default 0). A start after connection setup
    /// keeps the handshake of connection-oriented transports out of the
    /// measured latencies, as for a game whose players are connected before
    /// the broadcast.
    pub start: Duration,
    /// Direction (default server to clients).
    pub direction: Direction,
    /// Class name (default `"bulk"`).
    pub class: String,
    /// Whether all clients get their message at the same instant (default
    /// `true`, the worst case for a shared bottleneck); otherwise each client
    /// has a random phase.
    pub synchronized: bool,
}

impl Default for MessagingWorkload {
    fn default() -> Self {
        MessagingWorkload {
            size: 2048,
            interval: Duration::from_secs(1),
            deadline: Duration::from_secs(1),
            target: DEFAULT_DEADLINE_TARGET,
            start: Duration::ZERO,
            direction: Direction::Down,
            class: "bulk".into(),
            synchronized: true,
        }
    }
}

impl MessagingWorkload {
    pub(super) fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams) {
        let class = inst.class(&self.class, Semantics::Ordered);
        let interval_ms = self.interval.as_secs_f64() * 1000.0;
        for client in 0..p.clients {
            let mut rng = crate::seed::rng(p.seed, crate::seed::MESSAGING, u64::from(client));
            let phase = if self.synchronized {
                0.0
            } else {
                Clamped::uniform(0.0, interval_ms).sample(&mut rng)
            };
            let phase = phase + self.start.as_secs_f64() * 1000.0;
            inst.sources.push(Box::new(MessagingSource {
                client,
                class,
                w: self.clone(),
                t_ms: phase,
                interval_ms: interval_ms.max(0.001),
                end_ms: p.duration.as_secs_f64() * 1000.0,
            }));
        }
    }

    pub(super) fn describe(&self) -> String {
        let mut s = format!(
            "concurrent messaging: {} B every {} ms to every client ({}), deadline {} ms",
            self.size,
            self.interval.as_millis(),
            self.direction.as_str(),
            self.deadline.as_millis()
        );
        if self.target != DEFAULT_DEADLINE_TARGET {
            s.push_str(&format!(" (target {}%)", self.target * 100.0));
        }
        if !self.start.is_zero() {
            s.push_str(&format!(", first message at {} ms", self.start.as_millis()));
        }
        s
    }
}

struct MessagingSource {
    client: u32,
    class: ClassId,
    w: MessagingWorkload,
    t_ms: f64,
    interval_ms: f64,
    end_ms: f64,
}

impl Source for MessagingSource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.t_ms >= self.end_ms {
            return None;
        }
        let at = ms(self.t_ms);
        self.t_ms += self.interval_ms;
        Some(AppEvent {
            at,
            client: self.client,
            dir: self.w.direction,
            msg: MessageSpec {
                class: self.class,
                size: self.w.size,
                deadline: Some(self.w.deadline),
                target: self.w.target,
                key: 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_per_interval_per_client() {
        let w = MessagingWorkload::default();
        let mut inst = WorkloadInstance::new();
        w.instantiate(
            &mut inst,
            &InstanceParams {
                clients: 3,
                duration: Duration::from_secs(10),
                seed: 1,
            },
        );
        assert_eq!(inst.sources.len(), 3);
        for src in &mut inst.sources {
            let ev: Vec<_> = std::iter::from_fn(|| src.next_event()).collect();
            assert_eq!(ev.len(), 10);
            assert!(ev
                .iter()
                .all(|e| e.msg.size == 2048 && e.msg.deadline == Some(Duration::from_secs(1))));
            assert!(ev.iter().all(|e| e.msg.target == DEFAULT_DEADLINE_TARGET));
        }
    }

    #[test]
    fn start_delays_the_first_message_and_target_is_carried() {
        let w = MessagingWorkload {
            start: Duration::from_secs(2),
            target: 0.99,
            ..MessagingWorkload::default()
        };
        let mut inst = WorkloadInstance::new();
        w.instantiate(
            &mut inst,
            &InstanceParams {
                clients: 2,
                duration: Duration::from_secs(10),
                seed: 1,
            },
        );
        for src in &mut inst.sources {
            let ev: Vec<_> = std::iter::from_fn(|| src.next_event()).collect();
            assert_eq!(ev.len(), 8);
            assert_eq!(ev[0].at, Duration::from_secs(2));
            assert!(ev.iter().all(|e| e.msg.target == 0.99));
        }
        assert!(w.describe().contains("target 99%"), "{}", w.describe());
    }
}
