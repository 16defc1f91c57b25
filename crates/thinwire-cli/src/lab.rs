//! What `thinwire lab run` (in the simulator) and `thinwire lab list` show:
//! a progress bar while simulating, then the results tables and the files
//! written.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use thinwire_lab::metrics::{deadline_rows, deadline_table};
use thinwire_lab::paper::{comparison_table, papers_markdown, Calibrations, PaperJson, Provenance};
use thinwire_lab::report::{render_papers_report, LinkedReport, PaperRun};
use thinwire_lab::runner::{
    merge_shards, run_scenario, run_shard, write_outputs, LabRun, Progress, RunOptions, Shard,
    ShardFile,
};
use thinwire_lab::scenario::{Scenario, BUILTIN};

/// The simulator's progress as an `indicatif` bar (hidden unless stderr is a terminal).
struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, fraction: f64) {
        self.0
            .set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
}

fn progress_bar(scenario: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(1000),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {percent:>3}% {elapsed_precise} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(format!("simulating {scenario}"));
    bar
}

/// `thinwire lab run`: simulates `scn`, writes `results.json` and
/// `report.html` into `out` and prints the summary.
pub(crate) fn simulate(scn: &Scenario, out: &Path, opts: &RunOptions) -> Result<(), String> {
    let bar = progress_bar(&scn.name);
    let result = run_scenario(scn, opts, &Bar(bar.clone()));
    bar.finish_and_clear();
    let lab = result.map_err(|e| e.to_string())?;
    write_outputs(&lab, out).map_err(|e| e.to_string())?;
    print_summary(scn, &lab, out);
    Ok(())
}

/// `thinwire lab run --shard K/N`: simulates part K of N and writes its shard file.
pub(crate) fn shard(
    scn: &Scenario,
    out: &Path,
    opts: &RunOptions,
    shard: Shard,
) -> Result<(), String> {
    let bar = progress_bar(&format!("{} shard {shard}", scn.name));
    let result = run_shard(scn, opts, shard, &Bar(bar.clone()));
    bar.finish_and_clear();
    let file = result.map_err(|e| e.to_string())?;
    let path = file.write(out).map_err(|e| e.to_string())?;
    println!(
        "scenario {} ({}): shard {shard} ran {} of {} simulations",
        scn.name,
        scn.source,
        file.len(),
        file.total_jobs
    );
    println!("wrote {}", path.display());
    Ok(())
}

/// The arguments of `thinwire lab merge`.
#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// Shard files, or directories holding `shard-*.json` files.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "lab-out")]
    out: PathBuf,
}

/// Every shard file named by `inputs` (directories are searched for `shard-*.json`).
fn shard_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for i in inputs {
        if i.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(i)
                .map_err(|e| format!("{}: {e}", i.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".json"))
                })
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(i.clone());
        }
    }
    if files.is_empty() {
        return Err("no shard files found".into());
    }
    Ok(files)
}

