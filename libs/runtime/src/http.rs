//! Plain HTTP beside gRPC: each service's Prometheus `/metrics` endpoint, and the server the
//! analyst's dashboard runs on.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

/// Gauges a service computes when scraped (for example from the store), in the text format.
pub type Scrape = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync>;

/// `GET /metrics`: the process registry's families that start with `prefix`, then `scrape`'s.
pub(crate) fn metrics_router(prefix: String, scrape: Option<Scrape>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let (prefix, scrape) = (prefix.clone(), scrape.clone());
            async move {
                let mut text = ontoloop_observability::metrics::global().render(&prefix);
                if let Some(scrape) = scrape {
                    text.push_str(&scrape().await);
                }
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
            }
        }),
    )
}

/// `routes` (the dashboard) behind a Host/Origin check: a request whose `Host` is not one this
/// server is reached at, or whose `Origin` (sent by browsers on cross-origin and state-changing
/// requests) is not one of its own, is refused with 403 before any route sees it. That stops DNS
/// rebinding (a foreign page whose name resolves to this address) and cross-site posts. Its own:
/// `addr` as bound, `localhost` / `127.0.0.1` / `[::1]` on its port when bound to a loopback or
/// unspecified address, and every `auth.dashboard_origins` entry.
pub(crate) fn same_origin_only(routes: Router, addr: SocketAddr, origins: &[String]) -> Router {
    let allowed = Arc::new(AllowedOrigins::new(addr, origins));
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
    fn new(addr: SocketAddr, extra: &[String]) -> Self {
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
        let mut origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}")).collect();
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

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve_http(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr().context("read bound address")?;
    tracing::debug!(%addr, "serving http");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .with_context(|| format!("serve http on {addr}"))
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

    #[test]
    fn only_the_dashboards_own_host_and_origin_pass() {
        let loopback = AllowedOrigins::new("127.0.0.1:8081".parse().expect("addr"), &[]);
        assert_eq!(
            loopback.refusal(&headers(Some("127.0.0.1:8081"), None)),
            None
        );
        assert_eq!(
            loopback.refusal(&headers(
                Some("LOCALHOST:8081"),
                Some("http://localhost:8081")
            )),
            None
        );
        assert!(loopback.refusal(&headers(None, None)).is_some());
        assert!(
            loopback
                .refusal(&headers(Some("evil.example:8081"), None))
                .is_some(),
            "DNS rebinding: a foreign name for this address"
        );
        assert!(
            loopback
                .refusal(&headers(Some("127.0.0.1:9999"), None))
                .is_some()
        );
        assert!(
            loopback
                .refusal(&headers(
                    Some("127.0.0.1:8081"),
                    Some("http://evil.example")
                ))
                .is_some(),
            "a cross-site post"
        );
        assert!(
            loopback
                .refusal(&headers(Some("127.0.0.1:8081"), Some("null")))
                .is_some()
        );
        let public = AllowedOrigins::new(
            "0.0.0.0:8081".parse().expect("addr"),
            &["https://Review.example.com".to_owned()],
        );
        assert_eq!(
            public.refusal(&headers(
                Some("review.example.com"),
                Some("https://review.example.com")
            )),
            None
        );
        assert!(
            public
                .refusal(&headers(Some("0.0.0.0:8081"), None))
                .is_some()
        );
        assert!(
            public
                .refusal(&headers(
                    Some("review.example.com"),
                    Some("http://review.example.com")
                ))
                .is_some(),
            "the scheme is part of the origin"
        );
    }
}
