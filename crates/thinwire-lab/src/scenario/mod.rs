//! Scenarios: TOML files describing topology, links, workload, protocols,
//! duration and seed.
//!
//! Errors in a scenario file name the file and the line of the offending
//! value (from the TOML parser's spans). Files a scenario refers to (link
//! traces, CSV traces, pcaps) are resolved relative to the scenario file.
//! See `scenarios/README.md` for the format.

mod builtin;
mod per_client;
mod toml_types;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use thinwire_netmodel::{
    GilbertElliott, JitterDistribution, LinkConfig, LossModel, QueueLimit, Trace, TraceLoadError,
};

pub use builtin::{builtin, BUILTIN};
pub use per_client::{with_mean_loss, PerClient, ValueDist, MAX_CLIENT_LOSS};

use crate::error::LabError;
use crate::protocol::ProtocolSpec;
use crate::seed;
use crate::sim::{calibrate_rate, Background, CrossShape, CrossTraffic, SimSetup};
use crate::workload::{
    load_pcap, load_trace_csv, mean_load, Direction, GameProfile, InstanceParams,
    MessagingWorkload, MmorpgWorkload, PcapOptions, ProfileWorkload, ReplayWorkload, WorkloadSpec,
    DEFAULT_DEADLINE_TARGET, PROFILES,
};
use toml_types::{LinkToml, LossToml, ScenarioToml, WorkloadToml};

/// An access-link direction, possibly with per-client parameters.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// The configuration (its bandwidth, delay or loss are replaced per
    /// client when a range or a per-client distribution is set).
    pub config: LinkConfig,
    /// Per-client bandwidth drawn uniformly from this range (kbit/s).
    pub bandwidth_kbps: Option<(f64, f64)>,
    /// Per-client delay and loss distributions (`[access.per_client]`).
    pub per_client: PerClient,
}

/// Cross-traffic intensity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CrossRate {
    /// Calibrated so that cross traffic alone sees this loss rate.
    TargetLoss(f64),
    /// A fixed mean rate in kbit/s.
    Kbps(f64),
}

/// Cross traffic on one bottleneck direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossSpec {
    /// Intensity.
    pub rate: CrossRate,
    /// Packet size.
    pub packet_bytes: u32,
    /// Arrival process.
    pub shape: CrossShape,
}

/// A shared bottleneck (dumbbell).
#[derive(Debug, Clone)]
pub struct BottleneckSpec {
    /// Client-to-server direction.
    pub up: LinkConfig,
    /// Server-to-client direction.
    pub down: LinkConfig,
    /// Cross traffic client-to-server.
    pub cross_up: Option<CrossSpec>,
    /// Cross traffic server-to-client.
    pub cross_down: Option<CrossSpec>,
}

/// Swept parameters (cartesian product).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// Client counts.
    pub clients: Vec<u32>,
    /// One-way access delays in ms (both directions).
    pub delay_ms: Vec<f64>,
    /// Bernoulli access loss rates (both directions).
    pub loss: Vec<f64>,
}

/// One point of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Client count.
    pub clients: u32,
    /// Access delay override (ms).
    pub delay_ms: Option<f64>,
    /// Access loss override.
    pub loss: Option<f64>,
}

impl SweepPoint {
    /// Label appended to protocol names (`""` without a sweep).
    pub fn label(&self, sweep: &Sweep) -> String {
        let mut parts = Vec::new();
        if sweep.clients.len() > 1 {
            parts.push(format!("n={}", self.clients));
        }
        if let Some(d) = self.delay_ms {
            parts.push(format!("delay={d}ms"));
        }
        if let Some(l) = self.loss {
            parts.push(format!("loss={}%", l * 100.0));
        }
        parts.join(",")
    }
}

/// A parsed and validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name (results' `scenario` field).
    pub name: String,
    /// What the scenario shows.
    pub description: String,
    /// Where it came from (a path or `built-in:NAME`).
    pub source: String,
    /// Run seed.
    pub seed: u64,
    /// Application traffic duration.
    pub duration: Duration,
    /// Extra time for messages in flight.
    pub drain: Duration,
    /// Clients (when not swept).
    pub clients: u32,
    /// Access link client to server.
    pub access_up: LinkSpec,
    /// Access link server to client.
    pub access_down: LinkSpec,
    /// Optional dumbbell bottleneck.
    pub bottleneck: Option<BottleneckSpec>,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
    /// Protocols in output order.
    pub protocols: Vec<ProtocolSpec>,
    /// Sweep.
    pub sweep: Sweep,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

