//! The report of an emulated run with the simulator's run beside it
//! (`thinwire lab run --emulate --compare-sim`).

use thinwire_lab::metrics::{
    compare, Engine, MessageRecord, ProtocolInfo, Recorder, Results, RunKey, Samples, WireCounters,
};
use thinwire_lab::report::Report;

/// One engine's results: each protocol gets 1,000 messages at 100 ms, of
/// which every `every`-th is delayed by `extra_ms` (a recovered loss).
fn results(engine: Engine, protocols: &[(RunKey, bool, u64, u64)]) -> (Results, Samples) {
    let mut rec = Recorder::new();
    for (key, model, every, extra_ms) in protocols {
        let (model, every, extra_ms) = (*model, *every, *extra_ms);
        rec.set_protocol_info(ProtocolInfo {
            key: key.clone(),
            model,
        });
        for i in 0..1000u64 {
            let sent = i * 500_000;
            let lat = 100_000 + if i % every == 0 { extra_ms * 1000 } else { 0 };
            rec.record(MessageRecord {
                key: key.clone(),
                class: "game".into(),
                sent_at_us: sent,
                delivered_at_us: Some(sent + lat),
                payload_bytes: 100,
                deadline_us: None,
            });
        }
        rec.add_wire(
            key,
            WireCounters {
                bytes: 150_000,
                packets: 1_200,
                payload_bytes_sent: 100_000,
            },
        );
    }
    rec.finish("pair", engine, 1)
}

fn section(html: &str) -> &str {
    let start = html
        .find("id=\"sim-vs-emu\"")
        .expect("side-by-side section");
    let end = html[start..]
        .find("id=\"definitions\"")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

#[test]
fn side_by_side_section_pairs_engines_and_flags_disagreement() {
    // The TCP model loses every 20th message for 900 ms; kernel TCP for 200 ms:
    // p99 differs (1000 vs 300 ms), so the pair is flagged. thinwire agrees.
    let (sim, sim_samples) = results(
        Engine::Sim,
        &[
            ("tcp-model".into(), true, 20, 900),
            ("thinwire".into(), false, 20, 200),
        ],
    );
    let (emu, emu_samples) = results(
        Engine::Emu,
        &[
            ("tcp-nodelay".into(), false, 20, 200),
            ("kcp-fast".into(), false, 20, 150),
            ("thinwire".into(), false, 20, 205),
        ],
    );
    let html = Report::new(&emu, &emu_samples)
        .beside(&sim, &sim_samples)
        .render()
        .unwrap();
    let sec = section(&html);
    let rows: Vec<&str> = sec.split("<tr>").skip(2).collect();
    assert_eq!(
        rows.len(),
        2,
        "tcp-model/tcp-nodelay and thinwire/thinwire: {sec}"
    );
    assert!(rows[0].contains("tcp-model") && rows[0].contains("tcp-nodelay"));
    assert!(rows[0].contains("DISAGREE"), "{}", rows[0]);
    assert!(rows[0].contains("1000 / 300"), "p99 cells: {}", rows[0]);
    assert!(rows[1].contains("thinwire"));
    assert!(!rows[1].contains("DISAGREE"), "{}", rows[1]);
    // kcp-fast has no simulated counterpart: not in the table.
    assert!(!sec.contains("kcp-fast"));
    // The figure shows both engines of every pair.
    let fig = &sec[sec.find("id=\"plot-sim-emu\"").expect("figure")..];
    assert!(fig.contains("<svg"));
    for label in [
        "sim: tcp-model (model)",
        "emu: tcp-nodelay",
        "sim: thinwire (model)",
        "emu: thinwire",
    ] {
        assert!(fig.contains(label), "legend lacks {label}");
    }
    // The rest of the report is the emulated run's.
    assert!(html.contains("engine <b>emu</b>"));
}

#[test]
fn plain_report_has_no_side_by_side_section() {
    let (emu, emu_samples) = results(Engine::Emu, &[("thinwire".into(), false, 20, 205)]);
    let html = Report::new(&emu, &emu_samples).render().unwrap();
    assert!(!html.contains("sim-vs-emu"));
}

#[test]
fn side_by_side_without_common_protocols_says_so() {
    let (sim, sim_samples) = results(Engine::Sim, &[("udp-model".into(), true, 20, 0)]);
    let (emu, emu_samples) = results(Engine::Emu, &[("kcp".into(), false, 20, 300)]);
    let html = Report::new(&emu, &emu_samples)
        .beside(&sim, &sim_samples)
        .render()
        .unwrap();
    let sec = section(&html);
    assert!(sec.contains("No protocol ran in both engines"));
    assert!(!sec.contains("plot-sim-emu"));
}

#[test]
fn sweep_points_pair_with_the_same_point() {
    let at = RunKey::at;
    let (sim, _) = results(
        Engine::Sim,
        &[
            (at("tcp-model", "loss=2%"), true, 20, 900),
            (at("tcp-model", "loss=5%"), true, 20, 900),
        ],
    );
    let (emu, _) = results(
        Engine::Emu,
        &[
            (at("tcp-nodelay", "loss=5%"), false, 20, 200),
            (at("tcp-nodelay", "loss=2%"), false, 20, 200),
            (RunKey::new("tcp-thin-linear"), false, 20, 200),
        ],
    );
    let cmp = compare(&sim, &emu);
    let pairs: Vec<(String, String)> = cmp
        .rows
        .iter()
        .map(|r| (r.sim.to_string(), r.emu.to_string()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("tcp-model [loss=2%]".into(), "tcp-nodelay [loss=2%]".into()),
            ("tcp-model [loss=5%]".into(), "tcp-nodelay [loss=5%]".into()),
        ]
    );
    assert!(cmp
        .to_text()
        .contains("tcp-model [loss=5%]  tcp-nodelay [loss=5%]"));
    assert!(cmp.to_json_pretty().contains("\"point\": \"loss=5%\""));
}
