//! The analyst service binary: settings, tracing, bind, then `run` until SIGINT or SIGTERM.

use ontoloop_core::ServiceKind;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (settings, listeners) = ontoloop_runtime::start(ServiceKind::Analyst).await?;
    ontoloop_analyst::run(listeners, settings, ontoloop_runtime::shutdown_signal()).await
}
