//! The statistical supervisor at work: the core's decision rule with its learned rates loaded
//! from the store, a seeded generator, and every lesson persisted as soon as it is learned.

use std::collections::BTreeMap;

use chrono::Utc;
use ontoloop_core::supervisor::{Category, Proposal, Route, Supervisor, SupervisorPolicy, Verdict};
use ontoloop_store::{RateRecord, Store, StoreError};
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::Mutex;

/// The supervisor with its state.
pub struct Supervision {
    policy: SupervisorPolicy,
    state: Mutex<(Supervisor, StdRng)>,
    store: Store,
}

impl Supervision {
    /// Loads the learned rates; seeds the generator from settings (0: from the OS).
    pub async fn load(store: Store, policy: &SupervisorPolicy) -> Result<Self, StoreError> {
        let rates: BTreeMap<Category, f64> = store
            .supervisor_rates()
            .await?
            .into_iter()
            .map(|r| {
                (
                    Category {
                        signal_type: r.signal_type,
                        source: r.source,
                        domain: r.domain,
                    },
                    r.rate,
                )
            })
            .collect();
        let rng = match policy.seed {
            0 => StdRng::from_os_rng(),
            seed => StdRng::seed_from_u64(seed),
        };
        Ok(Self {
            policy: policy.clone(),
            state: Mutex::new((Supervisor::with_rates(rates), rng)),
            store,
        })
    }

    /// Where a proposed update goes.
    pub async fn route(&self, proposal: &Proposal) -> Route {
        let mut state = self.state.lock().await;
        let (supervisor, rng) = &mut *state;
        supervisor.route(&self.policy, proposal, rng)
    }

    /// Learns from a reviewer's verdict and persists the new rate; returns it.
    pub async fn learn(&self, category: &Category, verdict: Verdict) -> Result<f64, StoreError> {
        let rate = {
            let mut state = self.state.lock().await;
            state.0.learn(&self.policy, category, verdict);
            state.0.rate(&self.policy, category)
        };
        let record = RateRecord {
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
}
