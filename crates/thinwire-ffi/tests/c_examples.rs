//! The C examples, compiled with `cc` against the static library (under AddressSanitizer when
//! the compiler has it) and run: `error_paths` checks every error path of the API, and
//! `echo_server` and `chat_client` talk to each other over loopback, the client authenticating
//! the server by the key it printed (and failing with any other key). Everything is bounded in
//! time and killed on failure.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Builds the static library (the test binary itself links the rlib only) and returns the
/// directory holding it.
fn library_dir() -> PathBuf {
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
    // target/release/deps/c_examples-HASH -> target/release
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    assert!(
        dir.join("libthinwire_ffi.a").exists(),
        "no staticlib in {}",
        dir.display()
    );
    dir.to_path_buf()
}

/// Whether `cc` links a program with `-fsanitize=address` here.
fn asan_works(out_dir: &Path) -> bool {
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

/// Compiles `examples/c/NAME.c` into `out_dir/NAME`.
fn compile(name: &str, lib: &Path, out_dir: &Path, asan: bool) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("../../examples/c").join(format!("{name}.c"));
    let exe = out_dir.join(name);
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(&src);
    if asan {
        cc.args(["-fsanitize=address", "-fno-omit-frame-pointer"]);
    }
    cc.arg(lib.join("libthinwire_ffi.a"))
        .args(["-lpthread", "-ldl", "-lm"])
        .arg("-o")
        .arg(&exe);
    let out = cc.output().expect("run cc");
    assert!(
        out.status.success(),
        "cc {name}.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Waits for `child` at most `limit`, killing it if it runs longer.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
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

#[test]
fn c_examples_run_clean() {
    let lib = library_dir();
    let out_dir = std::env::temp_dir().join(format!("thinwire-ffi-c-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).expect("temp dir");
    let asan = asan_works(&out_dir);
    eprintln!(
        "AddressSanitizer: {}",
        if asan { "on" } else { "not available" }
    );

    // every error path
    let errors = compile("error_paths", &lib, &out_dir, asan);
    let run = Command::new(&errors)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let out = wait_bounded(run.expect("run error_paths"), Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "error_paths: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // a server and a client over loopback
    let server = compile("echo_server", &lib, &out_dir, asan);
    let client = compile("chat_client", &lib, &out_dir, asan);
    let mut srv = Command::new(&server)
        .arg("20")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run echo_server");
    let mut lines = BufReader::new(srv.stdout.take().expect("stdout"));
    let (mut first, mut second) = (String::new(), String::new());
    lines.read_line(&mut first).expect("read the port");
    lines.read_line(&mut second).expect("read the key");
    let port: Option<u16> = first
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok());
    let key = second
        .trim()
        .strip_prefix("key ")
        .filter(|k| k.len() == 64)
        .map(str::to_owned);
    let (Some(port), Some(key)) = (port, key) else {
        let _ = srv.kill();
        panic!("echo_server printed {first:?} and {second:?}");
    };
    let address = format!("127.0.0.1:{port}");

    // another key: the server cannot read the handshake and refuses it (reason 7, refuse
    // reason 7: UNKNOWN_SERVER_KEY) at once
    let mut wrong = key.clone().into_bytes();
    wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).expect("hex");
    let impostor = Command::new(&client)
        .args([address.clone(), wrong, "1".to_owned()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chat_client");
    let impostor_out = wait_bounded(impostor, Duration::from_secs(30));
    let impostor_err = String::from_utf8_lossy(&impostor_out.stderr);
    assert!(
        !impostor_out.status.success()
            && impostor_err.contains("disconnected (reason 7, refuse reason 7)"),
        "chat_client with a wrong key: {impostor_err}"
    );

    let cli = Command::new(&client)
        .args([address, key, "200".to_owned()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chat_client");
    let cli_out = wait_bounded(cli, Duration::from_secs(30));
    let srv_out = wait_bounded(srv, Duration::from_secs(10));
    let cli_text = String::from_utf8_lossy(&cli_out.stdout);
    assert!(
        cli_out.status.success() && cli_text.contains("200 of 200 echoes in order, 0 wrong"),
        "chat_client: {cli_text}\n{}",
        String::from_utf8_lossy(&cli_out.stderr)
    );
    assert!(
        srv_out.status.success(),
        "echo_server: {}",
        String::from_utf8_lossy(&srv_out.stderr)
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
