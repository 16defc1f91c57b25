//! The events an operator reads: handshake steps and failures, refusals, closes and who
//! closed; and what `RUST_LOG=thinwire=debug` selects (the core's targets start with
//! `thinwire_proto`).
//!
//! A binary of its own with one test: `tracing` caches each call site's interest process-wide,
//! and a call site first reached by another test's thread while a scoped subscriber is being
//! installed here can keep a stale "never" (seen once in a release run). With no other test
//! threads in the process, the checks below see every event they look for.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use thinwire_proto::testing::Pair;
use thinwire_proto::{ChannelKind, DisconnectReason, RefuseReason, ServerConfig, ServerKey};

/// What the subscriber wrote, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The log lines `run` produces under the filter `directives` (a `RUST_LOG` value).
fn logs(directives: &str, run: impl FnOnce()) -> Vec<String> {
    let out = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(directives))
        .with_writer(out.clone())
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let bytes = out.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
    String::from_utf8(bytes)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn has(lines: &[String], parts: &[&str]) -> bool {
    lines.iter().any(|l| parts.iter().all(|p| l.contains(p)))
}

fn wrong_key_attempt() {
    let mut pair = Pair::builder(8).build();
    let wrong = ServerKey::generate([99; 32]).public();
    let (now, server) = (pair.now(), pair.server().addr());
    pair.client_mut()
        .endpoint_mut()
        .connect(now, server, &wrong, &[ChannelKind::ReliableOrdered])
        .expect("connect");
    pair.run_for(Duration::from_secs(6));
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::Refused(RefuseReason::UnknownServerKey))
    );
}

fn a_wrong_server_key_is_logged_with_why() {
    let lines = logs("thinwire=debug", wrong_key_attempt);
    assert!(
        has(
            &lines,
            &[
                "DEBUG",
                "thinwire_proto::endpoint::admission",
                "not written to this server's key"
            ]
        ),
        "{lines:#?}"
    );
    assert!(
        has(&lines, &["Refuse sent", "reason=UnknownServerKey"]),
        "{lines:#?}"
    );
    // the client's side: why it ended
    assert!(
        has(&lines, &["Refuse received", "reason=UnknownServerKey"]),
        "{lines:#?}"
    );
    assert!(
        has(&lines, &["connection closed", "by=\"peer\"", "refused"]),
        "{lines:#?}"
    );
    // per-datagram steps are at trace only
    assert!(!has(&lines, &["Hello"]), "{lines:#?}");
}

fn trace_shows_every_handshake_step() {
    let lines = logs("thinwire_proto=trace", || {
        let mut pair = Pair::builder(3).build();
        pair.connect(&[ChannelKind::ReliableOrdered])
            .expect("connects");
    });
    for step in [
        "Hello sent",
        "Hello received: Challenge sent",
        "Challenge received: Connect sent",
        "Connect received: queued",
        "connection accepted: Accept sent",
        "Accept received: connection established",
    ] {
        assert!(has(&lines, &[step]), "no `{step}` in {lines:#?}");
    }
    assert!(has(&lines, &["established", "suite="]), "{lines:#?}");
}

fn refusals_name_their_limit_and_closes_who_closed() {
    let lines = logs("thinwire_proto=debug", || {
        let server = ServerConfig {
            max_connections: 1,
            ..ServerConfig::default()
        };
        let mut pair = Pair::builder(5).server_config(server).build();
        let (c, _) = pair
            .connect(&[ChannelKind::ReliableOrdered])
            .expect("connects");
        // a second client of the same pair's endpoint: the table is full
        assert!(pair.connect(&[ChannelKind::ReliableOrdered]).is_none());
        let now = pair.now();
        pair.client_mut().endpoint_mut().close(now, c, 7, b"bye");
        pair.run_for(Duration::from_secs(2));
    });
    assert!(
        has(&lines, &["connection refused", "reason=ServerFull"]),
        "{lines:#?}"
    );
    assert!(
        has(&lines, &["Refuse received", "ServerFull"]),
        "{lines:#?}"
    );
    assert!(has(&lines, &["closing (local)", "code=7"]), "{lines:#?}");
    assert!(
        has(&lines, &["connection closed", "by=\"peer\"", "code 7"]),
        "{lines:#?}"
    );
    assert!(
        has(&lines, &["connection closed", "by=\"local\""]),
        "{lines:#?}"
    );
}

fn a_filter_on_thinwire_selects_the_core_and_info_hides_it() {
    // `thinwire` is a prefix of the target `thinwire_proto::…`: EnvFilter matches targets by
    // prefix, so `RUST_LOG=thinwire=debug` shows the core and the runtime
    assert!(!logs("thinwire=debug", wrong_key_attempt).is_empty());
    assert!(logs("thinwire=info", wrong_key_attempt).is_empty());
    assert!(logs("other=debug", wrong_key_attempt).is_empty());
}

#[test]
fn operators_read_why() {
    a_wrong_server_key_is_logged_with_why();
    trace_shows_every_handshake_step();
    refusals_name_their_limit_and_closes_who_closed();
    a_filter_on_thinwire_selects_the_core_and_info_hides_it();
}
