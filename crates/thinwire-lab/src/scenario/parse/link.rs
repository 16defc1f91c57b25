//! Links in a scenario file: `[access]` and `[bottleneck]` (with their `up`
//! and `down` overrides) into link configurations, and the bottleneck's cross
//! traffic.

use std::ops::Range as Span;
use std::sync::Arc;
use std::time::Duration;

use thinwire_netmodel::{
    GilbertElliott, JitterDistribution, LinkConfig, LossModel, QueueLimit, Trace, TraceLoadError,
};

use super::Ctx;
use crate::error::LabError;
use crate::scenario::per_client::{per_client, PerClient};
use crate::scenario::toml_types::{CrossToml, LinkToml, LossToml, Range};
use crate::scenario::{CrossRate, CrossSpec, LinkSpec};
use crate::sim::{CrossShape, Expoo};

/// `over` (an `up` or `down` table) over `base`, field by field.
pub(super) fn merge(base: &LinkToml, over: Option<&LinkToml>) -> LinkToml {
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

/// The loss model of a `loss` value.
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

/// One link direction; `what` (e.g. `access.up`) names it in errors.
pub(super) fn link_spec(
    ctx: &Ctx<'_>,
    t: &LinkToml,
    span: Span<usize>,
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
        Some(Range::One(k)) => c.bandwidth_bps = Some((k * 1000.0).round().max(1.0) as u64),
        Some(Range::Between(a, b)) => {
            c.bandwidth_bps = Some((a * 1000.0).round().max(1.0) as u64);
            range = Some((a, b));
        }
    }
    if let Some(q) = &t.queue {
        c.queue = match (q.bytes, q.time_ms, q.packets) {
            (Some(b), None, None) => QueueLimit::Bytes(usize::try_from(b).unwrap_or(usize::MAX)),
            (None, Some(ms), None) => QueueLimit::Time(Duration::from_secs_f64(ms.0 / 1000.0)),
            (None, None, Some(n)) => QueueLimit::Packets(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => {
                return Err(e(
                    "queue needs exactly one of `bytes`, `time_ms` or `packets`".into(),
                ))
            }
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
        Some(p) => per_client(p).map_err(e)?,
    };
    Ok(LinkSpec {
        config: c,
        bandwidth_kbps: range,
        per_client,
    })
}

/// The cross traffic of `[bottleneck.cross]`: (up, down).
pub(super) fn cross_spec(
    ctx: &Ctx<'_>,
    t: &CrossToml,
    span: Span<usize>,
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
        // ns-2's Application/Traffic/Exponential defaults: 0.5 s on, 0.5 s off.
        Some("ns2-exponential") => CrossShape::Expoo(Expoo {
            mean_on: Duration::from_secs_f64(t.mean_on_ms.map_or(500.0, |v| v.0) / 1000.0),
            mean_off: Duration::from_secs_f64(t.mean_off_ms.map_or(500.0, |v| v.0) / 1000.0),
            sources: t.sources.unwrap_or(1).max(1),
            access_kbps: match t.access_kbps {
                None => [0.0, 0.0],
                Some(Range::One(k)) => [k, k],
                Some(Range::Between(a, b)) => [a, b],
            },
            access_queue: t.access_queue_packets.unwrap_or(50),
            crossing: t.crossing.map_or(1.0, |p| p.0),
        }),
        Some(_) => return Err(e("shape must be `poisson`, `on-off` or `ns2-exponential`")),
    };
    let ns2 = matches!(shape, CrossShape::Expoo(_));
    if !ns2
        && (t.sources.is_some()
            || t.access_kbps.is_some()
            || t.access_queue_packets.is_some()
            || t.crossing.is_some())
    {
        return Err(e(
            "`sources`, `access_kbps`, `access_queue_packets` and `crossing` need shape `ns2-exponential`",
        ));
    }
    // ns-2's Exponential source sends 210-byte packets by default.
    let packet_bytes = t.packet_bytes.unwrap_or(if ns2 { 210 } else { 1000 });
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
