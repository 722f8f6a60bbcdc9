//! The one way a failure signal enters the loop, whoever reports it (an agent through telemetry,
//! or retrieval and the firewall about their own abstentions and blocks): recorded once by
//! idempotency key, graded by how often its subject failed and for how many agents over the
//! window, and published durably (publisher confirm) for the analyst with that severity.

use chrono::{DateTime, Utc};
use ontoloop_core::{Severity, SignalType, severity, topics};
use ontoloop_queue::Message;
use ontoloop_store::SignalRecord;

use crate::Context;

/// A signal to report; the caller has validated it.
#[derive(Debug, Clone)]
pub struct SignalReport {
    /// Tenant.
    pub tenant: String,
    /// Who reported it (principal).
    pub reporter: String,
    /// Type.
    pub kind: SignalType,
    /// The query that failed.
    pub query: String,
    /// Entity concerned, as given.
    pub entity: String,
    /// Relationship concerned, as given.
    pub relationship: String,
    /// Sector concerned, as given.
    pub sector: String,
    /// Agent that saw the failure.
    pub agent_id: String,
    /// A retry with the same key is the same signal.
    pub idempotency_key: String,
    /// What the reporter saw, in words (optional).
    pub detail: String,
    /// When.
    pub at: DateTime<Utc>,
}

impl SignalReport {
    /// What the signal is about, folded as the analyst groups patterns (across spellings): the
    /// entity, else the relationship, else the sector. Empty when none is given.
    pub fn subject(&self) -> String {
        [&self.entity, &self.relationship, &self.sector]
            .into_iter()
            .map(|s| ontoloop_core::patterns::fold(s))
            .find(|s| !s.is_empty())
            .unwrap_or_default()
    }
}

/// What became of one reported signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    /// A retry of a signal already accepted.
    pub duplicate: bool,
    /// Severity of its subject now.
    pub severity: Severity,
}

/// A signal could not be taken in; the reporter may retry.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The store failed.
    #[error("{0}")]
    Store(String),
    /// The broker did not confirm the publish.
    #[error("publish the signal: {0}")]
    Publish(String),
}

impl ontoloop_core::ServiceError for ReportError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            ReportError::Store(_) | ReportError::Publish(_) => {
                ontoloop_core::ErrorCode::Unavailable
            }
        }
    }
}

/// The queue message id of a tenant's signal with this idempotency key; the analyst records
/// signals once by it. Unambiguous across tenants ([`ontoloop_queue::scoped_id`]).
pub fn signal_message_id(tenant: &str, idempotency_key: &str) -> String {
    ontoloop_queue::scoped_id("sig", tenant, idempotency_key)
}

/// Records, grades and publishes one signal (see the module header).
pub async fn report_signal(ctx: &Context, report: &SignalReport) -> Result<Accepted, ReportError> {
    let settings = &ctx.settings.signals;
    let subject = report.subject();
    let record = SignalRecord {
        tenant: &report.tenant,
        idempotency_key: &report.idempotency_key,
        signal_type: report.kind.name(),
        subject: &subject,
        agent_id: &report.agent_id,
        query: &report.query,
        at: report.at,
    };
    let fresh = ctx
        .store
        .record_signal(&record)
        .await
        .map_err(|err| ReportError::Store(format!("record the signal: {err}")))?;
    let frequency = ctx
        .store
        .signal_frequency(
            &report.tenant,
            report.kind.name(),
            &subject,
            report.at - settings.window(),
        )
        .await
        .map_err(|err| ReportError::Store(format!("count signals: {err}")))?;
    let severity = severity(frequency.occurrences, frequency.agents, settings);
    if fresh {
        let body = serde_json::json!({
            "tenant": report.tenant,
            "type": report.kind.name(),
            "query": report.query,
            "entity": report.entity,
            "relationship": report.relationship,
            "sector": report.sector,
            "agent_id": report.agent_id,
            "reporter": report.reporter,
            "idempotency_key": report.idempotency_key,
            "detail": report.detail,
            "severity": severity.name(),
            "occurrences": frequency.occurrences,
            "agents": frequency.agents,
            "at": report.at,
        });
        // The id follows the tenant and the idempotency key, so a re-published signal is
        // recognised downstream, and no other tenant's signal can ever share it.
        let id = signal_message_id(&report.tenant, &report.idempotency_key);
        ctx.queue
            .publish(topics::SIGNALS, Message::with_id(id, body.to_string()))
            .await
            .map_err(|err| ReportError::Publish(err.to_string()))?;
        ontoloop_observability::metrics::global().add(
            "ontoloop_signals_reported_total",
            "Failure signals taken in, by type and severity.",
            &[("type", report.kind.name()), ("severity", severity.name())],
            1.0,
        );
    }
    Ok(Accepted {
        duplicate: !fresh,
        severity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_is_folded_and_falls_back_in_order() {
        let mut report = SignalReport {
            tenant: "acme".into(),
            reporter: "a".into(),
            kind: SignalType::EntityMissing,
            query: "q".into(),
            entity: "  The Project  KITE ".into(),
            relationship: "owner".into(),
            sector: String::new(),
            agent_id: "a".into(),
            idempotency_key: "k".into(),
            detail: String::new(),
            at: Utc::now(),
        };
        assert_eq!(report.subject(), "project kite");
        report.entity = "--".into();
        assert_eq!(report.subject(), "owner");
    }

    #[test]
    fn signal_ids_are_unambiguous_across_tenants() {
        // Joined with a dash, both read `a-b-c`; the analyst would have dropped the second.
        assert_ne!(signal_message_id("a", "b-c"), signal_message_id("a-b", "c"));
        assert_eq!(signal_message_id("a", "b-c"), signal_message_id("a", "b-c"));
    }
}
