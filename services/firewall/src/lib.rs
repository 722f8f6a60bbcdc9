//! The firewall service: validates what a model claims before it reaches a user.
//!
//! Owns the `FirewallService` gRPC edge. It reads the graph and publishes a signal for every
//! block; it must never write facts, and it fails closed: when the graph cannot be read, every
//! claim is blocked.

use std::future::Future;

use ontoloop_core::{DomainError, ServiceKind};
use ontoloop_proto::v1::firewall_service_server::{FirewallService, FirewallServiceServer};
use ontoloop_proto::v1::{ValidateRequest, ValidateResponse};
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
    let service = FirewallServiceServer::new(Firewall { _ctx: ctx });
    ontoloop_runtime::serve(
        listener,
        ServiceRouter::new(ServiceKind::Firewall, service),
        shutdown,
    )
    .await
}

struct Firewall {
    _ctx: Context,
}

#[tonic::async_trait]
impl FirewallService for Firewall {
    async fn validate(
        &self,
        request: Request<ValidateRequest>,
    ) -> Result<Response<ValidateResponse>, Status> {
        caller_from(request.into_inner().caller)?;
        Err(status_from(DomainError::unimplemented(
            "Validate needs the claim extractor and the validation rules (issue #4)",
        )))
    }
}
