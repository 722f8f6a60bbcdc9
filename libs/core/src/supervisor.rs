//! The statistical supervisor's decision rule: which proposed graph updates a human reviews.
//!
//! Always reviewed: updates whose confidence varies too much across sources, and updates in a
//! critical domain. Everything else is sampled at a per-category rate that starts at the base
//! rate and learns from reviewers: approvals lower it, rejections raise it, within bounds. The
//! random source is passed in, so a seeded generator makes the rule deterministic in tests.
//! A [`Supervisor`] is one tenant's state: lessons never cross tenants, so the analyst keeps one
//! per tenant. Persistence of queues, decisions and rates belongs to the store, not here.

use std::collections::BTreeMap;

use rand::Rng;
use serde::Deserialize;

use crate::settings::{InvalidSetting, share};

/// The domain of an ontology change (a proposed ontology, a relationship type discovered from
/// failed questions): always critical, whatever `critical_domains` lists, so a human reviews
/// every change of what the graph can state.
pub const ONTOLOGY_DOMAIN: &str = "ontology";

/// The `[supervisor]` settings: the supervisor's parameters and its generator's seed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisorPolicy {
    /// Share of ordinary updates sampled for review at first (default 5%).
    pub base_rate: f64,
    /// Updates whose confidence variance exceeds this are always reviewed.
    pub variance_threshold: f64,
    /// Domains whose updates are always reviewed.
    pub critical_domains: Vec<String>,
    /// The lowest sampling rate learning may reach.
    pub min_rate: f64,
    /// The highest sampling rate learning may reach.
    pub max_rate: f64,
    /// Factor applied to a category's rate on an approval (above 0, at most 1).
    pub approve_factor: f64,
    /// Factor applied to a category's rate on a rejection (at least 1).
    pub reject_factor: f64,
    /// Seed of the sampling generator (the same seed samples the same updates); 0: from the OS.
    pub seed: u64,
}

impl SupervisorPolicy {
    /// Checks rates and factors; the error names the key within `[supervisor]`.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        share("base_rate", self.base_rate)?;
        share("min_rate", self.min_rate)?;
        share("max_rate", self.max_rate)?;
        if self.min_rate > self.max_rate {
            return Err(InvalidSetting::new(
                "min_rate",
                "must not exceed supervisor.max_rate",
            ));
        }
        if !(self.approve_factor > 0.0 && self.approve_factor <= 1.0) {
            return Err(InvalidSetting::new(
                "approve_factor",
                "must be above 0 and at most 1",
            ));
        }
        if self.reject_factor < 1.0 {
            return Err(InvalidSetting::new("reject_factor", "must be at least 1"));
        }
        Ok(())
    }
}

/// What kind of update it is, for learning: signal type × source × domain.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Category {
    /// The signal type that led to it.
    pub signal_type: String,
    /// The source it rests on.
    pub source: String,
    /// Its domain.
    pub domain: String,
}

/// What the supervisor needs to know of a proposed update.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Its category.
    pub category: Category,
    /// Variance of the confidence across its sources.
    pub confidence_variance: f64,
    /// Recent queries it touches.
    pub impact_radius: u32,
}

/// Why an update goes to a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewReason {
    /// Its confidence varies too much.
    HighVariance,
    /// Its domain is critical.
    CriticalDomain,
    /// It was drawn in the random sample.
    Sampled,
}

/// Where an update goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route {
    /// To the review queue, with a priority (higher first).
    Review {
        /// Why.
        reason: ReviewReason,
        /// Priority from variance and impact radius.
        priority: f64,
    },
    /// Applied automatically (and logged).
    AutoApply,
}

/// A reviewer's verdict, as far as learning is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The update was right (approved, or modified only slightly).
    Approved,
    /// The update was wrong.
    Rejected,
}

/// One tenant's supervisor state: its learned sampling rates per category.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Supervisor {
    rates: BTreeMap<Category, f64>,
}

impl Supervisor {
    /// A supervisor that starts from stored rates.
    pub fn with_rates(rates: BTreeMap<Category, f64>) -> Self {
        Self { rates }
    }

    /// The learned rates (to persist).
    pub fn rates(&self) -> &BTreeMap<Category, f64> {
        &self.rates
    }

    /// The sampling rate of a category now.
    pub fn rate(&self, policy: &SupervisorPolicy, category: &Category) -> f64 {
        self.rates
            .get(category)
            .copied()
            .unwrap_or(policy.base_rate)
            .clamp(policy.min_rate, policy.max_rate)
    }

    /// Decides where an update goes.
    pub fn route(
        &self,
        policy: &SupervisorPolicy,
        proposal: &Proposal,
        rng: &mut impl Rng,
    ) -> Route {
        let priority = priority(proposal);
        if proposal.confidence_variance > policy.variance_threshold {
            return Route::Review {
                reason: ReviewReason::HighVariance,
                priority,
            };
        }
        if proposal.category.domain == ONTOLOGY_DOMAIN
            || policy
                .critical_domains
                .iter()
                .any(|d| d.eq_ignore_ascii_case(&proposal.category.domain))
        {
            return Route::Review {
                reason: ReviewReason::CriticalDomain,
                priority,
            };
        }
        if rng.random::<f64>() < self.rate(policy, &proposal.category) {
            return Route::Review {
                reason: ReviewReason::Sampled,
                priority,
            };
        }
        Route::AutoApply
    }

