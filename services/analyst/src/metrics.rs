//! The analyst's metrics recorded as it works: histograms recorded as events apply
//! ([`event_applied`]: apply time, and event → visible time from the intake's acceptance), and
//! the entries of its bounded per-tenant caches ([`cache_entries`]). The gauges computed when
//! `/metrics` is scraped are [`crate::gauges`].

use std::collections::{HashSet, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use ontoloop_core::events::EventEnvelope;

/// The histogram of event apply times.
pub(crate) const EVENT_APPLY: &str = "ontoloop_analyst_event_apply_seconds";
/// The histogram of event → visible times.
pub(crate) const EVENT_VISIBLE: &str = "ontoloop_analyst_event_visible_seconds";

/// Records one event's apply by `writer` (`knowledge` or `org`), which took `took`: its apply
/// time by event kind, and when it was `applied` and came through the intake, the seconds from
/// its acceptance there to now, when its commit makes it visible to readers. An event counts
/// towards event → visible once per process, though a redelivery of it applies again (with no
/// effect).
pub(crate) fn event_applied(writer: &str, envelope: &EventEnvelope, took: Duration, applied: bool) {
    let registry = ontoloop_observability::metrics::global();
    registry.observe(
        EVENT_APPLY,
        "Seconds the analyst took to apply an event (its share of the commit that applied it), by writer and event kind.",
        &[("writer", writer), ("kind", envelope.event.kind())],
        took.as_secs_f64(),
    );
    let Some(accepted) = envelope.accepted.filter(|_| applied) else {
        return;
    };
    if let Some(seq) = envelope.seq
        && !first_visible(&envelope.tenant, seq)
    {
        return;
    }
    // A clock behind the intake's counts as no wait.
    let waited = (chrono::Utc::now() - accepted).to_std().unwrap_or_default();
    registry.observe(
        EVENT_VISIBLE,
        "Seconds from the intake accepting an event to the analyst's commit of it, by writer.",
        &[("writer", writer)],
        waited.as_secs_f64(),
    );
}

/// How many applied (tenant, sequence number) pairs [`first_visible`] remembers.
const VISIBLE_REMEMBERED: usize = 10_000;

/// Whether the tenant's event `seq` is seen applied here for the first time (among the last
/// [`VISIBLE_REMEMBERED`]).
fn first_visible(tenant: &str, seq: i64) -> bool {
    /// The pairs remembered, as a set and in the order they came.
    type Seen = (HashSet<(String, i64)>, VecDeque<(String, i64)>);
    static SEEN: LazyLock<Mutex<Seen>> = LazyLock::new(Mutex::default);
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = (tenant.to_owned(), seq);
    if !seen.0.insert(key.clone()) {
        return false;
    }
    seen.1.push_back(key);
    if seen.1.len() > VISIBLE_REMEMBERED
        && let Some(oldest) = seen.1.pop_front()
    {
        seen.0.remove(&oldest);
    }
    true
}

/// Sets `ontoloop_cache_entries{cache}`, the gauge every bounded per-tenant cache reports.
pub(crate) fn cache_entries(cache: &str, entries: usize) {
    ontoloop_observability::metrics::global().set(
        "ontoloop_cache_entries",
        "Entries (tenants) a bounded per-tenant cache keeps.",
        &[("cache", cache)],
        entries as f64,
    );
}
