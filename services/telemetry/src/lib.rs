//! The telemetry service: the intake for agents' failure signals and integrations' events.
//!
//! Owns the `TelemetryService` gRPC edge: it validates what comes in and publishes it durably to
//! the queue. It must never write the graph or the store's knowledge; the analyst does.

use std::future::Future;

use ontoloop_core::{DomainError, ServiceKind};
use ontoloop_proto::v1::telemetry_service_server::{TelemetryService, TelemetryServiceServer};
use ontoloop_proto::v1::{Event, EventAck, Signal, SignalAck, SignalBatchAck};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{Context, ServiceRouter};
use ontoloop_settings::Settings;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status, Streaming};

/// Connects what the service needs from `settings`, then serves until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ctx = Context::connect(settings).await?;
    serve(listener, ctx, shutdown).await
}

/// Serves with an existing context (shared with other services by `ontoloop up`).
pub async fn serve(
    listener: TcpListener,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let service = TelemetryServiceServer::new(Telemetry { _ctx: ctx });
    ontoloop_runtime::serve(
        listener,
        ServiceRouter::new(ServiceKind::Telemetry, service),
        shutdown,
    )
    .await
}

struct Telemetry {
    _ctx: Context,
}

#[tonic::async_trait]
impl TelemetryService for Telemetry {
    async fn report_signal(&self, request: Request<Signal>) -> Result<Response<SignalAck>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "ReportSignal needs signal validation, deduplication and severity (issue #5)",
        )))
    }

    async fn report_signals(
        &self,
        _request: Request<Streaming<Signal>>,
    ) -> Result<Response<SignalBatchAck>, Status> {
        Err(status_from(DomainError::unimplemented(
            "ReportSignals needs signal validation, deduplication and severity (issue #5)",
        )))
    }

    async fn push_event(&self, request: Request<Event>) -> Result<Response<EventAck>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "PushEvent needs event validation and intake sequence numbers (issue #3)",
        )))
    }
}
