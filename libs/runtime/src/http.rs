//! Plain HTTP beside gRPC: each service's Prometheus `/metrics` endpoint, and the server the
//! analyst's dashboard runs on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::http::header;
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
