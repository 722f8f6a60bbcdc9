//! Serving one gRPC service with health and reflection, behind the trust boundary, until
//! shutdown.

use std::future::Future;
use std::sync::Arc;

use ontoloop_core::ServiceKind;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::service::RoutesBuilder;

/// Serves `routes` (one service, named `kind`) on `listener` with `grpc.health.v1` and server
/// reflection, until `shutdown` resolves. With a verifier every call but health and reflection
/// needs a bearer token and the method's role ([`crate::auth`]); with `tls` it serves TLS only
/// (and mTLS when that config names a client CA, [`crate::tls`]). Every call is held to `limits`
/// ([`crate::limits`]) before the trust boundary sees it. Health turns NOT_SERVING as
/// soon as shutdown starts, then in-flight calls finish.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, each part named at it"
)]
pub(crate) async fn serve_grpc(
    listener: TcpListener,
    kind: ServiceKind,
    mut routes: RoutesBuilder,
    health: crate::consume::Health,
    verifier: Option<Arc<crate::auth::Authenticator>>,
    tls: Option<tonic::transport::ServerTlsConfig>,
    limits: crate::limits::CallLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let name = kind.grpc_name();
    health_reporter
        .set_service_status(name, tonic_health::ServingStatus::Serving)
        .await;
    // Reflection in both versions clients speak: v1, and v1alpha (Python's grpcio-reflection,
    // Postman and older grpcurl).
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(ontoloop_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let (reflection, reflection_v1alpha) =
        (reflection().build_v1()?, reflection().build_v1alpha()?);
    let addr = listener.local_addr()?;
    tracing::info!(service = kind.name(), %addr, tls = tls.is_some(), "serving");
    routes
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_v1alpha);
    // The service is SERVING only while every consumer it runs does (`health`).
    let watching = tokio_util::sync::CancellationToken::new();
    let watcher = {
        let (reporter, watching) = (health_reporter.clone(), watching.clone());
        let mut board = health.subscribe();
        tokio::spawn(async move {
            loop {
                let status = if board.borrow_and_update().values().all(|running| *running) {
                    tonic_health::ServingStatus::Serving
                } else {
                    tonic_health::ServingStatus::NotServing
                };
                reporter.set_service_status(name, status).await;
                reporter.set_service_status("", status).await;
                tokio::select! {
                    () = watching.cancelled() => return,
                    changed = board.changed() => if changed.is_err() { return },
                }
            }
        })
    };
    let reporter = health_reporter.clone();
    let shutdown = async move {
        shutdown.await;
        watching.cancel();
        let _ = watcher.await;
        reporter
            .set_service_status(name, tonic_health::ServingStatus::NotServing)
            .await;
        reporter
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
    };
    // Small request/response exchanges must not wait for delayed ACKs (Nagle's algorithm).
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.and_then(|stream| {
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    });
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        server = server.tls_config(tls)?;
    }
    server
        .layer(crate::trace::TraceLayer::new(kind))
        .layer(crate::rpc_metrics::RpcMetricsLayer::new(kind))
        .layer(crate::limits::LimitLayer::new(limits))
        .layer(crate::auth::AuthLayer::new(verifier))
        .add_routes(routes.routes())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    tracing::info!(service = kind.name(), "stopped");
    Ok(())
}
