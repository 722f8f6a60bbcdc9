//! `ontoloop up`: the four services in this process, sharing one store and one queue, until
//! SIGINT or SIGTERM.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_auth::AuthMode;
use ontoloop_core::ServiceKind;
use ontoloop_runtime::Context;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Store URL, e.g. postgres://postgres@127.0.0.1:5432/ontoloop (sets store.url).
    #[arg(long)]
    database_url: Option<String>,
    /// RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/%2f (sets queue.url).
    #[arg(long)]
    amqp_url: Option<String>,
}

impl Args {
    /// Binds every service at its configured addresses first (so a taken port fails before
    /// anything starts), then serves all four until SIGINT or SIGTERM, or until one fails.
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let session = Session::load(
            config,
            &[
                ("store.url", self.database_url.as_deref()),
                ("queue.url", self.amqp_url.as_deref()),
            ],
        )?;
        let mut settings = session.settings;
        ontoloop_observability::init_with_traces(
            &settings.log,
            &settings.telemetry.otlp,
            "ontoloop",
        )
        .context("set up logging")?;
        if settings.auth.mode == AuthMode::Dev {
            let path = settings.auth.dev_secret_file.clone();
            let secret = crate::dev_auth::load_or_create(Path::new(&path))
                .context("set up auth.mode = \"dev\"")?;
            settings.auth = settings.auth.with_dev_secret(&secret);
            print::dev_auth(&path);
        }
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for kind in ServiceKind::ALL {
            let bound = ontoloop_runtime::bind(&settings, kind).await?;
            let grpc = bound.grpc.local_addr().context("read bound address")?;
            let http = bound.http.local_addr().context("read bound address")?;
            addrs.push((kind, grpc, http));
            listeners.push((kind, bound));
        }
        let ctx = Context::connect(settings)
            .await
            .context("connect store and queue")?;
        print::up_banner(
            &ctx.settings.store.url,
            &ctx.settings.queue.url,
            ctx.settings.tls.serves_tls(),
            &addrs,
        );
        let store = ctx.store.clone();
        let outcome =
            ontoloop::up::serve_all(listeners, ctx, ontoloop_runtime::shutdown_signal()).await;
        if tokio::time::timeout(Duration::from_secs(5), store.close())
            .await
            .is_err()
        {
            tracing::warn!("store did not close in time");
        }
        // The last spans (the drain) are exported before the process ends.
        let _ = tokio::task::spawn_blocking(ontoloop_observability::shutdown_traces).await;
        print::stopped();
        outcome?;
        Ok(ExitCode::SUCCESS)
    }
}