struct Ctx<'a> {
    text: &'a str,
    path: &'a Path,
    dir: PathBuf,
}

impl Ctx<'_> {
    fn err(&self, span: std::ops::Range<usize>, msg: impl Into<String>) -> LabError {
        LabError::at_line(self.path, line_of(self.text, span.start), msg)
    }

    fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.dir.join(p)
        }
    }
}

fn merge(base: &LinkToml, over: Option<&LinkToml>) -> LinkToml {
    let Some(o) = over else { return base.clone() };
    LinkToml {
        delay_ms: o.delay_ms.or(base.delay_ms),
        jitter_ms: o.jitter_ms.or(base.jitter_ms),
        jitter: o.jitter.clone().or_else(|| base.jitter.clone()),
        reorder: o.reorder.or(base.reorder),
        loss: o.loss.clone().or_else(|| base.loss.clone()),
        duplicate: o.duplicate.or(base.duplicate),
        corrupt: o.corrupt.or(base.corrupt),
        bandwidth_kbps: o.bandwidth_kbps.or(base.bandwidth_kbps),
        queue: o.queue.clone().or_else(|| base.queue.clone()),
        trace: o.trace.clone().or_else(|| base.trace.clone()),
        up: None,
        down: None,
        cross: o.cross.clone().or_else(|| base.cross.clone()),
        per_client: o.per_client.clone().or_else(|| base.per_client.clone()),
    }
}

fn loss_model(l: &LossToml) -> Result<LossModel, String> {
    match l {
        LossToml::Bernoulli(p) => Ok(LossModel::Bernoulli { p: p.0 }),
        LossToml::Model(m) => match (&m.bernoulli, &m.gilbert_elliott) {
            (Some(p), None) => Ok(LossModel::Bernoulli { p: p.0 }),
            (None, Some(g)) => match (g.mean, g.burst, g.p_good_to_bad, g.p_bad_to_good) {
                (Some(mean), Some(burst), None, None) => GilbertElliott::from_mean_and_burst(mean.0, burst.0)
                    .map(LossModel::from)
                    .map_err(|e| e.to_string()),
                (None, None, Some(gb), Some(bg)) => Ok(LossModel::GilbertElliott {
                    p_good_to_bad: gb.0,
                    p_bad_to_good: bg.0,
                    loss_good: g.loss_good.map_or(0.0, |p| p.0),
                    loss_bad: g.loss_bad.map_or(1.0, |p| p.0),
                }),
                _ => Err("gilbert_elliott needs either `mean` and `burst`, or `p_good_to_bad` and `p_bad_to_good` (with optional `loss_good`, `loss_bad`)".into()),
            },
            _ => Err("loss needs exactly one of `bernoulli` or `gilbert_elliott`".into()),
        },
    }
}

fn link_spec(
    ctx: &Ctx<'_>,
    t: &LinkToml,
    span: std::ops::Range<usize>,
    what: &str,
) -> Result<LinkSpec, LabError> {
    let e = |m: String| ctx.err(span.clone(), format!("{what}: {m}"));
    let mut c = LinkConfig::default();
    if let Some(d) = t.delay_ms {
        c.delay = Duration::from_secs_f64(d.0 / 1000.0);
    }
    if let Some(j) = t.jitter_ms {
        c.jitter = Duration::from_secs_f64(j.0 / 1000.0);
    }
    c.jitter_distribution = match t.jitter.as_deref() {
        None | Some("uniform") => JitterDistribution::Uniform,
        Some("normal") => JitterDistribution::Normal,
        Some(o) => {
            return Err(e(format!(
                "jitter distribution `{o}` must be `uniform` or `normal`"
            )))
        }
    };
    c.reorder = t.reorder.unwrap_or(false);
    if let Some(l) = &t.loss {
        c.loss = loss_model(l).map_err(e)?;
    }
    c.duplicate = t.duplicate.map_or(0.0, |p| p.0);
    c.corrupt = t.corrupt.map_or(0.0, |p| p.0);
    let mut range = None;
    match t.bandwidth_kbps {
        None => {}
        Some(toml_types::Range::One(k)) => {
            c.bandwidth_bps = Some((k * 1000.0).round().max(1.0) as u64)
        }
        Some(toml_types::Range::Between(a, b)) => {
            c.bandwidth_bps = Some((a * 1000.0).round().max(1.0) as u64);
            range = Some((a, b));
        }
    }
    if let Some(q) = &t.queue {
        c.queue = match (q.bytes, q.time_ms) {
            (Some(b), None) => QueueLimit::Bytes(usize::try_from(b).unwrap_or(usize::MAX)),
            (None, Some(ms)) => QueueLimit::Time(Duration::from_secs_f64(ms.0 / 1000.0)),
            _ => return Err(e("queue needs exactly one of `bytes` or `time_ms`".into())),
        };
        if c.bandwidth_bps.is_none() {
            return Err(e("a queue limit needs `bandwidth_kbps`".into()));
        }
    }
    if let Some(p) = &t.trace {
        let path = ctx.resolve(p);
        let trace = Trace::from_file(&path).map_err(|err| match err {
            TraceLoadError::Io { path, source } => LabError::io(path, source),
            TraceLoadError::Parse { path, source } => {
                LabError::at_line(path, source.line, source.msg)
            }
        })?;
        c.trace = Some(Arc::new(trace));
    }
    c.validate().map_err(|x| e(x.to_string()))?;
    let per_client = match &t.per_client {
        None => PerClient::default(),
        Some(p) => per_client::per_client(p).map_err(e)?,
    };
    Ok(LinkSpec {
        config: c,
        bandwidth_kbps: range,
        per_client,
    })
}

