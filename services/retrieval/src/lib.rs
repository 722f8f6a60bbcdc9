//! The retrieval service: agents ask questions, look up facts and ask what is on their plate.
//!
//! Owns the `RetrievalService` gRPC edge. It reads the graph and the store and publishes failure
//! signals; it must never write facts (only the analyst does) and never ranks a candidate the
//! caller may not read.

use std::future::Future;

use ontoloop_core::{DomainError, ServiceKind};
use ontoloop_proto::v1::retrieval_service_server::{RetrievalService, RetrievalServiceServer};
use ontoloop_proto::v1::{Answer, AskRequest, LookupRequest, PlateRequest, PlateResponse};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{Context, ServiceRouter};
use ontoloop_settings::Settings;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

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
    let service = RetrievalServiceServer::new(Retrieval { _ctx: ctx });
    ontoloop_runtime::serve(
        listener,
        ServiceRouter::new(ServiceKind::Retrieval, service),
        shutdown,
    )
    .await
}

struct Retrieval {
    _ctx: Context,
}

#[tonic::async_trait]
impl RetrievalService for Retrieval {
    async fn ask(&self, request: Request<AskRequest>) -> Result<Response<Answer>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "Ask needs the versioned knowledge graph and the answer policy (issue #3)",
        )))
    }

    async fn lookup(&self, request: Request<LookupRequest>) -> Result<Response<Answer>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "Lookup needs the versioned knowledge graph and the answer policy (issue #3)",
        )))
    }

    async fn plate(
        &self,
        request: Request<PlateRequest>,
    ) -> Result<Response<PlateResponse>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "Plate needs the org, product and context graphs and the dimensional filters (issue #6)",
        )))
    }
}
