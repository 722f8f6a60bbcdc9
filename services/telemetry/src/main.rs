//! The telemetry service binary: settings, tracing, bind, then `run` until SIGINT or SIGTERM.

use ontoloop_core::ServiceKind;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (settings, listener) = ontoloop_runtime::start(ServiceKind::Telemetry).await?;
    ontoloop_telemetry::run(listener, settings, ontoloop_runtime::shutdown_signal()).await
}
