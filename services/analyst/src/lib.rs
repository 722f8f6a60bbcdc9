//! The analyst service: the one writer of knowledge, the healer, the statistical supervisor and
//! the review queue with its dashboard.
//!
//! Owns the `AnalystService` gRPC edge, the dashboard and metrics on HTTP, and the consumers of
//! the analyst's queues. Every message
//! it takes from the queue is recorded durably (idempotently, by message id) before it is
//! acknowledged; a message that can never be processed goes to the dead-letter queue with the
//! reason. It must never acknowledge a message it has not recorded.

pub mod dashboard;
pub mod gate;
mod gauges;
pub mod grow;
pub mod heal;
mod inbox;
pub mod knowledge;
pub mod listing;
mod metrics;
mod org;
mod patterns;
mod refusal;
mod retention;
pub mod review;
mod routing;
pub mod session;
pub mod summary;
pub mod supervise;
mod wire;

pub use refusal::Refusal;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop_core::{During, ServiceKind, topics};
use ontoloop_proto::v1::analyst_service_server::{AnalystService, AnalystServiceServer};
use ontoloop_proto::v1::{
    DecideRequest, DecideResponse, ListMaintenanceRunsRequest, ListMaintenanceRunsResponse,
    ListPagesRequest, ListPagesResponse, ListPatternsRequest, ListPatternsResponse,
    NextReviewRequest, NextReviewResponse, TenantSummaryRequest, TenantSummaryResponse,
};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{CancellationToken, Context, Parts};
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use crate::review::Reviews;

/// Events taken from the queue at a time; a tenant's plain changes among them apply as one commit
/// (see [`knowledge::KnowledgeWriter::handle_batch`]).
const EVENT_BATCH: usize = 64;

/// Signals recorded per store transaction at most.
const SIGNAL_BATCH: usize = 256;

/// How often the HR records of tenants changed elsewhere are loaded ahead of their next event.
const ORG_WARM_EVERY: Duration = Duration::from_secs(1);

/// The analyst as the runtime runs it (`ontoloop_runtime::{main, run, serve}`): gRPC, on HTTP
/// the review dashboard and metrics, and the consumers of the events and signals queues. On
/// shutdown the consumers finish the messages in hand; messages they had not started go back to
/// the queue.
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Analyst;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        let cache = &ctx.settings.cache;
        let supervision = Arc::new(supervise::Supervision::new(
            ctx.store.clone(),
            &ctx.settings.supervisor,
            cache.supervisors,
        ));
        let writer = knowledge::KnowledgeWriter::new(
            ctx.store.clone(),
            ctx.extraction().await,
            &ctx.settings,
        )
        .proposing(Arc::clone(&supervision));
        let reviews = Reviews::new(ctx.store.clone(), writer.clone(), supervision);
        let healer = heal::Healer::new(ctx.clone(), writer.clone(), reviews.clone());
        // Approvals a crash interrupted between decision and apply are finished first.
        // (A store that cannot even be read for them fails the start, with its reason.)
        reviews
            .recover()
            .await
            .context("finish the approvals a crash interrupted")?;
        // Consumers restart themselves when their stream breaks; meanwhile health is NOT_SERVING.
        let health = ontoloop_runtime::Health::new();
        let options =
            ontoloop_runtime::ConsumerOptions::from_settings(&ctx.settings.queue, health.clone());
        let events = {
            let (queue, writer, options) = (ctx.queue.clone(), writer.clone(), options.clone());
            move |cancel| async move {
                ontoloop_runtime::run_batch_consumer(
                    queue,
                    topics::EVENTS,
                    cancel,
                    EVENT_BATCH,
                    options,
                    |messages| {
                        let writer = writer.clone();
                        async move { writer.handle_batch(&messages).await }
                    },
                )
                .await?;
                Ok(())
            }
        };
        let signals = {
            let (queue, store) = (ctx.queue.clone(), ctx.store.clone());
            move |cancel| async move {
                ontoloop_runtime::run_batch_consumer(
                    queue,
                    topics::SIGNALS,
                    cancel,
                    SIGNAL_BATCH,
                    options,
                    |messages| {
                        let store = store.clone();
                        let healer = healer.clone();
                        async move {
                            let (outcomes, fresh) =
                                inbox::record_batch(&store, topics::SIGNALS, &messages).await;
                            inbox::mark_signals_delivered(&store, &messages, &outcomes).await;
                            // Relationship patterns are looked at once per tenant and batch.
                            let mut discover: Vec<String> = Vec::new();
                            for message in fresh {
                                let span = heal::signal_span(&message);
                                if let Some(tenant) =
                                    healer.on_signal(&message.body).instrument(span).await
                                    && !discover.contains(&tenant)
                                {
                                    discover.push(tenant);
                                }
                            }
                            for tenant in discover {
                                let span = tracing::info_span!(
                                    "discover_relationships",
                                    service = "analyst",
                                    tenant = %tenant
                                );
                                healer.discover(&tenant).instrument(span).await;
                            }
                            outcomes
                        }
                    },
                )
                .await?;
                Ok(())
            }
        };
        // HR records stay loaded, so the first HR event after a bulk load applies at once.
        let warm = {
            let writer = writer.clone();
            move |cancel: CancellationToken| async move {
                loop {
                    writer.warm_org().await;
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(()),
                        () = tokio::time::sleep(ORG_WARM_EVERY) => {}
                    }
                }
            }
        };
        let service = AnalystServiceServer::new(Analyst {
            ctx: ctx.clone(),
            reviews: reviews.clone(),
            writer: writer.clone(),
        });
        Ok(Parts::new(service)
            .health(health)
            .task("retention", retention::task(&ctx))
            .scrape(gauges::scrape(ctx.clone(), writer.clone()))
            .http(dashboard::router(ctx, reviews, writer).context("set up the dashboard")?)
            .task(format!("{} consumer", topics::EVENTS), events)
            .task(format!("{} consumer", topics::SIGNALS), signals)
            .task("hr records warmer", warm))
    }
}

