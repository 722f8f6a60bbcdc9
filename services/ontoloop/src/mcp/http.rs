//! The MCP server over streamable HTTP: one endpoint, `/mcp`, on a listener the caller bound
//! (loopback by default), each request's body held to a size, each tool call carrying that
//! request's own `Authorization` header to the services. Hosts other than the loopback names and
//! the ones given are refused (DNS rebinding). Sessions are capped in number (a new one beyond
//! the cap is refused until one ends) and end after an idle time, so no caller can make the
//! endpoint hold an unbounded number of them.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
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
    /// Sessions held at once; a new one beyond it is refused until one ends.
    pub max_sessions: usize,
    /// How long a session may stay idle before it ends.
    pub session_idle: std::time::Duration,
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
    let mut local = LocalSessionManager::default();
    local.session_config = {
        let mut session = SessionConfig::default();
        session.keep_alive = Some(limits.session_idle);
        session
    };
    let sessions = CappedSessions {
        inner: local,
        max: limits.max_sessions.max(1),
    };
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    let router = axum::Router::new().nest_service(PATH, service);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await
        .context("serve MCP over HTTP")
}

/// rmcp's in-memory sessions, at most `max` at once. A session leaves the map when its worker
/// ends (closed by the client, idle past `keep_alive`, never initialized), which frees its place.
struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
}

/// Why a session could not be served.
#[derive(Debug, thiserror::Error)]
enum SessionsError {
    /// The cap is reached.
    #[error("the MCP endpoint holds its limit of {0} sessions; retry when one ends")]
    Full(usize),
    /// rmcp's own.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Counted before the insert without a lock held across it: two creations racing at the
        // cap may both pass, so the cap can be exceeded by the requests in flight, never more.
        // rmcp logs the refusal and answers it with HTTP 500 and this error's text.
        if self.inner.sessions.read().await.len() >= self.max {
            return Err(SessionsError::Full(self.max));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_beyond_the_cap_are_refused_until_one_ends() {
        let sessions = CappedSessions {
            inner: LocalSessionManager::default(),
            max: 2,
        };
        let (first, _one) = sessions.create_session().await.expect("first");
        let (_, _two) = sessions.create_session().await.expect("second");
        let refused = sessions.create_session().await.err();
        assert!(
            matches!(refused, Some(SessionsError::Full(2))),
            "{refused:?}"
        );
        sessions.close_session(&first).await.expect("close");
        sessions
            .create_session()
            .await
            .expect("a place is free again");
    }
}
