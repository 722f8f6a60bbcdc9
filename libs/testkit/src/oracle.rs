//! An independent, brute-force implementation of the plate semantics of [`ontoloop_org::filters`], for
//! tests and benchmarks only: it is far too slow to serve requests.
//!
//! It shares no code path with the real plate: no graphs, no item index, no dimension units, no
//! settings helpers. It scans the flat record, fact and item lists with plain loops, recomputing
//! reports, team, ownership and dependencies on every call. Only the score formula is the same
//! expression, because the semantics define it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use ontoloop_org::Caller;
use ontoloop_org::filters::{DimensionName, Plate, PlateItem, PlateSettings};
use ontoloop_org::hr::OrgRecords;
use ontoloop_org::items::{Severity, WorkItem};
use ontoloop_org::product::Fact;

/// The plate for `caller`, computed by scanning `org` and `facts` (the caller tenant's) and
/// every item of every tenant in `items`.
pub fn oracle_plate(
    caller: &Caller,
    now: DateTime<Utc>,
    limit: Option<usize>,
    org: &OrgRecords,
    facts: &[Fact],
    items: &[WorkItem],
    settings: &PlateSettings,
) -> Plate {
    let me = caller.principal();
    let mut person = None;
    let mut reports: Vec<&str> = Vec::new();
    for p in org.people() {
        if p.id == me {
            person = Some(p);
        }
        if p.manager.as_deref() == Some(me) {
            reports.push(&p.id);
        }
    }

    // The first `is_a` of a subject decides its kind; the first `owned_by` its owner.
    let mut kinds: BTreeMap<&str, &str> = BTreeMap::new();
    for fact in facts {
        if fact.predicate == "is_a"
            && matches!(fact.object.as_str(), "product" | "service" | "feature")
        {
            kinds.entry(&fact.subject).or_insert(&fact.object);
        }
    }
    let is_service = |id: &str| kinds.get(id) == Some(&"service");
    let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
    for fact in facts {
        if fact.predicate == "owned_by" && kinds.contains_key(fact.subject.as_str()) {
            owners.entry(&fact.subject).or_insert(&fact.object);
        }
    }
    let mut owned: Vec<&str> = Vec::new();
    if let Some(person) = person {
        for (&subject, &owner) in &owners {
            if owner == person.team && is_service(subject) {
                owned.push(subject);
            }
        }
    }
    let mut dependencies: Vec<&str> = Vec::new();
    for fact in facts {
        if fact.predicate == "depends_on"
            && owned.contains(&fact.subject.as_str())
            && is_service(&fact.subject)
            && is_service(&fact.object)
            && fact.subject != fact.object
        {
            dependencies.push(&fact.object);
        }
    }

    let role_scopes = person
        .and_then(|p| settings.scopes_by_role.get(&p.role.to_lowercase()))
        .unwrap_or(&settings.default_scopes);

    let mut counts = [0_usize; 7];
    let mut survivors: Vec<(&WorkItem, PlateItem)> = Vec::new();
    for item in items {
        if item.tenant != caller.tenant() {
            continue;
        }
        let assignee = item.assignee.as_deref();
        let service = item.service.as_deref();
        let in_reach = assignee == Some(me)
            || assignee.is_some_and(|a| reports.contains(&a))
            || service.is_some_and(|s| owned.contains(&s) || dependencies.contains(&s));
        if !in_reach {
            continue;
        }
        let mut readable = item.acl.is_empty();
        for entry in &item.acl {
            if entry == me || caller.groups().iter().any(|g| g == entry) {
                readable = true;
            }
        }
        if !readable {
            continue;
        }
        counts[0] += 1;
        if !role_scopes.contains(&item.scope) {
            continue;
        }
        counts[1] += 1;
        let severe_for_reports = settings.report_severities.contains(&item.severity);
        let severe_for_deps = settings.dependency_severities.contains(&item.severity);
        let by_hierarchy = assignee == Some(me)
            || (assignee.is_some_and(|a| reports.contains(&a)) && severe_for_reports);
        let by_ownership = service.is_some_and(|s| owned.contains(&s));
        let by_dependency = service.is_some_and(|s| dependencies.contains(&s)) && severe_for_deps;
        if by_hierarchy {
            counts[2] += 1;
        }
        if by_hierarchy || by_ownership {
            counts[3] += 1;
        }
        if !(by_hierarchy || by_ownership || by_dependency) {
            continue;
        }
        counts[4] += 1;
        counts[5] += 1;
        let authority = match settings.authority.get(item.source.as_str()) {
            Some(weight) => *weight,
            None => settings.unknown_source_authority,
        };
        if authority < settings.min_authority {
            continue;
        }
        counts[6] += 1;
        let mut age_ms = (now - item.created_at).num_milliseconds();
        if age_ms < 0 {
            age_ms = 0;
        }
        let temporal = (-(age_ms as f64) / (settings.temporal_scale_days * 86_400_000.0)).exp();
        let severity = severity_weight(settings, item.severity);
        let score = temporal * authority * severity;
        let mut reasons = Vec::new();
        if by_hierarchy {
            reasons.push(DimensionName::Hierarchy);
        }
        if by_ownership {
            reasons.push(DimensionName::Ownership);
        }
        if by_dependency {
            reasons.push(DimensionName::Dependency);
        }
        let entry = PlateItem {
            id: item.id.clone(),
            score,
            temporal_weight: temporal,
            authority_weight: authority,
            severity_weight: severity,
            admitted_by: reasons,
        };
        survivors.push((item, entry));
    }
    // Id order first, then a stable sort on the score, gives "score desc, then id asc".
    survivors.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    survivors.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
    let keep = limit.unwrap_or(settings.limit);
    let items = survivors
        .into_iter()
        .take(keep)
        .map(|(_, entry)| entry)
        .collect();
    let names = [
        DimensionName::Permission,
        DimensionName::Scope,
        DimensionName::Hierarchy,
        DimensionName::Ownership,
        DimensionName::Dependency,
        DimensionName::Temporal,
        DimensionName::Authority,
    ];
    Plate {
        items,
        counts: names.into_iter().zip(counts).collect(),
    }
}

fn severity_weight(settings: &PlateSettings, severity: Severity) -> f64 {
    for (listed, weight) in &settings.severity_weights {
        if *listed == severity {
            return *weight;
        }
    }
    1.0
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::generate::{World, WorldSpec, generate};
    use crate::plate::{Graphs, default_plate_settings, oracle_for, random_user};
    use ontoloop_org::filters::{PlateContext, PlateRequest, plate};
    use ontoloop_org::items::Scope;

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
