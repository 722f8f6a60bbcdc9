//! The four services in one process, sharing one store and one queue: what `ontoloop up`, the
//! benchmarks and the system tests run.

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_core::ServiceKind;
use ontoloop_runtime::{Context, TaskGroup};
use ontoloop_settings::Settings;

/// Serves each service on its listener with one shared context until `shutdown` resolves, then
/// waits for every service to drain. The first service to fail (at start or later) stops the
/// others, and its error is the outcome: a partial system is worse than none. The system tests
/// run this same function.
pub async fn serve_all(
    listeners: Vec<(ServiceKind, ontoloop_runtime::Listeners)>,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let drain = Duration::from_millis(ctx.settings.services.drain_timeout_ms);
    let mut group = TaskGroup::new(ontoloop_runtime::cancel_on(shutdown));
    for (kind, listener) in listeners {
        let ctx = ctx.clone();
        group.spawn(format!("service {}", kind.name()), move |cancel| {
            serve_one(kind, listener, ctx, cancel.cancelled_owned())
        });
    }
    // Each service drains within the drain time itself; the margin lets it say how it ended.
    group.join(drain + DRAIN_MARGIN).await
}

/// Time beyond the services' own drain time that `serve_all` waits for them.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);

async fn serve_one(
    kind: ServiceKind,
    listeners: ontoloop_runtime::Listeners,
    ctx: Context,
    stop: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use ontoloop_runtime::serve;
    match kind {
        ServiceKind::Retrieval => serve::<ontoloop_retrieval::Service>(listeners, ctx, stop).await,
        ServiceKind::Firewall => serve::<ontoloop_firewall::Service>(listeners, ctx, stop).await,
        ServiceKind::Telemetry => serve::<ontoloop_telemetry::Service>(listeners, ctx, stop).await,
        ServiceKind::Analyst => serve::<ontoloop_analyst::Service>(listeners, ctx, stop).await,
    }
}

/// A system running inside this process on ephemeral loopback ports.
pub struct Local {
    /// Where each service listens for gRPC.
    pub addrs: Vec<(ServiceKind, std::net::SocketAddr)>,
    /// Where each service listens for HTTP (metrics; the analyst's dashboard).
    pub http_addrs: Vec<(ServiceKind, std::net::SocketAddr)>,
    /// The shared context.
    pub ctx: Context,
    cancel: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Local {
    /// Binds every service on `127.0.0.1:0`, connects what the settings name and serves.
    pub async fn start(settings: Settings) -> anyhow::Result<Self> {
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        let mut http_addrs = Vec::new();
        for kind in ServiceKind::ALL {
            let bound = ontoloop_runtime::Listeners::loopback()
                .await
                .context("bind loopback ports")?;
            addrs.push((kind, bound.grpc.local_addr()?));
            http_addrs.push((kind, bound.http.local_addr()?));
            listeners.push((kind, bound));
        }
        let ctx = Context::connect(settings).await?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(serve_all(
            listeners,
            ctx.clone(),
            cancel.clone().cancelled_owned(),
        ));
        Ok(Self {
            addrs,
            http_addrs,
            ctx,
            cancel,
            task,
        })
    }

    /// Stops every service and waits for them to drain.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .context("services did not stop within 30 s")?
            .context("services panicked")?
    }
}
