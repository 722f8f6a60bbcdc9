//! HTTP beside gRPC: each service's Prometheus `/metrics` endpoint, and the server the analyst's
//! dashboard runs on; HTTPS only when `[tls]` names a certificate.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;

/// Gauges a service computes when scraped (for example from the store), in the text format.
pub type Scrape = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync>;

/// `GET /metrics` in the Prometheus text format: the process registry's families of this
/// service (those that start with `prefix`, among them its gRPC latency, [`crate::rpc_metrics`])
/// and the process-wide ones that name no service (the bounded caches', the queue consumers',
/// the outbox's), then `scrape`'s.
pub(crate) fn metrics_router(prefix: String, scrape: Option<Scrape>) -> Router {
    // Another service's families (when `ontoloop up` runs all four in one process) stay on its
    // own endpoint.
    let others: Arc<Vec<String>> = Arc::new(
        ontoloop_core::ServiceKind::ALL
            .iter()
            .map(|kind| format!("ontoloop_{}_", kind.name()))
            .filter(|other| *other != prefix)
            .collect(),
    );
    Router::new().route(
        "/metrics",
        get(move || {
            let (others, scrape) = (others.clone(), scrape.clone());
            async move {
                let registry = ontoloop_observability::metrics::global();
                let mut text = registry.render_matching(|name| {
                    name.starts_with("ontoloop_")
                        && !others.iter().any(|other| name.starts_with(other.as_str()))
                });
                if let Some(scrape) = scrape {
                    text.push_str(&scrape().await);
                }
                (
                    [(
                        header::CONTENT_TYPE,
                        ontoloop_observability::metrics::CONTENT_TYPE,
                    )],
                    text,
                )
                    .into_response()
            }
        }),
    )
}

/// `routes` (the dashboard) behind a Host/Origin check: a request whose `Host` is not one this
/// server is reached at, or whose `Origin` (sent by browsers on cross-origin and state-changing
/// requests) is not one of its own, is refused with 403 before any route sees it. That stops DNS
/// rebinding (a foreign page whose name resolves to this address) and cross-site posts. Its own:
/// `addr` as bound, `localhost` / `127.0.0.1` / `[::1]` on its port when bound to a loopback or
/// unspecified address (all with the scheme served, `https` with TLS), and every
/// `auth.dashboard_origins` entry.
pub(crate) fn same_origin_only(
    routes: Router,
    addr: SocketAddr,
    tls: bool,
    origins: &[String],
) -> Router {
    let allowed = Arc::new(AllowedOrigins::new(addr, tls, origins));
    routes.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let allowed = allowed.clone();
            async move {
                match allowed.refusal(request.headers()) {
                    None => next.run(request).await,
                    Some(reason) => {
                        tracing::debug!(reason, "dashboard request refused");
                        (
                            StatusCode::FORBIDDEN,
                            axum::Json(serde_json::json!({ "error": reason })),
                        )
                            .into_response()
                    }
                }
            }
        },
    ))
}

/// The hosts and origins a server answers browsers for.
#[derive(Debug)]
struct AllowedOrigins {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl AllowedOrigins {
    fn new(addr: SocketAddr, tls: bool, extra: &[String]) -> Self {
        let port = addr.port();
        let mut hosts = Vec::new();
        if !addr.ip().is_unspecified() {
            hosts.push(addr.to_string());
        }
        if addr.ip().is_loopback() || addr.ip().is_unspecified() {
            for name in ["localhost", "127.0.0.1", "[::1]"] {
                hosts.push(format!("{name}:{port}"));
            }
        }
        let scheme = if tls { "https" } else { "http" };
        let mut origins: Vec<String> = hosts.iter().map(|h| format!("{scheme}://{h}")).collect();
        for origin in extra {
            let origin = origin.trim().to_ascii_lowercase();
            if let Some(host) = ontoloop_auth::origin_host(&origin) {
                hosts.push(host.to_owned());
                origins.push(origin.clone());
            }
        }
        hosts.dedup();
        Self { hosts, origins }
    }

