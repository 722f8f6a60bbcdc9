//! Publishing what the intake acknowledged: the intake logs are the outbox
//! (`ontoloop_store::outbox`). A request that recorded an event or a signal may publish it at
//! once ([`publish_now`], the fast path, bounded by `queue.publish_timeout_ms`); whatever is left
//! unpublished — the broker down, the publish timed out, the process killed — the relay
//! ([`run_relay`], one per telemetry process) publishes with confirms and stamps. After a failed
//! publish, requests leave theirs to the relay at once for a second (or until the relay gets
//! through), so an outage costs the intake one publish timeout, not one per request. At start-up
//! the relay publishes every unpublished row again, leases or not, and on a queue that does not
//! outlive the process (the in-process queue) also what was published but never taken by the
//! analyst. Consumers deduplicate by message id, so a row published twice is applied once.

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt as _;
use ontoloop_core::topics;
use ontoloop_queue::Message;
use ontoloop_store::{OutboxKind, OutboxRow};
use tokio_util::sync::CancellationToken;

use crate::Context;

/// How long a publisher holds the rows it publishes before another may take them.
const LEASE: Duration = Duration::from_secs(10);
/// Rows one relay pass claims.
const BATCH: u64 = 256;
/// Publishes one relay pass has in flight at once.
const IN_FLIGHT: usize = 32;
/// How often an idle relay looks for rows.
const IDLE: Duration = Duration::from_millis(100);
/// After a request's publish failed, how long later requests leave theirs to the relay at once
/// instead of each waiting for the broker (so an outage does not slow the intake down to one
/// `queue.publish_timeout_ms` per request); a publish by the relay that succeeds ends it early.
const SKIP_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Until when (milliseconds since the Unix epoch) requests skip their own publish. Process-wide:
/// at worst a request leaves to the relay a publish it could have made itself.
static SKIP_UNTIL_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn skipping() -> bool {
    Utc::now().timestamp_millis() < SKIP_UNTIL_MS.load(std::sync::atomic::Ordering::Relaxed)
}

fn skip_for_a_while() {
    let until = Utc::now().timestamp_millis()
        + i64::try_from(SKIP_AFTER_FAILURE.as_millis()).unwrap_or(i64::MAX);
    SKIP_UNTIL_MS.store(until, std::sync::atomic::Ordering::Relaxed);
}

/// The queue message of an intake event: the stored body with its sequence number, under the
/// id `scoped_id("evt", tenant, seq)` (the analyst settles it once by that number).
pub fn event_message(tenant: &str, seq: i64, stored_body: &str) -> Message {
    let body = match serde_json::from_str::<serde_json::Value>(stored_body) {
        Ok(serde_json::Value::Object(mut object)) => {
            object.insert("seq".to_owned(), serde_json::Value::from(seq));
            serde_json::Value::Object(object).to_string()
        }
        // Not an object: published as stored, so the analyst dead-letters it with the reason.
        _ => stored_body.to_owned(),
    };
    Message::with_id(
        ontoloop_queue::scoped_id("evt", tenant, &seq.to_string()),
        body,
    )
    .header("x-ontoloop-tenant", tenant)
}

/// The queue message of a signal row.
pub fn signal_message(tenant: &str, idempotency_key: &str, body: &str) -> Message {
    Message::with_id(signal_message_id(tenant, idempotency_key), body.to_owned())
}

/// The queue message id of a tenant's signal with this idempotency key; the analyst records
/// signals once by it. Unambiguous across tenants ([`ontoloop_queue::scoped_id`]).
pub fn signal_message_id(tenant: &str, idempotency_key: &str) -> String {
    ontoloop_queue::scoped_id("sig", tenant, idempotency_key)
}

/// The lease a request's own publish holds on the row it has just written.
pub fn lease_until() -> chrono::DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(LEASE).unwrap_or_default()
}

/// Publishes one recorded row now, within `queue.publish_timeout_ms`, and stamps it published.
/// On failure the row is released to the relay; the caller's acknowledgement stands either way,
/// since the row is durable. Returns whether it was published now.
pub async fn publish_now(ctx: &Context, kind: OutboxKind, row: i64, message: Message) -> bool {
    publish_with(&ctx.store, &ctx.queue, &ctx.settings, kind, row, message).await
}

