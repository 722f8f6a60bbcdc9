//! The analyst service binary: `ontoloop_runtime::main` (settings, tracing, bind, connect) serves
//! it until SIGINT or SIGTERM.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ontoloop_runtime::main::<ontoloop_analyst::Service>().await
}
