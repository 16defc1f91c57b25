//! The checked-in C header is what cbindgen generates from the code: a change to the C API
//! that forgets the header fails here (regenerate with
//! `THINWIRE_BLESS=1 cargo test -p thinwire-ffi --test header`).

#[test]
fn checked_in_header_matches_the_code() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config =
        cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(format!("{dir}/src/lib.rs"))
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let path = format!("{dir}/include/thinwire.h");
    if std::env::var_os("THINWIRE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        generated == checked_in,
        "include/thinwire.h is stale: regenerate it with \
         THINWIRE_BLESS=1 cargo test -p thinwire-ffi --test header"
    );
}