/// [`publish_now`] with the parts of a context.
pub(crate) async fn publish_with(
    store: &ontoloop_store::Store,
    queue: &ontoloop_queue::SharedQueue,
    settings: &ontoloop_settings::Settings,
    kind: OutboxKind,
    row: i64,
    message: Message,
) -> bool {
    let topic = topic(kind);
    let timeout = Duration::from_millis(settings.queue.publish_timeout_ms);
    if skipping() {
        counter("ontoloop_outbox_deferred_total", topic);
        if let Err(err) = store.outbox_release(kind, &[row]).await {
            tracing::warn!(error = %err, "cannot release a row; its lease expires instead");
        }
        return false;
    }
    let published = tokio::time::timeout(timeout, queue.publish(topic, message)).await;
    match published {
        Ok(Ok(())) => {
            // The caller needs its row durable, which it is; the stamp only spares the relay a
            // second publish, so it is written behind the caller.
            store.outbox_published_soon(kind, &[row], Utc::now()).await;
            true
        }
        failed => {
            let reason = match failed {
                Ok(Err(err)) => err.to_string(),
                _ => format!("no confirm within {} ms", timeout.as_millis()),
            };
            tracing::warn!(queue = topic, reason = %reason, "publish deferred to the relay");
            skip_for_a_while();
            counter("ontoloop_outbox_deferred_total", topic);
            if let Err(err) = store.outbox_release(kind, &[row]).await {
                tracing::warn!(error = %err, "cannot release a row; its lease expires instead");
            }
            false
        }
    }
}

/// Publishes the outbox until `cancel` fires (see the module header).
pub async fn run_relay(ctx: Context, cancel: CancellationToken) -> anyhow::Result<()> {
    if !ctx.queue.durable() {
        match ctx.store.outbox_reset_undelivered().await {
            Ok(0) => {}
            Ok(rows) => tracing::info!(rows, "publishing again what the last process held"),
            Err(err) => tracing::warn!(error = %err, "cannot read what the last process held"),
        }
    }
    let initial = Duration::from_millis(ctx.settings.queue.backoff_initial_ms);
    let most = Duration::from_millis(ctx.settings.queue.backoff_max_ms);
    let mut wait = initial;
    // The first passes take every unpublished row, leased or not: a lease from before the start
    // belongs to a publisher that may be gone.
    let mut starting = true;
    while !cancel.is_cancelled() {
        let mut idle = true;
        let mut failed = false;
        for kind in [OutboxKind::Event, OutboxKind::Signal] {
            match relay_once(&ctx, kind, starting).await {
                Ok((claimed, ok)) => {
                    idle &= claimed == 0;
                    failed |= ok < claimed;
                }
                Err(err) => {
                    tracing::warn!(error = %err, "outbox pass failed");
                    failed = true;
                }
            }
        }
        if idle && !failed {
            starting = false;
        }
        let pause = if failed {
            let now = wait;
            wait = (wait * 2).min(most);
            now
        } else {
            wait = initial;
            if idle { IDLE } else { Duration::ZERO }
        };
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(pause) => {}
        }
    }
    Ok(())
}

