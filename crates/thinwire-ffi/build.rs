//! Names the shared library for the dynamic linker. On Linux the `.so` gets the SONAME
//! `libthinwire.so.<ABI>`, the name programs linked against it look for at run time:
//! `<ABI>` is the major version, or `0.<minor>` before 1.0, where every minor release may
//! break the ABI (Cargo's semver rules). `tools/install-c.sh` reads the SONAME from the built
//! library and installs it under that name.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
    let abi = if major == "0" {
        format!("0.{minor}")
    } else {
        major
    };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libthinwire.so.{abi}");
    }
}
