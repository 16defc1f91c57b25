use std::io::{Read, Write};

use super::*;

/// One request over a plain TCP connection; the whole answer.
fn get(addr: SocketAddr, request: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).expect("connects");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    c.write_all(request.as_bytes()).expect("writes");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("reads");
    out
}

fn scrape(addr: SocketAddr) -> String {
    get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
}

/// The value of the sample `name{role="edge"}` in a scrape.
fn sample(text: &str, name: &str) -> Option<String> {
    let head = format!("{name}{{role=\"edge\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&head))
        .map(str::to_owned)
}

#[test]
fn every_metric_has_its_help_type_and_value() {
    let m = Metrics::tcm("tcm-local");
    let mut s = TcmProcessStats::default();
    s.gateway.trunk.packets_sent = 7;
    s.mux.hold_max = Duration::from_millis(12);
    m.set_tcm(&s);
    let text = m.render();
    let names = GATEWAY_METRICS
        .iter()
        .map(|d| (d.name, d.is_counter()))
        .chain(TCM_METRICS.iter().map(|d| (d.name, d.is_counter())));
    for (name, counter) in names {
        let full = format!(
            "thinwire_gateway_{name}{}",
            if counter { "_total" } else { "" }
        );
        assert!(text.contains(&format!("# HELP {full} ")), "{full}\n{text}");
        let kind = if counter { "counter" } else { "gauge" };
        assert!(text.contains(&format!("# TYPE {full} {kind}\n")), "{full}");
        assert!(
            text.contains(&format!("{full}{{role=\"tcm-local\"}} ")),
            "{full}"
        );
    }
    assert!(text.contains("thinwire_gateway_trunk_packets_sent_total{role=\"tcm-local\"} 7\n"));
    assert!(text.contains("thinwire_gateway_tcm_hold_max_seconds{role=\"tcm-local\"} 0.012\n"));
    // an edge has no TCM metrics
    assert!(!Metrics::gateway("edge").render().contains("tcm_"));
}

#[test]
fn names_are_unique_and_help_texts_are_sentences() {
    let mut names: Vec<&str> = GATEWAY_METRICS.iter().map(|d| d.name).collect();
    names.extend(TCM_METRICS.iter().map(|d| d.name));
    let n = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), n);
    let helps = GATEWAY_METRICS
        .iter()
        .map(|d| d.help)
        .chain(TCM_METRICS.iter().map(|d| d.help));
    for h in helps {
        assert!(h.ends_with('.') && !h.contains('\n'), "{h}");
    }
}

#[tokio::test]
async fn a_scrape_sees_the_latest_snapshot() {
    let m = Metrics::gateway("edge");
    let server = MetricsServer::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("binds");
    let addr = server.local_addr().expect("addr");
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(server.serve(m.clone(), rx));
    let first = tokio::task::spawn_blocking(move || scrape(addr))
        .await
        .expect("scrape");
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
    assert!(first.contains(CONTENT_TYPE), "{first}");
    let name = "thinwire_gateway_messages_to_trunk_total";
    assert_eq!(sample(&first, name).as_deref(), Some("0"));
    m.set_gateway(&GatewayStats {
        messages_to_trunk: 5,
        ..GatewayStats::default()
    });
    let (second, missing, post, huge) = tokio::task::spawn_blocking(move || {
        (
            scrape(addr),
            get(addr, "GET /other HTTP/1.1\r\n\r\n"),
            get(addr, "POST /metrics HTTP/1.1\r\n\r\n"),
            get(
                addr,
                &format!(
                    "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
                    "a".repeat(16 << 10) // past the responder's 8 KiB
                ),
            ),
        )
    })
    .await
    .expect("scrapes");
    assert_eq!(sample(&second, name).as_deref(), Some("5"));
    assert!(missing.starts_with("HTTP/1.1 404 "), "{missing}");
    assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
    assert!(huge.starts_with("HTTP/1.1 431 "), "{huge}");
    stop.send(true).expect("stops");
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the server stops")
        .expect("no panic");
}
