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
/// buffer, and one task per context records and publishes what is buffered. A report is
/// dropped and counted (`ontoloop_signals_dropped_total`) when the buffer is full (the store or
/// the broker slow or away) or when the process has taken in [`SELF_REPORTS_PER_SECOND`] of them
/// already (bursts of up to [`SELF_REPORT_BURST`]), so no request ever waits on the intake and
/// callers cannot keep the store's one writer busy recording their blocks: each recorded signal
/// is a write transaction, and agents validating in a loop claims that all fail (ten a call,
/// thousands of calls a second) kept the events' commits waiting behind those writes.
#[derive(Clone)]
pub struct Background {
    /// Each report with the trace context of the request that made it.
    sender: tokio::sync::mpsc::Sender<(SignalReport, Option<String>)>,
    rate: std::sync::Arc<std::sync::Mutex<Rate>>,
}

/// Self-reported signals the process takes in per second at most, over every tenant (signals an
/// agent reports through telemetry are not counted: each is its own call).
pub const SELF_REPORTS_PER_SECOND: f64 = 20.0;

/// Self-reported signals taken in at once after a quiet spell.
pub const SELF_REPORT_BURST: f64 = 200.0;

/// A token bucket: `per_second` tokens a second, at most `burst` held.
#[derive(Debug)]
struct Rate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: std::time::Instant,
}

impl Rate {
    /// A full bucket at `now`.
    fn new(per_second: f64, burst: f64, now: std::time::Instant) -> Self {
        Self {
            per_second,
            burst,
            tokens: burst,
            at: now,
        }
    }

    /// Takes a token at `now`; `false` when none is left.
    fn take(&mut self, now: std::time::Instant) -> bool {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.at = self.at.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
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
        let rate = Rate::new(
            SELF_REPORTS_PER_SECOND,
            SELF_REPORT_BURST,
            std::time::Instant::now(),
        );
        Self {
            sender,
            rate: std::sync::Arc::new(std::sync::Mutex::new(rate)),
        }
    }

    /// Buffers `report` for the intake, or drops and counts it when the process is over its
    /// rate or the buffer is full. Never waits.
    pub fn report(&self, report: SignalReport) {
        let admitted = self
            .rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(std::time::Instant::now());
        if !admitted {
            dropped(&report.reporter);
            return;
        }
        let trace = ontoloop_observability::trace::current_stored();
        if let Err(err) = self.sender.try_send((report, trace)) {
            let (tokio::sync::mpsc::error::TrySendError::Full((report, _))
            | tokio::sync::mpsc::error::TrySendError::Closed((report, _))) = err;
            dropped(&report.reporter);
        }
    }
}

/// Counts a self-reported signal dropped. The reporter is a service's own name, never data.
fn dropped(reporter: &str) {
    ontoloop_observability::metrics::global().add(
        "ontoloop_signals_dropped_total",
        "Signals a service reported about its own answers and dropped: the process over its rate \
         of them, or the buffer to the intake full.",
        &[("reporter", reporter)],
        1.0,
    );
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
    fn the_rate_admits_a_burst_then_its_rate() {
        let start = std::time::Instant::now();
        let mut rate = Rate::new(20.0, 200.0, start);
        let burst = (0..250).filter(|_| rate.take(start)).count();
        assert_eq!(burst, 200, "a full bucket admits its burst and no more");
        // Half a second later: ten more, then none.
        let later = start + std::time::Duration::from_millis(500);
        let refilled = (0..50).filter(|_| rate.take(later)).count();
        assert_eq!(refilled, 10);
        // A long quiet spell fills it up to the burst again, not beyond.
        let quiet = later + std::time::Duration::from_secs(3600);
        assert_eq!((0..1000).filter(|_| rate.take(quiet)).count(), 200);
        // An instant from before the last take earns nothing and is refused.
        assert!(!rate.take(start));
    }
}
