//! The services' own sections: retrieval's answer policy, the analyst's healing, the org and
//! context graphs, the budgets of the per-tenant caches, and retention.

use ontoloop_core::Severity;
use ontoloop_org::context::ContextSettings;
use serde::Deserialize;

/// The budgets of the per-tenant caches (`[cache.<kind>]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    /// Retrieval's and the firewall's read models (`ontoloop_readmodel::Snapshots`), each.
    pub read_models: ontoloop_core::CacheBudget,
    /// The analyst's knowledge of each tenant between events (graph, page versions).
    pub knowledge: ontoloop_core::CacheBudget,
    /// The analyst's HR records of each tenant between org events.
    pub hr_records: ontoloop_core::CacheBudget,
    /// The healer's stage of each (tenant, pattern), so a pattern is acted on once per stage.
    pub heal_stages: ontoloop_core::CacheBudget,
    /// The supervisor's learned rates of each tenant.
    pub supervisors: ontoloop_core::CacheBudget,
    /// Retrieval's org, product and work-item graphs of each tenant.
    pub org_views: ontoloop_core::CacheBudget,
    /// Retrieval's context graphs, by tenant.
    pub context_graphs: ontoloop_core::CacheBudget,
}

/// The ephemeral org, product and context graphs that retrieval holds per tenant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrgSettings {
    /// How often, at least, retrieval asks the store whether a tenant's org version moved (it
    /// also asks at each word of an analyst commit).
    pub watch_interval_ms: u64,
    /// Safety net: graphs older than this are rebuilt from the store even without an event.
    pub safety_ttl_secs: u64,
    /// More pending changes than this are not patched in one by one: the graphs are rebuilt.
    pub max_patch_changes: u64,
    /// Documentation coverage (share of products with an owner and a description) below which
    /// a rebuilt product graph raises a `temporal_stale` signal.
    pub coverage_threshold: f64,
    /// How long a project's context graph lives unless extended.
    pub context_ttl_secs: u64,
    /// How long a context graph may go unused before it expires.
    pub context_idle_secs: u64,
    /// How often the sweeper removes expired context graphs.
    pub context_sweep_secs: u64,
}

/// How long the store keeps rows that only serve for a while (`[retention]`; what each window
/// means is said in `defaults.toml`). The analyst prunes every `every_minutes`, at most
/// `max_rows_per_pass` rows of each table per pass. A window of 0 days keeps a table forever.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSettings {
    /// How often the analyst prunes.
    pub every_minutes: u64,
    /// Rows of one table deleted per pass at most.
    pub max_rows_per_pass: u64,
    /// The analyst's inbox of recorded queue messages.
    pub inbox_days: u64,
    /// Signals taken in (published ones only).
    pub signal_intake_days: u64,
    /// Events taken in (settled and published ones only, never a tenant's newest).
    pub intake_event_days: u64,
    /// The org change log.
    pub org_change_days: u64,
}

impl RetentionSettings {
    /// The pause between two pruning passes.
    pub fn every(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.every_minutes.saturating_mul(60))
    }

    /// How long rows are kept for a window of `days`; `None` (keep forever) for 0.
    pub fn keep(days: u64) -> Option<std::time::Duration> {
        (days > 0).then(|| std::time::Duration::from_secs(days.saturating_mul(86_400)))
    }
}

/// The analyst's healing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalystSettings {
    /// Directory of project records (`ROOT/TENANT/*.md`); empty for none.
    pub sources_dir: String,
    /// Origin of the records found there.
    pub source_origin: String,
    /// Severity at which a missing-entity pattern heals at once.
    pub heal_at: Severity,
    /// Severity at which a pattern below `heal_at` becomes proposed graph updates.
    pub propose_at: Severity,
    /// Domain of an update by its predicate: domain name → words a predicate name contains.
    pub domains: std::collections::BTreeMap<String, Vec<String>>,
}

/// Retrieval's answer policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalSettings {
    /// Pages read per question besides the sources the graph cites.
    pub top_k: usize,
    /// Answers resting only on origins below this authority are hedged.
    pub hedge_below_authority: i32,
    /// How long a request with `min_sequence` waits for that event to be applied.
    pub read_your_writes_timeout_ms: u64,
}

impl OrgSettings {
    /// Lifetimes of the context graphs.
    pub fn contexts(&self) -> ContextSettings {
        ContextSettings {
            ttl: std::time::Duration::from_secs(self.context_ttl_secs),
            idle: std::time::Duration::from_secs(self.context_idle_secs),
        }
    }
}
