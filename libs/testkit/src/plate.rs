//! The plate-vs-oracle harness that the plate system test, `ontoloop bench plate` and the
//! `plate_bench` example share: a generated world's graphs, random callers of a tenant, the
//! oracle's plate for one of them, and the check that a plate from the wire is exactly the
//! oracle's.

use chrono::{DateTime, Utc};
use ontoloop_org::Caller;
use ontoloop_org::filters::{Plate, PlateSettings};
use ontoloop_org::hr::OrgRecords;
use ontoloop_org::items::ItemIndex;
use ontoloop_org::org::OrgGraph;
use ontoloop_org::product::ProductGraph;
use ontoloop_proto::v1;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng as _};

use crate::generate::{TenantWorld, World};
use crate::oracle::oracle_plate;

/// The `[plate]` section of the embedded default settings.
pub fn default_plate_settings() -> PlateSettings {
    ontoloop_settings::Settings::defaults().plate
}

/// The graphs of a generated world: one org and one product graph per tenant (in the world's
/// tenant order) and one item index over every item.
pub struct Graphs {
    /// Org graph of each tenant.
    pub orgs: Vec<OrgGraph>,
    /// Product graph of each tenant (facts a graph rejects are left out).
    pub products: Vec<ProductGraph>,
    /// Every item of the world.
    pub index: ItemIndex,
}

impl Graphs {
    /// Builds them; generated item ids are unique, so the index always builds.
    pub fn build(world: &World) -> Self {
        Self {
            orgs: world
                .tenants
                .iter()
                .map(|t| OrgGraph::build(&t.org))
                .collect(),
            products: world
                .tenants
                .iter()
                .map(|t| ProductGraph::build(&t.facts).0)
                .collect(),
            index: ItemIndex::build(world.items.clone()).expect("generated ids are unique"),
        }
    }
}

/// A random user of a tenant: mostly people of `org`, sometimes an outsider who only has items
/// assigned (`ext-N`).
pub fn random_user(rng: &mut StdRng, tenant: &str, org: &OrgRecords) -> Caller {
    let people: Vec<&str> = org.people().map(|p| p.id.as_str()).collect();
    let principal = if rng.random_bool(0.1) {
        format!("ext-{}", rng.random_range(0..20))
    } else {
        people
            .choose(rng)
            .map(|p| (*p).to_owned())
            .unwrap_or_default()
    };
    Caller::new(tenant, &principal).expect("non-blank caller")
}

/// `count` random users of a tenant drawn from a generator seeded with `seed`.
pub fn random_users(count: usize, seed: u64, tenant: &TenantWorld) -> Vec<Caller> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| random_user(&mut rng, &tenant.tenant, &tenant.org))
        .collect()
}

/// The oracle's plate of `caller`, a user of `tenant` (one of `world`'s), at the world's `now`.
pub fn oracle_for(
    world: &World,
    tenant: &TenantWorld,
    caller: &Caller,
    limit: Option<usize>,
    settings: &PlateSettings,
) -> Plate {
    oracle_plate(
        caller,
        world.now,
        limit,
        &tenant.org,
        &tenant.facts,
        &world.items,
        settings,
    )
}

/// The `Plate` request of `caller` as of `now` (`limit` 0: the configured default).
pub fn plate_request(caller: &Caller, now: DateTime<Utc>, limit: u32) -> v1::PlateRequest {
    v1::PlateRequest {
        caller: Some(v1::Caller {
            tenant: caller.tenant().to_owned(),
            principal: caller.principal().to_owned(),
        }),
        limit,
        as_of: Some(ontoloop_proto::convert::timestamp(now)),
    }
}

