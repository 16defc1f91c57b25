//! The HTML report: structure, self-containment, determinism, and a sample for eyeballing.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use thinwire_lab::metrics::{
    Engine, MessageRecord, ProtocolInfo, Recorder, Results, RunKey, Samples, WireCounters,
};
use thinwire_lab::report::{Report, ReportError};

/// The report of `res` with `params`, which must render.
fn render_report(res: &Results, samples: &Samples, params: &[(String, String)]) -> String {
    Report::new(res, samples)
        .params(params)
        .render()
        .expect("the report renders")
}

/// Seeded randomness for the synthetic sessions.
struct Rng(ChaCha8Rng);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.random()
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0.random()
    }

    /// Exponential with the given mean.
    fn exp(&mut self, mean: f64) -> f64 {
        Exp::new(1.0 / mean).map_or(0.0, |e| e.sample(&mut self.0))
    }
}

/// How a synthetic protocol recovers a lost packet.
#[derive(Clone, Copy)]
enum Recovery {
    /// Never (plain UDP).
    None,
    /// After a timeout with exponential backoff, one ordered stream for all classes (TCP).
    TimeoutOrdered,
    /// After about one RTT, ordered per class.
    FastPerClass,
    /// Moves are latest-value (lost ones are superseded); attacks recover after about one
    /// RTT unordered; talk ordered.
    ContentBased,
}

/// A thin-stream game session: ~8 messages/s for 10 minutes, 84% move / 12% attack /
/// 4% talk, 100 ms one-way delay, 2% loss. Deterministic.
fn synthetic(with_deadlines: bool) -> (Results, Samples) {
    synthetic_points(&[(None, 100.0, 0.02)], with_deadlines)
}

/// [`synthetic`] at several sweep points `(label, one-way delay ms, loss)`; with a label,
/// protocols are named `name [label]` as the lab names the runs of a sweep.
fn synthetic_points(
    points: &[(Option<&str>, f64, f64)],
    with_deadlines: bool,
) -> (Results, Samples) {
    let protocols: [(&str, bool, Recovery, f64, u64); 4] = [
        ("tcp", true, Recovery::TimeoutOrdered, 0.03, 40),
        ("udp", true, Recovery::None, 0.0, 28),
        ("thinwire-ordered", false, Recovery::FastPerClass, 0.55, 28),
        ("thinwire-content", false, Recovery::ContentBased, 0.22, 28),
    ];
    let mut rec = Recorder::new();
    for &(point, delay, loss) in points {
        for (base, model, recovery, redundancy, header) in protocols {
            let key = RunKey::at(base, point.unwrap_or(""));
            let rtt = 2.0 * delay;
            rec.set_protocol_info(ProtocolInfo {
                key: key.clone(),
                model,
            });
            let mut rng = Rng::new(0xC0FFEE);
            let mut t = 0.0f64;
            let mut last_delivery_ordered = 0.0f64;
            let mut last_delivery_class = [0.0f64; 3];
            let mut unique = 0u64;
            let mut packets = 0u64;
            for _ in 0..4800 {
                t += rng.exp(125.0);
                let u = rng.unit();
                let (class, ci, bytes, deadline) = if u < 0.84 {
                    ("move", 0, 23 + (rng.next() % 5) as u32, None)
                } else if u < 0.96 {
                    ("attack", 1, 25, Some(300))
                } else {
                    ("talk", 2, 40 + (rng.next() % 60) as u32, Some(1000))
                };
                let one_way = delay + rng.exp(4.0);
                let mut arrival = t + one_way;
                let mut lost_for_good = false;
                let mut tries = 0;
                while rng.unit() < loss {
                    tries += 1;
                    match recovery {
                        Recovery::None => lost_for_good = true,
                        Recovery::TimeoutOrdered => {
                            arrival += (200.0f64).max(rtt + 50.0)
                                * f64::from(1u32 << (tries - 1).min(6))
                                + delay
                        }
                        Recovery::FastPerClass => arrival += rtt + 15.0 + rng.exp(10.0),
                        Recovery::ContentBased => {
                            if ci == 0 {
                                lost_for_good = true;
                            } else {
                                arrival += rtt + 15.0 + rng.exp(10.0);
                            }
                        }
                    }
                    if lost_for_good {
                        break;
                    }
                }
                let delivered = if lost_for_good {
                    None
                } else {
                    let d = match recovery {
                        Recovery::TimeoutOrdered => {
                            last_delivery_ordered = last_delivery_ordered.max(arrival);
                            last_delivery_ordered
                        }
                        Recovery::FastPerClass => {
                            last_delivery_class[ci] = last_delivery_class[ci].max(arrival);
                            last_delivery_class[ci]
                        }
                        Recovery::ContentBased if ci == 2 => {
                            last_delivery_class[ci] = last_delivery_class[ci].max(arrival);
                            last_delivery_class[ci]
                        }
                        _ => arrival,
                    };
                    Some((d * 1000.0) as u64)
                };
                unique += u64::from(bytes);
                packets += 1 + tries;
                rec.record(MessageRecord {
                    key: key.clone(),
                    class: class.into(),
                    sent_at_us: (t * 1000.0) as u64,
                    delivered_at_us: delivered,
                    payload_bytes: bytes,
                    deadline_us: if with_deadlines {
                        deadline.map(|ms: u64| ms * 1000)
                    } else {
                        None
                    },
                });
            }
            let sent = (unique as f64 * (1.0 + redundancy)) as u64;
            rec.add_wire(
                &key,
                WireCounters {
                    bytes: sent + packets * header,
                    packets,
                    payload_bytes_sent: sent,
                },
            );
        }
    }
    rec.finish("synthetic-mmorpg", Engine::Sim, 1234)
}

