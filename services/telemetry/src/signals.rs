//! Failure signals: validated, deduplicated by idempotency key, given a severity from frequency
//! and spread, and published durably (publisher confirms) for the analyst.

use chrono::{DateTime, Utc};
use ontoloop_core::{DomainError, SignalType};
use ontoloop_proto::v1::{self as pb, Signal};
use ontoloop_proto::{caller_in, status_from};
use ontoloop_runtime::Context;
use ontoloop_runtime::signals::{SignalReport, report_signal};
use tonic::Status;

pub use ontoloop_runtime::signals::Accepted;

/// A signal checked field by field; errors name the field, prefixed with `path`.
struct Checked {
    tenant: String,
    principal: String,
    kind: SignalType,
    at: DateTime<Utc>,
}

fn check(extensions: &tonic::Extensions, signal: &Signal, path: &str) -> Result<Checked, Status> {
    let field = |name: &str| field_name(path, name);
    let caller = caller_in(extensions, signal.caller.as_ref(), &field("caller"))?;
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
    for (name, value) in [
        ("query", &signal.query),
        ("entity", &signal.entity),
        ("relationship", &signal.relationship),
        ("sector", &signal.sector),
        ("agent_id", &signal.agent_id),
        ("idempotency_key", &signal.idempotency_key),
    ] {
        if value.contains('\0') {
            return Err(status_from(DomainError::invalid(
                &field(name),
                crate::NUL_REFUSED,
            )));
        }
    }
    if [&signal.entity, &signal.relationship, &signal.sector]
        .iter()
        .all(|s| s.trim().is_empty())
    {
        return Err(status_from(DomainError::missing(&field(
            "entity|relationship|sector",
        ))));
    }
    let at =
        ontoloop_proto::convert::instant_or(signal.observed_at, &field("observed_at"), Utc::now())?;
    Ok(Checked {
        tenant: caller.tenant().to_owned(),
        principal: caller.principal().to_owned(),
        kind,
        at,
    })
}

/// Accepts one signal: validate, then record once, grade and publish through the one intake
/// every reporter uses ([`ontoloop_runtime::signals::report_signal`]). The reporter is the
/// call's verified identity when authentication is on (`extensions`), else the signal's caller.
pub async fn accept(
    ctx: &Context,
    extensions: &tonic::Extensions,
    signal: &Signal,
    path: &str,
) -> Result<Accepted, Status> {
    let checked = check(extensions, signal, path)?;
    let report = SignalReport {
        tenant: checked.tenant,
        reporter: checked.principal,
        kind: checked.kind,
        query: signal.query.clone(),
        entity: signal.entity.clone(),
        relationship: signal.relationship.clone(),
        sector: signal.sector.clone(),
        agent_id: signal.agent_id.trim().to_owned(),
        idempotency_key: signal.idempotency_key.trim().to_owned(),
        detail: String::new(),
        at: checked.at,
    };
    if report.subject().is_empty() {
        return Err(status_from(DomainError::invalid(
            &field_name(path, "entity"),
            "names nothing (only punctuation)",
        )));
    }
    let accepted = report_signal(ctx, &report).await.map_err(status_from)?;
    if !accepted.duplicate {
        ontoloop_observability::metrics::global().add(
            "ontoloop_telemetry_signals_total",
            "Failure signals accepted, by type and severity.",
            &[
                ("type", report.kind.name()),
                ("severity", accepted.severity.name()),
            ],
            1.0,
        );
    }
    Ok(accepted)
}

/// A field's name as errors give it: prefixed with `path` (a streamed signal's position).
fn field_name(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}