/// `thinwire lab merge`: assembles the shards of one run into its outputs.
pub(crate) fn merge(args: MergeArgs) -> Result<(), String> {
    let files = shard_files(&args.inputs)?;
    let shards = files
        .iter()
        .map(|f| ShardFile::read(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let source = shards.first().map(|s| s.source.clone()).unwrap_or_default();
    let lab = merge_shards(shards).map_err(|e| e.to_string())?;
    write_outputs(&lab, &args.out).map_err(|e| e.to_string())?;
    println!(
        "merged {} shard files of {} ({source})",
        files.len(),
        lab.results.scenario
    );
    print_tables(&lab, &args.out);
    Ok(())
}

/// The built-in scenarios that reproduce a paper (a `[paper]` table), in order.
fn paper_scenarios() -> Result<Vec<Scenario>, String> {
    let mut out = Vec::new();
    for (name, _) in BUILTIN {
        let scn = Scenario::load(name).map_err(|e| e.to_string())?;
        if scn.paper.info.is_some() {
            out.push(scn);
        }
    }
    Ok(out)
}

/// `thinwire lab run papers`: every paper's scenario, each into `out/NAME/`,
/// and one report (`out/report.html`, `out/paper.json`) with a summary of
/// every published figure at the top.
pub(crate) fn papers(out: &Path, opts: &RunOptions, markdown: Option<&Path>) -> Result<(), String> {
    let started = std::time::Instant::now();
    let scenarios = paper_scenarios()?;
    let mut runs = Vec::new();
    for scn in &scenarios {
        let bar = progress_bar(&scn.name);
        let result = run_scenario(scn, opts, &Bar(bar.clone()));
        bar.finish_and_clear();
        let lab = result.map_err(|e| format!("{}: {e}", scn.name))?;
        let dir = out.join(&scn.name);
        write_outputs(&lab, &dir).map_err(|e| e.to_string())?;
        if let Some(p) = &lab.paper {
            println!(
                "{} ({})",
                scn.name,
                p.info.as_ref().map_or("", |i| i.title.as_str())
            );
            print!("{}", comparison_table(&p.comparisons, &p.orders));
            println!();
        }
        runs.push((scn.name.clone(), lab));
    }
    let papers: Vec<PaperRun<'_>> = runs
        .iter()
        .map(|(name, run)| PaperRun {
            scenario: name,
            paper: run.paper.as_ref(),
            repetitions: run.repetitions.as_ref(),
            report_href: format!("{name}/report.html"),
        })
        .collect();
    let (linked, gateway_calibrations) = gateway_figures(out, opts)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let html = out.join("report.html");
    std::fs::write(&html, render_papers_report(&papers, &linked))
        .map_err(|e| format!("{}: {e}", html.display()))?;
    let mut json = PaperJson::default();
    for (name, run) in &runs {
        if let Some(p) = &run.paper {
            json.add(name, &p.comparisons, &p.orders);
        }
    }
    for l in &linked {
        json.add_figures(&l.name, &l.figures);
    }
    let path = out.join("paper.json");
    std::fs::write(&path, json.to_json_pretty()).map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "{} (across {} papers' scenarios and the gateway reproductions)",
        json.score().line(),
        runs.len()
    );
    println!("wrote {}", html.display());
    println!("wrote {}", path.display());
    if let Some(md) = markdown {
        let mut calibrations: Vec<Calibrations> = runs
            .iter()
            .filter_map(|(name, run)| {
                let info = run.paper.as_ref()?.info.as_ref()?;
                Some(Calibrations {
                    name: name.clone(),
                    items: info.calibrations.clone(),
                })
            })
            .collect();
        calibrations.extend(gateway_calibrations);
        let how = Provenance {
            command: papers_command(opts, md),
            commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
            machine: machine(),
            date: command_line("date", &["-u", "+%Y-%m-%d"]).unwrap_or_default(),
            wall: format!("{:.0} s", started.elapsed().as_secs_f64()),
        };
        std::fs::write(md, papers_markdown(&json, &calibrations, &how))
            .map_err(|e| format!("{}: {e}", md.display()))?;
        println!("wrote {}", md.display());
    }
    Ok(())
}

/// The command line that reproduces a papers run (for the Markdown document).
fn papers_command(opts: &RunOptions, md: &Path) -> String {
    let mut c = String::from("cargo run --release -p thinwire-cli -- lab run papers");
    if let Some(r) = opts.runs {
        c.push_str(&format!(" --runs {r}"));
    }
    if let Some(s) = opts.seed {
        c.push_str(&format!(" --seed {s}"));
    }
    if let Some(d) = opts.duration {
        c.push_str(&format!(" --duration {}", d.as_secs_f64()));
    }
    c.push_str(&format!(" --markdown {}", md.display()));
    c
}

/// A command's first line of output, if it ran.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}

/// `2 cores, AMD EPYC 7B13` (the CPU model from /proc/cpuinfo where there is one).
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    format!("{cores} cores, {model}")
}

/// The multiplexing papers, on the real gateway code with a report of their own
/// (`out/gateway/`), run as many times as the scenarios (`--runs`), their published figures
/// averaged over the runs for the papers report.
fn gateway_figures(
    out: &Path,
    opts: &RunOptions,
) -> Result<(Vec<LinkedReport>, Vec<Calibrations>), String> {
    let mut gw = thinwire_lab::gateway::GatewayLabOptions::default();
    if let Some(seed) = opts.seed {
        gw.ao.seed = seed;
        gw.tcm.seed = seed;
    }
    if let Some(d) = opts.duration {
        gw.ao.duration = d;
        gw.tcm.duration = d;
    }
    let bar = progress_bar("gateway");
    let (report, sections) =
        thinwire_lab::gateway::run_gateway_repeated(&gw, opts.runs.unwrap_or(1), opts.jobs);
    bar.finish_and_clear();
    let html = thinwire_lab::gateway::write_gateway_files(&out.join("gateway"), &report)
        .map_err(|e| e.to_string())?;
    println!(
        "gateway reproductions (Griwodz & Halvorsen's multiplexing proxy, Saldaña et al.'s TCM): {}",
        html.display()
    );
    let calibrations = sections
        .iter()
        .map(|s| Calibrations {
            name: s.name.to_owned(),
            items: s.calibrations.clone(),
        })
        .collect();
    let linked = sections
        .into_iter()
        .map(|s| LinkedReport {
            name: s.name.to_owned(),
            title: s.title.to_owned(),
            href: format!("gateway/{}", s.href),
            figures: s.figures,
        })
        .collect();
    Ok((linked, calibrations))
}

