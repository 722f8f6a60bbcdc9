//! The analyst's Prometheus gauges, computed when `/metrics` is scraped: review queue depth, the
//! share of applied updates no human reviewed, and for the tenants this process holds, freshness
//! by region and the patterns acted on by status.

use std::collections::BTreeMap;
use std::sync::Arc;

use ontoloop_runtime::{Context, Scrape};

use crate::dashboard;
use crate::knowledge::KnowledgeWriter;

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
            for tenant in writer.tenants().await {
                if let Ok(regions) = dashboard::regions(&writer, &tenant).await {
                    for region in regions {
                        let fresh = if region.facts == 0 {
                            1.0
                        } else {
                            (region.facts - region.stale) as f64 / region.facts as f64
                        };
                        registry.set(
                            "ontoloop_analyst_region_fresh_ratio",
                            "Share of a region's facts whose page has not changed since read.",
                            &[("tenant", &tenant), ("region", &region.region)],
                            fresh,
                        );
                    }
                }
                // The statuses the healer recorded (a small table), not a re-read of the
                // whole signal window on every scrape.
                if let Ok(statuses) = ctx.store.pattern_statuses(&tenant).await {
                    let mut by_status: BTreeMap<&str, u64> = BTreeMap::new();
                    for status in &statuses {
                        *by_status.entry(status.status.as_str()).or_default() += 1;
                    }
                    for (status, count) in by_status {
                        registry.set(
                            "ontoloop_analyst_patterns",
                            "Patterns the analyst acted on, by status.",
                            &[("tenant", &tenant), ("status", status)],
                            count as f64,
                        );
                    }
                }
            }
            registry.render("ontoloop_analyst_")
        })
    })
}
