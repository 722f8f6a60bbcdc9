//! Failure signals: validated, deduplicated by idempotency key, given a severity from frequency
//! and spread, and published durably (publisher confirms) for the analyst.

use chrono::{DateTime, Utc};
use ontoloop_core::{DomainError, Severity, SignalType, severity, topics};
use ontoloop_proto::v1::{self as pb, Signal};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_queue::Message;
use ontoloop_runtime::Context;
use ontoloop_store::SignalRecord;
use tonic::Status;

/// What became of one reported signal.
pub struct Accepted {
    /// A retry of a signal already accepted.
    pub duplicate: bool,
    /// Severity of its subject now.
    pub severity: Severity,
}

/// A signal checked field by field; errors name the field, prefixed with `path`.
struct Checked {
    tenant: String,
    principal: String,
    kind: SignalType,
    subject: String,
    at: DateTime<Utc>,
}

fn check(signal: &Signal, path: &str) -> Result<Checked, Status> {
    let field = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    let caller = caller_from(signal.caller.clone())
        .map_err(|s| Status::invalid_argument(format!("{}: {}", field("caller"), s.message())))?;
    let kind = match pb::SignalType::try_from(signal.r#type) {
        Ok(pb::SignalType::EntityMissing) => SignalType::EntityMissing,
        Ok(pb::SignalType::RelationshipUnknown) => SignalType::RelationshipUnknown,
        Ok(pb::SignalType::TemporalStale) => SignalType::TemporalStale,
        Ok(pb::SignalType::ConfidenceDrop) => SignalType::ConfidenceDrop,
        Ok(pb::SignalType::QueryPattern) => SignalType::QueryPattern,
        Ok(pb::SignalType::Unspecified) => {
            return Err(status_from(DomainError::missing(&field("type"))));
        }
        Err(_) => {
            return Err(status_from(DomainError::invalid(
                &field("type"),
                format!("unknown signal type {}", signal.r#type),
            )));
        }
    };
    for (name, value) in [
        ("query", &signal.query),
        ("agent_id", &signal.agent_id),
        ("idempotency_key", &signal.idempotency_key),
    ] {
        if value.trim().is_empty() {
            return Err(status_from(DomainError::missing(&field(name))));
        }
    }
    let subject = [&signal.entity, &signal.relationship, &signal.sector]
        .into_iter()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .ok_or_else(|| status_from(DomainError::missing(&field("entity|relationship|sector"))))?
        .to_lowercase();
    let at =
        ontoloop_proto::convert::instant_or(signal.observed_at, &field("observed_at"), Utc::now())?;
    Ok(Checked {
        tenant: caller.tenant().to_owned(),
        principal: caller.principal().to_owned(),
        kind,
        subject,
        at,
    })
}

/// Accepts one signal: validate, record once, compute severity, publish with confirm.
pub async fn accept(ctx: &Context, signal: &Signal, path: &str) -> Result<Accepted, Status> {
    let checked = check(signal, path)?;
    let settings = &ctx.settings.signals;
    let record = SignalRecord {
        tenant: &checked.tenant,
        idempotency_key: signal.idempotency_key.trim(),
        signal_type: checked.kind.name(),
        subject: &checked.subject,
        agent_id: signal.agent_id.trim(),
        query: &signal.query,
        at: checked.at,
    };
    let fresh = ctx
        .store
        .record_signal(&record)
        .await
        .map_err(|err| Status::unavailable(format!("record the signal: {err}")))?;
    let window =
        chrono::Duration::seconds(i64::try_from(settings.window_secs).unwrap_or(i64::MAX / 1000));
    let frequency = ctx
        .store
        .signal_frequency(
            &checked.tenant,
            checked.kind.name(),
            &checked.subject,
            checked.at - window,
        )
        .await
        .map_err(|err| Status::unavailable(format!("count signals: {err}")))?;
    let thresholds = ontoloop_runtime::severity_thresholds(settings);
    let severity = severity(frequency.occurrences, frequency.agents, &thresholds);
    if fresh {
        let body = serde_json::json!({
            "tenant": checked.tenant,
            "type": checked.kind.name(),
            "query": signal.query,
            "entity": signal.entity,
            "relationship": signal.relationship,
            "sector": signal.sector,
            "agent_id": signal.agent_id,
            "reporter": checked.principal,
            "idempotency_key": signal.idempotency_key,
            "severity": severity.name(),
            "occurrences": frequency.occurrences,
            "agents": frequency.agents,
            "at": checked.at,
        });
        // The id follows the idempotency key, so a re-published signal is recognised downstream.
        let id = format!("sig-{}-{}", checked.tenant, signal.idempotency_key.trim());
        ctx.queue
            .publish(topics::SIGNALS, Message::with_id(id, body.to_string()))
            .await
            .map_err(|err| Status::unavailable(format!("publish the signal: {err}")))?;
    }
    Ok(Accepted {
        duplicate: !fresh,
        severity,
    })
}
