//! The telemetry service: the intake for agents' failure signals and integrations' events.
//!
//! Owns the `TelemetryService` gRPC edge: it validates what comes in (events, failure signals),
//! records it in the intake logs (sequence numbers, idempotency, signal frequency) and publishes
//! it durably to the queue. It must never write the graph or the store's knowledge; the analyst
//! does.

mod signals;

use ontoloop_auth::Role;
use ontoloop_core::{During, ServiceError, ServiceKind, topics};
use ontoloop_proto::v1::event::Kind as EventKind;
use ontoloop_proto::v1::telemetry_service_server::{TelemetryService, TelemetryServiceServer};
use ontoloop_proto::v1::{Event, EventAck, Signal, SignalAck, SignalBatchAck};
use ontoloop_proto::{caller_from, require_role, status_from};
use ontoloop_queue::Message;
use ontoloop_runtime::{Context, Parts};
use tonic::{Request, Response, Status, Streaming};

/// Telemetry as the runtime runs it (`ontoloop_runtime::{main, run, serve}`).
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Telemetry;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        Ok(Parts::new(TelemetryServiceServer::new(Telemetry { ctx })))
    }
}

struct Telemetry {
    ctx: Context,
}

/// The status of a dependency failure while doing `action` (phrased `cannot …`), logged here
/// where it is handled.
fn unavailable(action: &'static str, err: impl ServiceError) -> Status {
    tracing::warn!(error = %err, "{action}");
    status_from(During::new(action, err))
}

#[tonic::async_trait]
impl TelemetryService for Telemetry {
    async fn report_signal(&self, request: Request<Signal>) -> Result<Response<SignalAck>, Status> {
        let accepted =
            signals::accept(&self.ctx, request.extensions(), request.get_ref(), "").await?;
        Ok(Response::new(SignalAck {
            duplicate: accepted.duplicate,
            severity: ontoloop_proto::v1::Severity::from(accepted.severity) as i32,
        }))
    }

    async fn report_signals(
        &self,
        request: Request<Streaming<Signal>>,
    ) -> Result<Response<SignalBatchAck>, Status> {
        let extensions = request.extensions().clone();
        let mut stream = request.into_inner();
        let (mut accepted, mut duplicates, mut index) = (0u64, 0u64, 0usize);
        while let Some(signal) = stream.message().await? {
            let outcome = signals::accept(
                &self.ctx,
                &extensions,
                &signal,
                &format!("signals[{index}]"),
            )
            .await?;
            if outcome.duplicate {
                duplicates += 1;
            } else {
                accepted += 1;
            }
            index += 1;
        }
        Ok(Response::new(SignalBatchAck {
            accepted,
            duplicates,
        }))
    }

    async fn push_event(&self, request: Request<Event>) -> Result<Response<EventAck>, Status> {
        let caller = caller_from(&request)?;
        // Changing the ontology or maintaining the graph is an admin's; an integration pushes
        // docs, records, HR changes and work items. Checked before the event is read, so a
        // refused caller learns nothing of its validity.
        match &request.get_ref().kind {
            Some(EventKind::OntologySet(_)) => {
                require_role(request.extensions(), Role::Admin, "ontology.set")?;
            }
            Some(EventKind::GraphMaintain(_)) => {
                require_role(request.extensions(), Role::Admin, "graph.maintain")?;
            }
            _ => {}
        }
        let event = request.into_inner();
        let key = Some(event.idempotency_key.trim().to_owned()).filter(|k| !k.is_empty());
        let mut envelope =
            ontoloop_proto::convert::event_from(event, caller.tenant(), chrono::Utc::now())?;
        let body = envelope.to_json();
        let (seq, duplicate) = self
            .ctx
            .store
            .intake_append(
                caller.tenant(),
                key.as_deref(),
                envelope.event.kind(),
                &body,
                chrono::Utc::now(),
            )
            .await
            .map_err(|err| unavailable("cannot record the event", err))?;
        if duplicate {
            return Ok(Response::new(EventAck {
                sequence: u64::try_from(seq).unwrap_or_default(),
                duplicate: true,
            }));
        }
        envelope.seq = Some(seq);
        // Numbers are per tenant, so the message id is the tenant's number, scoped to it.
        let id = ontoloop_queue::scoped_id("evt", caller.tenant(), &seq.to_string());
        let message =
            Message::with_id(id, envelope.to_json()).header("x-ontoloop-tenant", caller.tenant());
        if let Err(err) = self.ctx.queue.publish(topics::EVENTS, message).await {
            // The event never reached the queue: say so on the intake log too, so a reader
            // waiting for this sequence number is not left waiting.
            let reason = format!("publish failed: {err}");
            if let Err(store_err) = self
                .ctx
                .store
                .intake_fail(caller.tenant(), seq, &reason)
                .await
            {
                tracing::error!(seq, error = %store_err, "cannot mark unpublished event failed");
            }
            return Err(unavailable("cannot publish the event", err));
        }
        tracing::debug!(
            seq,
            kind = envelope.event.kind(),
            tenant = caller.tenant(),
            "event accepted"
        );
        Ok(Response::new(EventAck {
            sequence: u64::try_from(seq).unwrap_or_default(),
            duplicate: false,
        }))
    }
}
