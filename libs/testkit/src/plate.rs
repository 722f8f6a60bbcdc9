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
    ontoloop_settings::Loader::new()
        .env_vars([])
        .load()
        .expect("the default settings load")
        .plate
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
