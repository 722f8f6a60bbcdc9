//! The statistical supervisor at work: the core's decision rule with each tenant's learned rates
//! loaded from the store, a seeded generator, and every lesson persisted as soon as it is learned.
//!
//! Rates are per tenant: what one tenant's reviewers approve or reject never changes how often
//! another tenant's updates are sampled. Every stored rate is read at start (a store that cannot
//! be read stops the analyst there); a tenant with none yet is read again on its first proposal
//! or decision, so rates another replica learned since are found.

use std::collections::BTreeMap;

use chrono::Utc;
use ontoloop_core::supervisor::{Category, Proposal, Route, Supervisor, SupervisorPolicy, Verdict};
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_store::{RateRecord, Store, StoreError};
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::Mutex;

/// The supervisor with its state.
pub struct Supervision {
    policy: SupervisorPolicy,
    state: Mutex<State>,
    store: Store,
}

/// Each tenant's supervisor (loaded on first use) and the one generator they draw from. The
/// supervisors are kept under `[cache.supervisors]`: every lesson is stored as it is learned, so
/// an evicted tenant's rates are read back from the store on its next proposal or decision.
struct State {
    tenants: Lru<Supervisor>,
    rng: StdRng,
}

impl Supervision {
    /// The supervisors of every tenant, none held yet: each tenant's learned rates are read from
    /// the store on its first proposal or decision (so start-up reads nothing, however many
    /// tenants there are) and kept as many as `budget` allows. Seeds the generator from settings
    /// (0: from the OS).
    pub fn new(store: Store, policy: &SupervisorPolicy, budget: CacheBudget) -> Self {
        let rng = match policy.seed {
            0 => StdRng::from_os_rng(),
            seed => StdRng::seed_from_u64(seed),
        };
        Self {
            policy: policy.clone(),
            state: Mutex::new(State {
                tenants: Lru::new(budget),
                rng,
            }),
            store,
        }
    }

    /// Where a tenant's proposed update goes; fails only when its rates cannot be read.
    pub async fn route(&self, tenant: &str, proposal: &Proposal) -> Result<Route, StoreError> {
        let mut state = self.state.lock().await;
        let State { tenants, rng } = &mut *state;
        let supervisor = self.supervisor(tenants, tenant).await?;
        Ok(supervisor.route(&self.policy, proposal, rng))
    }

    /// Learns from a reviewer of `tenant` and persists the tenant's new rate; returns it.
    pub async fn learn(
        &self,
        tenant: &str,
        category: &Category,
        verdict: Verdict,
    ) -> Result<f64, StoreError> {
        let rate = {
            let mut state = self.state.lock().await;
            let supervisor = self.supervisor(&mut state.tenants, tenant).await?;
            supervisor.learn(&self.policy, category, verdict);
            supervisor.rate(&self.policy, category)
        };
        let record = RateRecord {
            tenant: tenant.to_owned(),
            signal_type: category.signal_type.clone(),
            source: category.source.clone(),
            domain: category.domain.clone(),
            rate,
            approvals: 0,
            rejections: 0,
        };
        self.store
            .save_rate(&record, verdict == Verdict::Approved, Utc::now())
            .await?;
        Ok(rate)
    }

    /// The tenant's supervisor, its stored rates read when this process holds none.
    async fn supervisor<'a>(
        &self,
        tenants: &'a mut Lru<Supervisor>,
        tenant: &str,
    ) -> Result<&'a mut Supervisor, StoreError> {
        if tenants.peek(tenant).is_none() {
            let rates: BTreeMap<Category, f64> = self
                .store
                .supervisor_rates(tenant)
                .await?
                .into_iter()
                .map(|record| {
                    let (_, category, rate) = split(record);
                    (category, rate)
                })
                .collect();
            let bytes = rates.len() * RATE_BYTES;
            tenants.insert(tenant, Supervisor::with_rates(rates), bytes);
            crate::metrics::cache_entries("analyst_supervisors", tenants.len());
        }
        // Just loaded if it was not kept: the newest entry is never the one evicted.
        Ok(tenants.get_or_insert_with(tenant, || (Supervisor::default(), 0)))
    }
}

/// Estimated bytes one learned rate takes.
const RATE_BYTES: usize = 128;

/// A stored rate as its tenant, category and rate.
fn split(record: RateRecord) -> (String, Category, f64) {
    let category = Category {
        signal_type: record.signal_type,
        source: record.source,
        domain: record.domain,
    };
    (record.tenant, category, record.rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> CacheBudget {
        CacheBudget {
            max_entries: 1,
            max_bytes: 0,
        }
    }

    fn category() -> Category {
        Category {
            signal_type: "entity_missing".to_owned(),
            source: "crm".to_owned(),
            domain: "general".to_owned(),
        }
    }

    #[tokio::test]
    async fn one_tenants_reviewers_never_change_another_tenants_rate() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = ontoloop_settings::Loader::new()
            .env_vars([])
            .set(
                "store.url",
                format!("sqlite://{}/rates.db?mode=rwc", dir.path().display()),
            )
            .set("supervisor.seed", "7")
            .load()
            .expect("settings");
        let store = Store::open(&settings.store).await.expect("store");
        let policy = &settings.supervisor;
        let supervision = Supervision::new(store.clone(), policy, budget());
        let mut rate = 0.0;
        for _ in 0..3 {
            rate = supervision
                .learn("acme", &category(), Verdict::Rejected)
                .await
                .expect("learn");
        }
        assert!(rate > policy.base_rate, "acme's rate rose to {rate}");
        let globex = supervision
            .learn("globex", &category(), Verdict::Approved)
            .await
            .expect("learn");
        assert_eq!(
            globex,
            (policy.base_rate * policy.approve_factor).max(policy.min_rate),
            "globex starts from the base rate, not from acme's lessons"
        );
        // Under a budget of one tenant, globex evicted acme: acme's next lesson starts from the
        // rate the store kept, as if it had never left.
        let again = supervision
            .learn("acme", &category(), Verdict::Rejected)
            .await
            .expect("learn");
        assert_eq!(
            again,
            (rate * policy.reject_factor).clamp(policy.min_rate, policy.max_rate)
        );
        rate = again;

        // A new process reads each tenant's own rates back.
        let restarted = Supervision::new(store.clone(), policy, budget());
        let mut state = restarted.state.lock().await;
        let acme = restarted
            .supervisor(&mut state.tenants, "acme")
            .await
            .expect("read")
            .rate(policy, &category());
        assert_eq!(acme, rate);
        let initech = restarted
            .supervisor(&mut state.tenants, "initech")
            .await
            .expect("read")
            .rate(policy, &category());
        assert_eq!(initech, policy.base_rate, "a tenant without lessons");
    }
}
