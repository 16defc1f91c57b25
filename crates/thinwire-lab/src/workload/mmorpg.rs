//! MMORPG session model.
//!
//! After the traffic characterisation used by C.-C. Wu, K.-T. Chen, C.-M.
//! Chen, P. Huang, C.-L. Lei, "On the Challenge and Design of Transport
//! Protocols for MMORPGs", Multimedia Tools and Applications 45(1), 2009 (and
//! C.-M. Chen, K.-T. Chen, P. Huang, "Quantifying the effect of content-based
//! transport strategies for online role playing games", NetGames 2008):
//! client messages are moves, attacks and talk in about 84% / 12% / 4%
//! proportions, about 8 per second with exponential gaps and 23-27 byte
//! payloads; the server sends each client a state update about every 200 ms
//! averaging about 114 bytes, and relays attacks and talk to the other clients
//! of the same zone.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::dist::Clamped;
use super::{
    bytes, ms, AppEvent, ClassId, Direction, Fanout, InstanceParams, MessageSpec, Semantics,
    Source, WorkloadInstance,
};

/// Parameters of the MMORPG session model.
#[derive(Debug, Clone, PartialEq)]
pub struct MmorpgWorkload {
    /// Client messages per second (exponential gaps).
    pub client_rate: f64,
    /// Proportions of move, attack and talk messages.
    pub mix: [f64; 3],
    /// Client payload range in bytes (uniform).
    pub client_size: (u32, u32),
    /// Mean interval of the server's state updates to each client.
    pub update_interval: Duration,
    /// Relative jitter of the update interval (uniform, e.g. 0.1 = ±10%).
    pub update_jitter: f64,
    /// Mean size of a server update in bytes.
    pub update_size: f64,
    /// Standard deviation of the update size in bytes.
    pub update_size_sd: f64,
    /// Clients per zone for the server's relays; 0 disables relaying.
    pub zone_size: u32,
}

impl Default for MmorpgWorkload {
    fn default() -> Self {
        MmorpgWorkload {
            client_rate: 8.0,
            mix: [0.84, 0.12, 0.04],
            client_size: (23, 27),
            update_interval: Duration::from_millis(200),
            update_jitter: 0.1,
            update_size: 114.0,
            update_size_sd: 40.0,
            zone_size: 10,
        }
    }
}

impl MmorpgWorkload {
    pub(super) fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams) {
        let classes = [
            inst.class("move", Semantics::Latest),
            inst.class("attack", Semantics::Unordered),
            inst.class("talk", Semantics::Ordered),
        ];
        let state = inst.class("state", Semantics::Latest);
        let end_ms = p.duration.as_secs_f64() * 1000.0;
        for client in 0..p.clients {
            let mut rng = crate::seed::rng(p.seed, crate::seed::MMORPG_UP, u64::from(client));
            let gap = Clamped::exponential(1000.0 / self.client_rate.max(1e-6));
            let t_ms = gap.sample(&mut rng);
            inst.sources.push(Box::new(ClientSource {
                client,
                classes,
                mix: self.mix,
                size: self.client_size,
                gap,
                t_ms,
                end_ms,
                rng,
            }));
            let mut rng = crate::seed::rng(p.seed, crate::seed::MMORPG_DOWN, u64::from(client));
            let interval = self.update_interval.as_secs_f64() * 1000.0;
            let j = self.update_jitter.clamp(0.0, 1.0);
            let gap = Clamped::uniform(interval * (1.0 - j), interval * (1.0 + j));
            let t_ms = Clamped::uniform(0.0, interval).sample(&mut rng);
            inst.sources.push(Box::new(UpdateSource {
                client,
                class: state,
                gap,
                size: Clamped::normal(
                    self.update_size,
                    self.update_size_sd,
                    20.0,
                    self.update_size * 4.0,
                ),
                t_ms,
                end_ms,
                rng,
            }));
        }
        if self.zone_size > 1 {
            inst.fanout = Some(Fanout {
                zone_size: self.zone_size,
                classes: vec![classes[1], classes[2]],
            });
        }
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "MMORPG session: {} client msgs/s (move/attack/talk {:.0}%/{:.0}%/{:.0}%, {}-{} B), server update every {} ms (~{} B), zone size {} (Wu et al., MTAP 2009)",
            self.client_rate,
            self.mix[0] * 100.0,
            self.mix[1] * 100.0,
            self.mix[2] * 100.0,
            self.client_size.0,
            self.client_size.1,
            self.update_interval.as_millis(),
            self.update_size,
            self.zone_size
        )
    }
}

