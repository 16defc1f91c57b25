//! Raw TOML shapes of a scenario file (validated while deserializing, so
//! that errors carry the position of the offending value).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use toml::Spanned;

/// A probability in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prob(pub(crate) f64);

impl<'de> Deserialize<'de> for Prob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if (0.0..=1.0).contains(&v) {
            Ok(Prob(v))
        } else {
            Err(de::Error::custom(format!(
                "{v} is not a probability in [0, 1]"
            )))
        }
    }
}

/// A deadline target: a probability strictly between 0 and 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Target(pub(crate) f64);

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v > 0.0 && v < 1.0 {
            Ok(Target(v))
        } else {
            Err(de::Error::custom(format!(
                "target {v} must be strictly between 0 and 1 (e.g. 0.999)"
            )))
        }
    }
}

/// A finite, non-negative number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NonNeg(pub(crate) f64);

impl<'de> Deserialize<'de> for NonNeg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if (0.0..1e12).contains(&v) {
            Ok(NonNeg(v))
        } else {
            Err(de::Error::custom(format!(
                "{v} must be a non-negative number"
            )))
        }
    }
}

/// A finite, strictly positive number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Positive(pub(crate) f64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v > 0.0 && v < 1e12 {
            Ok(Positive(v))
        } else {
            Err(de::Error::custom(format!("{v} must be a positive number")))
        }
    }
}