/// The results table, the deadline table, the per-run notes and the files written.
fn print_summary(scn: &Scenario, lab: &LabRun, out: &Path) {
    println!(
        "scenario {} ({}), seed {}",
        scn.name, scn.source, lab.results.seed
    );
    if !scn.description.is_empty() {
        println!("{}", scn.description);
    }
    if let Some(security) = scn.thinwire_security() {
        println!("thinwire security: {security}");
    }
    print_tables(lab, out);
}

/// What [`print_summary`] prints after the scenario's header.
fn print_tables(lab: &LabRun, out: &Path) {
    println!();
    print!("{}", lab.results.terminal_table());
    println!();
    if let Some(r) = &lab.repetitions {
        print!("{}", r.terminal_table());
        println!();
    }
    if let Some(p) = &lab.paper {
        println!("paper vs thinwire lab:");
        print!("{}", comparison_table(&p.comparisons, &p.orders));
        println!();
    }
    let deadline = deadline_table(&deadline_rows(&lab.results, &lab.samples));
    if !deadline.is_empty() {
        print!("{deadline}");
        println!();
    }
    for n in &lab.notes {
        let mut line = format!(
            "  {}: access drops {:.2}%",
            n.key,
            n.access_drop_rate * 100.0
        );
        if let Some(b) = n.bottleneck_drop_rate {
            line.push_str(&format!(
                ", bottleneck drops {:.2}% (incl. cross traffic)",
                b * 100.0
            ));
        }
        if let Some(d) = n.deadline_summary() {
            line.push_str(&format!("; {d}"));
        }
        if let Some(r) = n.recovery_summary() {
            line.push_str(&format!("; {r}"));
        }
        println!("{line}");
    }
    println!();
    println!("wrote {}", out.join("results.json").display());
    if lab.repetitions.is_some() {
        println!("wrote {}", out.join("runs.json").display());
    }
    println!("wrote {}", out.join("report.html").display());
}

/// `thinwire lab list`: the built-in scenarios and the files in `./scenarios`.
pub(crate) fn list() {
    println!("built-in scenarios:");
    for (name, text) in BUILTIN {
        let desc = Scenario::parse(text, Path::new(name), name)
            .map(|s| s.description)
            .unwrap_or_else(|e| format!("(invalid: {e})"));
        println!("  {name:<20} {desc}");
    }
    let dir = Path::new("scenarios");
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        if !files.is_empty() {
            println!("scenario files in ./scenarios (run with `thinwire lab run PATH`):");
            for f in files {
                println!("  {}", f.display());
            }
        }
    }
}

/// The arguments of `thinwire lab gateway`.
#[derive(Debug, clap::Args)]
pub(crate) struct GatewayArgs {
    /// Output directory.
    #[arg(long, default_value = "lab-out")]
    out: std::path::PathBuf,
    /// Seed of both reproductions.
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated seconds of traffic per run (overrides both reproductions' defaults).
    #[arg(long)]
    duration: Option<f64>,
    /// Anarchy Online: paired ACKs on the trunk (every second trunk packet acknowledged).
    #[arg(long)]
    trunk_paired_acks: bool,
}

/// `thinwire lab gateway`: runs the Anarchy Online and TCM reproductions on the gateway code.
pub(crate) fn gateway(args: GatewayArgs) -> Result<(), String> {
    use thinwire_lab::gateway::{write_gateway_report, GatewayLabOptions};
    let mut opts = GatewayLabOptions::default();
    opts.ao.paired_acks = args.trunk_paired_acks;
    if let Some(seed) = args.seed {
        opts.ao.seed = seed;
        opts.tcm.seed = seed;
    }
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0 && d < 1e6) {
            return Err(format!(
                "--duration {d}: must be a positive number of seconds"
            ));
        }
        opts.ao.duration = Duration::from_secs_f64(d);
        opts.tcm.duration = Duration::from_secs_f64(d);
    }
    let (_, html) = write_gateway_report(&args.out, &opts).map_err(|e| e.to_string())?;
    println!("wrote {}", html.display());
    Ok(())
}
