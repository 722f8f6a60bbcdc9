//! The firewall service: validates what a model claims before it reaches a user.
//!
//! Owns the `FirewallService` gRPC edge: claims come as text (extracted with the ontology's
//! patterns, and optionally a model) or structured; the rules of
//! `ontoloop_core::knowledge::firewall` check them against the tenant's read model. It reads the
//! graph and publishes a signal for every block; it must never write facts, and it fails closed:
//! when the graph cannot be read, every claim is blocked with `firewall_unavailable`.

mod validate;

use std::future::Future;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1::firewall_service_server::{FirewallService, FirewallServiceServer};
use ontoloop_proto::v1::{ValidateRequest, ValidateResponse};
use ontoloop_readmodel::Snapshots;
use ontoloop_runtime::{Context, Listeners, ServiceRouter};
use ontoloop_settings::Settings;
use tonic::{Request, Response, Status};

pub use validate::Validator;

/// Connects what the service needs from `settings`, then serves until `shutdown` resolves.
pub async fn run(
    listeners: Listeners,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ctx = Context::connect(settings).await?;
    serve(listeners, ctx, shutdown).await
}

/// Serves with an existing context (shared with other services by `ontoloop up`).
pub async fn serve(
    listeners: Listeners,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let validator = Validator::new(ctx.clone(), Snapshots::new(ctx.store.clone()))?;
    let service = FirewallServiceServer::new(Firewall { validator });
    ontoloop_runtime::serve_service(
        listeners,
        ServiceRouter::new(ServiceKind::Firewall, service),
        ontoloop_runtime::metrics_router("ontoloop_firewall_", None),
        shutdown,
    )
    .await
}

struct Firewall {
    validator: Validator,
}

#[tonic::async_trait]
impl FirewallService for Firewall {
    async fn validate(
        &self,
        request: Request<ValidateRequest>,
    ) -> Result<Response<ValidateResponse>, Status> {
        let response = self.validator.validate(request.into_inner()).await?;
        let metrics = ontoloop_observability::metrics::global();
        let blocked = response
            .verdicts
            .iter()
            .filter(|c| c.verdict == ontoloop_proto::v1::Verdict::Block as i32)
            .count();
        metrics.add(
            "ontoloop_firewall_claims_total",
            "Claims validated.",
            &[],
            response.verdicts.len() as f64,
        );
        metrics.add(
            "ontoloop_firewall_claims_blocked_total",
            "Claims blocked; the block rate is this over ontoloop_firewall_claims_total.",
            &[],
            blocked as f64,
        );
        Ok(Response::new(response))
    }
}
