//! One shape for every service: what a service provides ([`Parts`]: its gRPC server, its HTTP
//! routes, its background tasks such as queue consumers) and the one way they are run
//! ([`serve`]): gRPC with health and reflection beside HTTP, every task on one cancellation
//! token, stopped together and drained by the [`TaskGroup`] policy.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_core::ServiceKind;
use ontoloop_settings::Settings;
use tokio_util::sync::CancellationToken;
use tonic::server::NamedService;
use tonic::service::RoutesBuilder;

use crate::group::TaskGroup;
use crate::{Context, Listeners, Scrape};

/// A service: built from a connected [`Context`], run by [`serve`], [`run`] or [`main`].
pub trait Service {
    /// Which service this is (its ports, its health name, its metrics prefix).
    const KIND: ServiceKind;

    /// Builds the service's parts. Work that must finish before the service answers (loading
    /// state, recovering interrupted work) goes here; a failure stops the service at start.
    fn build(ctx: Context) -> impl Future<Output = anyhow::Result<Parts>> + Send;
}

type Task = Box<
    dyn FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>
        + Send,
>;

/// What a service provides: one gRPC server, its HTTP routes (by default `/metrics` with the
/// service's prefix), and background tasks that return once their token is cancelled.
pub struct Parts {
    grpc_name: &'static str,
    routes: RoutesBuilder,
    http: Option<axum::Router>,
    scrape: Option<Scrape>,
    tasks: Vec<(String, Task)>,
    health: crate::consume::Health,
}

impl Parts {
    /// The parts of a service around its generated tonic server.
    pub fn new<S>(server: S) -> Self
    where
        S: tower_service::Service<
                http::Request<tonic::body::Body>,
                Response = http::Response<tonic::body::Body>,
                Error = std::convert::Infallible,
            > + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let mut routes = RoutesBuilder::default();
        routes.add_service(server);
        Self {
            grpc_name: S::NAME,
            routes,
            http: None,
            scrape: None,
            tasks: Vec::new(),
            health: crate::consume::Health::new(),
        }
    }

    /// Gauges computed when `/metrics` is scraped, after the process registry's.
    pub fn scrape(mut self, scrape: Scrape) -> Self {
        self.scrape = Some(scrape);
        self
    }

    /// HTTP routes served beside `/metrics` (the analyst's dashboard).
    pub fn http(mut self, routes: axum::Router) -> Self {
        self.http = Some(routes);
        self
    }

    /// The board the service's consumers report on ([`crate::ConsumerOptions`]): while any
    /// part is down the service's gRPC health answers NOT_SERVING.
    pub fn health(mut self, health: crate::consume::Health) -> Self {
        self.health = health;
        self
    }

    /// A background task (a queue consumer, a watcher): started with the service, handed the
    /// service's cancellation token, and expected to return once it is cancelled. An error, or
    /// an end before shutdown, stops the whole service.
    pub fn task<F, Fut>(mut self, name: impl Into<String>, task: F) -> Self
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        self.tasks
            .push((name.into(), Box::new(move |cancel| Box::pin(task(cancel)))));
        self
    }
}

/// Everything a service's binary does: settings, tracing, bind, connect, then serve until SIGINT
/// or SIGTERM.
pub async fn main<S: Service>() -> anyhow::Result<()> {
    let (settings, listeners) = crate::start(S::KIND).await?;
    let outcome = run::<S>(listeners, settings, crate::shutdown_signal()).await;
    // The last spans (the drain) are exported before the process ends.
    let _ = tokio::task::spawn_blocking(ontoloop_observability::shutdown_traces).await;
    outcome
}

/// Connects what the service needs from `settings`, then serves until `shutdown` resolves.
pub async fn run<S: Service>(
    listeners: Listeners,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ctx = Context::connect(settings).await?;
    serve::<S>(listeners, ctx, shutdown).await
}

