//! Scenario files (TOML) into [`Scenario`]s: [`Scenario::parse`] and
//! [`Scenario::load`].
//!
//! Errors name the file and the line of the offending value (from the TOML
//! parser's spans); relative paths are resolved against the file's folder.

mod link;
mod workload;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use thinwire_netmodel::{LinkConfig, QueueLimit};
use toml::Spanned;

use super::builtin::builtin;
use super::per_client::PerClient;
use super::sweep::Sweep;
use super::toml_types::{LinkToml, ScenarioToml, SweepToml};
use super::{BottleneckSpec, CrossRate, CrossSpec, LinkSpec, Scenario};
use crate::error::LabError;
use crate::protocol::ProtocolSpec;
use link::{cross_spec, link_spec, merge};

/// 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The file being parsed: for errors and relative paths.
struct Ctx<'a> {
    text: &'a str,
    path: &'a Path,
    dir: PathBuf,
}

impl Ctx<'_> {
    /// An error at the line where `span` starts.
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> LabError {
        LabError::at_line(self.path, line_of(self.text, span.start), msg)
    }

    /// `p` relative to the file's folder (unless absolute).
    fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.dir.join(p)
        }
    }
}

impl Scenario {
    /// Parses scenario text. `path` names the file in errors and anchors
    /// relative paths; `default_name` is used when the file has no `name`.
    pub fn parse(text: &str, path: &Path, default_name: &str) -> Result<Scenario, LabError> {
        let raw = from_toml(text, path)?;
        let ctx = Ctx {
            text,
            path,
            dir: path.parent().map(Path::to_owned).unwrap_or_default(),
        };
        let protocols = protocols(&ctx, &raw.protocols)?;
        let (access_up, access_down) = access(&ctx, raw.access.as_ref())?;
        let bottleneck = match &raw.bottleneck {
            None => None,
            Some(b) => Some(bottleneck(&ctx, b)?),
        };
        let mut workloads = Vec::new();
        for w in raw.workload.get_ref() {
            workloads.push(workload::workload(&ctx, w.get_ref(), w.span())?);
        }
        if workloads.is_empty() {
            return Err(ctx.err(raw.workload.span(), "`workload` is empty"));
        }
        let clients = raw.clients.unwrap_or(1);
        let runs = raw.runs.unwrap_or(1);
        if !(1..=super::MAX_RUNS).contains(&runs) {
            return Err(LabError::at_line(
                path,
                1,
                format!("runs = {runs}: must be between 1 and {}", super::MAX_RUNS),
            ));
        }
        let gateway_edges = raw.gateway_edges.unwrap_or(1);
        if !(1..=super::MAX_GATEWAY_EDGES).contains(&gateway_edges) {
            return Err(LabError::at_line(
                path,
                1,
                format!(
                    "gateway_edges = {gateway_edges}: must be between 1 and {}",
                    super::MAX_GATEWAY_EDGES
                ),
            ));
        }
        let sweep = sweep(raw.sweep.unwrap_or_default());
        let access_span = raw.access.as_ref().map_or(0..0, |a| a.span());
        check_sweep(&ctx, &sweep, access_span, [&access_up, &access_down])?;
        check_clients(path, &sweep, clients)?;
        let names: Vec<String> = protocols.iter().map(ProtocolSpec::name).collect();
        let paper_span = raw.paper.as_ref().map_or(0..0, |p| p.span());
        let paper = crate::paper::parse_paper(
            raw.paper.map(Spanned::into_inner),
            raw.published,
            raw.published_order,
            &names,
        )
        .map_err(|e| ctx.err(paper_span, e))?;
        Ok(Scenario {
            name: raw.name.unwrap_or_else(|| default_name.to_owned()),
            description: raw.description.unwrap_or_default(),
            source: path.display().to_string(),
            seed: raw.seed.unwrap_or(1),
            runs,
            duration: Duration::from_secs_f64(raw.duration_s.map_or(60.0, |v| v.0)),
            drain: Duration::from_secs_f64(raw.drain_s.map_or(10.0, |v| v.0)),
            clients,
            gateway_edges,
            access_up,
            access_down,
            bottleneck,
            workloads,
            protocols,
            sweep,
            paper,
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
}

/// The raw TOML, with the line of a syntax or type error.
fn from_toml(text: &str, path: &Path) -> Result<ScenarioToml, LabError> {
    toml::from_str(text).map_err(|e| {
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
    })
}

/// `protocols`: known names, each once, at least one.
fn protocols(
    ctx: &Ctx<'_>,
    names: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<ProtocolSpec>, LabError> {
    let mut protocols = Vec::new();
    for p in names.get_ref() {
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
        return Err(ctx.err(names.span(), "`protocols` is empty"));
    }
    Ok(protocols)
}

/// `[access]`: the access link (up, down); default links without it.
fn access(ctx: &Ctx<'_>, a: Option<&Spanned<LinkToml>>) -> Result<(LinkSpec, LinkSpec), LabError> {
    let Some(a) = a else {
        let d = LinkSpec {
            config: LinkConfig::default(),
            bandwidth_kbps: None,
            per_client: PerClient::default(),
        };
        return Ok((d.clone(), d));
    };
    let t = a.get_ref();
    if t.cross.is_some() {
        return Err(ctx.err(a.span(), "access: `cross` traffic belongs in [bottleneck]"));
    }
    Ok((
        link_spec(ctx, &merge(t, t.up.as_deref()), a.span(), "access.up")?,
        link_spec(ctx, &merge(t, t.down.as_deref()), a.span(), "access.down")?,
    ))
}

/// `[bottleneck]`: the shared links and their cross traffic.
fn bottleneck(ctx: &Ctx<'_>, b: &Spanned<LinkToml>) -> Result<BottleneckSpec, LabError> {
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
    let up = link_spec(ctx, &merge(t, t.up.as_deref()), b.span(), "bottleneck.up")?;
    let down = link_spec(
        ctx,
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
        Some(c) => cross_spec(ctx, c, b.span())?,
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
    let no_bw = |c: &Option<CrossSpec>, l: &LinkConfig| c.is_some() && l.bandwidth_bps.is_none();
    if no_bw(&cross_up, &up.config) || no_bw(&cross_down, &down.config) {
        return Err(ctx.err(b.span(), "bottleneck: cross traffic needs `bandwidth_kbps`"));
    }
    Ok(BottleneckSpec {
        up: up.config,
        down: down.config,
        cross_up,
        cross_down,
    })
}

/// `[sweep]`.
fn sweep(t: SweepToml) -> Sweep {
    Sweep {
        clients: t.clients.unwrap_or_default(),
        delay_ms: t
            .delay_ms
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.0)
            .collect(),
        loss: t
            .loss
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.0)
            .collect(),
        burst: t
            .burst
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.0)
            .collect(),
        load: t
            .load
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.0)
            .collect(),
        jitter: t
            .jitter
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.0)
            .collect(),
    }
}

