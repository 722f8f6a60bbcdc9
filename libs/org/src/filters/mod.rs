//! Dimensional filters and the plate they produce: the work items a caller should see, ranked.
//!
//! # Plate semantics
//!
//! Inputs: a caller `(tenant, principal, groups)`, the tenant's [`OrgGraph`] and [`ProductGraph`],
//! the [`ItemIndex`], [`PlateSettings`] and `now`. Let *me* be the person whose id is the
//! principal, *reports* my direct reports, *owned* the services whose owner is my team, and
//! *dependencies* the services that an owned service depends on directly (`depends_on`, one hop;
//! a service may be both owned and a dependency).
//!
//! 1. **Reach.** The items of the caller's tenant that are assigned to me or to one of my
//!    reports, or filed against an owned or dependency service. Items of other tenants are never
//!    looked at. A principal that is not in the organisation graph has no reports, team, owned
//!    services or dependencies, so its reach is the items assigned to it.
//! 2. **Permission** (drops; always first, cannot be configured away): keep the items the caller
//!    may read ([`crate::items::WorkItem::readable_by`]: same tenant and an empty ACL or one
//!    naming the principal or one of its groups).
//! 3. **Scope** (drops): keep items whose scope is in view for my role: the role is lowercased and
//!    looked up in [`PlateSettings::scopes_by_role`]; roles not listed, and callers not in the
//!    organisation graph, get [`PlateSettings::default_scopes`].
//! 4. **Admission** (the union of three reasons; items with no reason are dropped after the
//!    third):
//!    - **Hierarchy**: assigned to me, or assigned to one of my reports with a severity in
//!      [`PlateSettings::report_severities`] (default critical and high);
//!    - **Ownership**: filed against an owned service;
//!    - **Dependency**: filed against a dependency service with a severity in
//!      [`PlateSettings::dependency_severities`] (default critical and high).
//! 5. **Temporal** (weighs): `temporal_weight = exp(-age / scale)` with the age in milliseconds,
//!    clamped at zero for items dated in the future, and `scale = temporal_scale_days` days.
//! 6. **Authority** (weighs, then drops): `authority_weight` is the source's entry in
//!    [`PlateSettings::authority`] (keyed by [`crate::items::Source::as_str`]), or
//!    [`PlateSettings::unknown_source_authority`] for unlisted sources; items with
//!    `authority_weight < min_authority` are dropped.
//! 7. **Score and order.** `score = temporal_weight * authority_weight * severity_weight`
//!    (multiplied in that order; `severity_weight` from [`PlateSettings::severity_weights`],
//!    1.0 when unlisted). Items are sorted by score descending (IEEE total order), then by id
//!    ascending, and the first `limit` are kept (`PlateRequest::limit`, else
//!    [`PlateSettings::limit`]).
//!
//! `Plate::counts` holds, in this order, the number of items left after Permission, Scope,
//! Hierarchy, Ownership, Dependency, Temporal and Authority. For the three admission
//! dimensions the count is cumulative: items admitted by that dimension or an earlier one
//! (so the Dependency count is the size of the union). Counts are taken before the limit.
//! `PlateItem::admitted_by` lists the admission reasons of an item in the same order.

mod dimensions;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::caller::Caller;
use crate::error::OrgError;
use crate::items::{ItemIndex, Scope, Severity, TenantItems};
use crate::org::OrgGraph;
use crate::product::ProductGraph;

pub use dimensions::{
    ByAge, ByAuthority, ByDependency, ByHierarchy, ByOwnership, ByPermission, ByScope, Candidate,
    DIMENSIONS, Dimension, temporal_weight,
};

/// The dimensions, named as in plate counts and admission reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DimensionName {
    /// Tenant and ACL.
    Permission,
    /// Identity and scope: which scopes my role sees.
    Scope,
    /// Organisational hierarchy: mine, and my reports' severe items.
    Hierarchy,
    /// Service ownership: items on services my team owns.
    Ownership,
    /// Dependencies: severe items on services my team's services depend on.
    Dependency,
    /// Temporal weight: newer items weigh more.
    Temporal,
    /// Authority: weight by source, drop weak sources.
    Authority,
}