fn cross_spec(
    ctx: &Ctx<'_>,
    t: &toml_types::CrossToml,
    span: std::ops::Range<usize>,
) -> Result<(Option<CrossSpec>, Option<CrossSpec>), LabError> {
    let e = |m: &str| ctx.err(span.clone(), format!("bottleneck.cross: {m}"));
    let rate = match (t.target_loss, t.rate_kbps) {
        (Some(l), None) => CrossRate::TargetLoss(l.0),
        (None, Some(k)) => CrossRate::Kbps(k.0),
        _ => return Err(e("needs exactly one of `target_loss` or `rate_kbps`")),
    };
    let shape = match t.shape.as_deref() {
        None | Some("poisson") => CrossShape::Poisson,
        Some("on-off") => CrossShape::OnOff {
            mean_on: Duration::from_secs_f64(t.mean_on_ms.map_or(1000.0, |v| v.0) / 1000.0),
            mean_off: Duration::from_secs_f64(t.mean_off_ms.map_or(1000.0, |v| v.0) / 1000.0),
        },
        Some(_) => return Err(e("shape must be `poisson` or `on-off`")),
    };
    let packet_bytes = t.packet_bytes.unwrap_or(1000);
    if !(40..=65_535).contains(&packet_bytes) {
        return Err(e("packet_bytes must be between 40 and 65535"));
    }
    let spec = CrossSpec {
        rate,
        packet_bytes,
        shape,
    };
    Ok(match t.direction.as_deref() {
        None | Some("both") => (Some(spec), Some(spec)),
        Some("up") => (Some(spec), None),
        Some("down") => (None, Some(spec)),
        Some(_) => return Err(e("direction must be `both`, `up` or `down`")),
    })
}

fn direction(
    ctx: &Ctx<'_>,
    d: Option<&str>,
    default: Direction,
    span: std::ops::Range<usize>,
) -> Result<Direction, LabError> {
    match d {
        None => Ok(default),
        Some("up") => Ok(Direction::Up),
        Some("down") => Ok(Direction::Down),
        Some(o) => Err(ctx.err(span, format!("direction `{o}` must be `up` or `down`"))),
    }
}

