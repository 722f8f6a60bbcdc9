//! `ontoloop up`: the four services in one process, sharing one store and one queue.

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_core::ServiceKind;
use ontoloop_runtime::Context;
use ontoloop_settings::Settings;

/// Binds every service at its configured addresses first (so a taken port fails before anything
/// starts), then serves all four until `shutdown` resolves.
pub async fn up(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let mut listeners = Vec::new();
    for kind in ServiceKind::ALL {
        listeners.push((kind, ontoloop_runtime::bind(&settings, kind).await?));
    }
    let ctx = Context::connect(settings)
        .await
        .context("connect store and queue")?;
    println!(
        "ontoloop up: store {} · queue {}",
        ontoloop_store::redact(&ctx.settings.store.url),
        ontoloop_store::redact(&ctx.settings.queue.url)
    );
    for (kind, bound) in &listeners {
        let addr = bound.grpc.local_addr().context("read bound address")?;
        let http = bound.http.local_addr().context("read bound address")?;
        let extra = if *kind == ServiceKind::Analyst {
            format!(" · dashboard http://{http}/")
        } else {
            String::new()
        };
        println!(
            "  {:<10} listening on {addr} · metrics http://{http}/metrics{extra}",
            kind.name()
        );
    }
    println!("ready: `ontoloop status` from another shell; Ctrl-C stops everything");
    let store = ctx.store.clone();
    let outcome = serve_all(listeners, ctx, shutdown).await;
    if tokio::time::timeout(Duration::from_secs(5), store.close())
        .await
        .is_err()
    {
        tracing::warn!("store did not close in time");
    }
    println!("ontoloop stopped");
    outcome
}

/// Serves each service on its listener with one shared context until `shutdown` resolves, then
/// waits for every service to drain. One service failing stops the others: a partial system is
/// worse than none. The system tests run this same function.
pub async fn serve_all(
    listeners: Vec<(ServiceKind, ontoloop_runtime::Listeners)>,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = ontoloop_runtime::cancel_on(shutdown);
    let mut tasks = Vec::new();
    for (kind, listener) in listeners {
        let ctx = ctx.clone();
        let stop = cancel.clone().cancelled_owned();
        tasks.push((
            kind,
            tokio::spawn(async move {
                match kind {
                    ServiceKind::Retrieval => ontoloop_retrieval::serve(listener, ctx, stop).await,
                    ServiceKind::Firewall => ontoloop_firewall::serve(listener, ctx, stop).await,
                    ServiceKind::Telemetry => ontoloop_telemetry::serve(listener, ctx, stop).await,
                    ServiceKind::Analyst => ontoloop_analyst::serve(listener, ctx, stop).await,
                }
            }),
        ));
    }
    let mut failed = None;
    for (kind, task) in tasks {
        let outcome = task.await;
        cancel.cancel();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::error!(service = kind.name(), error = %err, "service failed");
                failed.get_or_insert(err.context(format!("service {} failed", kind.name())));
            }
            Err(err) => {
                tracing::error!(service = kind.name(), error = %err, "service task panicked");
                failed.get_or_insert(anyhow::anyhow!("service {} panicked: {err}", kind.name()));
            }
        }
    }
    match failed {
        Some(err) => Err(err),
        None => Ok(()),
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
