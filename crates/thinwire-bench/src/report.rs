//! `report.html`: one self-contained page of the report kit ([`thinwire_report`]: the page
//! and style sheet the lab's reports use, its tables and figures): the machine and options,
//! then per section how it was measured, its table (every repetition's range, the
//! thinwire/ENet ratio) and its figures.

use std::fmt::Write as _;

use thinwire_report::escape;
use thinwire_report::html::{figure, page};

use crate::host::Protocol;
use crate::plots::{self, Series};
use crate::results::{BenchResults, Cell, Row, Section};
use crate::table;

/// The page.
pub(crate) fn report_html(r: &BenchResults) -> String {
    let mut h = String::new();
    h.push_str("<h1>thinwire bench: thinwire, ENet, KCP and GNS on loopback</h1>\n");
    let m = &r.machine;
    let load = |l: [f64; 3]| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]);
    let _ = writeln!(
        h,
        "<p class=\"meta\"><b>machine</b> {} cores ({}), {} MiB, {}; load average {} at the \
         start, {} at the end; ENet {}; GNS {}</p>",
        m.cores,
        escape(&m.cpu_model),
        m.memory_mib,
        escape(&m.kernel),
        load(m.load_average_start),
        load(m.load_average_end),
        escape(m.enet.as_deref().unwrap_or("not linked")),
        escape(m.gns.as_deref().unwrap_or("not built"))
    );
    let o = &r.options;
    let _ = writeln!(
        h,
        "<p class=\"meta\"><b>run</b> {} repetition(s), each running every transport once \
         (thinwire, ENet, KCP, GNS, interleaved); {:.1} s per measurement; {} idle connections; \
         sweep {:?}; bursts of {}; thinwire {}{}; {:.0} s in all</p>",
        o.reps,
        o.seconds,
        o.idle,
        o.sweep,
        o.burst,
        if o.insecure_cleartext {
            "INSECURE cleartext"
        } else {
            "encrypted"
        },
        if o.quick { "; QUICK (CI) run" } else { "" },
        r.elapsed_s
    );
    h.push_str(
        "<p class=\"note\">Every cell is the range over the repetitions; the ratio column \
         divides thinwire's value by ENet's within each repetition (the two ran back to back) \
         and gives the smallest and largest of those ratios. All traffic is on loopback: \
         these are the transports' own costs, with no network in the way.</p>\n",
    );
    for s in &r.sections {
        section(&mut h, s);
    }
    page("thinwire bench", &h)
}

fn section(h: &mut String, s: &Section) {
    let _ = writeln!(h, "<h2 id=\"{}\">{}</h2>", escape(&s.id), escape(&s.title));
    let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(&s.method));
    rows_table(h, &s.rows);
    let pick =
        |suffix: &str| -> Vec<&Row> { s.rows.iter().filter(|r| r.id.ends_with(suffix)).collect() };
    match s.id.as_str() {
        "throughput" => {
            let rows = pick("/rate");
            figure(
                h,
                "plot-throughput",
                bar_figure(
                    "Messages per second delivered",
                    "reliability, message size, clients",
                    "messages per second",
                    &rows,
                ),
                "Median of the repetitions; whiskers span them.",
            );
        }
        "round_trip" => {
            let mut rows = pick("/p50");
            rows.extend(pick("/p99"));
            figure(
                h,
                "plot-round-trip",
                bar_figure(
                    "Round trip, back to back (24 B)",
                    "percentile, delivery",
                    "µs",
                    &rows,
                ),
                "p50 and p99 per class; whiskers span the repetitions.",
            );
        }
        "memory" => {
            let mut rows = pick("/heap");
            rows.extend(pick("/heap_with_slots"));
            figure(
                h,
                "plot-memory",
                bar_figure(
                    "Heap per idle connection",
                    "what is counted",
                    "bytes",
                    &rows,
                ),
                "Per connection, and with ENet's preallocated peer slots counted.",
            );
        }
        "sweep" => {
            let cpu = pick("/cpu");
            figure(h, "plot-sweep-cpu", line_figure("Server CPU per tick at 30 Hz", "ms of CPU per tick", &cpu, Some((1000.0 / 30.0, "one tick (33.3 ms)"))), "Mean server thread CPU per tick against the number of clients; above the grey line one core cannot keep 30 Hz.");
            let late = pick("/late");
            figure(
                h,
                "plot-sweep-late",
                line_figure("Late ticks", "ticks", &late, None),
                "Ticks that ended more than 33.3 ms after they were due, of the ticks measured.",
            );
        }
        _ => {}
    }
}

fn rows_table(h: &mut String, rows: &[Row]) {
    thinwire_report::table::open(h, None);
    thinwire_report::table::header(
        h,
        ["metric", "unit"]
            .into_iter()
            .chain(Protocol::ALL.map(Protocol::label))
            .chain(["thinwire / ENet"]),
    );
    for r in rows {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td>",
            escape(&r.label),
            escape(&r.unit)
        );
        for p in Protocol::ALL {
            let c = r.cells.get(&p);
            let title = match c {
                Some(Cell::NotApplicable(w) | Cell::Failed(w)) => {
                    format!(" title=\"{}\"", escape(w))
                }
                _ => String::new(),
            };
            let _ = write!(
                h,
                "<td class=\"num\"{title}>{}</td>",
                escape(&table::cell(c, &r.unit))
            );
        }
        let _ = writeln!(h, "<td class=\"num\">{}</td></tr>", table::ratio(r.ratio));
    }
    thinwire_report::table::close(h);
}

/// Per transport, the rows' summaries in row order.
fn series(rows: &[&Row]) -> Vec<Series> {
    Protocol::ALL
        .iter()
        .map(|&p| {
            (
                p,
                rows.iter()
                    .map(|r| r.cells.get(&p).and_then(Cell::summary))
                    .collect(),
            )
        })
        .collect()
}

/// A short category name for a bar: `rel 24 B ×1`, `p50 reliable`.
fn short(label: &str) -> String {
    let s = label
        .replace("unreliable", "unrel")
        .replace("reliable", "rel")
        .replace(", 100 clients", " ×100")
        .replace(", 1 client", " ×1")
        .replace(
            "heap per idle connection, preallocated peer slots counted",
            "with preallocated slots",
        )
        .replace("heap per idle connection", "per connection");
    s.split(" (").next().unwrap_or(&s).replace(", ", " ")
}

fn bar_figure(title: &str, x: &str, y: &str, rows: &[&Row]) -> Result<String, String> {
    let cats: Vec<String> = rows.iter().map(|r| short(&r.label)).collect();
    plots::bars(title, x, y, &cats, &series(rows))
}

fn line_figure(
    title: &str,
    y: &str,
    rows: &[&Row],
    guide: Option<(f64, &str)>,
) -> Result<String, String> {
    let xs: Vec<f64> = rows.iter().map(|r| r.x.unwrap_or(0.0)).collect();
    plots::lines(title, "clients", y, &xs, &series(rows), guide)
}