impl DimensionName {
    /// Every dimension in the order the plate applies them.
    pub const ORDER: [DimensionName; 7] = [
        DimensionName::Permission,
        DimensionName::Scope,
        DimensionName::Hierarchy,
        DimensionName::Ownership,
        DimensionName::Dependency,
        DimensionName::Temporal,
        DimensionName::Authority,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DimensionName::Permission => "permission",
            DimensionName::Scope => "scope",
            DimensionName::Hierarchy => "hierarchy",
            DimensionName::Ownership => "ownership",
            DimensionName::Dependency => "dependency",
            DimensionName::Temporal => "temporal",
            DimensionName::Authority => "authority",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The `[plate]` settings: every parameter of the plate. The permission dimension has none: it
/// cannot be relaxed. The defaults are written once, in `ontoloop-settings`' `defaults.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlateSettings {
    /// Lowercase role name to the scopes that role sees.
    pub scopes_by_role: BTreeMap<String, BTreeSet<Scope>>,
    /// Scopes for roles not in `scopes_by_role` and for callers outside the organisation.
    pub default_scopes: BTreeSet<Scope>,
    /// Severities of my reports' items that the hierarchy dimension admits.
    pub report_severities: BTreeSet<Severity>,
    /// Severities of dependency-service items that the dependency dimension admits.
    pub dependency_severities: BTreeSet<Severity>,
    /// Scale of the exponential age decay, in days (positive).
    pub temporal_scale_days: f64,
    /// Source name to authority weight.
    pub authority: BTreeMap<String, f64>,
    /// Authority weight of sources not in `authority`.
    pub unknown_source_authority: f64,
    /// Items whose authority weight is below this are dropped.
    pub min_authority: f64,
    /// Severity to score factor; unlisted severities weigh 1.0.
    pub severity_weights: BTreeMap<Severity, f64>,
    /// Items on a plate when the request sets no limit (positive).
    pub limit: usize,
}

impl PlateSettings {
    /// Checks ranges: lowercase role names, a positive finite scale, a finite minimum, finite
    /// non-negative weights and a positive limit. The error names the key within `[plate]`.
    pub fn validate(&self) -> Result<(), OrgError> {
        let invalid = |name, reason: String| Err(OrgError::InvalidSetting { name, reason });
        if let Some(role) = self.scopes_by_role.keys().find(|r| r.to_lowercase() != **r) {
            return invalid("scopes_by_role", format!("role {role:?} must be lowercase"));
        }
        if !(self.temporal_scale_days.is_finite() && self.temporal_scale_days > 0.0) {
            return invalid("temporal_scale_days", "must be a positive number".into());
        }
        if !self.min_authority.is_finite() {
            return invalid("min_authority", "must be a finite number".into());
        }
        let weight_ok = |w: f64| w.is_finite() && w >= 0.0;
        if let Some((source, _)) = self.authority.iter().find(|(_, w)| !weight_ok(**w)) {
            return invalid(
                "authority",
                format!("weight of {source:?} must be finite and at least 0"),
            );
        }
        if !weight_ok(self.unknown_source_authority) {
            return invalid(
                "unknown_source_authority",
                "must be finite and at least 0".into(),
            );
        }
        if let Some((severity, _)) = self.severity_weights.iter().find(|(_, w)| !weight_ok(**w)) {
            return invalid(
                "severity_weights",
                format!(
                    "weight of {:?} must be finite and at least 0",
                    severity.name()
                ),
            );
        }
        if self.limit == 0 {
            return invalid("limit", "must be greater than zero".into());
        }
        Ok(())
    }

    /// Scopes in view for a role (`None`: caller outside the organisation).
    pub fn scopes_for(&self, role: Option<&str>) -> &BTreeSet<Scope> {
        role.and_then(|r| self.scopes_by_role.get(&r.to_lowercase()))
            .unwrap_or(&self.default_scopes)
    }

    /// Authority weight of a source name.
    pub fn authority_of(&self, source: &str) -> f64 {
        self.authority
            .get(source)
            .copied()
            .unwrap_or(self.unknown_source_authority)
    }