fn params() -> Vec<(String, String)> {
    vec![
        ("clients".into(), "1".into()),
        ("duration".into(), "600 s".into()),
        (
            "link".into(),
            "100 ms one-way <bottleneck> & 2% loss".into(),
        ),
        (
            "workload".into(),
            "mmorpg: move 84% / attack 12% / talk 4%".into(),
        ),
    ]
}

/// The HTML between `<figure id="{id}">` and its `</figure>`.
fn figure<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("<figure id=\"{id}\">"))?;
    let end = start + html[start..].find("</figure>")?;
    Some(&html[start..end])
}

const FIGURES: [&str; 6] = [
    "plot-tail",
    "plot-cdf",
    "plot-redundancy",
    "plot-classes",
    "plot-deadline",
    "plot-wire",
];

#[test]
fn sample_report_has_one_svg_per_plot_and_is_written() {
    let (res, samples) = synthetic(true);
    let html = render_report(&res, &samples, &params());
    assert_eq!(html.matches("<svg").count(), FIGURES.len());
    for id in FIGURES {
        let fig = figure(&html, id).unwrap_or_else(|| panic!("figure {id} missing"));
        assert_eq!(fig.matches("<svg").count(), 1, "{id}");
        assert_eq!(fig.matches("</svg>").count(), 1, "{id}");
        assert!(!fig.contains("class=\"error\""), "{id}");
    }
    // Scenario identity and parameters, escaped.
    assert!(html.contains("synthetic-mmorpg"));
    assert!(html.contains("<b>sim</b>") && html.contains("<b>1234</b>"));
    assert!(html.contains("<td>link</td><td>100 ms one-way &lt;bottleneck&gt; &amp; 2% loss</td>"));
    assert!(html.contains("<td>workload</td>"));
    // Models are labelled as models, in the tables and in the plots.
    assert!(html.contains("<span class=\"nowrap\">tcp</span> <span class=\"badge\">model</span>"));
    assert!(html.contains("tcp (model)"));
    assert!(html.contains("<span class=\"nowrap\">thinwire-content</span></td>"));
    // Every protocol appears in the summary, GSI and wire tables.
    for p in ["tcp", "udp", "thinwire-ordered", "thinwire-content"] {
        assert!(html.matches(p).count() >= 4, "{p}");
    }

    let path = std::env::temp_dir().join("report-sample.html");
    let params = params();
    Report::new(&res, &samples)
        .params(&params)
        .write(&path)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), html);
    std::fs::write(
        std::env::temp_dir().join("results-sample.json"),
        res.to_json_pretty(),
    )
    .unwrap();
    std::fs::write(
        std::env::temp_dir().join("table-sample.txt"),
        res.terminal_table(),
    )
    .unwrap();
}

