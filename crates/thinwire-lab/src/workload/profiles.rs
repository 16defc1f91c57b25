//! Published thin-stream game traffic profiles.
//!
//! Sources (per-application statistics tables of payload size and packet
//! interarrival time):
//!
//! * A. Petlund, K. Evensen, P. Halvorsen, C. Griwodz, "Improving application
//!   layer latency for reliable thin-stream game traffic", ACM NetGames 2008,
//!   Table 1, and A. Petlund, "Improving latency for interactive, thin-stream
//!   applications over reliable transport", PhD thesis, University of Oslo,
//!   2009, Table 2.1 (the same measurements, extended);
//! * C. Griwodz, P. Halvorsen, "The fun of using TCP for an MMORPG", NOSSDAV
//!   2006 (the Anarchy Online trace).
//!
//! The numbers below were transcribed from those tables (payload: average,
//! minimum, maximum in bytes; interarrival: average, median, minimum, maximum,
//! 1st and 99th percentile in ms). The PDFs could not be opened from the build
//! environment, so the transcription was not re-checked against them: verify
//! before quoting them as published values. The Counter-Strike row is the least
//! certain one.

use rand_chacha::ChaCha8Rng;

use super::dist::Clamped;
use super::{
    bytes, ms, AppEvent, ClassId, Direction, InstanceParams, MessageSpec, Semantics, Source,
    WorkloadInstance,
};

/// Published statistics of one application's thin stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GameProfile {
    /// Short name used in scenarios (e.g. `"anarchy-online"`).
    pub key: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Average payload in bytes.
    pub payload_avg: f64,
    /// Minimum payload in bytes.
    pub payload_min: f64,
    /// Maximum payload in bytes.
    pub payload_max: f64,
    /// Average packet interarrival time in ms.
    pub iat_avg: f64,
    /// Median interarrival time in ms.
    pub iat_median: f64,
    /// Minimum interarrival time in ms.
    pub iat_min: f64,
    /// Maximum interarrival time in ms.
    pub iat_max: f64,
    /// 1st percentile of the interarrival time in ms.
    pub iat_p1: f64,
    /// 99th percentile of the interarrival time in ms.
    pub iat_p99: f64,
    /// Where the numbers come from.
    pub source: &'static str,
}

const PETLUND: &str = "Petlund et al., NetGames 2008, Table 1 / Petlund PhD thesis 2009, Table 2.1";

macro_rules! profile {
    ($key:expr, $name:expr, [$pa:expr, $pmin:expr, $pmax:expr], [$ia:expr, $imed:expr, $imin:expr, $imax:expr, $i1:expr, $i99:expr], $src:expr) => {
        GameProfile {
            key: $key,
            name: $name,
            payload_avg: $pa,
            payload_min: $pmin,
            payload_max: $pmax,
            iat_avg: $ia,
            iat_median: $imed,
            iat_min: $imin,
            iat_max: $imax,
            iat_p1: $i1,
            iat_p99: $i99,
            source: $src,
        }
    };
}

/// The built-in profiles.
pub const PROFILES: &[GameProfile] = &[
    profile!(
        "anarchy-online",
        "Anarchy Online (server to client)",
        [98.0, 8.0, 1333.0],
        [632.0, 449.0, 7.0, 17032.0, 83.0, 4195.0],
        "Griwodz & Halvorsen, NOSSDAV 2006; Petlund et al., NetGames 2008, Table 1"
    ),
    profile!(
        "world-of-warcraft",
        "World of Warcraft",
        [26.0, 6.0, 1228.0],
        [314.0, 133.0, 0.0, 14855.0, 0.0, 3785.0],
        PETLUND
    ),
    profile!(
        "age-of-conan",
        "Age of Conan",
        [80.0, 5.0, 1460.0],
        [86.0, 57.0, 0.0, 1375.0, 24.0, 386.0],
        PETLUND
    ),
    profile!(
        "counter-strike",
        "Counter-Strike",
        [36.0, 25.0, 1342.0],
        [124.0, 65.0, 0.0, 66354.0, 34.0, 575.0],
        PETLUND
    ),
    profile!(
        "halo3-high",
        "Halo 3, high intensity (UDP)",
        [247.0, 32.0, 1264.0],
        [36.0, 33.0, 0.0, 1403.0, 32.0, 182.0],
        PETLUND
    ),
    profile!(
        "halo3-moderate",
        "Halo 3, moderate intensity (UDP)",
        [270.0, 32.0, 280.0],
        [67.0, 66.0, 32.0, 716.0, 64.0, 69.0],
        PETLUND
    ),
    profile!(
        "bzflag",
        "BZFlag",
        [30.0, 4.0, 1448.0],
        [24.0, 0.0, 0.0, 540.0, 0.0, 151.0],
        PETLUND
    ),
    profile!(
        "world-in-conflict-server",
        "World in Conflict (from server)",
        [365.0, 4.0, 1361.0],
        [104.0, 100.0, 0.0, 315.0, 0.0, 300.0],
        PETLUND
    ),
    profile!(
        "world-in-conflict-client",
        "World in Conflict (from client)",
        [4.0, 4.0, 113.0],
        [105.0, 100.0, 16.0, 1022.0, 44.0, 299.0],
        PETLUND
    ),
    profile!(
        "test-drive-unlimited",
        "Test Drive Unlimited (UDP)",
        [80.0, 34.0, 104.0],
        [40.0, 33.0, 0.0, 298.0, 0.0, 158.0],
        PETLUND
    ),
];

