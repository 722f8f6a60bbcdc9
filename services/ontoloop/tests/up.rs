//! `serve_all`, the four services in one process: the first to fail stops the others, and its
//! cause is the outcome.

use std::time::{Duration, Instant};

use ontoloop_core::ServiceKind;
use ontoloop_runtime::{Context, Listeners};

#[tokio::test]
async fn a_service_failing_at_start_stops_the_others_with_its_cause() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = ontoloop_settings::Loader::new()
        .set(
            "store.url",
            format!("sqlite://{}/up.db?mode=rwc", dir.path().display()),
        )
        .load()
        .expect("settings");
    let mut listeners = Vec::new();
    let mut addrs = Vec::new();
    for kind in ServiceKind::ALL {
        let bound = Listeners::loopback().await.expect("bind loopback");
        addrs.push((kind, bound.grpc.local_addr().expect("address")));
        listeners.push((kind, bound));
    }
    let ctx = Context::connect(settings).await.expect("connect");
    // Of the four, only the analyst reads the store before it serves (the approvals a crash
    // interrupted), so with the store closed it alone fails at start.
    ctx.store.clone().close().await.expect("close the store");

    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        ontoloop::up::serve_all(listeners, ctx, std::future::pending()),
    )
    .await
    .expect("serve_all returns without a shutdown signal");
    let err = outcome.expect_err("the analyst's failure is the outcome");
    let cause = format!("{err:#}");
    assert!(
        cause.starts_with("service analyst failed: start analyst: "),
        "{cause}"
    );
    assert!(
        cause.contains("finish the approvals a crash interrupted"),
        "{cause}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped promptly, not after the drain time: {:?}",
        started.elapsed()
    );
    for (kind, addr) in addrs {
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "{} still serves on {addr}",
            kind.name()
        );
    }
}

/// Each service asks for what it needs: telemetry reads no knowledge, so a process serving it
/// alone loads no sentence encoder and follows no read model; retrieval asks for both.
#[tokio::test]
async fn telemetry_alone_loads_no_model_and_follows_no_read_model() {
    use ontoloop_runtime::Service as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = ontoloop_settings::Loader::new()
        .set(
            "store.url",
            format!("sqlite://{}/alone.db?mode=rwc", dir.path().display()),
        )
        .load()
        .expect("settings");
    let ctx = Context::connect(settings).await.expect("connect");
    assert!(!ctx.reads_knowledge(), "connecting reads nothing");
    ontoloop_telemetry::Service::build(ctx.clone())
        .await
        .expect("telemetry builds");
    assert!(
        !ctx.reads_knowledge(),
        "telemetry asked for no model and no read model"
    );
    ontoloop_retrieval::Service::build(ctx.clone())
        .await
        .expect("retrieval builds");
    assert!(ctx.reads_knowledge(), "retrieval asked for the read models");
}
