//! The one way a failure signal enters the loop, whoever reports it (an agent through telemetry,
//! or retrieval and the firewall about their own abstentions and blocks): recorded once by
//! idempotency key, graded by how often its subject failed and for how many agents over the
//! window, and published durably (publisher confirm) for the analyst with that severity — through
//! the outbox: recorded with its message before it is acknowledged, published by the request or,
//! failing that, by the relay (`crate::outbox`).

use chrono::{DateTime, Utc};
use ontoloop_core::{Severity, SignalType, severity};
use ontoloop_store::{OutboxKind, SignalRecord};

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
}

impl ontoloop_core::ServiceError for ReportError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            ReportError::Store(_) => ontoloop_core::ErrorCode::Unavailable,
        }
    }
}

/// The queue message id of a tenant's signal with this idempotency key; the analyst records
/// signals once by it. Unambiguous across tenants ([`ontoloop_queue::scoped_id`]).
pub fn signal_message_id(tenant: &str, idempotency_key: &str) -> String {
    ontoloop_queue::scoped_id("sig", tenant, idempotency_key)
}

/// Records, grades and publishes one signal (see the module header). The signal and the message
/// that announces it are recorded together, unpublished, in one transaction: once that commits
/// the signal is acknowledged, and it is published now if the broker confirms within
/// `queue.publish_timeout_ms`, else by the outbox relay ([`crate::outbox`]). A retry of a
/// signal still unpublished publishes it again (consumers deduplicate by message id).
pub async fn report_signal(ctx: &Context, report: &SignalReport) -> Result<Accepted, ReportError> {
    let trace = ontoloop_observability::trace::current_stored();
    report_with(
        &ctx.store,
        &ctx.queue,
        &ctx.settings,
        report,
        trace.as_deref(),
    )
    .await
}

/// Records `report` as [`report_signal`] does; `trace` is the reporting request's trace context
/// ([`ontoloop_observability::trace::current_stored`]), kept with the row for a later publish.
async fn report_with(
    store: &ontoloop_store::Store,
    queue: &ontoloop_queue::SharedQueue,
    all: &ontoloop_settings::Settings,
    report: &SignalReport,
    trace: Option<&str>,
) -> Result<Accepted, ReportError> {
    let settings = &all.signals;
    let subject = report.subject();
    let record = SignalRecord {
        tenant: &report.tenant,
        idempotency_key: &report.idempotency_key,
        signal_type: report.kind.name(),
        subject: &subject,
        agent_id: &report.agent_id,
        query: &report.query,
        at: report.at,
        trace_context: trace,
    };
    let accepted = store
        .accept_signal(
            &record,
            report.at - settings.window(),
            Some(crate::outbox::lease_until()),
            |frequency| message_body(report, frequency, settings),
        )
        .await
        .map_err(|err| ReportError::Store(format!("record the signal: {err}")))?;
    let frequency = accepted.frequency;
    let severity = severity(frequency.occurrences, frequency.agents, settings);
    if let Some(body) = accepted.pending_body {
        let message = crate::outbox::with_trace(
            crate::outbox::signal_message(&report.tenant, &report.idempotency_key, &body),
            trace,
        );
        crate::outbox::publish_with(store, queue, all, OutboxKind::Signal, accepted.row, message)
            .await;
    }
    if accepted.fresh {
        ontoloop_observability::metrics::global().add(
            "ontoloop_signals_reported_total",
            "Failure signals taken in, by type and severity.",
            &[("type", report.kind.name()), ("severity", severity.name())],
            1.0,
        );
    }
    Ok(Accepted {
        duplicate: !accepted.fresh,
        severity,
    })
}

/// Signals a service reports about its own answers (retrieval's abstentions, the firewall's
/// blocks), taken off the request path: [`Background::report`] only puts the report in a bounded
/// buffer, and one task per context records and publishes what is buffered. When the buffer is
/// full (the store or the broker slow or away) the report is dropped and counted
/// (`ontoloop_signals_dropped_total`), so no request ever waits on the intake.
#[derive(Clone)]
pub struct Background {
    /// Each report with the trace context of the request that made it.
    sender: tokio::sync::mpsc::Sender<(SignalReport, Option<String>)>,
}

impl Background {
    /// A buffer of `capacity` reports and the task that drains it into the intake; the task ends
    /// when every handle is dropped.
    pub fn start(
        store: ontoloop_store::Store,
        queue: ontoloop_queue::SharedQueue,
        settings: std::sync::Arc<ontoloop_settings::Settings>,
        capacity: usize,
    ) -> Self {
        let (sender, mut buffered) =
            tokio::sync::mpsc::channel::<(SignalReport, Option<String>)>(capacity.max(1));
        tokio::spawn(async move {
            while let Some((report, trace)) = buffered.recv().await {
                let recorded =
                    report_with(&store, &queue, &settings, &report, trace.as_deref()).await;
                if let Err(err) = recorded {
                    tracing::warn!(error = %err, reporter = %report.reporter, "cannot report a signal");
                }
            }
        });
        Self { sender }
    }

    /// Buffers `report` for the intake, or drops and counts it when the buffer is full. Never
    /// waits.
    pub fn report(&self, report: SignalReport) {
        let trace = ontoloop_observability::trace::current_stored();
        if let Err(err) = self.sender.try_send((report, trace)) {
            let reporter = match &err {
                tokio::sync::mpsc::error::TrySendError::Full((r, _))
                | tokio::sync::mpsc::error::TrySendError::Closed((r, _)) => r.reporter.clone(),
            };
            // The reporter is a service's own name, never data.
            ontoloop_observability::metrics::global().add(
                "ontoloop_signals_dropped_total",
                "Signals a service reported about its own answers and dropped because the \
                 buffer to the intake was full.",
                &[("reporter", reporter.as_str())],
                1.0,
            );
        }
    }
}

/// The signals-queue message announcing `report`, graded by its subject's frequency.
fn message_body(
    report: &SignalReport,
    frequency: ontoloop_store::Frequency,
    settings: &ontoloop_core::SeverityThresholds,
) -> String {
    let severity = severity(frequency.occurrences, frequency.agents, settings);
    serde_json::json!({
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
    })
    .to_string()
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