struct ClientSource {
    client: u32,
    classes: [ClassId; 3],
    mix: [f64; 3],
    size: (u32, u32),
    gap: Clamped,
    t_ms: f64,
    end_ms: f64,
    rng: ChaCha8Rng,
}

impl Source for ClientSource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.t_ms >= self.end_ms {
            return None;
        }
        let at = ms(self.t_ms);
        let total: f64 = self.mix.iter().sum();
        let u = self.rng.random::<f64>() * total;
        let idx = if u < self.mix[0] {
            0
        } else if u < self.mix[0] + self.mix[1] {
            1
        } else {
            2
        };
        let (lo, hi) = (self.size.0.min(self.size.1), self.size.0.max(self.size.1));
        let size = self.rng.random_range(lo..=hi).max(1);
        self.t_ms += self.gap.sample(&mut self.rng);
        Some(AppEvent {
            at,
            client: self.client,
            dir: Direction::Up,
            msg: MessageSpec {
                class: self.classes[idx],
                size,
                deadline: None,
                target: super::DEFAULT_DEADLINE_TARGET,
                // One moving entity per client: its own avatar.
                key: 0,
            },
        })
    }
}

struct UpdateSource {
    client: u32,
    class: ClassId,
    gap: Clamped,
    size: Clamped,
    t_ms: f64,
    end_ms: f64,
    rng: ChaCha8Rng,
}

impl Source for UpdateSource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.t_ms >= self.end_ms {
            return None;
        }
        let at = ms(self.t_ms);
        let size = bytes(self.size.sample(&mut self.rng));
        self.t_ms += self.gap.sample(&mut self.rng);
        Some(AppEvent {
            at,
            client: self.client,
            dir: Direction::Down,
            msg: MessageSpec {
                class: self.class,
                size,
                deadline: None,
                target: super::DEFAULT_DEADLINE_TARGET,
                key: 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_statistics_match_the_model() {
        let w = MmorpgWorkload::default();
        let mut inst = WorkloadInstance::new();
        let secs = 2000.0;
        w.instantiate(
            &mut inst,
            &InstanceParams {
                clients: 2,
                duration: Duration::from_secs_f64(secs),
                seed: 9,
            },
        );
        assert_eq!(inst.classes.len(), 4);
        let mut up = [0u64; 3];
        let mut up_sizes = Vec::new();
        let mut down_sizes = Vec::new();
        let mut down_times = Vec::new();
        // Sources: client 0 up, client 0 down, client 1 up, client 1 down.
        for (i, src) in inst.sources.iter_mut().enumerate().take(2) {
            while let Some(e) = src.next_event() {
                match e.dir {
                    Direction::Up => {
                        up[e.msg.class as usize] += 1;
                        up_sizes.push(e.msg.size);
                    }
                    Direction::Down => {
                        down_sizes.push(f64::from(e.msg.size));
                        down_times.push(e.at.as_secs_f64());
                    }
                }
            }
            let _ = i;
        }
        let n: u64 = up.iter().sum();
        let rate = n as f64 / secs;
        assert!((rate - 8.0).abs() < 0.2, "rate {rate}");
        let frac: Vec<f64> = up.iter().map(|&c| c as f64 / n as f64).collect();
        assert!((frac[0] - 0.84).abs() < 0.01, "{frac:?}");
        assert!((frac[1] - 0.12).abs() < 0.01, "{frac:?}");
        assert!((frac[2] - 0.04).abs() < 0.005, "{frac:?}");
        assert!(up_sizes.iter().all(|&s| (23..=27).contains(&s)));
        let mean_down = down_sizes.iter().sum::<f64>() / down_sizes.len() as f64;
        assert!((mean_down - 114.0).abs() < 3.0, "{mean_down}");
        let interval =
            (down_times[down_times.len() - 1] - down_times[0]) / (down_times.len() - 1) as f64;
        assert!((interval - 0.2).abs() < 0.005, "{interval}");
        let f = inst.fanout.expect("fan-out");
        assert_eq!(
            f.peers(12, 25).collect::<Vec<_>>(),
            vec![10, 11, 13, 14, 15, 16, 17, 18, 19]
        );
        assert_eq!(f.peers(21, 23).collect::<Vec<_>>(), vec![20, 22]);
    }
}
