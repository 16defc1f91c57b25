//! `thinwire bench --quick`: it runs, and its results are well formed. Never a timing or a
//! ratio: those are measurements to read, not to assert.

use std::process::Command;

use thinwire_bench::{BenchResults, Cell, Protocol, SECTIONS};

#[test]
fn quick_bench_produces_every_section() {
    let out = std::env::temp_dir().join(format!("thinwire-cli-{}-bench", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(["bench", "--quick", "--out"])
        .arg(&out)
        // GNS stays out whatever this machine has built: a check that the bench runs must
        // not depend on it (thinwire-gns and thinwire-peers test GNS when it is there)
        .env(
            "THINWIRE_GNS_LIB",
            "/nonexistent/libGameNetworkingSockets.so",
        )
        .output()
        .expect("runs the binary");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("thinwire/ENet"), "the table:\n{stdout}");

    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let r: BenchResults = serde_json::from_str(&json).expect("results.json parses");
    assert!(r.options.quick);
    assert!(r.machine.cores >= 1);
    assert!(!r.machine.kernel.is_empty());
    let ids: Vec<&str> = r.sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, SECTIONS, "every section, in order");
    let enet = thinwire_enet::available();
    for s in &r.sections {
        assert!(!s.rows.is_empty(), "section {} has rows", s.id);
        for row in &s.rows {
            for p in Protocol::ALL {
                let cell = row
                    .cells
                    .get(&p)
                    .unwrap_or_else(|| panic!("{} has {p:?}", row.id));
                match cell {
                    Cell::Values(v) => {
                        assert_eq!(v.len(), 1, "{} {p:?}: one value per repetition", row.id);
                        assert!(
                            v.iter().all(|x| x.is_finite() && *x >= 0.0),
                            "{} {p:?}: {v:?}",
                            row.id
                        );
                    }
                    Cell::NotApplicable(why) => {
                        // only KCP's unreliable rows, ENet when it is not linked, GNS (kept
                        // out above), and the gateway's rows (thinwire's gateway only)
                        assert!(
                            (p == Protocol::Kcp && row.id.contains("unreliable"))
                                || (p == Protocol::Enet && !enet)
                                || (p == Protocol::Gns && why.starts_with("GNS not built"))
                                || (p != Protocol::Thinwire && row.id.starts_with("gateway/")),
                            "{} {p:?} n/a: {why}",
                            row.id
                        );
                    }
                    Cell::Failed(e) => panic!("{} {p:?} failed: {e}", row.id),
                }
            }
        }
    }
    // the counts that must not be zero: messages delivered, bytes per connection, ticks
    let find = |id: &str| {
        r.sections
            .iter()
            .flat_map(|s| &s.rows)
            .find(|row| row.id == id)
            .unwrap_or_else(|| panic!("row {id}"))
    };
    for id in [
        "throughput/reliable/24B/1/rate",
        "throughput/unreliable/200B/100/rate",
        "round_trip/reliable/p50",
        "memory/heap",
        "sweep/50/cpu",
        "sweep/50/inbound",
        "sweep/50/outbound",
        "gateway/10ms/encrypted/edge",
        "gateway/0ms/cleartext/server",
        "gateway/loopback/1000/edge",
    ] {
        for (p, cell) in &find(id).cells {
            if let Some(v) = cell.values() {
                assert!(v.iter().all(|x| *x > 0.0), "{id} {p:?}: {v:?}");
            }
        }
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    for fig in [
        "plot-throughput",
        "plot-round-trip",
        "plot-memory",
        "plot-sweep-cpu",
    ] {
        assert!(
            html.contains(&format!("<figure id=\"{fig}\">\n<svg")),
            "{fig} in the report"
        );
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn bench_bad_arguments_fail_clearly() {
    let o = Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(["bench", "--only", "nothing"])
        .output()
        .expect("runs the binary");
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("unknown section `nothing`"), "{e}");
}
