//! The analyst service: the one writer of knowledge, and the review queue.
//!
//! Owns the `AnalystService` gRPC edge and the consumers of the analyst's queues. Every message
//! it takes from the queue is recorded durably (idempotently, by message id) before it is
//! acknowledged; a message that can never be processed goes to the dead-letter queue with the
//! reason. It must never acknowledge a message it has not recorded.

pub mod heal;
mod inbox;
pub mod knowledge;
mod patterns;

use std::future::Future;
use std::time::Duration;

use ontoloop_core::{DomainError, ServiceKind, topics};
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_server::{AnalystService, AnalystServiceServer};
use ontoloop_proto::v1::{
    DecideRequest, DecideResponse, ListMaintenanceRunsRequest, ListMaintenanceRunsResponse,
    ListPatternsRequest, ListPatternsResponse, MaintenanceRun, NextReviewRequest,
    NextReviewResponse,
};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{Context, ServiceRouter};
use ontoloop_settings::Settings;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

pub use inbox::handle_message;

/// Connects what the service needs from `settings`, then serves until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ctx = Context::connect(settings).await?;
    serve(listener, ctx, shutdown).await
}

/// Serves with an existing context (shared with other services by `ontoloop up`). On shutdown
/// the gRPC server stops taking calls and the consumers finish the message in hand; messages
/// they had not started go back to the queue.
pub async fn serve(
    listener: TcpListener,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = ontoloop_runtime::cancel_on(shutdown);
    let mut consumers = Vec::new();
    let writer = knowledge::KnowledgeWriter::new(ctx.store.clone());
    let healer = heal::Healer::new(ctx.clone(), writer.clone());
    {
        let token = cancel.clone();
        let shared = ctx.queue.clone();
        consumers.push(tokio::spawn(async move {
            ontoloop_runtime::run_consumer(
                shared,
                topics::EVENTS,
                token,
                |message, _redelivered| {
                    let writer = writer.clone();
                    let message = message.clone();
                    async move { writer.handle(&message).await }
                },
            )
            .await
        }));
    }
    {
        let store = ctx.store.clone();
        let token = cancel.clone();
        let shared = ctx.queue.clone();
        consumers.push(tokio::spawn(async move {
            ontoloop_runtime::run_consumer(
                shared,
                topics::SIGNALS,
                token,
                |message, _redelivered| {
                    let store = store.clone();
                    let message = message.clone();
                    let healer = healer.clone();
                    async move {
                        let handled = handle_message(&store, topics::SIGNALS, &message).await;
                        if handled == ontoloop_runtime::Handled::Done {
                            healer.on_signal(&message).await;
                        }
                        handled
                    }
                },
            )
            .await
        }));
    }
    let service = AnalystServiceServer::new(Analyst { ctx: ctx.clone() });
    let served = ontoloop_runtime::serve(
        listener,
        ServiceRouter::new(ServiceKind::Analyst, service),
        cancel.clone().cancelled_owned(),
    )
    .await;
    // The server may also stop on its own error; the consumers must stop with it.
    cancel.cancel();
    let drain = Duration::from_millis(ctx.settings.services.drain_timeout_ms);
    for consumer in consumers {
        match tokio::time::timeout(drain, consumer).await {
            Ok(Ok(Ok(_settled))) => {}
            Ok(Ok(Err(err))) => tracing::error!(error = %err, "consumer failed"),
            Ok(Err(err)) => tracing::error!(error = %err, "consumer task panicked"),
            Err(_) => tracing::error!(
                timeout_ms = drain.as_millis() as u64,
                "consumer did not drain in time"
            ),
        }
    }
    served
}

struct Analyst {
    ctx: Context,
}

#[tonic::async_trait]
impl AnalystService for Analyst {
    async fn next_review(
        &self,
        request: Request<NextReviewRequest>,
    ) -> Result<Response<NextReviewResponse>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "NextReview needs the statistical supervisor and the review queue (issue #5)",
        )))
    }

    async fn decide(
        &self,
        request: Request<DecideRequest>,
    ) -> Result<Response<DecideResponse>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "Decide needs the statistical supervisor and the review queue (issue #5)",
        )))
    }

    async fn list_maintenance_runs(
        &self,
        request: Request<ListMaintenanceRunsRequest>,
    ) -> Result<Response<ListMaintenanceRunsResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let timeout =
            Duration::from_millis(self.ctx.settings.retrieval.read_your_writes_timeout_ms);
        ontoloop_runtime::wait_for_sequence(&self.ctx.store, request.min_sequence, timeout).await?;
        let runs = self
            .ctx
            .store
            .maintenance_runs(caller.tenant())
            .await
            .map_err(|err| Status::unavailable(format!("read maintenance runs: {err}")))?;
        Ok(Response::new(ListMaintenanceRunsResponse {
            runs: runs
                .into_iter()
                .map(|run| MaintenanceRun {
                    sequence: u64::try_from(run.seq).unwrap_or_default(),
                    mode: run.mode,
                    pages_read: run.report.pages_read,
                    pages_total: run.report.pages_total,
                    est_tokens: run.report.est_tokens,
                    graph_writes: run.report.graph_writes,
                })
                .collect(),
        }))
    }

    async fn list_patterns(
        &self,
        request: Request<ListPatternsRequest>,
    ) -> Result<Response<ListPatternsResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let found = patterns::patterns(&self.ctx, caller.tenant(), chrono::Utc::now())
            .await
            .map_err(|err| Status::unavailable(format!("read recorded signals: {err}")))?;
        let limit = if request.limit == 0 {
            usize::MAX
        } else {
            request.limit as usize
        };
        Ok(Response::new(ListPatternsResponse {
            patterns: found
                .into_iter()
                .take(limit)
                .map(|p| v1::Pattern {
                    id: format!("{}:{}", p.kind.name(), p.key),
                    kind: p.kind.name().to_owned(),
                    key: p.key,
                    signal_count: p.signals,
                    agent_count: p.agents,
                    severity: v1::Severity::from(p.severity) as i32,
                    status: "open".to_owned(),
                    first_seen: Some(ontoloop_proto::convert::timestamp(p.first_seen)),
                    last_seen: Some(ontoloop_proto::convert::timestamp(p.last_seen)),
                })
                .collect(),
        }))
    }
}
