//! The analyst's gauges, computed when `/metrics` is scraped: review queue depth, the share of
//! applied updates no human reviewed, the depth of the queues it consumes and their dead-letter
//! queues, and for the tenants this process holds, freshness by region and the patterns acted on
//! by status. Tenant and region label values are bounded
//! (`ontoloop_observability::metrics::tenant_label`, [`REGION_LABELS`]): the tenants past the
//! first ones seen are summed under `tenant="other"`. What is recorded as events apply is
//! [`crate::metrics`].

use std::collections::BTreeMap;
use std::sync::Arc;

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
