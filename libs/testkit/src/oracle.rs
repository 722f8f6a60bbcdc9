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
