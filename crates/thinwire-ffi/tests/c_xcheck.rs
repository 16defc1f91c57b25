//! `tools/xcheck.c`, the independent check of the bench's comparison with ENet, compiled
//! against the static library and ENet and run briefly over loopback: each of its measurements
//! must deliver messages and report them, so that the tool keeps working as the C API moves.
//! Skipped, saying so, where ENet's headers are not installed (`.ci/run` installs them).

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::{compile_source, library_dir, repo_root, scratch, wait_bounded};

/// Runs the harness with `args`, bounded in time, and returns its standard output.
fn xcheck(exe: &Path, args: &[&str]) -> String {
    let child = Command::new(exe)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xcheck");
    let Output {
        status,
        stdout,
        stderr,
    } = wait_bounded(child, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    assert!(
        status.success(),
        "xcheck {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

/// The numbers of one line of the harness's output, after `skip` words.
fn numbers(line: &str, skip: usize) -> Vec<f64> {
    line.split_whitespace()
        .skip(skip)
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("not a number in {line:?}"))
        })
        .collect()
}

#[test]
fn the_independent_harness_measures_both_stacks() {
    if !Path::new("/usr/include/enet/enet.h").exists() {
        eprintln!("skipped: ENet's headers are not installed (apt-get install libenet-dev)");
        return;
    }
    let lib = library_dir();
    let out_dir = scratch("xcheck");
    let src = repo_root().join("tools/xcheck.c");
    let exe = compile_source(&src, &lib, &out_dir, false, &["-lenet"]);

    // messages per second: the rate and both threads' CPU per message, all above zero
    // (ENet's reliable case reads its peer's queue of held-back commands, a struct field)
    for args in [
        ["rate", "thinwire", "24", "reliable", "2", "0.3"],
        ["rate", "enet", "24", "reliable", "2", "0.3"],
        ["rate", "enet", "200", "unreliable", "1", "0.3"],
    ] {
        let out = xcheck(&exe, &args);
        let v = numbers(out.trim(), 0);
        assert!(
            v.len() == 3 && v.iter().all(|&x| x > 0.0),
            "{args:?}: {out}"
        );
    }

    // round trips: a line per stack, each with a median, a 99th percentile, the round trips
    // counted and those lost (not asserted: a loaded machine may hold an echo past 100 ms)
    for class in ["reliable", "unreliable"] {
        let out = xcheck(&exe, &["rtt", class, "0.3"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        for (line, stack) in lines.iter().zip(["thinwire", "enet"]) {
            assert!(line.starts_with(stack), "{out}");
            let v = numbers(line, 1);
            assert!(
                v.len() == 4 && v[0] > 0.0 && v[1] >= v[0] && v[2] >= 1.0 && v[3] >= 0.0,
                "{class}, {stack}: {line}"
            );
        }
    }
    // a bad argument is refused with the usage, not run
    let bad = Command::new(&exe)
        .args(["rate", "enet", "-5", "reliable", "1", "1"])
        .output()
        .expect("run xcheck");
    assert!(
        !bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("SIZE"),
        "{bad:?}"
    );
    let _ = std::fs::remove_dir_all(out_dir);
}