/// A parameter is either swept or drawn per client, not both.
fn check_sweep(
    ctx: &Ctx<'_>,
    sweep: &Sweep,
    access_span: Range<usize>,
    access: [&LinkSpec; 2],
) -> Result<(), LabError> {
    let drawn = |f: fn(&PerClient) -> bool| access.iter().any(|l| f(&l.per_client));
    if !sweep.delay_ms.is_empty() && drawn(|p| p.delay_ms.is_some()) {
        return Err(ctx.err(
            access_span,
            "access: per_client.delay_ms cannot be combined with sweep.delay_ms",
        ));
    }
    if let Some(b) = sweep.burst.iter().find(|&&b| !(1.0..=1000.0).contains(&b)) {
        return Err(ctx.err(
            access_span,
            format!("sweep.burst: {b} is not a mean burst length in packets (1 to 1000)"),
        ));
    }
    if let Some(j) = sweep.jitter.iter().find(|&&j| j > 10.0) {
        return Err(ctx.err(
            access_span,
            format!("sweep.jitter: {j} is not a fraction of the delay (0 to 10)"),
        ));
    }
    if !sweep.jitter.is_empty() && drawn(|p| p.jitter_fraction.is_some()) {
        return Err(ctx.err(
            access_span,
            "access: per_client.jitter_fraction cannot be combined with sweep.jitter",
        ));
    }
    let means = sweep.loss.iter().copied().chain(
        access
            .iter()
            .map(|l| l.config.loss.mean_loss())
            .filter(|_| sweep.loss.is_empty()),
    );
    for m in means {
        for &b in &sweep.burst {
            if b > 1.0 && thinwire_netmodel::GilbertElliott::from_mean_and_burst(m, b).is_err() {
                return Err(ctx.err(
                    access_span,
                    format!("sweep.burst: loss {m} cannot have mean bursts of {b} packets"),
                ));
            }
        }
    }
    if !sweep.loss.is_empty() && drawn(|p| p.loss.is_some()) {
        return Err(ctx.err(
            access_span,
            "access: per_client.loss cannot be combined with sweep.loss",
        ));
    }
    Ok(())
}

/// Every client count (`clients` and the swept ones) in `1..=100000`.
fn check_clients(path: &Path, sweep: &Sweep, clients: u32) -> Result<(), LabError> {
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
    Ok(())
}