#[test]
fn report_is_self_contained() {
    let (res, samples) = synthetic(true);
    let html = render_report(&res, &samples, &params());
    for banned in [
        "<script", "<link", "<img", "<iframe", "src=", "@import", "url(", "https://",
    ] {
        assert!(!html.contains(banned), "{banned}");
    }
    // The only URL is the SVG namespace.
    assert_eq!(
        html.matches("http://").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn report_is_deterministic() {
    let (a, sa) = synthetic(true);
    let (b, sb) = synthetic(true);
    assert_eq!(
        render_report(&a, &sa, &params()),
        render_report(&b, &sb, &params())
    );
}

#[test]
fn report_without_deadlines_skips_the_deadline_plot() {
    let (res, samples) = synthetic(false);
    let html = render_report(&res, &samples, &params());
    assert!(figure(&html, "plot-deadline").is_none());
    assert!(html.contains("No message in this scenario carries a deadline."));
    assert_eq!(html.matches("<svg").count(), FIGURES.len() - 1);
}

#[test]
fn report_with_named_baseline() {
    let (res, samples) = synthetic(true);
    let udp = "udp".into();
    let html = Report::new(&res, &samples).baseline(&udp).render().unwrap();
    assert!(html.contains("against <b>udp</b>"));
    assert!(html.contains("No parameters were given."));
    let nope = "nope".into();
    assert!(matches!(
        Report::new(&res, &samples).baseline(&nope).render(),
        Err(ReportError::Metrics(_))
    ));
    // Writing fails the same way, and leaves no file.
    let path = std::env::temp_dir().join(format!("tw-report-nope-{}.html", std::process::id()));
    assert!(Report::new(&res, &samples)
        .baseline(&nope)
        .write(&path)
        .is_err());
    assert!(!path.exists());
}

#[test]
fn degenerate_inputs_render() {
    // No runs at all.
    let (res, samples) = Recorder::new().finish("empty", Engine::Emu, 0);
    let html = render_report(&res, &samples, &[]);
    assert!(html.contains("No runs."));
    assert!(html.contains("<b>emu</b>"));

    // A protocol that delivered nothing, and one with a single sample.
    let mut rec = Recorder::new();
    rec.record(MessageRecord {
        key: "dead".into(),
        class: "move".into(),
        sent_at_us: 0,
        delivered_at_us: None,
        payload_bytes: 10,
        deadline_us: Some(1000),
    });
    rec.record(MessageRecord {
        key: "one".into(),
        class: "move".into(),
        sent_at_us: 0,
        delivered_at_us: Some(5000),
        payload_bytes: 10,
        deadline_us: Some(1000),
    });
    let (res, samples) = rec.finish("tiny", Engine::Sim, 1);
    let html = render_report(&res, &samples, &[]);
    assert!(!html.contains("class=\"error\""));
    assert_eq!(html.matches("<svg").count(), FIGURES.len());

    // Results without samples (e.g. read back from results.json) still render.
    let html = render_report(&res, &Samples::default(), &[]);
    assert!(!html.contains("class=\"error\""));
    assert!(html.contains("nothing to plot"));
}

#[test]
fn write_report_creates_missing_directories() {
    let (res, samples) = synthetic(false);
    let dir = std::env::temp_dir().join(format!("thinwire-report-test-{}", std::process::id()));
    let path = dir.join("nested").join("report.html");
    let params = params();
    Report::new(&res, &samples)
        .params(&params)
        .write(&path)
        .unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().contains("</html>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_report_draws_one_panel_per_point_in_one_svg() {
    let points = [
        (Some("delay=50ms,loss=1%"), 50.0, 0.01),
        (Some("delay=50ms,loss=5%"), 50.0, 0.05),
        (Some("delay=150ms,loss=1%"), 150.0, 0.01),
        (Some("delay=150ms,loss=5%"), 150.0, 0.05),
    ];
    let (res, samples) = synthetic_points(&points, true);
    assert_eq!(res.protocol_runs().count(), 16);
    let html = render_report(&res, &samples, &params());
    assert_eq!(html.matches("<svg").count(), FIGURES.len());
    for id in ["plot-cdf", "plot-tail", "plot-classes", "plot-deadline"] {
        let fig = figure(&html, id).unwrap();
        for (pt, _, _) in &points {
            assert!(fig.contains(pt.unwrap()), "{id} {pt:?}");
        }
        // The legend names protocols without the sweep point.
        assert!(fig.contains("thinwire-content"));
        assert!(!fig.contains("thinwire-content ["), "{id}");
    }
    // The wire chart and the tables keep the full names.
    assert!(figure(&html, "plot-wire")
        .unwrap()
        .contains("tcp [delay=150ms,loss=5%] (model)"));
    // GSI ratios are per sweep point: each point's tcp row is the baseline (ratio 1).
    let ratios = res.satisfaction_ratios(None).unwrap();
    assert_eq!(ratios.baseline, Some("tcp".into()));
    for (pt, _, _) in &points {
        let key = RunKey::at("tcp", pt.unwrap());
        assert_eq!(ratios.get(&key, None).unwrap().ratio, Some(1.0));
    }
    std::fs::write(std::env::temp_dir().join("report-sweep-sample.html"), &html).unwrap();
}

#[test]
fn the_lead_figure_is_the_latency_tail_on_a_log_axis() {
    let (res, samples) = synthetic(true);
    let html = render_report(&res, &samples, &params());
    // Figures come in the order of FIGURES: the tail first.
    let starts: Vec<usize> = FIGURES
        .iter()
        .map(|id| html.find(&format!("<figure id=\"{id}\">")).unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    assert_eq!(html.find("<figure"), html.find("<figure id=\"plot-tail\">"));
    let tail = figure(&html, "plot-tail").unwrap();
    assert!(tail.contains("fraction of messages later than x"));
    // A log axis: decades down to the samples' resolution (one in N), guides from p99 on.
    let n = samples
        .get(&res.protocol_runs().next().unwrap().key, None)
        .unwrap()
        .latencies_us
        .len();
    assert!(n >= 1000, "{n}");
    for tick in [
        ">1</text>",
        ">0.1</text>",
        ">0.01</text>",
        ">1e-3</text>",
        ">p99</text>",
    ] {
        assert!(
            tail.replace(char::is_whitespace, "").contains(tick),
            "{tick}"
        );
    }
}
