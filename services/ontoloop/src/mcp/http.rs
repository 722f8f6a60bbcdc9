//! The MCP server over streamable HTTP: one endpoint, `/mcp`, on a listener the caller bound
//! (loopback by default), each request's body held to a size, each tool call carrying that
//! request's own `Authorization` header to the services. Hosts other than the loopback names and
//! the ones given are refused (DNS rebinding).

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::Server;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// How the HTTP endpoint is held.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// Largest request body, in bytes; a larger one is refused.
    pub max_body_bytes: usize,
    /// `Host` values accepted besides localhost, 127.0.0.1 and ::1 (host or host:port).
    pub allowed_hosts: Vec<String>,
}

/// Serves `server` at [`PATH`] on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let default_hosts = StreamableHttpServerConfig::default().allowed_hosts;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(default_hosts.into_iter().chain(limits.allowed_hosts))
        .with_max_request_body_bytes(limits.max_body_bytes)
        .with_cancellation_token(cancel.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service(PATH, service);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await
        .context("serve MCP over HTTP")
}