/// Serves with an existing context (shared with other services by `ontoloop up`) until
/// `shutdown` resolves: refuses a non-loopback address with `auth.mode = "off"`, builds the
/// parts, then runs the gRPC server, the HTTP server (a service's own routes, the dashboard,
/// behind a Host/Origin check; HTTPS only when `[tls]` names a certificate, as gRPC) and every
/// task as one [`TaskGroup`]. On shutdown the servers stop
/// taking calls and every task finishes
/// what it holds within `services.drain_timeout_ms`; consumers leave the messages they had not
/// started to the queue.
pub async fn serve<S: Service>(
    listeners: Listeners,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let kind = S::KIND;
    let drain = Duration::from_millis(ctx.settings.services.drain_timeout_ms);
    for listener in [&listeners.grpc, &listeners.http] {
        let addr = listener.local_addr().context("read a bound address")?;
        crate::auth::ensure_auth_for(addr, &ctx.settings.auth)
            .with_context(|| format!("start {}", kind.name()))?;
    }
    let verifier = ctx.auth.clone();
    let tls = crate::tls::server_config(&ctx.settings.tls)
        .with_context(|| format!("start {}", kind.name()))?;
    let http_tls = crate::tls::http_server_config(&ctx.settings.tls)
        .with_context(|| format!("start {}", kind.name()))?;
    let http_addr = listeners
        .http
        .local_addr()
        .context("read a bound address")?;
    let dashboard_origins = ctx.settings.auth.dashboard_origins.clone();
    let limits = crate::limits::CallLimits::from_settings(&ctx.settings.services);
    let max_http_body = ctx.settings.services.max_http_body_bytes;
    let grpc_addr = listeners
        .grpc
        .local_addr()
        .context("read a bound address")?;
    let api = api_routes(
        kind,
        grpc_addr,
        http_addr,
        http_tls.is_some(),
        &ctx.settings,
    )?;
    let parts = S::build(ctx)
        .await
        .with_context(|| format!("start {}", kind.name()))?;
    anyhow::ensure!(
        parts.grpc_name == kind.grpc_name(),
        "service {} serves {}, expected {}",
        kind.name(),
        parts.grpc_name,
        kind.grpc_name()
    );
    let mut http = crate::http::metrics_router(format!("ontoloop_{}_", kind.name()), parts.scrape);
    if let Some(routes) = parts.http {
        // A non-loopback address got here only with auth.mode = "jwt", where the dashboard
        // signs reviewers in with their tokens.
        http = http.merge(crate::http::same_origin_only(
            routes,
            http_addr,
            http_tls.is_some(),
            &dashboard_origins,
        ));
    }
    // The API keeps its own body limit (a request as large as gRPC takes).
    let http = http.merge(api);
    let mut group = TaskGroup::new(crate::cancel_on(shutdown));
    let routes = parts.routes;
    let health = parts.health;
    group.spawn("grpc server", move |cancel| {
        crate::serve::serve_grpc(
            listeners.grpc,
            kind,
            routes,
            health,
            verifier,
            tls,
            limits,
            cancel.cancelled_owned(),
        )
    });
    // Axum's default body limit is 2 MB; no route here but the API (which reads its body
    // itself, bounded by services.max_message_bytes) needs more than a small form.
    let http = http.layer(axum::extract::DefaultBodyLimit::max(max_http_body));
    group.spawn("http server", move |cancel| {
        crate::serve_http(listeners.http, http, http_tls, cancel.cancelled_owned())
    });
    for (name, task) in parts.tasks {
        group.spawn(name, task);
    }
    group.join(drain).await
}

/// The HTTP/JSON API of `kind` ([`crate::gateway`]), forwarding to its gRPC port at `grpc`,
/// behind the same Host/Origin check as the dashboard: with `auth.mode = "off"` on loopback a
/// foreign web page must not reach it through DNS rebinding. Without a way to dial its own gRPC
/// port (TLS served but no `tls.ca_file` to trust it), the service starts without the API and
/// says why.
fn api_routes(
    kind: ServiceKind,
    grpc: std::net::SocketAddr,
    http: std::net::SocketAddr,
    secure: bool,
    settings: &Settings,
) -> anyhow::Result<axum::Router> {
    let tls = match crate::tls::client_config(&settings.tls) {
        Ok(tls) => tls,
        Err(err) => {
            tracing::warn!(service = kind.name(), error = %format!("{err:#}"), "the HTTP/JSON API is off: it cannot dial the service's own gRPC port");
            return Ok(axum::Router::new());
        }
    };
    let routes = crate::gateway::router(
        kind,
        grpc,
        tls.as_ref(),
        settings.services.max_message_bytes,
    )?;
    Ok(crate::http::same_origin_only(
        routes,
        http,
        secure,
        &settings.auth.dashboard_origins,
    ))
}
