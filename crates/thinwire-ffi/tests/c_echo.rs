//! A C client and the Rust example server: `examples/c/chat_client.c` sends 200 lines on a
//! reliable-ordered channel to `crates/thinwire/examples/echo_server.rs` and checks that every
//! echo comes back in order with the same bytes. The example's server code is compiled into
//! this test and runs in its process (calling cargo for the example from a test would build
//! the runtime a second time with the example's dev-dependencies); the client is a process of
//! its own, bounded in time, on loopback.

mod support;

// Its `main` is for humans (`cargo run -p thinwire --example echo_server`).
#[allow(dead_code)]
#[path = "../../thinwire/examples/echo_server.rs"]
mod echo_server;

use std::process::{Command, Stdio};
use std::time::Duration;

use thinwire::{Config, Endpoint};

use support::{asan_works, compile, library_dir, scratch, wait_bounded};

#[test]
fn a_c_client_exchanges_200_messages_with_the_rust_echo_server() {
    let lib = library_dir();
    let out_dir = scratch("echo");
    let client = compile("chat_client", &lib, &out_dir, asan_works(&out_dir));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let endpoint = {
        let _inside = runtime.enter();
        Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).expect("bind")
    };
    // what a client in another language reads from the example's standard output
    let mut printed = Vec::new();
    echo_server::announce(&endpoint, &mut printed).expect("announce");
    let printed = String::from_utf8(printed).expect("text");
    let mut lines = printed.lines();
    let address = lines.next().and_then(|l| l.strip_prefix("echo server on "));
    let key = lines.next().and_then(|l| l.strip_prefix("server key: "));
    let (Some(address), Some(key)) = (address, key) else {
        panic!("echo_server printed {printed:?}");
    };
    assert_eq!(address, endpoint.local_addr().to_string());
    runtime.spawn(echo_server::echo(endpoint));

    let run = Command::new(&client)
        .args([address, key, "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chat_client");
    let out = wait_bounded(run, Duration::from_secs(30));
    runtime.shutdown_timeout(Duration::from_secs(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("200 of 200 echoes in order, 0 wrong"),
        "chat_client: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
