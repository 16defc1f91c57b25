//! A minimal HTTP responder for Prometheus scrapes on tokio: one request per connection,
//! bounded in size, time and concurrency, enough for a scraper on loopback or a management
//! network. It has no authentication: bind it to a private address.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The `Content-Type` of the answer (the Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Largest request head read (a scraper's GET is a few hundred bytes).
const MAX_REQUEST: usize = 8 << 10;
/// Connections answered at once; more wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 16;
/// Time a client has to send its request and read the answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// `registry` in the Prometheus text format (version 0.0.4).
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    // writing into a String cannot fail; a collector that fails leaves the text cut short
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, registry);
    out
}

/// Answers `GET /metrics` on `listener` with `registry` (rendered at each scrape) until
/// `shutdown` completes; any other path gets 404, any other method 405. Returns the error
/// that stopped the listener, if any.
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            r = listener.accept() => {
                let conn = match r {
                    Ok((conn, _)) => conn,
                    // the peer gave up before we accepted it, or we are out of descriptors
                    // for a moment: the next one may work
                    Err(e) => {
                        tracing::debug!(error = %e, "metrics: accept failed");
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return Ok(());
                };
                let registry = registry.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(conn, &registry)).await;
                    drop(slot);
                });
            }
            () = &mut shutdown => return Ok(()),
        }
    }
}

/// Reads one request head and answers it; the connection closes after.
async fn answer(mut conn: TcpStream, registry: &Registry) -> io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_REQUEST {
            return respond(&mut conn, "431 Request Header Fields Too Large", "", "").await;
        }
    }
    match route(&head) {
        Route::Metrics => {
            let body = render(registry);
            respond(&mut conn, "200 OK", CONTENT_TYPE, &body).await
        }
        Route::NotFound => respond(&mut conn, "404 Not Found", "", "").await,
        Route::BadMethod => respond(&mut conn, "405 Method Not Allowed", "", "").await,
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `GET /metrics` (any query string).
    Metrics,
    /// A GET of anything else.
    NotFound,
    /// Any other method, or no request line.
    BadMethod,
}

/// Reads the request line of a request head (bytes from anyone: never fails).
fn route(head: &[u8]) -> Route {
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (parts.next(), parts.next().unwrap_or_default());
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    match (method, path) {
        (Some(b"GET"), b"/metrics") => Route::Metrics,
        (Some(b"GET"), _) => Route::NotFound,
        _ => Route::BadMethod,
    }
}

async fn respond(conn: &mut TcpStream, status: &str, kind: &str, body: &str) -> io::Result<()> {
    let kind = if kind.is_empty() { "text/plain" } else { kind };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{route, Route};

    #[test]
    fn routes() {
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n"), Route::Metrics);
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), Route::Metrics);
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(route(b"HEAD /metrics HTTP/1.1\r\n\r\n"), Route::BadMethod);
        assert_eq!(route(b""), Route::BadMethod);
    }

    proptest! {
        #[test]
        fn any_request_head_gets_a_route(head in proptest::collection::vec(any::<u8>(), 0..200)) {
            let r = route(&head);
            if r == Route::Metrics {
                prop_assert!(head.starts_with(b"GET /metrics"));
            }
        }
    }
}
