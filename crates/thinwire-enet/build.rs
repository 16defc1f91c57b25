//! Links the system ENet library when it is installed (Debian: `libenet-dev`). Without it the
//! crate still builds and [`thinwire_enet::available`] says so, so the workspace builds on a
//! machine that lacks it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_enet)");
    println!("cargo::rerun-if-changed=build.rs");
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
        "/usr/local/lib",
    ];
    for d in dirs {
        println!("cargo::rerun-if-changed={d}/libenet.so");
    }
    let found = dirs
        .iter()
        .find(|d| std::path::Path::new(d).join("libenet.so").exists());
    if let Some(dir) = found {
        println!("cargo::rustc-link-search=native={dir}");
        println!("cargo::rustc-link-lib=dylib=enet");
        println!("cargo::rustc-cfg=has_enet");
    } else {
        println!("cargo::warning=libenet.so not found: thinwire-enet builds without ENet (apt-get install libenet-dev)");
    }
}
