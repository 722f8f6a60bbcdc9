//! The analyst service: the one writer of knowledge, the healer, the statistical supervisor and
//! the review queue with its dashboard.
//!
//! Owns the `AnalystService` gRPC edge, the dashboard and metrics on HTTP, and the consumers of
//! the analyst's queues. Every message
//! it takes from the queue is recorded durably (idempotently, by message id) before it is
//! acknowledged; a message that can never be processed goes to the dead-letter queue with the
//! reason. It must never acknowledge a message it has not recorded.

pub mod dashboard;
pub mod heal;
mod inbox;
pub mod knowledge;
mod org;
mod patterns;
pub mod review;
pub mod supervise;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_core::{During, ServiceKind, topics};
use ontoloop_proto::v1::analyst_service_server::{AnalystService, AnalystServiceServer};
use ontoloop_proto::v1::{
    DecideRequest, DecideResponse, ListMaintenanceRunsRequest, ListMaintenanceRunsResponse,
    ListPatternsRequest, ListPatternsResponse, NextReviewRequest, NextReviewResponse,
};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{CancellationToken, Context, Parts};
use tonic::{Request, Response, Status};

use crate::review::Reviews;

/// Signals recorded per store transaction at most.
const SIGNAL_BATCH: usize = 256;

/// How often the HR records of tenants changed elsewhere are loaded ahead of their next event.
const ORG_WARM_EVERY: Duration = Duration::from_secs(1);

/// Connects what the service needs from `settings`, then serves until `shutdown` resolves.
pub async fn run(
    listeners: Listeners,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ctx = Context::connect(settings).await?;
    serve(listeners, ctx, shutdown).await
}