fn workload(
    ctx: &Ctx<'_>,
    w: &WorkloadToml,
    span: std::ops::Range<usize>,
) -> Result<WorkloadSpec, LabError> {
    let ms = |v: f64| Duration::from_secs_f64(v / 1000.0);
    Ok(match w {
        WorkloadToml::Profile {
            game,
            direction: d,
            class,
            deadline_ms,
            target,
        } => {
            let Some(p) = GameProfile::by_key(game) else {
                let names: Vec<&str> = PROFILES.iter().map(|p| p.key).collect();
                return Err(ctx.err(
                    span,
                    format!(
                        "unknown game profile `{game}` (known: {})",
                        names.join(", ")
                    ),
                ));
            };
            WorkloadSpec::Profile(ProfileWorkload {
                profile: *p,
                direction: direction(ctx, d.as_deref(), Direction::Down, span)?,
                class: class.clone().unwrap_or_else(|| "game".into()),
                deadline: deadline_ms.map(|v| ms(v.0)),
                target: target.map_or(DEFAULT_DEADLINE_TARGET, |t| t.0),
            })
        }
        WorkloadToml::Mmorpg {
            client_rate,
            mix,
            client_size,
            update_interval_ms,
            update_jitter,
            update_size,
            update_size_sd,
            zone_size,
        } => {
            let d = MmorpgWorkload::default();
            let mix = mix.map_or(d.mix, |m| [m[0].0, m[1].0, m[2].0]);
            if mix.iter().sum::<f64>() <= 0.0 {
                return Err(ctx.err(span, "mmorpg: mix must not be all zero"));
            }
            let size = client_size.map_or(d.client_size, |s| (s[0], s[1]));
            if size.0 == 0 || size.0 > size.1 {
                return Err(ctx.err(
                    span,
                    "mmorpg: client_size must be [min, max] with 0 < min <= max",
                ));
            }
            WorkloadSpec::Mmorpg(MmorpgWorkload {
                client_rate: client_rate.map_or(d.client_rate, |v| v.0),
                mix,
                client_size: size,
                update_interval: update_interval_ms.map_or(d.update_interval, |v| ms(v.0)),
                update_jitter: update_jitter.map_or(d.update_jitter, |v| v.0),
                update_size: update_size.map_or(d.update_size, |v| v.0),
                update_size_sd: update_size_sd.map_or(d.update_size_sd, |v| v.0),
                zone_size: zone_size.unwrap_or(d.zone_size),
            })
        }
        WorkloadToml::Messaging {
            size,
            interval_ms,
            deadline_ms,
            target,
            start_ms,
            direction: dir,
            class,
            synchronized,
        } => {
            let d = MessagingWorkload::default();
            let size = size.unwrap_or(d.size);
            if size == 0 || size > 1_000_000 {
                return Err(ctx.err(span, "messaging: size must be between 1 and 1000000 bytes"));
            }
            WorkloadSpec::Messaging(MessagingWorkload {
                size,
                interval: interval_ms.map_or(d.interval, |v| ms(v.0)),
                deadline: deadline_ms.map_or(d.deadline, |v| ms(v.0)),
                target: target.map_or(d.target, |t| t.0),
                start: start_ms.map_or(d.start, |v| ms(v.0)),
                direction: direction(ctx, dir.as_deref(), d.direction, span)?,
                class: class.clone().unwrap_or(d.class),
                synchronized: synchronized.unwrap_or(d.synchronized),
            })
        }
        WorkloadToml::Trace {
            path,
            phase_ms,
            r#loop,
            target,
        } => {
            let p = ctx.resolve(path);
            let rows = load_trace_csv(&p)?;
            WorkloadSpec::Replay(ReplayWorkload {
                rows: Arc::new(rows),
                origin: path.clone(),
                target: target.map_or(DEFAULT_DEADLINE_TARGET, |t| t.0),
                phase: phase_ms.map_or(Duration::ZERO, |v| ms(v.0)),
                looped: r#loop.unwrap_or(true),
            })
        }
        WorkloadToml::Pcap {
            path,
            server_port,
            class,
            phase_ms,
            r#loop,
        } => {
            let p = ctx.resolve(path);
            let rows = load_pcap(
                &p,
                &PcapOptions {
                    server_port: *server_port,
                    class: class.clone(),
                },
            )?;
            WorkloadSpec::Replay(ReplayWorkload {
                rows: Arc::new(rows),
                origin: path.clone(),
                target: DEFAULT_DEADLINE_TARGET,
                phase: phase_ms.map_or(Duration::ZERO, |v| ms(v.0)),
                looped: r#loop.unwrap_or(true),
            })
        }
    })
}

