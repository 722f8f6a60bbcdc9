//! Proposals on their way into the review store, below every module that makes or decides them
//! (grow, heal, the knowledge writer, review): the stable id of an update, the supervisor's
//! route and the store write, and the heal counters. It decides nothing and applies nothing.

use ontoloop_core::During;
use ontoloop_core::supervisor::{Category, Proposal, ReviewReason, Route};
use ontoloop_store::{Store, StoreError, UpdateRecord, update_status};

use crate::supervise::Supervision;

/// The category an update learns in.
pub fn category(update: &UpdateRecord) -> Category {
    Category {
        signal_type: update.signal_type.clone(),
        source: update.source.clone(),
        domain: update.domain.clone(),
    }
}

/// Routes a new proposal through the tenant's supervisor and stores it: pending review (with
/// the reason and priority), or approved to apply at once (`reason = auto`), which the caller
/// does. A proposal whose id exists already is left alone. Returns whether it was new, and the
/// update as routed.
pub(crate) async fn route_and_store(
    store: &Store,
    supervision: &Supervision,
    mut update: UpdateRecord,
) -> Result<(bool, UpdateRecord), During<StoreError>> {
    let proposal = Proposal {
        category: category(&update),
        confidence_variance: update.confidence_variance,
        impact_radius: update.impact_radius,
    };
    let route = supervision
        .route(&update.tenant, &proposal)
        .await
        .map_err(|err| During::new("read the learned sampling rates", err))?;
    match route {
        Route::Review { reason, priority } => {
            update.priority = priority;
            update.reason = match reason {
                ReviewReason::HighVariance => "high_variance",
                ReviewReason::CriticalDomain => "critical_domain",
                ReviewReason::Sampled => "sampled",
            }
            .to_owned();
            update.status = update_status::PENDING.to_owned();
        }
        Route::AutoApply => {
            update.priority = ontoloop_core::supervisor::priority(&proposal);
            update.reason = "auto".to_owned();
            update.status = update_status::APPROVED.to_owned();
            update.applied_value = update.after.clone();
        }
    }
    let fresh = store
        .propose_update(&update)
        .await
        .map_err(|err| During::new("store the proposal", err))?;
    if fresh {
        ontoloop_observability::metrics::global().add(
            "ontoloop_analyst_updates_proposed_total",
            "Proposed graph updates by route.",
            &[("route", &update.reason)],
            1.0,
        );
    }
    Ok((fresh, update))
}

/// A stable id for a proposal: the same slot and value proposed again is the same update.
pub fn update_id(tenant: &str, entity: &str, predicate: &str, value: &str) -> String {
    use sha2::Digest as _;
    let fold = ontoloop_core::patterns::fold;
    let mut hash = sha2::Sha256::new();
    for part in [tenant, &fold(entity), predicate, &fold(value)] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("u-{hex}")
}

/// Counts a heal and its signal-to-heal latency.
pub(crate) fn record_heal(kind: &str, latency_ms: i64) {
    let metrics = ontoloop_observability::metrics::global();
    metrics.observe(
        "ontoloop_analyst_signal_to_heal_seconds",
        "Seconds from a pattern's first signal to its heal.",
        &[("kind", kind)],
        latency_ms as f64 / 1000.0,
    );
    metrics.add(
        "ontoloop_analyst_heals_total",
        "Patterns healed without a human, by kind.",
        &[("kind", kind)],
        1.0,
    );
}
