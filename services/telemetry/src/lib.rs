//! The telemetry service: the intake for agents' failure signals and integrations' events.
//!
//! Owns the `TelemetryService` gRPC edge: it validates what comes in (events, failure signals),
//! records it in the intake logs (sequence numbers, idempotency, signal frequency) and publishes
//! it durably to the queue. The intake logs are the outbox: a row is acknowledged once it is
//! recorded, published at once when the broker confirms in time, else by the relay this service
//! runs (`ontoloop_runtime::outbox::run_relay`, one per process), and published again at start-up. It must never write the graph or the store's knowledge; the analyst
//! does.

mod intake;
mod signals;

use std::sync::Arc;

use ontoloop_auth::Role;
use ontoloop_core::{During, ServiceError, ServiceKind};
use ontoloop_proto::v1::event::Kind as EventKind;
use ontoloop_proto::v1::telemetry_service_server::{TelemetryService, TelemetryServiceServer};
use ontoloop_proto::v1::{Event, EventAck, Signal, SignalAck, SignalBatchAck};
use ontoloop_proto::{caller_from, require_role, status_from};
use ontoloop_runtime::{Context, Parts};
use ontoloop_store::{IntakeRequest, OutboxKind};
use tonic::{Request, Response, Status, Streaming};

/// Telemetry as the runtime runs it (`ontoloop_runtime::{main, run, serve}`).
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Telemetry;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        let relay = {
            let ctx = ctx.clone();
            move |cancel| ontoloop_runtime::outbox::run_relay(ctx, cancel)
        };
        let appender = Arc::new(intake::Appender::new(ctx.store.clone()));
        Ok(
            Parts::new(TelemetryServiceServer::new(Telemetry { ctx, appender }))
                .task("outbox relay", relay),
        )
    }
}

struct Telemetry {
    ctx: Context,
    /// Appends accepted events, the pushes in flight a group per transaction.
    appender: Arc<intake::Appender>,
}

/// Why text with a NUL byte is refused at the intake: PostgreSQL cannot keep it in text, so the
/// analyst could never apply it.
pub(crate) const NUL_REFUSED: &str = "contains a NUL byte (U+0000), which the store cannot keep";

/// The path of the first text in `value` holding a NUL byte (`body`, `records[2].value`, …).
fn nul_at(value: &serde_json::Value, path: &str) -> Option<String> {
    match value {
        serde_json::Value::String(text) => text.contains('\0').then(|| path.to_owned()),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_at(item, &format!("{path}[{i}]"))),
        serde_json::Value::Object(fields) => fields.iter().find_map(|(key, field)| {
            if key.contains('\0') {
                return Some(format!("{path}.{key}"));
            }
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            nul_at(field, &at)
        }),
        _ => None,
    }
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
        let most = self.ctx.settings.services.max_stream_messages;
        while let Some(signal) = stream.message().await? {
            if index >= most {
                return Err(status_from(ontoloop_core::DomainError::invalid(
                    "signals",
                    format!(
                        "at most {most} are accepted in one stream \
                         (services.max_stream_messages); the first {most} were recorded, send \
                         the rest in another stream"
                    ),
                )));
            }
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
        let envelope =
            ontoloop_proto::convert::event_from(event, caller.tenant(), chrono::Utc::now())?;
        if let Some(field) = serde_json::to_value(&envelope)
            .ok()
            .and_then(|value| nul_at(&value, ""))
        {
            return Err(status_from(ontoloop_core::DomainError::invalid(
                &field,
                NUL_REFUSED,
            )));
        }
        if key.as_deref().is_some_and(|k| k.contains('\0')) {
            return Err(status_from(ontoloop_core::DomainError::invalid(
                "idempotency_key",
                NUL_REFUSED,
            )));
        }
        let body = envelope.to_json();
        let max_body = self.ctx.settings.queue.max_body_bytes;
        if body.len() > max_body {
            return Err(status_from(ontoloop_core::DomainError::invalid(
                "event",
                format!(
                    "its body would be {} bytes, over queue.max_body_bytes ({max_body})",
                    body.len()
                ),
            )));
        }
        // The one write that acknowledges the event: it is in the intake log, unpublished (the
        // outbox), and will be published and applied once whatever happens next.
        let intake = self
            .appender
            .accept(IntakeRequest {
                tenant: caller.tenant().to_owned(),
                idempotency_key: key.clone(),
                kind: envelope.event.kind().to_owned(),
                body: body.clone(),
                received_at: chrono::Utc::now(),
                lease_until: Some(ontoloop_runtime::outbox::lease_until()),
                trace_context: ontoloop_observability::trace::current_stored(),
            })
            .await
            .map_err(|err| unavailable("cannot record the event", err))?;
        let seq = intake.seq;
        if intake.pending {
            // Published now if the broker confirms in time, else by the relay; a retry of an
            // event still unpublished publishes it again (the analyst settles a number once).
            let stored = if intake.duplicate {
                match self.ctx.store.intake_body(caller.tenant(), seq).await {
                    Ok(stored) => stored,
                    Err(err) => {
                        tracing::warn!(seq, error = %err, "cannot read a pending event; the relay publishes it");
                        None
                    }
                }
            } else {
                Some(body)
            };
            if let Some(stored) = stored {
                let message =
                    ontoloop_runtime::outbox::event_message(caller.tenant(), seq, &stored);
                ontoloop_runtime::outbox::publish_now(
                    &self.ctx,
                    OutboxKind::Event,
                    intake.row,
                    message,
                )
                .await;
            }
        }
        if intake.duplicate {
            return Ok(Response::new(EventAck {
                sequence: u64::try_from(seq).unwrap_or_default(),
                duplicate: true,
            }));
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_nul_byte_is_found_with_its_path() {
        let value = serde_json::json!({
            "tenant": "acme",
            "body": "fine",
            "records": [{"value": "ok"}, {"value": "bad\u{0}"}],
        });
        assert_eq!(
            super::nul_at(&value, "").as_deref(),
            Some("records[1].value")
        );
        assert_eq!(
            super::nul_at(&serde_json::json!({"body": "clean"}), ""),
            None
        );
    }
}