    /// Learns from a reviewer: approvals lower the category's rate, rejections raise it.
    pub fn learn(&mut self, policy: &SupervisorPolicy, category: &Category, verdict: Verdict) {
        let factor = match verdict {
            Verdict::Approved => policy.approve_factor,
            Verdict::Rejected => policy.reject_factor,
        };
        let rate = (self.rate(policy, category) * factor).clamp(policy.min_rate, policy.max_rate);
        self.rates.insert(category.clone(), rate);
    }
}

/// Review priority: variance first, then how many recent queries the update touches.
pub fn priority(proposal: &Proposal) -> f64 {
    proposal.confidence_variance * 10.0 + (1.0 + f64::from(proposal.impact_radius)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn policy() -> SupervisorPolicy {
        SupervisorPolicy {
            base_rate: 0.05,
            variance_threshold: 0.1,
            critical_domains: vec!["financial".into(), "legal".into(), "healthcare".into()],
            min_rate: 0.01,
            max_rate: 0.5,
            approve_factor: 0.95,
            reject_factor: 1.5,
            seed: 0,
        }
    }

    fn proposal(domain: &str, variance: f64) -> Proposal {
        Proposal {
            category: Category {
                signal_type: "entity_missing".into(),
                source: "projects".into(),
                domain: domain.into(),
            },
            confidence_variance: variance,
            impact_radius: 3,
        }
    }

    #[test]
    fn an_ontology_change_is_always_reviewed_whatever_the_settings_list() {
        let policy = SupervisorPolicy {
            critical_domains: Vec::new(),
            base_rate: 0.0,
            min_rate: 0.0,
            ..policy()
        };
        let mut rng = StdRng::seed_from_u64(7);
        let route = Supervisor::default().route(&policy, &proposal(ONTOLOGY_DOMAIN, 0.0), &mut rng);
        assert!(
            matches!(
                route,
                Route::Review {
                    reason: ReviewReason::CriticalDomain,
                    ..
                }
            ),
            "{route:?}"
        );
        assert_eq!(
            Supervisor::default().route(&policy, &proposal("general", 0.0), &mut rng),
            Route::AutoApply
        );
    }

    #[test]
    fn the_sampled_share_of_low_risk_updates_is_within_the_binomial_interval() {
        let (policy, supervisor) = (policy(), Supervisor::default());
        let mut rng = StdRng::seed_from_u64(7);
        let n = 10_000u32;
        let sampled = (0..n)
            .filter(|_| {
                matches!(
                    supervisor.route(&policy, &proposal("marketing", 0.01), &mut rng),
                    Route::Review { .. }
                )
            })
            .count() as f64;
        let (p, n) = (policy.base_rate, f64::from(n));
        let half_width = 2.576 * (n * p * (1.0 - p)).sqrt();
        assert!(
            (sampled - n * p).abs() <= half_width,
            "sampled {sampled} of {n}, expected {} ± {half_width:.0}",
            n * p
        );
    }

    #[test]
    fn high_variance_and_critical_domains_are_always_reviewed() {
        let (policy, supervisor) = (policy(), Supervisor::default());
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..1_000 {
            assert!(matches!(
                supervisor.route(&policy, &proposal("marketing", 0.5), &mut rng),
                Route::Review {
                    reason: ReviewReason::HighVariance,
                    ..
                }
            ));
            assert!(matches!(
                supervisor.route(&policy, &proposal("Financial", 0.0), &mut rng),
                Route::Review {
                    reason: ReviewReason::CriticalDomain,
                    ..
                }
            ));
        }
    }

    #[test]
    fn approvals_lower_the_rate_and_rejections_raise_it_within_bounds() {
        let (policy, mut supervisor) = (policy(), Supervisor::default());
        let category = proposal("marketing", 0.0).category;
        for _ in 0..50 {
            supervisor.learn(&policy, &category, Verdict::Approved);
        }
        let lowered = supervisor.rate(&policy, &category);
        assert!(
            lowered < policy.base_rate && lowered >= policy.min_rate,
            "{lowered}"
        );
        for _ in 0..5 {
            supervisor.learn(&policy, &category, Verdict::Rejected);
        }
        assert!(supervisor.rate(&policy, &category) > lowered);
        for _ in 0..50 {
            supervisor.learn(&policy, &category, Verdict::Rejected);
        }
        assert_eq!(supervisor.rate(&policy, &category), policy.max_rate);
        let other = proposal("sales", 0.0).category;
        assert_eq!(
            supervisor.rate(&policy, &other),
            policy.base_rate,
            "categories learn apart"
        );
    }

    #[test]
    fn priority_grows_with_variance_and_impact() {
        let low = proposal("x", 0.01);
        let high = Proposal {
            confidence_variance: 0.09,
            ..low.clone()
        };
        let wide = Proposal {
            impact_radius: 300,
            ..low.clone()
        };
        assert!(priority(&high) > priority(&low));
        assert!(priority(&wide) > priority(&low));
    }
}
