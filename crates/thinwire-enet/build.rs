//! Links the system ENet library when pkg-config finds it (Debian: `libenet-dev`, which installs
//! `libenet.pc`). Without it the crate still builds and [`thinwire_enet::available`] says so, so
//! the workspace builds on a machine that lacks it.
//!
//! Cargo reruns this script only when something it watches changes: the variables the
//! `pkg-config` crate reads (`PKG_CONFIG_PATH`, ...) and pkg-config's search directories that
//! exist, so installing or removing ENet is noticed and a build with nothing changed does
//! nothing. (A watched path that does not exist would rerun the script, and relink everything
//! above it, on every build.)

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_enet)");
    println!("cargo::rerun-if-changed=build.rs");
    for dir in search_dirs() {
        if Path::new(&dir).is_dir() {
            println!("cargo::rerun-if-changed={dir}");
        }
    }
    match pkg_config::Config::new()
        .atleast_version("1.3")
        .probe("libenet")
    {
        Ok(_) => println!("cargo::rustc-cfg=has_enet"),
        Err(e) => {
            let text = e.to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            println!(
                "cargo::warning=ENet not found by pkg-config ({}): thinwire-enet builds without \
                 ENet (apt-get install libenet-dev)",
                first.trim()
            );
        }
    }
}

/// The directories pkg-config looks in for `.pc` files: `PKG_CONFIG_PATH`, then its built-in
/// path (none when pkg-config itself is missing).
fn search_dirs() -> Vec<String> {
    let mut dirs: Vec<String> = std::env::var("PKG_CONFIG_PATH")
        .unwrap_or_default()
        .split(':')
        .map(str::to_owned)
        .collect();
    let builtin = Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output();
    if let Ok(out) = builtin {
        let text = String::from_utf8_lossy(&out.stdout);
        dirs.extend(text.trim().split(':').map(str::to_owned));
    }
    dirs.retain(|d| !d.is_empty());
    dirs
}