impl Scenario {
    /// Parses scenario text. `path` names the file in errors and anchors
    /// relative paths; `default_name` is used when the file has no `name`.
    pub fn parse(text: &str, path: &Path, default_name: &str) -> Result<Scenario, LabError> {
        let raw: ScenarioToml = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let mut msg = e.message().trim().to_owned();
            if msg.contains("expected a borrowed string") {
                // toml-rs/toml#798: a sub-table such as `[access.per_client]` whose parent
                // table has no header of its own cannot be read with positions.
                msg.push_str(
                    " (write the parent table's header, e.g. `[access]`, before its sub-tables \
                     such as `[access.per_client]` or `[access.down]`)",
                );
            }
            LabError::at_line(path, line, msg)
        })?;
        let ctx = Ctx {
            text,
            path,
            dir: path.parent().map(Path::to_owned).unwrap_or_default(),
        };

        let mut protocols = Vec::new();
        for p in raw.protocols.get_ref() {
            let Some(spec) = ProtocolSpec::parse(p.get_ref()) else {
                return Err(ctx.err(
                    p.span(),
                    format!(
                        "unknown protocol `{}` (known: {})",
                        p.get_ref(),
                        ProtocolSpec::NAMES.join(", ")
                    ),
                ));
            };
            if protocols.contains(&spec) {
                return Err(ctx.err(p.span(), format!("protocol `{}` listed twice", p.get_ref())));
            }
            protocols.push(spec);
        }
        if protocols.is_empty() {
            return Err(ctx.err(raw.protocols.span(), "`protocols` is empty"));
        }

        let (access_up, access_down) = match &raw.access {
            None => {
                let d = LinkSpec {
                    config: LinkConfig::default(),
                    bandwidth_kbps: None,
                    per_client: PerClient::default(),
                };
                (d.clone(), d)
            }
            Some(a) => {
                let t = a.get_ref();
                if t.cross.is_some() {
                    return Err(
                        ctx.err(a.span(), "access: `cross` traffic belongs in [bottleneck]")
                    );
                }
                (
                    link_spec(&ctx, &merge(t, t.up.as_deref()), a.span(), "access.up")?,
                    link_spec(&ctx, &merge(t, t.down.as_deref()), a.span(), "access.down")?,
                )
            }
        };

        let bottleneck = match &raw.bottleneck {
            None => None,
            Some(b) => {
                let t = b.get_ref();
                let per_client = [Some(t), t.up.as_deref(), t.down.as_deref()]
                    .into_iter()
                    .flatten()
                    .any(|l| l.per_client.is_some());
                if per_client {
                    return Err(ctx.err(
                        b.span(),
                        "bottleneck: `per_client` belongs in [access] (the bottleneck is shared)",
                    ));
                }
                let up = link_spec(&ctx, &merge(t, t.up.as_deref()), b.span(), "bottleneck.up")?;
                let down = link_spec(
                    &ctx,
                    &merge(t, t.down.as_deref()),
                    b.span(),
                    "bottleneck.down",
                )?;
                if up.bandwidth_kbps.is_some() || down.bandwidth_kbps.is_some() {
                    return Err(ctx.err(
                        b.span(),
                        "bottleneck: bandwidth_kbps must be a single number",
                    ));
                }
                let (cross_up, cross_down) = match &t.cross {
                    None => (None, None),
                    Some(c) => cross_spec(&ctx, c, b.span())?,
                };
                let needs_queue = |c: &Option<CrossSpec>, l: &LinkConfig| {
                    matches!(
                        c,
                        Some(CrossSpec {
                            rate: CrossRate::TargetLoss(_),
                            ..
                        })
                    ) && (l.bandwidth_bps.is_none() || l.queue == QueueLimit::Unlimited)
                };
                if needs_queue(&cross_up, &up.config) || needs_queue(&cross_down, &down.config) {
                    return Err(ctx.err(
                        b.span(),
                        "bottleneck: cross traffic with `target_loss` needs `bandwidth_kbps` and a `queue` limit",
                    ));
                }
                let no_bw = |c: &Option<CrossSpec>, l: &LinkConfig| {
                    c.is_some() && l.bandwidth_bps.is_none()
                };
                if no_bw(&cross_up, &up.config) || no_bw(&cross_down, &down.config) {
                    return Err(
                        ctx.err(b.span(), "bottleneck: cross traffic needs `bandwidth_kbps`")
                    );
                }
                Some(BottleneckSpec {
                    up: up.config,
                    down: down.config,
                    cross_up,
                    cross_down,
                })
            }
        };

        let mut workloads = Vec::new();
        for w in raw.workload.get_ref() {
            workloads.push(workload(&ctx, w.get_ref(), w.span())?);
        }
        if workloads.is_empty() {
            return Err(ctx.err(raw.workload.span(), "`workload` is empty"));
        }

        let clients = raw.clients.unwrap_or(1);
        let sweep = raw.sweep.unwrap_or_default();
        let sweep = Sweep {
            clients: sweep.clients.unwrap_or_default(),
            delay_ms: sweep
                .delay_ms
                .unwrap_or_default()
                .into_iter()
                .map(|v| v.0)
                .collect(),
            loss: sweep
                .loss
                .unwrap_or_default()
                .into_iter()
                .map(|v| v.0)
                .collect(),
        };
        let access_span = raw.access.as_ref().map_or(0..0, |a| a.span());
        let drawn =
            |f: fn(&PerClient) -> bool| f(&access_up.per_client) || f(&access_down.per_client);
        if !sweep.delay_ms.is_empty() && drawn(|p| p.delay_ms.is_some()) {
            return Err(ctx.err(
                access_span,
                "access: per_client.delay_ms cannot be combined with sweep.delay_ms",
            ));
        }
        if !sweep.loss.is_empty() && drawn(|p| p.loss.is_some()) {
            return Err(ctx.err(
                access_span,
                "access: per_client.loss cannot be combined with sweep.loss",
            ));
        }
        let max_clients = sweep
            .clients
            .iter()
            .copied()
            .chain([clients])
            .max()
            .unwrap_or(1);
        if max_clients == 0 || max_clients > 100_000 || sweep.clients.contains(&0) {
            return Err(LabError::at_line(
                path,
                1,
                "clients must be between 1 and 100000",
            ));
        }
        let duration = Duration::from_secs_f64(raw.duration_s.map_or(60.0, |v| v.0));
        let drain = Duration::from_secs_f64(raw.drain_s.map_or(10.0, |v| v.0));
        Ok(Scenario {
            name: raw.name.unwrap_or_else(|| default_name.to_owned()),
            description: raw.description.unwrap_or_default(),
            source: path.display().to_string(),
            seed: raw.seed.unwrap_or(1),
            duration,
            drain,
            clients,
            access_up,
            access_down,
            bottleneck,
            workloads,
            protocols,
            sweep,
        })
    }

    /// Loads a scenario by built-in name or file path.
    pub fn load(name_or_path: &str) -> Result<Scenario, LabError> {
        if let Some((name, text)) = builtin(name_or_path) {
            let path = PathBuf::from(format!("built-in:{name}"));
            let mut s = Scenario::parse(text, &path, name)?;
            s.source = format!("built-in:{name}");
            return Ok(s);
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(LabError::UnknownScenario(name_or_path.to_owned()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| LabError::io(path, e))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("scenario");
        Scenario::parse(&text, path, stem)
    }

    /// The sweep points (one when nothing is swept).
    pub fn points(&self) -> Vec<SweepPoint> {
        let clients: Vec<u32> = if self.sweep.clients.is_empty() {
            vec![self.clients]
        } else {
            self.sweep.clients.clone()
        };
        let delays: Vec<Option<f64>> = if self.sweep.delay_ms.is_empty() {
            vec![None]
        } else {
            self.sweep.delay_ms.iter().map(|&d| Some(d)).collect()
        };
        let losses: Vec<Option<f64>> = if self.sweep.loss.is_empty() {
            vec![None]
        } else {
            self.sweep.loss.iter().map(|&l| Some(l)).collect()
        };
        let mut out = Vec::new();
        for &c in &clients {
            for &d in &delays {
                for &l in &losses {
                    out.push(SweepPoint {
                        clients: c,
                        delay_ms: d,
                        loss: l,
                    });
                }
            }
        }
        out
    }

    fn access(&self, spec: &LinkSpec, p: &SweepPoint, clients: u32, tag: u64) -> Vec<LinkConfig> {
        let mut base = spec.config.clone();
        if let Some(d) = p.delay_ms {
            base.delay = Duration::from_secs_f64(d / 1000.0);
        }
        if let Some(l) = p.loss {
            base.loss = LossModel::Bernoulli { p: l };
        }
        if spec.bandwidth_kbps.is_none() && spec.per_client.is_empty() {
            return vec![base];
        }
        (0..clients)
            .map(|c| {
                let mut cfg = base.clone();
                if let Some((lo, hi)) = spec.bandwidth_kbps {
                    let u = seed::unit(self.seed, tag, u64::from(c));
                    cfg.bandwidth_bps =
                        Some(((lo + (hi - lo) * u) * 1000.0).round().max(1.0) as u64);
                }
                spec.per_client.apply(&mut cfg, self.seed, c);
                cfg
            })
            .collect()
    }

    /// The network of one sweep point (calibrates cross traffic).
    pub fn setup(&self, p: &SweepPoint) -> Result<SimSetup, LabError> {
        // The game's own mean load on the bottleneck, for calibrating cross
        // traffic to a target loss rate of all traffic there.
        let needs_load = self.bottleneck.as_ref().is_some_and(|b| {
            [b.cross_up, b.cross_down].iter().any(|c| {
                matches!(
                    c,
                    Some(CrossSpec {
                        rate: CrossRate::TargetLoss(_),
                        ..
                    })
                )
            })
        });
        let load = if needs_load {
            let l = mean_load(
                &self.workloads,
                &InstanceParams {
                    clients: p.clients,
                    duration: self.duration,
                    seed: self.seed,
                },
                28,
            );
            l.map(|(pps, packet_bytes)| Some(Background { pps, packet_bytes }))
        } else {
            [None, None]
        };
        let cross = |spec: Option<CrossSpec>,
                     link: &LinkConfig,
                     dir: u64|
         -> Result<Option<CrossTraffic>, LabError> {
            let Some(spec) = spec else { return Ok(None) };
            let base = CrossTraffic {
                rate_pps: 0.0,
                packet_bytes: spec.packet_bytes,
                shape: spec.shape,
            };
            let rate_pps = match spec.rate {
                CrossRate::Kbps(k) => {
                    let duty = match spec.shape {
                        CrossShape::Poisson => 1.0,
                        CrossShape::OnOff { mean_on, mean_off } => {
                            mean_on.as_secs_f64() / (mean_on + mean_off).as_secs_f64().max(1e-9)
                        }
                    };
                    k * 1000.0 / (8.0 * f64::from(spec.packet_bytes)) / duty.max(1e-6)
                }
                CrossRate::TargetLoss(l) => calibrate_rate(
                    link,
                    base,
                    l,
                    load[dir as usize],
                    seed::derive(self.seed, seed::CROSS_CALIBRATION, dir),
                )?,
            };
            Ok(Some(CrossTraffic { rate_pps, ..base }))
        };
        let (bottleneck, cross_up, cross_down) = match &self.bottleneck {
            None => (None, None, None),
            Some(b) => (
                Some((b.up.clone(), b.down.clone())),
                cross(b.cross_up, &b.up, 0)?,
                cross(b.cross_down, &b.down, 1)?,
            ),
        };
        Ok(SimSetup {
            clients: p.clients,
            access_up: self.access(&self.access_up, p, p.clients, seed::BANDWIDTH_UP),
            access_down: self.access(&self.access_down, p, p.clients, seed::BANDWIDTH_DOWN),
            bottleneck,
            cross: (cross_up, cross_down),
            duration: self.duration,
            drain: self.drain,
            seed: self.seed,
        })
    }

    /// What the per-client draws gave (first sweep point): round-trip
    /// propagation delay and mean loss rate per client (server to client),
    /// as median / p90 / max, and the share of clients with 5% loss or more.
    pub fn drawn_summary(&self) -> Option<String> {
        let p = self.points().into_iter().next()?;
        let up = self.access(&self.access_up, &p, p.clients, seed::BANDWIDTH_UP);
        let down = self.access(&self.access_down, &p, p.clients, seed::BANDWIDTH_DOWN);
        let n = p.clients as usize;
        let at = |v: &[LinkConfig], c: usize| v[c % v.len().max(1)].clone();
        let rtt: Vec<f64> = (0..n)
            .map(|c| (at(&up, c).delay + at(&down, c).delay).as_secs_f64() * 1000.0)
            .collect();
        let loss: Vec<f64> = (0..n).map(|c| at(&down, c).loss.mean_loss()).collect();
        let lossy = loss.iter().filter(|&&l| l >= 0.05).count();
        let (r50, r90, rmax) = per_client::quantiles(rtt)?;
        let (l50, l90, lmax) = per_client::quantiles(loss)?;
        Some(format!(
            "{n} clients: RTT (propagation) median {r50:.0} ms, p90 {r90:.0} ms, max {rmax:.0} ms; \
             loss (down) median {:.2}%, p90 {:.2}%, max {:.2}%; {lossy} clients ({:.1}%) at 5% loss or more",
            l50 * 100.0,
            l90 * 100.0,
            lmax * 100.0,
            lossy as f64 / n.max(1) as f64 * 100.0
        ))
    }

    /// Human-readable parameters for the report.
    pub fn params(&self) -> Vec<(String, String)> {
        let link = |l: &LinkSpec| {
            let c = &l.config;
            let bw = match (l.bandwidth_kbps, c.bandwidth_bps) {
                (Some((a, b)), _) => format!("{a}-{b} kbit/s per client"),
                (None, Some(b)) => format!("{} kbit/s", b as f64 / 1000.0),
                (None, None) => "unlimited".into(),
            };
            describe_link(c, bw)
        };
        let mut v = vec![
            ("scenario".to_owned(), self.name.clone()),
            ("description".to_owned(), self.description.clone()),
            ("source".to_owned(), self.source.clone()),
            (
                "engine".to_owned(),
                "discrete-event simulator (sim)".to_owned(),
            ),
            ("seed".to_owned(), self.seed.to_string()),
            (
                "duration".to_owned(),
                format!(
                    "{} s (+{} s drain)",
                    self.duration.as_secs_f64(),
                    self.drain.as_secs_f64()
                ),
            ),
            ("clients".to_owned(), self.clients.to_string()),
            ("access up".to_owned(), link(&self.access_up)),
            ("access down".to_owned(), link(&self.access_down)),
        ];
        if !(self.access_up.per_client.is_empty() && self.access_down.per_client.is_empty()) {
            for (dir, spec) in [("up", &self.access_up), ("down", &self.access_down)] {
                if !spec.per_client.is_empty() {
                    v.push((
                        format!("access {dir} per client"),
                        spec.per_client.describe(),
                    ));
                }
            }
            if let Some(s) = self.drawn_summary() {
                v.push(("per-client links drawn".to_owned(), s));
            }
        }
        if let Some(b) = &self.bottleneck {
            let bw = |c: &LinkConfig| {
                c.bandwidth_bps.map_or("unlimited".into(), |b| {
                    format!("{} kbit/s", b as f64 / 1000.0)
                })
            };
            v.push(("bottleneck up".into(), describe_link(&b.up, bw(&b.up))));
            v.push((
                "bottleneck down".into(),
                describe_link(&b.down, bw(&b.down)),
            ));
            let cross = |c: &Option<CrossSpec>| {
                match c {
                None => "none".to_owned(),
                Some(c) => format!(
                    "{} {}-byte packets, {}",
                    match c.shape {
                        CrossShape::Poisson => "Poisson".to_owned(),
                        CrossShape::OnOff { mean_on, mean_off } => format!(
                            "on-off ({} ms / {} ms)",
                            mean_on.as_millis(),
                            mean_off.as_millis()
                        ),
                    },
                    c.packet_bytes,
                    match c.rate {
                        CrossRate::TargetLoss(l) =>
                            format!("rate calibrated so that all bottleneck traffic (cross traffic plus the game's mean load, as Poisson) sees {}% loss", l * 100.0),
                        CrossRate::Kbps(k) => format!("{k} kbit/s"),
                    }
                ),
            }
            };
            v.push(("cross traffic up".into(), cross(&b.cross_up)));
            v.push(("cross traffic down".into(), cross(&b.cross_down)));
        }
        for (i, w) in self.workloads.iter().enumerate() {
            v.push((format!("workload {}", i + 1), w.describe()));
        }
        v.push((
            "protocols".into(),
            self.protocols
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", "),
        ));
        if !self.sweep.clients.is_empty() {
            v.push(("sweep clients".into(), format!("{:?}", self.sweep.clients)));
        }
        if !self.sweep.delay_ms.is_empty() {
            v.push((
                "sweep access delay (ms)".into(),
                format!("{:?}", self.sweep.delay_ms),
            ));
        }
        if !self.sweep.loss.is_empty() {
            v.push(("sweep access loss".into(), format!("{:?}", self.sweep.loss)));
        }
        v.push((
            "models".into(),
            "tcp-model and udp-model are simulator models of TCP NewReno and plain UDP, not kernel stacks".into(),
        ));
        v
    }
}

