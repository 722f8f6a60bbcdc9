//! The firewall service: validates what a model claims before it reaches a user.
//!
//! Owns the `FirewallService` gRPC edge: claims come as text (extracted with the ontology's
//! patterns, and optionally a model) or structured; the rules of
//! `ontoloop_core::knowledge::firewall` check them against the tenant's read model. It reads the
//! graph and publishes a signal for every block; it must never write facts, and it fails closed:
//! when the graph cannot be read, every claim is blocked with `firewall_unavailable`.

mod validate;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1::firewall_service_server::{FirewallService, FirewallServiceServer};
use ontoloop_proto::v1::{ValidateRequest, ValidateResponse};
use ontoloop_runtime::{Context, Parts};
use tonic::{Request, Response, Status};

pub use validate::Validator;

/// The firewall as the runtime runs it (`ontoloop_runtime::{main, run, serve}`).
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Firewall;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        let validator = Validator::new(ctx.clone(), ctx.read_models().await)?;
        Ok(Parts::new(FirewallServiceServer::new(Firewall {
            validator,
        })))
    }
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
        let response = self.validator.validate_call(request).await?;
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