impl GameProfile {
    /// Looks a profile up by key.
    pub fn by_key(key: &str) -> Option<&'static GameProfile> {
        PROFILES.iter().find(|p| p.key == key)
    }

    /// Interarrival-time distribution (ms) fitted to the published mean and
    /// median, bounded by the published minimum and maximum (see
    /// [`Clamped::fit_interarrival`]). The lower bound of the lognormal is the
    /// 1st percentile when it lies below the median (the minimum is often 0
    /// because of back-to-back packets), the minimum otherwise.
    pub fn interarrival(&self) -> Clamped {
        let shift = if self.iat_p1 < self.iat_median {
            self.iat_p1
        } else {
            self.iat_min
        };
        Clamped::fit_interarrival(
            self.iat_avg,
            self.iat_median,
            shift,
            self.iat_p99,
            self.iat_min,
            self.iat_max,
        )
    }

    /// Payload size distribution (bytes) with the published mean in the
    /// published `[min, max]` range.
    pub fn payload(&self) -> Clamped {
        Clamped::from_mean_min_max(self.payload_avg, self.payload_min, self.payload_max)
    }
}

/// A stream per client following a published profile.
#[derive(Debug, Clone)]
pub struct ProfileWorkload {
    /// The profile.
    pub profile: GameProfile,
    /// Direction of the stream (the traces are mostly server to client).
    pub direction: Direction,
    /// Message class name (default `"game"`).
    pub class: String,
    /// Optional per-message deadline.
    pub deadline: Option<std::time::Duration>,
    /// Target success rate of the deadline (default
    /// [`DEFAULT_DEADLINE_TARGET`](super::DEFAULT_DEADLINE_TARGET)).
    pub target: f64,
    /// Packet rate relative to the profile's (1: as published): every
    /// interarrival draw is divided by it, so the shape of the distribution
    /// stays and its mean becomes `iat_avg / rate_scale`.
    pub rate_scale: f64,
}

impl ProfileWorkload {
    /// Mean packets per second of one stream of this workload.
    pub fn rate_pps(&self) -> f64 {
        1000.0 / self.profile.iat_avg * self.rate_scale
    }

    pub(super) fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams) {
        let class = inst.class(&self.class, Semantics::Ordered);
        for client in 0..p.clients {
            // An upstream profile draws from its own stream, so that a scenario
            // with the same profile both ways does not send the same times and
            // sizes in both directions (downstream keeps the historic stream).
            let stream = match self.direction {
                Direction::Down => u64::from(client),
                Direction::Up => u64::from(client) | 1 << 32,
            };
            let rng = crate::seed::rng(p.seed, crate::seed::PROFILE, stream);
            inst.sources
                .push(Box::new(ProfileSource::new(self, class, client, p, rng)));
        }
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "{} profile ({}), {}: payload avg {} B, interarrival avg {} ms / median {} ms{} [{}]",
            self.profile.name,
            self.profile.key,
            self.direction.as_str(),
            self.profile.payload_avg,
            self.profile.iat_avg,
            self.profile.iat_median,
            if self.rate_scale == 1.0 {
                String::new()
            } else {
                format!(
                    ", rate x{} ({:.3} packets/s)",
                    self.rate_scale,
                    self.rate_pps()
                )
            },
            self.profile.source
        )
    }
}

struct ProfileSource {
    client: u32,
    dir: Direction,
    class: ClassId,
    deadline: Option<std::time::Duration>,
    target: f64,
    iat: Clamped,
    rate_scale: f64,
    size: Clamped,
    t_ms: f64,
    end_ms: f64,
    rng: ChaCha8Rng,
}

