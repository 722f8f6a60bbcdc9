//! The statistical supervisor at work: the core's decision rule with each tenant's learned rates
//! loaded from the store, a seeded generator, and every lesson persisted as soon as it is learned.
//!
//! Rates are per tenant: what one tenant's reviewers approve or reject never changes how often
//! another tenant's updates are sampled. Every stored rate is read at start (a store that cannot
//! be read stops the analyst there); a tenant with none yet is read again on its first proposal
//! or decision, so rates another replica learned since are found.

use std::collections::{BTreeMap, HashMap};

use chrono::Utc;
use ontoloop_core::supervisor::{Category, Proposal, Route, Supervisor, SupervisorPolicy, Verdict};
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

/// Each tenant's supervisor (loaded on first use) and the one generator they draw from.
struct State {
    tenants: HashMap<String, Supervisor>,
    rng: StdRng,
}

impl Supervision {
    /// Loads every tenant's learned rates; seeds the generator from settings (0: from the OS).
    pub async fn load(store: Store, policy: &SupervisorPolicy) -> Result<Self, StoreError> {
        let mut rates: HashMap<String, BTreeMap<Category, f64>> = HashMap::new();
        for record in store.every_supervisor_rate().await? {
            let (tenant, category, rate) = split(record);
            rates.entry(tenant).or_default().insert(category, rate);
        }
        let rng = match policy.seed {
            0 => StdRng::from_os_rng(),
            seed => StdRng::seed_from_u64(seed),
        };
        Ok(Self {
            policy: policy.clone(),
            state: Mutex::new(State {
                tenants: rates
                    .into_iter()
                    .map(|(tenant, rates)| (tenant, Supervisor::with_rates(rates)))
                    .collect(),
                rng,
            }),
            store,
        })
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
        tenants: &'a mut HashMap<String, Supervisor>,
        tenant: &str,
    ) -> Result<&'a mut Supervisor, StoreError> {
        if !tenants.contains_key(tenant) {
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
            tenants.insert(tenant.to_owned(), Supervisor::with_rates(rates));
        }
        Ok(tenants.entry(tenant.to_owned()).or_default())
    }
}

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
        let supervision = Supervision::load(store.clone(), policy)
            .await
            .expect("load");
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

        // A new process reads each tenant's own rates back.
        let restarted = Supervision::load(store.clone(), policy)
            .await
            .expect("load");
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
