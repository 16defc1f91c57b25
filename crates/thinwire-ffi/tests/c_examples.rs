//! The C examples, compiled with `cc` against the static library (under AddressSanitizer when
//! the compiler has it) and run: `error_paths` checks every error path of the API, and
//! `echo_server` and `chat_client` talk to each other over loopback, the client authenticating
//! the server by the key it printed (and failing with any other key). Everything is bounded in
//! time and killed on failure.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{asan_works, compile, library_dir, scratch, wait_bounded};

#[test]
fn c_examples_run_clean() {
    let lib = library_dir();
    let out_dir = scratch("c");
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
