//! What the C tests share: the built library, a scratch directory, compiling a C example and
//! running a program bounded in time.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The repository's root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the static and shared libraries in release (the test binary does not link the
/// library) and returns the directory holding them.
pub(crate) fn library_dir() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "thinwire-ffi", "--lib"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // target/PROFILE/deps/TEST-HASH -> target/release, whichever profile built the test
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe.ancestors().nth(3).expect("target dir");
    let dir = target.join("release");
    assert!(
        dir.join("libthinwire_ffi.a").exists(),
        "no staticlib in {}",
        dir.display()
    );
    dir.to_path_buf()
}

/// An empty directory of this test's own under the system's temporary directory.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("thinwire-ffi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Whether `cc` links a program with `-fsanitize=address` here.
pub(crate) fn asan_works(out_dir: &Path) -> bool {
    let src = out_dir.join("asan_probe.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").expect("write probe");
    Command::new("cc")
        .arg("-fsanitize=address")
        .arg(&src)
        .arg("-o")
        .arg(out_dir.join("asan_probe"))
        .status()
        .is_ok_and(|s| s.success())
}

/// The path of `examples/c/NAME.c`.
pub(crate) fn c_example(name: &str) -> PathBuf {
    repo_root().join("examples/c").join(format!("{name}.c"))
}

/// Compiles `examples/c/NAME.c` against the static library in `lib` into `out_dir/NAME`.
pub(crate) fn compile(name: &str, lib: &Path, out_dir: &Path, asan: bool) -> PathBuf {
    compile_source(&c_example(name), lib, out_dir, asan, &[])
}

/// Compiles the C program `src` against the static library in `lib` (and the libraries
/// `libs`, e.g. `-lenet`) into `out_dir`, named after the source file.
pub(crate) fn compile_source(
    src: &Path,
    lib: &Path,
    out_dir: &Path,
    asan: bool,
    libs: &[&str],
) -> PathBuf {
    let name = src.file_stem().expect("a source file").to_string_lossy();
    let exe = out_dir.join(&*name);
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(src);
    if asan {
        cc.args(["-fsanitize=address", "-fno-omit-frame-pointer"]);
    }
    cc.arg(lib.join("libthinwire_ffi.a"))
        .args(libs)
        .args(["-lpthread", "-ldl", "-lm"])
        .arg("-o")
        .arg(&exe);
    run_ok(&mut cc, &format!("cc {name}.c"));
    exe
}

/// Runs `cmd` to its end and fails the test, with its output, unless it succeeds.
pub(crate) fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Waits for `child` at most `limit`, killing it if it runs longer.
pub(crate) fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait")
}