fn describe_link(c: &LinkConfig, bw: String) -> String {
    let loss = match c.loss {
        LossModel::None => "no random loss".to_owned(),
        LossModel::Bernoulli { p } => format!("Bernoulli loss {}%", p * 100.0),
        LossModel::GilbertElliott { .. } => format!(
            "Gilbert-Elliott loss (mean {:.2}%)",
            c.loss.mean_loss() * 100.0
        ),
    };
    let queue = match c.queue {
        QueueLimit::Unlimited => "unlimited queue".to_owned(),
        QueueLimit::Bytes(b) => format!("{b}-byte drop-tail queue"),
        QueueLimit::Time(t) => format!("{} ms time-limited queue", t.as_secs_f64() * 1000.0),
    };
    format!(
        "delay {} ms, jitter ±{} ms{}, {loss}, {bw}, {queue}{}{}",
        c.delay.as_secs_f64() * 1000.0,
        c.jitter.as_secs_f64() * 1000.0,
        if c.reorder { " (reordering)" } else { "" },
        if c.trace.is_some() {
            ", per-packet trace"
        } else {
            ""
        },
        if c.duplicate > 0.0 || c.corrupt > 0.0 {
            format!(
                ", duplicate {}%, corrupt {}%",
                c.duplicate * 100.0,
                c.corrupt * 100.0
            )
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests;
