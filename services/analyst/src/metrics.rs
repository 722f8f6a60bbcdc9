//! The analyst's Prometheus metrics. Gauges computed when `/metrics` is scraped: review queue
//! depth, the share of applied updates no human reviewed, the depth of the queues it consumes and
//! their dead-letter queues, and for the tenants this process holds, freshness by region and the
//! patterns acted on by status. Tenant and region label values are bounded
//! (`ontoloop_observability::metrics::tenant_label`, [`REGION_LABELS`]): the tenants past the
//! first ones seen are summed under `tenant="other"`. Histograms recorded as events apply
//! ([`event_applied`]): apply time, and event → visible time from the intake's acceptance.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use ontoloop_core::events::EventEnvelope;
use ontoloop_core::topics;
use ontoloop_observability::metrics::{self, BoundedLabel};
use ontoloop_runtime::{Context, Scrape};

use crate::dashboard;
use crate::knowledge::KnowledgeWriter;

/// How many region names (entity types, which tenants' ontologies name) get a label value of
/// their own; the rest are `other`.
const REGION_LABELS: usize = 50;

static REGIONS: BoundedLabel = BoundedLabel::new(REGION_LABELS);

/// The analyst's gauges, computed when scraped: review queue depth, the share of applied
/// updates that needed no human, and for the tenants this process holds, freshness by region and
/// the patterns acted on by status.
pub fn scrape(ctx: Context, writer: KnowledgeWriter) -> Scrape {
    Arc::new(move || {
        let ctx = ctx.clone();
        let writer = writer.clone();
        Box::pin(async move {
            let registry = ontoloop_observability::metrics::Registry::default();
            match ctx.store.update_counts().await {
                Ok(counts) => {
                    registry.set(
                        "ontoloop_analyst_review_queue_depth",
                        "Updates waiting for a reviewer.",
                        &[],
                        counts.pending as f64,
                    );
                    let applied = counts.auto_applied + counts.reviewed_applied;
                    registry.set(
                        "ontoloop_analyst_updates_without_human_ratio",
                        "Share of applied updates that no human reviewed.",
                        &[],
                        if applied == 0 {
                            0.0
                        } else {
                            counts.auto_applied as f64 / applied as f64
                        },
                    );
                }
                Err(err) => tracing::warn!(error = %err, "cannot count updates for metrics"),
            }
            for queue in topics::ANALYST_INPUTS {
                let dead = ontoloop_queue::dead_letter_queue(queue);
                for name in [queue, dead.as_str()] {
                    match ctx.queue.ready_count(name).await {
                        Ok(ready) => registry.set(
                            QUEUE_DEPTH,
                            "Messages ready on a queue the analyst consumes, or its dead letters.",
                            &[("queue", name)],
                            ready as f64,
                        ),
                        Err(err) => {
                            tracing::debug!(queue = name, error = %err, "cannot count a queue for metrics");
                        }
                    }
                }
            }
            // Tenants and regions are data, so their label values are bounded: past the first
            // tenants (and region names) this process saw, the rest are summed as `other`.
            // Each tenant as the writer holds it (no load, no reordering of its cache), the
            // writer's lock taken per tenant so event applies go on between them.
            let mut regions: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
            let mut patterns: BTreeMap<(String, String), u64> = BTreeMap::new();
            let now = chrono::Utc::now();
            let held_tenants = writer.tenants().await;
            for tenant in &held_tenants {
                let tenant_label = metrics::tenant_label(tenant).to_owned();
                let held = writer
                    .peek(tenant, |graph, pages| {
                        dashboard::regions_of(graph, pages, now)
                    })
                    .await;
                if let Some(found) = held {
                    for region in found {
                        let region_label = REGIONS.value(&region.region).to_owned();
                        let entry = regions
                            .entry((tenant_label.clone(), region_label))
                            .or_default();
                        entry.0 += region.facts;
                        entry.1 += region.stale;
                    }
                }
            }
            // The statuses the healer recorded (a small table, one grouped read), not a re-read
            // of the whole signal window on every scrape.
            match ctx.store.pattern_status_counts(&held_tenants).await {
                Ok(counts) => {
                    for (tenant, status, count) in counts {
                        let tenant_label = metrics::tenant_label(&tenant).to_owned();
                        *patterns.entry((tenant_label, status)).or_default() += count;
                    }
                }
                Err(err) => tracing::warn!(error = %err, "cannot count patterns for metrics"),
            }
            for ((tenant, region), (facts, stale)) in regions {
                let fresh = if facts == 0 {
                    1.0
                } else {
                    (facts - stale) as f64 / facts as f64
                };
                registry.set(
                    "ontoloop_analyst_region_fresh_ratio",
                    "Share of a region's facts whose page has not changed since read.",
                    &[("tenant", &tenant), ("region", &region)],
                    fresh,
                );
            }
            for ((tenant, status), count) in patterns {
                registry.set(
                    "ontoloop_analyst_patterns",
                    "Patterns the analyst acted on, by status.",
                    &[("tenant", &tenant), ("status", &status)],
                    count as f64,
                );
            }
            registry.render("ontoloop_")
        })
    })
}

/// The gauge of a queue's ready messages.
const QUEUE_DEPTH: &str = "ontoloop_queue_depth";
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