/// Whether a plate from the wire is exactly the oracle's: the same items in the same order with
/// the same scores, weights and admission reasons, and the same count after every dimension.
/// The error names the first difference.
pub fn matches_oracle(got: &v1::PlateResponse, want: &Plate) -> Result<(), String> {
    let counts: Vec<(&str, u64)> = got
        .dimensions
        .iter()
        .map(|d| (d.name.as_str(), d.candidates_after))
        .collect();
    let expected: Vec<(&str, u64)> = want
        .counts
        .iter()
        .map(|(d, n)| (d.as_str(), *n as u64))
        .collect();
    if counts != expected {
        return Err(format!("counts {counts:?}, oracle {expected:?}"));
    }
    if got.items.len() != want.items.len() {
        return Err(format!(
            "{} items, oracle {}",
            got.items.len(),
            want.items.len()
        ));
    }
    for (rank, (item, oracle)) in got.items.iter().zip(&want.items).enumerate() {
        let weight = |name: &str| item.weights.get(name).copied();
        let reasons: Vec<&str> = oracle.admitted_by.iter().map(|d| d.as_str()).collect();
        let same = item.item_id == oracle.id
            && item.score.to_bits() == oracle.score.to_bits()
            && weight("temporal") == Some(oracle.temporal_weight)
            && weight("authority") == Some(oracle.authority_weight)
            && weight("severity") == Some(oracle.severity_weight)
            && item.admitted_by == reasons;
        if !same {
            return Err(format!(
                "rank {rank}: {} (score {}, {:?}), oracle {} (score {}, {reasons:?})",
                item.item_id, item.score, item.admitted_by, oracle.id, oracle.score
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use ontoloop_org::filters::{DimensionName, PlateContext, PlateRequest, plate};
    use ontoloop_org::items::{Scope, Severity, WorkItem};

    use super::*;
    use crate::generate::{WorldSpec, generate};

    struct Built {
        world: World,
        graphs: Graphs,
    }

    fn build(spec: &WorldSpec) -> Built {
        let world = generate(spec);
        let graphs = Graphs::build(&world);
        Built { world, graphs }
    }

    fn unit_spec() -> WorldSpec {
        WorldSpec {
            seed: 11,
            tenants: 3,
            people: 2_000,
            services: 150,
            items: 20_000,
            ..WorldSpec::default()
        }
    }

    /// A random user of tenant `t`, sometimes in a group.
    fn random_caller(rng: &mut StdRng, built: &Built, t: usize) -> Caller {
        let tenant = &built.world.tenants[t];
        let caller = random_user(rng, &tenant.tenant, &tenant.org);
        if rng.random_bool(0.2) {
            caller.with_groups(["group:oncall".to_owned()])
        } else {
            caller
        }
    }

    fn lax_settings() -> PlateSettings {
        PlateSettings {
            default_scopes: Scope::ALL.into_iter().collect(),
            scopes_by_role: Default::default(),
            report_severities: Severity::ALL.into_iter().collect(),
            dependency_severities: BTreeSet::from([Severity::Critical]),
            min_authority: 0.0,
            temporal_scale_days: 7.0,
            ..default_plate_settings()
        }
    }

    #[test]
    fn plate_equals_oracle_for_random_callers() {
        let built = build(&unit_spec());
        let mut rng = StdRng::seed_from_u64(99);
        let defaults = default_plate_settings();
        let lax = lax_settings();
        let mut reasons_seen = BTreeSet::new();
        let (mut nonempty, mut outsiders) = (0, 0);
        for round in 0..200 {
            let t = rng.random_range(0..built.world.tenants.len());
            let caller = random_caller(&mut rng, &built, t);
            let settings = if round % 3 == 0 { &lax } else { &defaults };
            let limit = match round % 4 {
                0 => Some(usize::MAX),
                1 => Some(5),
                _ => None,
            };
            let request = PlateRequest {
                caller: caller.clone(),
                now: built.world.now,
                limit,
            };
            let got = plate(
                &request,
                &built.graphs.orgs[t],
                &built.graphs.products[t],
                &built.graphs.index,
                settings,
            );
            let want = oracle_for(
                &built.world,
                &built.world.tenants[t],
                &caller,
                limit,
                settings,
            );
            assert_eq!(got, want, "round {round}: caller {caller:?}");
            if !got.items.is_empty() {
                nonempty += 1;
            }
            if !built.graphs.orgs[t].contains_person(caller.principal()) {
                outsiders += 1;
            }
            for item in &got.items {
                reasons_seen.extend(item.admitted_by.iter().copied());
            }
            let counts: Vec<usize> = got.counts.iter().map(|(_, n)| *n).collect();
            for pair in counts.windows(2).take(2) {
                assert!(
                    pair[1] <= pair[0],
                    "permission and scope only drop: {counts:?}"
                );
            }
            assert!(
                counts[2] <= counts[3] && counts[3] <= counts[4],
                "cumulative: {counts:?}"
            );
            assert!(counts[4] <= counts[1] && counts[5] == counts[4] && counts[6] <= counts[5]);
        }
        assert!(nonempty > 150, "only {nonempty} plates had items");
        assert!(outsiders > 5, "only {outsiders} outsiders");
        assert_eq!(
            reasons_seen,
            BTreeSet::from([
                DimensionName::Hierarchy,
                DimensionName::Ownership,
                DimensionName::Dependency
            ])
        );
    }

    /// Probes callers against tenants they do and do not belong to, with graphs that do and do
    /// not match the tenant: nothing outside the caller's tenant or ACL ever shows up, and the
    /// probes do reach restricted items of reports and dependencies that must be withheld.
    #[test]
    fn plates_never_leak_across_tenants_or_acls() {
        let built = build(&WorldSpec {
            seed: 5,
            people: 900,
            items: 9_000,
            ..unit_spec()
        });
        let by_id: HashMap<&str, &WorkItem> = built
            .world
            .items
            .iter()
            .map(|i| (i.id.as_str(), i))
            .collect();
        let settings = lax_settings();
        let tenants = built.world.tenants.len();
        let mut rng = StdRng::seed_from_u64(3);
        let (mut shown, mut withheld) = (0, 0);
        for _ in 0..400 {
            let home = rng.random_range(0..tenants);
            let probed = rng.random_range(0..tenants);
            let graphs = rng.random_range(0..tenants);
            let principal = random_caller(&mut rng, &built, home).principal().to_owned();
            let caller = Caller::new(&built.world.tenants[probed].tenant, &principal)
                .expect("non-blank caller");
            let request = PlateRequest {
                caller: caller.clone(),
                now: built.world.now,
                limit: Some(usize::MAX),
            };
            let got = plate(
                &request,
                &built.graphs.orgs[graphs],
                &built.graphs.products[graphs],
                &built.graphs.index,
                &settings,
            );
            for entry in &got.items {
                let item = by_id.get(entry.id.as_str()).expect("plate ids exist");
                assert_eq!(item.tenant, caller.tenant(), "cross-tenant leak");
                assert!(
                    item.acl.is_empty() || item.acl.iter().any(|a| a == caller.principal()),
                    "acl leak: {item:?} shown to {caller:?}"
                );
                shown += 1;
            }
            let context = PlateContext::new(
                &caller,
                &settings,
                built.world.now,
                &built.graphs.orgs[graphs],
                &built.graphs.products[graphs],
            );
            if let Some(partition) = built.graphs.index.tenant(caller.tenant()) {
                for position in context.reach(partition) {
                    let Some(item) = partition.at(position) else {
                        continue;
                    };
                    let others = item.assignee.as_deref() != Some(caller.principal());
                    if others && !item.readable_by(&caller) {
                        assert!(!got.items.iter().any(|p| p.id == item.id));
                        withheld += 1;
                    }
                }
            }
        }
        assert!(shown > 10_000, "only {shown} items shown");
        assert!(
            withheld > 100,
            "only {withheld} restricted items were in reach"
        );
    }
}