/// A number or an inclusive `[min, max]` range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Range {
    One(f64),
    Between(f64, f64),
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Range;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number or a [min, max] pair")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Range, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Range, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Range, E> {
                if v.is_finite() && v > 0.0 {
                    Ok(Range::One(v))
                } else {
                    Err(E::custom(format!("{v} must be positive")))
                }
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Range, A::Error> {
                let a: f64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("expected [min, max]"))?;
                let b: f64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("expected [min, max]"))?;
                if seq.next_element::<f64>()?.is_some() {
                    return Err(de::Error::custom("expected exactly two values [min, max]"));
                }
                if !(a.is_finite() && b.is_finite() && a > 0.0 && b >= a) {
                    return Err(de::Error::custom(format!(
                        "[{a}, {b}] must satisfy 0 < min <= max"
                    )));
                }
                Ok(Range::Between(a, b))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct GeToml {
    pub(crate) mean: Option<Prob>,
    pub(crate) burst: Option<Positive>,
    pub(crate) p_good_to_bad: Option<Prob>,
    pub(crate) p_bad_to_good: Option<Prob>,
    pub(crate) loss_good: Option<Prob>,
    pub(crate) loss_bad: Option<Prob>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum LossToml {
    Bernoulli(Prob),
    Model(LossModelToml),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub(crate) struct LossModelToml {
    pub(crate) bernoulli: Option<Prob>,
    pub(crate) gilbert_elliott: Option<GeToml>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueueToml {
    pub(crate) bytes: Option<u64>,
    pub(crate) time_ms: Option<NonNeg>,
    /// Packets waiting (ns-2's DropTail `limit_`).
    pub(crate) packets: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkToml {
    pub(crate) delay_ms: Option<NonNeg>,
    pub(crate) jitter_ms: Option<NonNeg>,
    pub(crate) jitter: Option<String>,
    pub(crate) reorder: Option<bool>,
    pub(crate) loss: Option<LossToml>,
    pub(crate) duplicate: Option<Prob>,
    pub(crate) corrupt: Option<Prob>,
    pub(crate) bandwidth_kbps: Option<Range>,
    pub(crate) queue: Option<QueueToml>,
    pub(crate) trace: Option<String>,
    /// Overrides for the client-to-server direction.
    pub(crate) up: Option<Box<LinkToml>>,
    /// Overrides for the server-to-client direction.
    pub(crate) down: Option<Box<LinkToml>>,
    /// Cross traffic (bottleneck only).
    pub(crate) cross: Option<CrossToml>,
    /// Per-client draws (access links only).
    pub(crate) per_client: Option<PerClientToml>,
}

/// `[access.per_client]`: link parameters drawn per client.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PerClientToml {
    pub(crate) delay_ms: Option<DistToml>,
    pub(crate) loss: Option<DistToml>,
    pub(crate) jitter_fraction: Option<NonNeg>,
    /// `[[access.per_client.groups]]`: consecutive blocks of clients with
    /// their own distributions (e.g. regions).
    pub(crate) groups: Option<Vec<ClientGroupToml>>,
}

/// One `[[access.per_client.groups]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientGroupToml {
    pub(crate) name: String,
    pub(crate) share: Positive,
    pub(crate) delay_ms: Option<DistToml>,
    pub(crate) loss: Option<DistToml>,
    pub(crate) jitter_fraction: Option<NonNeg>,
}

/// A distribution: a plain number (constant) or a table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum DistToml {
    Value(f64),
    Table(DistTableToml),
}

/// A distribution table: exactly one of `value`, `uniform`, `lognormal`,
/// `normal`, `mixture`; optional clamp bounds; `weight` in mixtures.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct DistTableToml {
    pub(crate) value: Option<f64>,
    pub(crate) uniform: Option<[f64; 2]>,
    pub(crate) lognormal: Option<LogNormalToml>,
    pub(crate) normal: Option<NormalToml>,
    pub(crate) mixture: Option<Vec<DistTableToml>>,
    pub(crate) weight: Option<Positive>,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogNormalToml {
    pub(crate) median: Positive,
    pub(crate) sigma: NonNeg,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct NormalToml {
    pub(crate) mean: f64,
    pub(crate) sd: NonNeg,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct CrossToml {
    pub(crate) target_loss: Option<Prob>,
    pub(crate) rate_kbps: Option<Positive>,
    pub(crate) packet_bytes: Option<u32>,
    pub(crate) shape: Option<String>,
    pub(crate) mean_on_ms: Option<Positive>,
    pub(crate) mean_off_ms: Option<Positive>,
    pub(crate) direction: Option<String>,
    /// `ns2-exponential`: number of sources.
    pub(crate) sources: Option<u16>,
    /// `ns2-exponential`: access link bandwidth of a traffic node (kbit/s).
    pub(crate) access_kbps: Option<Range>,
    /// `ns2-exponential`: drop-tail limit of a traffic node's access link.
    pub(crate) access_queue_packets: Option<u32>,
    /// `ns2-exponential`: probability that a source crosses the bottleneck.
    pub(crate) crossing: Option<Prob>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub(crate) enum WorkloadToml {
    Profile {
        game: String,
        direction: Option<String>,
        class: Option<String>,
        deadline_ms: Option<Positive>,
        target: Option<Target>,
        /// Mean packets per second per stream (default: the profile's own).
        rate_pps: Option<Positive>,
    },
    Mmorpg {
        client_rate: Option<Positive>,
        mix: Option<[NonNeg; 3]>,
        client_size: Option<[u32; 2]>,
        update_interval_ms: Option<Positive>,
        update_jitter: Option<Prob>,
        update_size: Option<Positive>,
        update_size_sd: Option<NonNeg>,
        zone_size: Option<u32>,
    },
    /// The action-driven MMORPG model of Wu et al. (MTAP 2009).
    MmorpgActions {
        rate_mean: Option<Positive>,
        rate_sigma: Option<NonNeg>,
        rate_range: Option<[Positive; 2]>,
        mix: Option<[NonNeg; 3]>,
        client_sizes: Option<[u32; 2]>,
        client_size_share: Option<Prob>,
        server_size: Option<Positive>,
        server_size_sd: Option<NonNeg>,
        zones: Option<u32>,
        join_gap_s: Option<[NonNeg; 2]>,
        /// The last move of a series as its own reliable class, `move-last`.
        last_move_reliable: Option<bool>,
    },
    Messaging {
        size: Option<u32>,
        interval_ms: Option<Positive>,
        deadline_ms: Option<Positive>,
        target: Option<Target>,
        start_ms: Option<NonNeg>,
        direction: Option<String>,
        class: Option<String>,
        synchronized: Option<bool>,
    },
    Trace {
        path: String,
        phase_ms: Option<NonNeg>,
        r#loop: Option<bool>,
        target: Option<Target>,
    },
    Pcap {
        path: String,
        server_port: Option<u16>,
        class: Option<String>,
        phase_ms: Option<NonNeg>,
        r#loop: Option<bool>,
    },
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SweepToml {
    pub(crate) clients: Option<Vec<u32>>,
    pub(crate) delay_ms: Option<Vec<NonNeg>>,
    pub(crate) loss: Option<Vec<Prob>>,
    pub(crate) burst: Option<Vec<Positive>>,
    pub(crate) load: Option<Vec<Positive>>,
    pub(crate) jitter: Option<Vec<NonNeg>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioToml {
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) seed: Option<u64>,
    pub(crate) runs: Option<u32>,
    pub(crate) duration_s: Option<Positive>,
    pub(crate) drain_s: Option<NonNeg>,
    pub(crate) clients: Option<u32>,
    pub(crate) gateway_edges: Option<u32>,
    pub(crate) protocols: Spanned<Vec<Spanned<String>>>,
    pub(crate) access: Option<Spanned<LinkToml>>,
    pub(crate) bottleneck: Option<Spanned<LinkToml>>,
    pub(crate) workload: Spanned<Vec<Spanned<WorkloadToml>>>,
    pub(crate) sweep: Option<SweepToml>,
    pub(crate) paper: Option<Spanned<crate::paper::PaperToml>>,
    #[serde(default)]
    pub(crate) published: Vec<crate::paper::PublishedToml>,
    #[serde(default)]
    pub(crate) published_order: Vec<crate::paper::PublishedOrderToml>,
}