/// One pass over one log: claims a batch, publishes it, stamps what was confirmed and releases
/// the rest. Returns (claimed, published).
async fn relay_once(
    ctx: &Context,
    kind: OutboxKind,
    ignore_leases: bool,
) -> Result<(usize, usize), ontoloop_store::StoreError> {
    let rows = ctx
        .store
        .outbox_claim(kind, Utc::now(), lease_until(), BATCH, ignore_leases)
        .await?;
    if rows.is_empty() {
        return Ok((0, 0));
    }
    let topic = topic(kind);
    let timeout = Duration::from_millis(ctx.settings.queue.publish_timeout_ms);
    // In groups, in order; after a group with a failure the rest is released untried, so an
    // unreachable broker costs one timeout per pass, not one per row.
    let mut outcomes: Vec<(i64, bool)> = Vec::with_capacity(rows.len());
    let mut broken = false;
    for group in rows.chunks(IN_FLIGHT) {
        if broken {
            outcomes.extend(group.iter().map(|row| (row.row, false)));
            continue;
        }
        let owned: Vec<(i64, Message)> = group.iter().map(|r| (r.row, message_of(r))).collect();
        let sent: Vec<(i64, bool)> = futures::stream::iter(owned)
            .map(|(key, message)| {
                let queue = ctx.queue.clone();
                async move {
                    let sent = tokio::time::timeout(timeout, queue.publish(topic, message)).await;
                    (key, matches!(sent, Ok(Ok(()))))
                }
            })
            .buffered(IN_FLIGHT)
            .collect()
            .await;
        broken = sent.iter().any(|o| !o.1);
        outcomes.extend(sent);
    }
    let published: Vec<i64> = outcomes.iter().filter(|o| o.1).map(|o| o.0).collect();
    let failed: Vec<i64> = outcomes.iter().filter(|o| !o.1).map(|o| o.0).collect();
    ctx.store
        .outbox_published(kind, &published, Utc::now())
        .await?;
    if !failed.is_empty() {
        tracing::warn!(
            queue = topic,
            failed = failed.len(),
            "relay could not publish; retrying"
        );
        ctx.store.outbox_release(kind, &failed).await?;
    }
    if !published.is_empty() {
        // The broker answers again: requests publish their own rows again.
        SKIP_UNTIL_MS.store(0, std::sync::atomic::Ordering::Relaxed);
        ontoloop_observability::metrics::global().add(
            "ontoloop_outbox_relayed_total",
            "Intake rows the relay published (left unpublished by their request).",
            &[("queue", topic)],
            published.len() as f64,
        );
    }
    Ok((rows.len(), published.len()))
}

/// The message of a row, continuing the trace of the request that was acknowledged (the relay's
/// own span is not that request's).
fn message_of(row: &OutboxRow) -> Message {
    let message = match row.kind {
        OutboxKind::Event => event_message(&row.tenant, row.tenant_seq, &row.body),
        OutboxKind::Signal => signal_message(&row.tenant, &row.idempotency_key, &row.body),
    };
    with_trace(message, row.trace_context.as_deref())
}

/// `message` continuing the stored trace context of the request that acknowledged it, if any
/// (`ontoloop_observability::trace::current_stored` at the time).
pub(crate) fn with_trace(mut message: Message, stored: Option<&str>) -> Message {
    if let Some(stored) = stored {
        message
            .headers
            .extend(ontoloop_observability::trace::stored_headers(stored));
    }
    message
}

fn topic(kind: OutboxKind) -> &'static str {
    match kind {
        OutboxKind::Event => topics::EVENTS,
        OutboxKind::Signal => topics::SIGNALS,
    }
}

fn counter(name: &str, topic: &'static str) {
    ontoloop_observability::metrics::global().add(
        name,
        "Intake rows whose publish was left to the relay.",
        &[("queue", topic)],
        1.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_message_carries_its_number_and_tenant() {
        let message = event_message("acme", 7, r#"{"tenant":"acme","type":"doc.upsert"}"#);
        let body: serde_json::Value = serde_json::from_slice(&message.body).expect("json");
        assert_eq!(body["seq"], 7);
        assert_eq!(body["type"], "doc.upsert");
        assert_eq!(message.id, ontoloop_queue::scoped_id("evt", "acme", "7"));
        assert_eq!(
            message.headers.get("x-ontoloop-tenant").map(String::as_str),
            Some("acme")
        );
        // A body that is no object goes out as it is, for the analyst to refuse with a reason.
        assert_eq!(event_message("acme", 1, "[1]").body, b"[1]");
    }

    #[test]
    fn signal_ids_are_unambiguous_across_tenants() {
        // Joined with a dash, both read `a-b-c`; the analyst would have dropped the second.
        assert_ne!(signal_message_id("a", "b-c"), signal_message_id("a-b", "c"));
        assert_eq!(signal_message_id("a", "b-c"), signal_message_id("a", "b-c"));
    }

    #[test]
    fn a_relayed_row_continues_the_acknowledged_requests_trace() {
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut row = OutboxRow {
            kind: OutboxKind::Signal,
            row: 1,
            tenant: "acme".to_owned(),
            tenant_seq: 0,
            idempotency_key: "k".to_owned(),
            body: "{}".to_owned(),
            trace_context: Some(format!(r#"{{"traceparent":"{traceparent}"}}"#)),
        };
        let message = message_of(&row);
        assert_eq!(
            message.headers.get("traceparent").map(String::as_str),
            Some(traceparent)
        );
        row.trace_context = None;
        assert!(!message_of(&row).headers.contains_key("traceparent"));
    }
}
