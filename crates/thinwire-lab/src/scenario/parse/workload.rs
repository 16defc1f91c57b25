//! `[[workload]]` tables into workload specifications.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::Ctx;
use crate::error::LabError;
use crate::scenario::toml_types::{NonNeg, WorkloadToml};
use crate::workload::{
    load_pcap, load_trace_csv, ActionMmorpgWorkload, Direction, GameProfile, MessagingWorkload,
    MmorpgWorkload, PcapOptions, ProfileWorkload, ReplayWorkload, TraceRow, WorkloadSpec,
    DEFAULT_DEADLINE_TARGET, PROFILES,
};

/// One `[[workload]]` table; `span` locates it for errors.
pub(super) fn workload(
    ctx: &Ctx<'_>,
    w: &WorkloadToml,
    span: Range<usize>,
) -> Result<WorkloadSpec, LabError> {
    Ok(match w {
        WorkloadToml::Profile {
            game,
            direction: d,
            class,
            deadline_ms,
            target,
            rate_pps,
        } => {
            let profile = game_profile(ctx, game, span.clone())?;
            WorkloadSpec::Profile(ProfileWorkload {
                direction: direction(ctx, d.as_deref(), Direction::Down, span)?,
                class: class.clone().unwrap_or_else(|| "game".into()),
                deadline: deadline_ms.map(|v| ms(v.0)),
                target: target.map_or(DEFAULT_DEADLINE_TARGET, |t| t.0),
                rate_scale: rate_pps.map_or(1.0, |r| r.0 * profile.iat_avg / 1000.0),
                profile,
            })
        }
        WorkloadToml::Mmorpg { .. } | WorkloadToml::MmorpgActions { .. } => {
            mmorpg_model(ctx, w, span)?
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
            let rows = load_trace_csv(&ctx.resolve(path))?;
            let target = target.map_or(DEFAULT_DEADLINE_TARGET, |t| t.0);
            replay(rows, path, target, *phase_ms, *r#loop)
        }
        WorkloadToml::Pcap {
            path,
            server_port,
            class,
            phase_ms,
            r#loop,
        } => {
            let options = PcapOptions {
                server_port: *server_port,
                class: class.clone(),
            };
            let rows = load_pcap(&ctx.resolve(path), &options)?;
            replay(rows, path, DEFAULT_DEADLINE_TARGET, *phase_ms, *r#loop)
        }
    })
}

/// An MMORPG table (`mmorpg` or `mmorpg-actions`); `workload` hands over no
/// other kind.
fn mmorpg_model(
    ctx: &Ctx<'_>,
    w: &WorkloadToml,
    span: Range<usize>,
) -> Result<WorkloadSpec, LabError> {
    Ok(match w {
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
            let client_size = client_size.map_or(d.client_size, |s| (s[0], s[1]));
            check_mmorpg(ctx, span, mix, client_size)?;
            WorkloadSpec::Mmorpg(MmorpgWorkload {
                client_rate: client_rate.map_or(d.client_rate, |v| v.0),
                mix,
                client_size,
                update_interval: update_interval_ms.map_or(d.update_interval, |v| ms(v.0)),
                update_jitter: update_jitter.map_or(d.update_jitter, |v| v.0),
                update_size: update_size.map_or(d.update_size, |v| v.0),
                update_size_sd: update_size_sd.map_or(d.update_size_sd, |v| v.0),
                zone_size: zone_size.unwrap_or(d.zone_size),
            })
        }
        WorkloadToml::MmorpgActions {
            rate_mean,
            rate_sigma,
            rate_range,
            mix,
            client_sizes,
            client_size_share,
            server_size,
            server_size_sd,
            zones,
            join_gap_s,
            last_move_reliable,
        } => {
            let d = ActionMmorpgWorkload::default();
            let mix = mix.map_or(d.mix, |m| [m[0].0, m[1].0, m[2].0]);
            let sizes = client_sizes.map_or((d.client_sizes.0, d.client_sizes.1), |s| (s[0], s[1]));
            check_mmorpg(
                ctx,
                span.clone(),
                mix,
                (sizes.0.min(sizes.1), sizes.0.max(sizes.1)),
            )?;
            let rate_range = rate_range.map_or(d.rate_range, |r| (r[0].0, r[1].0));
            let join_gap = join_gap_s.map_or(d.join_gap, |g| (g[0].0, g[1].0));
            if rate_range.0 > rate_range.1 || join_gap.0 > join_gap.1 {
                return Err(ctx.err(
                    span,
                    "mmorpg-actions: rate_range and join_gap_s must be [min, max] with min <= max",
                ));
            }
            WorkloadSpec::MmorpgActions(ActionMmorpgWorkload {
                rate_mean: rate_mean.map_or(d.rate_mean, |v| v.0),
                rate_sigma: rate_sigma.map_or(d.rate_sigma, |v| v.0),
                rate_range,
                mix,
                client_sizes: (
                    sizes.0,
                    sizes.1,
                    client_size_share.map_or(d.client_sizes.2, |p| p.0),
                ),
                server_size: server_size.map_or(d.server_size, |v| v.0),
                server_size_sd: server_size_sd.map_or(d.server_size_sd, |v| v.0),
                zones: zones.unwrap_or(d.zones).max(1),
                join_gap,
                last_move_reliable: last_move_reliable.unwrap_or(d.last_move_reliable),
            })
        }
        // `workload` hands over the MMORPG kinds only; any other is its error.
        _ => return Err(ctx.err(span, "expected an `mmorpg` or `mmorpg-actions` workload")),
    })
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1000.0)
}

/// The game profile named `game`.
fn game_profile(ctx: &Ctx<'_>, game: &str, span: Range<usize>) -> Result<GameProfile, LabError> {
    match GameProfile::by_key(game) {
        Some(p) => Ok(*p),
        None => {
            let names: Vec<&str> = PROFILES.iter().map(|p| p.key).collect();
            Err(ctx.err(
                span,
                format!(
                    "unknown game profile `{game}` (known: {})",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// Checks an MMORPG workload's message mix and client message sizes.
fn check_mmorpg(
    ctx: &Ctx<'_>,
    span: Range<usize>,
    mix: [f64; 3],
    client_size: (u32, u32),
) -> Result<(), LabError> {
    if mix.iter().sum::<f64>() <= 0.0 {
        return Err(ctx.err(span, "mmorpg: mix must not be all zero"));
    }
    if client_size.0 == 0 || client_size.0 > client_size.1 {
        return Err(ctx.err(
            span,
            "mmorpg: client_size must be [min, max] with 0 < min <= max",
        ));
    }
    Ok(())
}

/// A replay of `rows` (read from `origin`).
fn replay(
    rows: Vec<TraceRow>,
    origin: &str,
    target: f64,
    phase_ms: Option<NonNeg>,
    looped: Option<bool>,
) -> WorkloadSpec {
    WorkloadSpec::Replay(ReplayWorkload {
        rows: Arc::new(rows),
        origin: origin.to_owned(),
        target,
        phase: phase_ms.map_or(Duration::ZERO, |v| ms(v.0)),
        looped: looped.unwrap_or(true),
    })
}

/// A `direction` value (`up` or `down`), `default` when absent.
fn direction(
    ctx: &Ctx<'_>,
    d: Option<&str>,
    default: Direction,
    span: Range<usize>,
) -> Result<Direction, LabError> {
    match d {
        None => Ok(default),
        Some("up") => Ok(Direction::Up),
        Some("down") => Ok(Direction::Down),
        Some(o) => Err(ctx.err(span, format!("direction `{o}` must be `up` or `down`"))),
    }
}