    /// Score factor of a severity.
    pub fn severity_weight(&self, severity: Severity) -> f64 {
        self.severity_weights.get(&severity).copied().unwrap_or(1.0)
    }
}

/// One plate request.
#[derive(Debug, Clone, PartialEq)]
pub struct PlateRequest {
    /// Who asks.
    pub caller: Caller,
    /// The time ages are measured against.
    pub now: DateTime<Utc>,
    /// Most items to return; `None` uses [`PlateSettings::limit`].
    pub limit: Option<usize>,
}

/// The ranked items for one caller and how many survived each dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plate {
    /// Items, best first.
    pub items: Vec<PlateItem>,
    /// Items left after each dimension, in [`DimensionName::ORDER`] (module docs).
    pub counts: Vec<(DimensionName, usize)>,
}

/// One item on a plate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlateItem {
    /// Work item id (within the caller's tenant).
    pub id: String,
    /// `temporal_weight * authority_weight * severity_weight`.
    pub score: f64,
    /// `exp(-age / scale)`.
    pub temporal_weight: f64,
    /// Weight of the item's source.
    pub authority_weight: f64,
    /// Weight of the item's severity.
    pub severity_weight: f64,
    /// Admission reasons, in dimension order.
    pub admitted_by: Vec<DimensionName>,
}

/// What the dimensions know about the caller, resolved once per request from the graphs.
#[derive(Debug, Clone)]
pub struct PlateContext<'a> {
    /// Who asks.
    pub caller: &'a Caller,
    /// Parameters.
    pub settings: &'a PlateSettings,
    /// The time ages are measured against.
    pub now: DateTime<Utc>,
    /// Scopes in view for the caller's role.
    pub scopes: &'a BTreeSet<Scope>,
    /// Ids of the caller's direct reports.
    pub reports: HashSet<&'a str>,
    /// Ids of the services the caller's team owns.
    pub owned: HashSet<&'a str>,
    /// Ids of the services an owned service depends on directly.
    pub dependencies: HashSet<&'a str>,
}

impl<'a> PlateContext<'a> {
    /// Resolves the caller in the graphs.
    pub fn new(
        caller: &'a Caller,
        settings: &'a PlateSettings,
        now: DateTime<Utc>,
        org: &'a OrgGraph,
        product: &'a ProductGraph,
    ) -> PlateContext<'a> {
        let me = caller.principal();
        let owned: HashSet<&str> = org
            .team_of(me)
            .map(|team| product.services_owned_by(team))
            .unwrap_or_default()
            .into_iter()
            .collect();
        let dependencies = owned
            .iter()
            .flat_map(|service| product.dependencies_of(service))
            .collect();
        PlateContext {
            caller,
            settings,
            now,
            scopes: settings.scopes_for(org.role_of(me)),
            reports: org.direct_reports(me).into_iter().collect(),
            owned,
            dependencies,
        }
    }

    /// Positions of the items in reach (module docs, step 1), sorted and without repeats.
    pub fn reach(&self, items: &TenantItems) -> Vec<u32> {
        let mut positions: Vec<u32> = items.assigned_to(self.caller.principal()).to_vec();
        for report in &self.reports {
            positions.extend_from_slice(items.assigned_to(report));
        }
        for service in self.owned.iter().chain(&self.dependencies) {
            positions.extend_from_slice(items.on_service(service));
        }
        positions.sort_unstable();
        positions.dedup();
        positions
    }
}

