//! Serving one gRPC service with health and reflection until shutdown.

use std::future::Future;

use ontoloop_core::ServiceKind;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::server::NamedService;
use tonic::service::RoutesBuilder;

/// Routes of one service, plus the name its health status is reported under.
pub struct ServiceRouter {
    kind: ServiceKind,
    routes: RoutesBuilder,
}

impl ServiceRouter {
    /// Wraps a generated tonic server.
    pub fn new<S>(kind: ServiceKind, service: S) -> Self
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
        debug_assert_eq!(S::NAME, kind.grpc_name());
        let mut routes = RoutesBuilder::default();
        routes.add_service(service);
        Self { kind, routes }
    }
}

/// Serves `router` on `listener` with `grpc.health.v1` and server reflection, until `shutdown`
/// resolves. Health turns NOT_SERVING as soon as shutdown starts, then in-flight calls finish.
pub async fn serve(
    listener: TcpListener,
    router: ServiceRouter,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let name = router.kind.grpc_name();
    health_reporter
        .set_service_status(name, tonic_health::ServingStatus::Serving)
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(ontoloop_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let addr = listener.local_addr()?;
    tracing::info!(service = router.kind.name(), %addr, "serving");
    let mut routes = router.routes;
    routes.add_service(health_service).add_service(reflection);
    let reporter = health_reporter.clone();
    let shutdown = async move {
        shutdown.await;
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
    tonic::transport::Server::builder()
        .add_routes(routes.routes())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    tracing::info!(service = router.kind.name(), "stopped");
    Ok(())
}