/// Serves with an existing context (shared with other services by `ontoloop up`): gRPC, and on
/// HTTP the review dashboard and metrics. On shutdown the servers stop taking calls and the
/// consumers finish the messages in hand; messages they had not started go back to the queue.
pub async fn serve(
    listeners: Listeners,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = ontoloop_runtime::cancel_on(shutdown);
    let writer = knowledge::KnowledgeWriter::new(ctx.store.clone());
    let supervision = supervise::Supervision::load(ctx.store.clone(), &ctx.settings.supervisor)
        .await
        .context("load the supervisor's learned rates")?;
    let reviews = Reviews::new(ctx.store.clone(), writer.clone(), Arc::new(supervision));
    let healer = heal::Healer::new(ctx.clone(), writer.clone(), reviews.clone());
    // Approvals a crash interrupted between decision and apply are finished first.
    reviews.recover().await;
    let mut consumers = Vec::new();
    {
        let token = cancel.clone();
        let shared = ctx.queue.clone();
        let writer = writer.clone();
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
            ontoloop_runtime::run_batch_consumer(
                shared,
                topics::SIGNALS,
                token,
                SIGNAL_BATCH,
                |messages| {
                    let store = store.clone();
                    let healer = healer.clone();
                    async move {
                        let (outcomes, fresh) =
                            inbox::record_batch(&store, topics::SIGNALS, &messages).await;
                        for message in fresh {
                            healer.on_signal(&message.body).await;
                        }
                        outcomes
                    }
                },
            )
            .await
        }));
    }
    {
        // HR records stay loaded, so the first HR event after a bulk load applies at once.
        let store = ctx.store.clone();
        let token = cancel.clone();
        consumers.push(tokio::spawn(async move {
            loop {
                org::warm(&store).await;
                tokio::select! {
                    () = token.cancelled() => return Ok(0),
                    () = tokio::time::sleep(ORG_WARM_EVERY) => {}
                }
            }
        }));
    }
    let service = AnalystServiceServer::new(Analyst {
        ctx: ctx.clone(),
        reviews: reviews.clone(),
    });
    let served = ontoloop_runtime::serve_service(
        listeners,
        ServiceRouter::new(ServiceKind::Analyst, service),
        dashboard::router(ctx.clone(), reviews, writer),
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

/// The analyst's gauges, computed when scraped: review queue depth, the share of applied
/// updates that needed no human, and for the tenants this process holds, freshness by region and
/// the patterns acted on by status.
pub fn scrape(ctx: Context, writer: knowledge::KnowledgeWriter) -> Scrape {
    Arc::new(move || {
        let ctx = ctx.clone();
        let writer = writer.clone();
        Box::pin(async move {
            let registry = ontoloop_observability::metrics::Registry::default();
            match ctx.store.update_counts().await {
                Ok(counts) => {
                    registry.set(
                        "ontoloop_analyst_review_queue_depth",
                        "Updates waiting for a reviewer.",
                        &[],
                        counts.pending as f64,
                    );
                    let applied = counts.auto_applied + counts.reviewed_applied;
                    registry.set(
                        "ontoloop_analyst_updates_without_human_ratio",
                        "Share of applied updates that no human reviewed.",
                        &[],
                        if applied == 0 {
                            0.0
                        } else {
                            counts.auto_applied as f64 / applied as f64
                        },
                    );
                }
                Err(err) => tracing::warn!(error = %err, "cannot count updates for metrics"),
            }
            for tenant in writer.tenants().await {
                if let Ok(regions) = dashboard::regions(&writer, &tenant).await {
                    for region in regions {
                        let fresh = if region.facts == 0 {
                            1.0
                        } else {
                            (region.facts - region.stale) as f64 / region.facts as f64
                        };
                        registry.set(
                            "ontoloop_analyst_region_fresh_ratio",
                            "Share of a region's facts whose page has not changed since read.",
                            &[("tenant", &tenant), ("region", &region.region)],
                            fresh,
                        );
                    }
                }
                // The statuses the healer recorded (a small table), not a re-read of the
                // whole signal window on every scrape.
                if let Ok(statuses) = ctx.store.pattern_statuses(&tenant).await {
                    let mut by_status: std::collections::BTreeMap<&str, u64> = Default::default();
                    for status in &statuses {
                        *by_status.entry(status.status.as_str()).or_default() += 1;
                    }
                    for (status, count) in by_status {
                        registry.set(
                            "ontoloop_analyst_patterns",
                            "Patterns the analyst acted on, by status.",
                            &[("tenant", &tenant), ("status", status)],
                            count as f64,
                        );
                    }
                }
            }
        };
        let service = AnalystServiceServer::new(Analyst {
            ctx: ctx.clone(),
            reviews: reviews.clone(),
        });
        Ok(Parts::new(service)
            .scrape(metrics::scrape(ctx.clone(), writer.clone()))
            .http(dashboard::router(ctx, reviews, writer))
            .task(format!("{} consumer", topics::EVENTS), events)
            .task(format!("{} consumer", topics::SIGNALS), signals)
            .task("hr records warmer", warm))
    }
}

struct Analyst {
    ctx: Context,
    reviews: Reviews,
}

#[tonic::async_trait]
impl AnalystService for Analyst {
    async fn next_review(
        &self,
        request: Request<NextReviewRequest>,
    ) -> Result<Response<NextReviewResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let update = self
            .ctx
            .store
            .next_review(caller.tenant(), &request.expertise)
            .await
            .map_err(|err| status_from(During::new("read the review queue", err)))?;
        Ok(Response::new(NextReviewResponse {
            update: update.map(wire::update),
        }))
    }

    async fn decide(
        &self,
        request: Request<DecideRequest>,
    ) -> Result<Response<DecideResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let decision = match v1::Decision::try_from(request.decision) {
            Ok(v1::Decision::Approve) => Decision::Approve,
            Ok(v1::Decision::Reject) => Decision::Reject,
            Ok(v1::Decision::Modify) => Decision::Modify,
            Ok(v1::Decision::Defer) => Decision::Defer,
            Ok(v1::Decision::Unspecified) | Err(_) => {
                return Err(status_from(DomainError::invalid(
                    "decision",
                    "must be approve, reject, modify or defer",
                )));
            }
        };
        let decided = self
            .reviews
            .decide(
                caller.tenant(),
                caller.principal(),
                &request.update_id,
                decision,
                &request.new_value,
                &request.note,
            )
            .await
            .map_err(status_from)?;
        Ok(Response::new(DecideResponse {
            applied: decided.applied,
            already_decided: decided.already_decided,
        }))
    }

    async fn list_maintenance_runs(
        &self,
        request: Request<ListMaintenanceRunsRequest>,
    ) -> Result<Response<ListMaintenanceRunsResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let timeout =
            Duration::from_millis(self.ctx.settings.retrieval.read_your_writes_timeout_ms);
        ontoloop_runtime::wait_for_sequence(&self.ctx.store, request.min_sequence, timeout)
            .await
            .map_err(status_from)?;
        let runs = self
            .ctx
            .store
            .maintenance_runs(caller.tenant())
            .await
            .map_err(|err| status_from(During::new("read maintenance runs", err)))?;
        Ok(Response::new(ListMaintenanceRunsResponse {
            runs: runs.into_iter().map(wire::maintenance_run).collect(),
        }))
    }

    async fn list_patterns(
        &self,
        request: Request<ListPatternsRequest>,
    ) -> Result<Response<ListPatternsResponse>, Status> {
        let request = request.into_inner();
        let caller = caller_from(request.caller)?;
        let found = patterns::with_status(&self.ctx, caller.tenant(), chrono::Utc::now())
            .await
            .map_err(|err| status_from(During::new("read recorded signals", err)))?;
        let limit = if request.limit == 0 {
            usize::MAX
        } else {
            request.limit as usize
        };
        Ok(Response::new(ListPatternsResponse {
            patterns: found
                .into_iter()
                .take(limit)
                .map(|(p, status)| v1::Pattern {
                    id: format!("{}:{}", p.kind.name(), p.key),
                    kind: p.kind.name().to_owned(),
                    key: p.key,
                    signal_count: p.signals,
                    agent_count: p.agents,
                    severity: v1::Severity::from(p.severity) as i32,
                    status: status.status,
                    first_seen: Some(ontoloop_proto::convert::timestamp(p.first_seen)),
                    last_seen: Some(ontoloop_proto::convert::timestamp(p.last_seen)),
                    action: status.action,
                    signal_to_heal_ms: status.signal_to_heal_ms.unwrap_or_default(),
                })
                .collect(),
        }))
    }
}