/// Builds the caller's plate (module docs). `org` and `product` must be the caller tenant's
/// graphs; whatever they are, only items of the caller's tenant that the caller may read can
/// appear.
pub fn plate(
    request: &PlateRequest,
    org: &OrgGraph,
    product: &ProductGraph,
    items: &ItemIndex,
    settings: &PlateSettings,
) -> Plate {
    let context = PlateContext::new(&request.caller, settings, request.now, org, product);
    let mut candidates: Vec<Candidate<'_>> = match items.tenant(request.caller.tenant()) {
        Some(tenant) => context
            .reach(tenant)
            .into_iter()
            .filter_map(|position| tenant.at(position))
            .map(Candidate::new)
            .collect(),
        None => Vec::new(),
    };
    let mut counts = Vec::with_capacity(DIMENSIONS.len());
    for (i, dimension) in DIMENSIONS.iter().enumerate() {
        dimension.apply(&context, &mut candidates);
        let count = if dimension.admits() {
            candidates.iter().filter(|c| c.is_admitted()).count()
        } else {
            candidates.len()
        };
        counts.push((dimension.name(), count));
        let admission_ends =
            dimension.admits() && !DIMENSIONS.get(i + 1).is_some_and(|d| d.admits());
        if admission_ends {
            candidates.retain(Candidate::is_admitted);
        }
    }
    let mut scored: Vec<(f64, f64, &Candidate<'_>)> = candidates
        .iter()
        .map(|c| {
            let severity_weight = settings.severity_weight(c.item.severity);
            let score = c.temporal_weight * c.authority_weight * severity_weight;
            (score, severity_weight, c)
        })
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.2.item.id.cmp(&b.2.item.id))
    });
    scored.truncate(request.limit.unwrap_or(settings.limit));
    let ranked = scored
        .into_iter()
        .map(|(score, severity_weight, c)| PlateItem {
            id: c.item.id.clone(),
            score,
            temporal_weight: c.temporal_weight,
            authority_weight: c.authority_weight,
            severity_weight,
            admitted_by: c.admitted_by(),
        })
        .collect();
    Plate {
        items: ranked,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;
    use crate::hr::{OrgRecords, Person, Team};
    use crate::items::{Source, WorkItem};
    use crate::product::Fact;

    /// The `[plate]` section of the embedded defaults, read the way `ontoloop-settings` reads it
    /// (the defaults are written only there).
    fn defaults() -> PlateSettings {
        let settings: PlateSettings = crate::embedded_default("plate");
        settings
            .validate()
            .expect("the default [plate] section is valid");
        settings
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
            .single()
            .expect("valid date")
    }

    struct Fixture {
        org: OrgGraph,
        product: ProductGraph,
        index: ItemIndex,
    }

    /// `boss` leads team `core` with reports `r1` (engineer) and `r2`; `core` owns `svc-a`,
    /// which depends on `svc-b`; `svc-c` belongs to nobody relevant.
    fn fixture(items: Vec<WorkItem>) -> Fixture {
        let person = |id: &str, role: &str, manager: Option<&str>| Person {
            id: id.into(),
            name: id.to_uppercase(),
            team: "core".into(),
            role: role.into(),
            manager: manager.map(Into::into),
        };
        let records = OrgRecords::new(
            [
                person("boss", "Manager", None),
                person("r1", "engineer", Some("boss")),
                person("r2", "engineer", Some("boss")),
                person("r1-report", "engineer", Some("r1")),
            ],
            [Team {
                id: "core".into(),
                name: "Core".into(),
                parent: None,
            }],
        )
        .expect("valid records");
        let facts = Fact::all([
            ("svc-a", "is_a", "service"),
            ("svc-b", "is_a", "service"),
            ("svc-c", "is_a", "service"),
            ("svc-a", "owned_by", "core"),
            ("svc-c", "owned_by", "other"),
            ("svc-a", "depends_on", "svc-b"),
            ("svc-b", "depends_on", "svc-c"),
        ]);
        Fixture {
            org: OrgGraph::build(&records),
            product: ProductGraph::build(&facts).0,
            index: ItemIndex::build(items).expect("unique ids"),
        }
    }

    struct Spec<'a> {
        id: &'a str,
        assignee: Option<&'a str>,
        service: Option<&'a str>,
        severity: Severity,
        scope: Scope,
        source: &'a str,
        age_days: i64,
    }

    fn item(spec: Spec<'_>) -> WorkItem {
        WorkItem {
            id: spec.id.into(),
            tenant: "acme".into(),
            title: spec.id.into(),
            assignee: spec.assignee.map(Into::into),
            service: spec.service.map(Into::into),
            severity: spec.severity,
            scope: spec.scope,
            source: Source::from(spec.source),
            created_at: now() - Duration::days(spec.age_days),
            acl: Vec::new(),
        }
    }

    fn base(id: &str) -> Spec<'_> {
        Spec {
            id,
            assignee: None,
            service: None,
            severity: Severity::Medium,
            scope: Scope::Bugs,
            source: "jira",
            age_days: 1,
        }
    }

    fn request(principal: &str) -> PlateRequest {
        PlateRequest {
            caller: Caller::new("acme", principal).expect("valid caller"),
            now: now(),
            limit: None,
        }
    }

    fn scenario() -> Vec<WorkItem> {
        let mut restricted = item(Spec {
            service: Some("svc-a"),
            ..base("restricted-owned")
        });
        restricted.acl = vec!["r1".into()];
        let mut foreign = item(Spec {
            assignee: Some("boss"),
            ..base("foreign-mine")
        });
        foreign.tenant = "globex".into();
        vec![
            item(Spec {
                assignee: Some("boss"),
                severity: Severity::Low,
                ..base("mine-low")
            }),
            item(Spec {
                assignee: Some("r1"),
                severity: Severity::Critical,
                ..base("report-critical")
            }),
            item(Spec {
                assignee: Some("r1"),
                severity: Severity::Low,
                ..base("report-low")
            }),
            item(Spec {
                assignee: Some("r1-report"),
                severity: Severity::Critical,
                ..base("skip-level-critical")
            }),
            item(Spec {
                service: Some("svc-a"),
                severity: Severity::Low,
                ..base("owned-low")
            }),
            item(Spec {
                service: Some("svc-b"),
                severity: Severity::High,
                ..base("dependency-high")
            }),
            item(Spec {
                service: Some("svc-b"),
                ..base("dependency-medium")
            }),
            item(Spec {
                service: Some("svc-c"),
                severity: Severity::Critical,
                ..base("transitive-critical")
            }),
            item(Spec {
                assignee: Some("r2"),
                service: Some("svc-b"),
                severity: Severity::High,
                ..base("report-and-dependency")
            }),
            item(Spec {
                assignee: Some("boss"),
                source: "slack",
                ..base("mine-slack")
            }),
            item(Spec {
                assignee: Some("boss"),
                scope: Scope::Code,
                ..base("mine-code")
            }),
            restricted,
            foreign,
        ]
    }

    fn ids(plate: &Plate) -> Vec<&str> {
        plate.items.iter().map(|i| i.id.as_str()).collect()
    }

    #[test]
    fn manager_plate_admits_by_hierarchy_ownership_and_dependency() {
        let f = fixture(scenario());
        let settings = defaults();
        let got = plate(&request("boss"), &f.org, &f.product, &f.index, &settings);
        // Reach: 10 acme items (all but skip-level, transitive and the foreign one).
        // Permission drops restricted-owned; scope (manager: no code) drops mine-code;
        // admission drops report-low and dependency-medium; authority drops mine-slack.
        let counts: Vec<(DimensionName, usize)> = vec![
            (DimensionName::Permission, 9),
            (DimensionName::Scope, 8),
            (DimensionName::Hierarchy, 4),
            (DimensionName::Ownership, 5),
            (DimensionName::Dependency, 6),
            (DimensionName::Temporal, 6),
            (DimensionName::Authority, 5),
        ];
        assert_eq!(got.counts, counts);
        // Same age and source, so severity decides; ties fall back to the id.
        assert_eq!(
            ids(&got),
            vec![
                "report-critical",
                "dependency-high",
                "report-and-dependency",
                "mine-low",
                "owned-low",
            ]
        );
        let reasons: Vec<Vec<DimensionName>> =
            got.items.iter().map(|i| i.admitted_by.clone()).collect();
        use DimensionName::{Dependency, Hierarchy, Ownership};
        assert_eq!(
            reasons,
            vec![
                vec![Hierarchy],
                vec![Dependency],
                vec![Hierarchy, Dependency],
                vec![Hierarchy],
                vec![Ownership],
            ]
        );
        let top = &got.items[0];
        let expected_temporal = (-1.0_f64 / 30.0).exp();
        assert!((top.temporal_weight - expected_temporal).abs() < 1e-12);
        assert_eq!(top.authority_weight, 0.95);
        assert_eq!(top.severity_weight, 1.0);
        assert_eq!(top.score, top.temporal_weight * 0.95 * 1.0);
    }

    #[test]
    fn outsiders_see_only_their_own_readable_items() {
        let mut items = scenario();
        items.push(item(Spec {
            assignee: Some("contractor"),
            service: Some("svc-a"),
            ..base("contractor-bug")
        }));
        let mut hidden = item(Spec {
            assignee: Some("contractor"),
            ..base("contractor-hidden")
        });
        hidden.acl = vec!["boss".into()];
        items.push(hidden);
        items.push(item(Spec {
            assignee: Some("contractor"),
            scope: Scope::Production,
            ..base("contractor-production")
        }));
        let f = fixture(items);
        let got = plate(
            &request("contractor"),
            &f.org,
            &f.product,
            &f.index,
            &defaults(),
        );
        assert_eq!(
            ids(&got),
            vec!["contractor-bug"],
            "default scopes hide production"
        );
        assert_eq!(got.items[0].admitted_by, vec![DimensionName::Hierarchy]);
        assert_eq!(got.counts[0], (DimensionName::Permission, 2));
    }

    #[test]
    fn a_caller_of_another_tenant_sees_nothing_of_this_one() {
        let f = fixture(scenario());
        let mut request = request("boss");
        request.caller = Caller::new("globex", "boss").expect("valid caller");
        let got = plate(&request, &f.org, &f.product, &f.index, &defaults());
        assert_eq!(ids(&got), vec!["foreign-mine"]);
        let nobody = PlateRequest {
            caller: Caller::new("initech", "boss").expect("valid caller"),
            ..request
        };
        let empty = plate(&nobody, &f.org, &f.product, &f.index, &defaults());
        assert!(empty.items.is_empty());
        assert!(empty.counts.iter().all(|(_, n)| *n == 0));
        assert_eq!(
            empty.counts.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
            DimensionName::ORDER
        );
    }

    #[test]
    fn settings_change_admission_weights_and_limit() {
        let f = fixture(scenario());
        let settings = PlateSettings {
            report_severities: Severity::ALL.into_iter().collect(),
            dependency_severities: BTreeSet::new(),
            min_authority: 0.5,
            severity_weights: BTreeMap::new(),
            ..defaults()
        };
        let mut request = request("boss");
        let got = plate(&request, &f.org, &f.product, &f.index, &settings);
        assert_eq!(
            ids(&got),
            vec![
                "mine-low",
                "owned-low",
                "report-and-dependency",
                "report-critical",
                "report-low",
                "mine-slack",
            ],
            "equal jira scores tie-break on id; slack (0.6) now passes and ranks last"
        );
        assert!(got.items.iter().all(|i| i.severity_weight == 1.0));
        request.limit = Some(2);
        let limited = plate(&request, &f.org, &f.product, &f.index, &settings);
        assert_eq!(ids(&limited), vec!["mine-low", "owned-low"]);
        assert_eq!(
            limited.counts, got.counts,
            "counts are taken before the limit"
        );
    }

    #[test]
    fn newer_items_outrank_older_ones() {
        let items = vec![
            item(Spec {
                assignee: Some("boss"),
                age_days: 60,
                ..base("old")
            }),
            item(Spec {
                assignee: Some("boss"),
                age_days: 2,
                ..base("new")
            }),
            item(Spec {
                assignee: Some("boss"),
                age_days: -3,
                ..base("future")
            }),
        ];
        let f = fixture(items);
        let got = plate(&request("boss"), &f.org, &f.product, &f.index, &defaults());
        assert_eq!(ids(&got), vec!["future", "new", "old"]);
        assert_eq!(
            got.items[0].temporal_weight, 1.0,
            "future dates count as now"
        );
        let old = &got.items[2];
        assert!((old.temporal_weight - (-2.0_f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn each_dimension_is_a_separate_unit() {
        let items = scenario();
        let caller = Caller::new("acme", "boss").expect("valid caller");
        let settings = defaults();
        let f = fixture(Vec::new());
        let context = PlateContext::new(&caller, &settings, now(), &f.org, &f.product);
        assert_eq!(context.reports, HashSet::from(["r1", "r2"]));
        assert_eq!(context.owned, HashSet::from(["svc-a"]));
        assert_eq!(context.dependencies, HashSet::from(["svc-b"]));
        let run = |dimension: &dyn Dimension| {
            let mut candidates: Vec<Candidate<'_>> = items.iter().map(Candidate::new).collect();
            dimension.apply(&context, &mut candidates);
            candidates
        };
        let permitted = run(&ByPermission);
        assert_eq!(permitted.len(), items.len() - 2, "foreign tenant and ACL");
        let in_scope = run(&ByScope);
        assert!(in_scope.iter().all(|c| c.item.scope != Scope::Code));
        let admitted = |dimension: &dyn Dimension| -> Vec<String> {
            run(dimension)
                .iter()
                .filter(|c| c.is_admitted())
                .map(|c| c.item.id.clone())
                .collect()
        };
        assert_eq!(
            admitted(&ByHierarchy),
            vec![
                "mine-low",
                "report-critical",
                "report-and-dependency",
                "mine-slack",
                "mine-code",
                "foreign-mine"
            ],
            "the unit alone does not check tenants; the plate runs permission first"
        );
        assert_eq!(
            admitted(&ByOwnership),
            vec!["owned-low", "restricted-owned"]
        );
        assert_eq!(
            admitted(&ByDependency),
            vec!["dependency-high", "report-and-dependency"]
        );
        assert!(run(&ByAge).iter().all(|c| c.temporal_weight < 1.0));
        let authority = run(&ByAuthority);
        assert_eq!(
            authority.len(),
            items.len() - 1,
            "only the slack item is dropped"
        );
        assert!(ByHierarchy.admits() && !ByAuthority.admits() && !ByPermission.admits());
        let names: Vec<DimensionName> = DIMENSIONS.iter().map(|d| d.name()).collect();
        assert_eq!(names, DimensionName::ORDER);
        assert_eq!(DIMENSIONS[0].name(), DimensionName::Permission);
    }

    #[test]
    fn default_settings_are_valid() {
        let settings = defaults();
        settings.validate().expect("defaults are valid");
        assert_eq!(settings.temporal_scale_days, 30.0);
        assert_eq!(settings.min_authority, 0.7);
        assert_eq!(settings.authority_of("servicenow"), 1.0);
        assert_eq!(settings.authority_of("rumor"), 0.2);
        assert_eq!(settings.authority_of("confluence"), 0.5);
        assert_eq!(
            settings.scopes_for(Some("SRE")),
            &settings.scopes_by_role["sre"]
        );
        assert_eq!(
            settings.scopes_for(Some("astronaut")),
            &settings.default_scopes
        );
        assert_eq!(settings.scopes_for(None), &settings.default_scopes);
        assert_eq!(settings.limit, 50);
    }

    #[test]
    fn invalid_settings_are_named() {
        let invalid = |settings: PlateSettings| match settings.validate() {
            Err(OrgError::InvalidSetting { name, .. }) => name,
            other => panic!("expected an invalid setting, got {other:?}"),
        };
        assert_eq!(
            invalid(PlateSettings {
                temporal_scale_days: 0.0,
                ..defaults()
            }),
            "temporal_scale_days"
        );
        assert_eq!(
            invalid(PlateSettings {
                min_authority: f64::NAN,
                ..defaults()
            }),
            "min_authority"
        );
        let mut authority = defaults();
        authority.authority.insert("jira".into(), -1.0);
        assert_eq!(invalid(authority), "authority");
        let mut roles = defaults();
        roles.scopes_by_role.insert("SRE".into(), BTreeSet::new());
        assert_eq!(invalid(roles), "scopes_by_role");
        let mut severity = defaults();
        severity
            .severity_weights
            .insert(Severity::Low, f64::INFINITY);
        assert_eq!(invalid(severity), "severity_weights");
    }
}