    /// Why a request with these headers is refused, or `None` when it may proceed.
    fn refusal(&self, headers: &HeaderMap) -> Option<&'static str> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase());
        match host {
            None => return Some("a request without a Host header is refused"),
            Some(host) if !self.hosts.contains(&host) => {
                return Some("the Host header does not name this dashboard");
            }
            Some(_) => {}
        }
        match headers.get(header::ORIGIN).map(|v| v.to_str()) {
            None => None,
            Some(Ok(origin)) if self.origins.contains(&origin.trim().to_ascii_lowercase()) => None,
            Some(_) => Some("the request comes from another origin than this dashboard"),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves: HTTPS only with `tls`, plain HTTP
/// without. Over TLS a client whose handshake fails or stalls (past [`HANDSHAKE_TIMEOUT`]) is
/// dropped, said at debug level, and the others are served on; at most [`MAX_HANDSHAKES`]
/// handshakes and [`MAX_TLS_CONNECTIONS`] connections are open at once (beyond, connections
/// wait in the listen backlog).
pub async fn serve_http(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr().context("read bound address")?;
    tracing::debug!(%addr, tls = tls.is_some(), "serving http");
    match tls {
        None => axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
            .with_context(|| format!("serve http on {addr}")),
        Some(config) => axum::serve(TlsListener::new(listener, addr, config), router)
            .with_graceful_shutdown(shutdown)
            .await
            .with_context(|| format!("serve https on {addr}")),
    }
}

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// TLS handshakes in progress at once, per HTTP port.
const MAX_HANDSHAKES: usize = 64;
/// TLS connections open at once, per HTTP port.
const MAX_TLS_CONNECTIONS: usize = 512;

/// Accepts TCP connections and completes their TLS handshakes in tasks of their own, so one slow
/// or failing client holds up no other; axum takes the finished streams from a channel.
struct TlsListener {
    addr: SocketAddr,
    ready: mpsc::Receiver<(Bounded, SocketAddr)>,
    acceptor: tokio::task::AbortHandle,
}

impl TlsListener {
    fn new(listener: TcpListener, addr: SocketAddr, config: Arc<ServerConfig>) -> Self {
        let (sender, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = tokio::spawn(accept_tls(
            listener,
            tokio_rustls::TlsAcceptor::from(config),
            sender,
        ))
        .abort_handle();
        Self {
            addr,
            ready,
            acceptor,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        // axum drops the listener when shutdown starts: no new connection is taken after.
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = Bounded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task ends only when aborted, with the listener itself.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// Accepts connections while the bounds allow, handing each to a handshake task.
async fn accept_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    ready: mpsc::Sender<(Bounded, SocketAddr)>,
) {
    let connections = Arc::new(Semaphore::new(MAX_TLS_CONNECTIONS));
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        // Both permits before accepting: beyond the bounds, clients wait in the backlog.
        let (Ok(connection), Ok(handshake)) = (
            connections.clone().acquire_owned().await,
            handshakes.clone().acquire_owned().await,
        ) else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors and the like: let it pass rather than spin.
                tracing::debug!(error = %err, "accepting an https connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (acceptor, ready) = (acceptor.clone(), ready.clone());
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(%peer, error = %err, "tls handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "tls handshake timed out");
                    return;
                }
            };
            drop(handshake);
            let bounded = Bounded {
                stream,
                _permit: connection,
            };
            // Fails only once the server stopped taking connections: the stream is dropped.
            let _ = ready.send((bounded, peer)).await;
        });
    }
}

/// A TLS stream holding its place among [`MAX_TLS_CONNECTIONS`] until dropped.
struct Bounded {
    stream: TlsStream<TcpStream>,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Bounded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Bounded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Binds `host:port` for HTTP (port 0: one the system picks).
pub async fn bind_http(host: &str, port: u16) -> anyhow::Result<TcpListener> {
    TcpListener::bind((host, port))
        .await
        .with_context(|| format!("bind http {host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, host.parse().expect("host"));
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().expect("origin"));
        }
        headers
    }

    /// Whether `allowed` lets a request with this Host and Origin through.
    fn passes(allowed: &AllowedOrigins, host: Option<&str>, origin: Option<&str>) -> bool {
        allowed.refusal(&headers(host, origin)).is_none()
    }

    #[test]
    fn only_the_dashboards_own_host_and_origin_pass() {
        let loopback = AllowedOrigins::new("127.0.0.1:8081".parse().expect("addr"), false, &[]);
        assert!(passes(&loopback, Some("127.0.0.1:8081"), None));
        assert!(passes(
            &loopback,
            Some("LOCALHOST:8081"),
            Some("http://localhost:8081")
        ));
        assert!(!passes(&loopback, None, None));
        assert!(
            !passes(&loopback, Some("evil.example:8081"), None),
            "DNS rebinding: a foreign name for this address"
        );
        assert!(!passes(&loopback, Some("127.0.0.1:9999"), None));
        assert!(
            !passes(
                &loopback,
                Some("127.0.0.1:8081"),
                Some("http://evil.example")
            ),
            "a cross-site post"
        );
        assert!(!passes(&loopback, Some("127.0.0.1:8081"), Some("null")));
        let public = AllowedOrigins::new(
            "0.0.0.0:8081".parse().expect("addr"),
            false,
            &["https://Review.example.com".to_owned()],
        );
        assert!(passes(
            &public,
            Some("review.example.com"),
            Some("https://review.example.com")
        ));
        assert!(!passes(&public, Some("0.0.0.0:8081"), None));
        assert!(
            !passes(
                &public,
                Some("review.example.com"),
                Some("http://review.example.com")
            ),
            "the scheme is part of the origin"
        );
        let https = AllowedOrigins::new("127.0.0.1:8443".parse().expect("addr"), true, &[]);
        assert!(passes(
            &https,
            Some("localhost:8443"),
            Some("https://localhost:8443")
        ));
        assert!(
            !passes(
                &https,
                Some("localhost:8443"),
                Some("http://localhost:8443")
            ),
            "served over TLS, its own origin is https"
        );
    }
}