struct Analyst {
    ctx: Context,
    reviews: Reviews,
    writer: knowledge::KnowledgeWriter,
}

impl Analyst {
    /// Waits until the tenant's event `min_sequence` is applied (read-your-writes; 0: none).
    async fn settled(&self, tenant: &str, min_sequence: u64) -> Result<(), Status> {
        let timeout =
            Duration::from_millis(self.ctx.settings.retrieval.read_your_writes_timeout_ms);
        ontoloop_runtime::wait_for_sequence(&self.ctx.store, tenant, min_sequence, timeout)
            .await
            .map_err(status_from)
    }
}

#[tonic::async_trait]
impl AnalystService for Analyst {
    async fn next_review(
        &self,
        request: Request<NextReviewRequest>,
    ) -> Result<Response<NextReviewResponse>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
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
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let decision = wire::decision(request.decision)?;
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
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        self.settled(caller.tenant(), request.min_sequence).await?;
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

    async fn tenant_summary(
        &self,
        request: Request<TenantSummaryRequest>,
    ) -> Result<Response<TenantSummaryResponse>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        self.settled(caller.tenant(), request.min_sequence).await?;
        let summary = summary::summary(
            &self.ctx.store,
            &self.writer,
            caller.tenant(),
            chrono::Utc::now(),
        )
        .await
        .map_err(status_from)?;
        Ok(Response::new(wire::summary(summary)))
    }

    async fn list_pages(
        &self,
        request: Request<ListPagesRequest>,
    ) -> Result<Response<ListPagesResponse>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let limit = match request.limit as usize {
            0 => listing::MAX_LISTED,
            n if n <= listing::MAX_LISTED => n,
            n => {
                return Err(Status::invalid_argument(format!(
                    "limit {n} is more than {}",
                    listing::MAX_LISTED
                )));
            }
        };
        if request.origins.len() > listing::MAX_ORIGINS {
            return Err(Status::invalid_argument(format!(
                "{} origins, more than {}",
                request.origins.len(),
                listing::MAX_ORIGINS
            )));
        }
        if request.after.len() > ontoloop_core::events::MAX_NAME_BYTES {
            return Err(Status::invalid_argument(format!(
                "after is longer than a page id may be ({} bytes)",
                ontoloop_core::events::MAX_NAME_BYTES
            )));
        }
        self.settled(caller.tenant(), request.min_sequence).await?;
        let slice = self
            .writer
            .read(caller.tenant(), |_, _, pages| {
                listing::slice(pages, &request.origins, &request.after, limit)
            })
            .await
            .map_err(|err| status_from(summary::SummaryError::from(err)))?;
        Ok(Response::new(wire::listing(slice.unwrap_or_default())))
    }

    async fn list_patterns(
        &self,
        request: Request<ListPatternsRequest>,
    ) -> Result<Response<ListPatternsResponse>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let found = patterns::with_status(&self.ctx, caller.tenant(), chrono::Utc::now())
            .await
            .map_err(|err| status_from(During::new("read recorded signals", err)))?;
        let limit = if request.limit == 0 {
            usize::MAX
        } else {
            request.limit as usize
        };
        Ok(Response::new(ListPatternsResponse {
            patterns: found.into_iter().take(limit).map(wire::pattern).collect(),
        }))
    }
}