impl ProfileSource {
    fn new(
        w: &ProfileWorkload,
        class: ClassId,
        client: u32,
        p: &InstanceParams,
        mut rng: ChaCha8Rng,
    ) -> Self {
        let iat = w.profile.interarrival();
        // Random phase so that clients are not synchronised.
        let t_ms = Clamped::uniform(0.0, w.profile.iat_avg).sample(&mut rng) / w.rate_scale;
        ProfileSource {
            client,
            dir: w.direction,
            class,
            deadline: w.deadline,
            target: w.target,
            iat,
            rate_scale: w.rate_scale,
            size: w.profile.payload(),
            t_ms,
            end_ms: p.duration.as_secs_f64() * 1000.0,
            rng,
        }
    }
}

impl Source for ProfileSource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.t_ms >= self.end_ms {
            return None;
        }
        let at = ms(self.t_ms);
        let size = bytes(self.size.sample(&mut self.rng));
        self.t_ms += self.iat.sample(&mut self.rng) / self.rate_scale;
        Some(AppEvent {
            at,
            client: self.client,
            dir: self.dir,
            msg: MessageSpec {
                class: self.class,
                size,
                deadline: self.deadline,
                target: self.target,
                key: 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn generate(p: &GameProfile, secs: u64) -> Vec<AppEvent> {
        let w = ProfileWorkload {
            profile: *p,
            direction: Direction::Down,
            class: "game".into(),
            deadline: None,
            target: crate::workload::DEFAULT_DEADLINE_TARGET,
            rate_scale: 1.0,
        };
        let mut inst = WorkloadInstance::new();
        w.instantiate(
            &mut inst,
            &InstanceParams {
                clients: 1,
                duration: Duration::from_secs(secs),
                seed: 3,
            },
        );
        let mut src = inst.sources.pop().expect("one source");
        std::iter::from_fn(|| src.next_event()).collect()
    }

    #[test]
    fn the_same_profile_both_ways_draws_independent_streams() {
        let p = GameProfile::by_key("bzflag").expect("bzflag");
        let mut inst = WorkloadInstance::new();
        let params = InstanceParams {
            clients: 1,
            duration: Duration::from_secs(5),
            seed: 3,
        };
        for direction in [Direction::Down, Direction::Up] {
            ProfileWorkload {
                profile: *p,
                direction,
                class: "game".into(),
                deadline: None,
                target: crate::workload::DEFAULT_DEADLINE_TARGET,
                rate_scale: 1.0,
            }
            .instantiate(&mut inst, &params);
        }
        let mut times: Vec<Vec<(Duration, u32)>> = inst
            .sources
            .iter_mut()
            .map(|src| {
                std::iter::from_fn(|| src.next_event())
                    .map(|e| (e.at, e.msg.size))
                    .collect()
            })
            .collect();
        let up = times.pop().expect("up");
        let down = times.pop().expect("down");
        assert!(up.len() > 50 && down.len() > 50);
        assert_ne!(up, down);
    }

    #[test]
    fn generated_streams_match_their_profiles() {
        for p in PROFILES {
            // About 40k packets per profile.
            let secs = (40_000.0 * p.iat_avg / 1000.0).max(60.0) as u64;
            let ev = generate(p, secs);
            assert!(ev.len() > 20_000, "{}: {}", p.key, ev.len());
            let mut gaps: Vec<f64> = ev
                .windows(2)
                .map(|w| (w[1].at - w[0].at).as_secs_f64() * 1000.0)
                .collect();
            let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
            gaps.sort_by(f64::total_cmp);
            let median_gap = gaps[gaps.len() / 2];
            let mean_size = ev.iter().map(|e| f64::from(e.msg.size)).sum::<f64>() / ev.len() as f64;
            // Clamping at the published maximum trims a little of the mean.
            assert!(
                (mean_gap - p.iat_avg).abs() <= 0.06 * p.iat_avg + 1.0,
                "{}: mean gap {mean_gap} vs {}",
                p.key,
                p.iat_avg
            );
            assert!(
                (median_gap - p.iat_median).abs() <= 0.06 * p.iat_median + 1.0,
                "{}: median gap {median_gap} vs {}",
                p.key,
                p.iat_median
            );
            assert!(
                (mean_size - p.payload_avg).abs() <= 0.05 * p.payload_avg + 1.0,
                "{}: mean size {mean_size} vs {}",
                p.key,
                p.payload_avg
            );
            assert!(ev.iter().all(|e| f64::from(e.msg.size) >= p.payload_min
                && f64::from(e.msg.size) <= p.payload_max));
        }
    }
}
