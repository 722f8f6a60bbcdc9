//! The seven dimensions of the plate as units a candidate item travels through, in the order
//! [`DIMENSIONS`] applies them: permission and scope drop, hierarchy, ownership and dependency
//! admit, age and authority weigh (the semantics are the parent module's).

use chrono::{DateTime, Utc};

use super::{DimensionName, PlateContext};
use crate::items::WorkItem;

/// An item travelling through the dimensions.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// The item.
    pub item: &'a WorkItem,
    admitted: u8,
    /// Set by the temporal dimension.
    pub temporal_weight: f64,
    /// Set by the authority dimension.
    pub authority_weight: f64,
}

impl<'a> Candidate<'a> {
    /// A fresh candidate with no admission reasons and unit weights.
    pub fn new(item: &'a WorkItem) -> Candidate<'a> {
        Candidate {
            item,
            admitted: 0,
            temporal_weight: 1.0,
            authority_weight: 1.0,
        }
    }

    /// Records an admission reason.
    pub fn admit(&mut self, by: DimensionName) {
        self.admitted |= by.bit();
    }

    /// Whether any admission dimension accepted the item.
    pub fn is_admitted(&self) -> bool {
        self.admitted != 0
    }

    /// Admission reasons, in dimension order.
    pub fn admitted_by(&self) -> Vec<DimensionName> {
        DimensionName::ORDER
            .into_iter()
            .filter(|d| self.admitted & d.bit() != 0)
            .collect()
    }
}

/// One dimension of the plate: a unit that drops, admits or weighs candidates.
pub trait Dimension {
    /// Its name in counts and reasons.
    fn name(&self) -> DimensionName;

    /// Whether it is one of the admission dimensions, hierarchy, ownership and dependency
    /// (counts are cumulative over those).
    fn admits(&self) -> bool {
        matches!(
            self.name(),
            DimensionName::Hierarchy | DimensionName::Ownership | DimensionName::Dependency
        )
    }

    /// Drops candidates, records admission reasons, or sets weights.
    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>);
}

/// Tenant and ACL; drops what the caller may not read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByPermission;

/// Drops items whose scope the caller's role does not see.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByScope;

/// Admits my items and my reports' severe items.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByHierarchy;

/// Admits items on services my team owns.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByOwnership;

/// Admits severe items on services my team's services depend on.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByDependency;

/// Weighs items by age.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByAge;

/// Weighs items by source and drops weak sources.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByAuthority;

impl Dimension for ByPermission {
    fn name(&self) -> DimensionName {
        DimensionName::Permission
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        candidates.retain(|c| c.item.readable_by(context.caller));
    }
}

impl Dimension for ByScope {
    fn name(&self) -> DimensionName {
        DimensionName::Scope
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        candidates.retain(|c| context.scopes.contains(&c.item.scope));
    }
}

impl Dimension for ByHierarchy {
    fn name(&self) -> DimensionName {
        DimensionName::Hierarchy
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        let severities = &context.settings.report_severities;
        for candidate in candidates {
            let Some(assignee) = candidate.item.assignee.as_deref() else {
                continue;
            };
            if assignee == context.caller.principal()
                || (context.reports.contains(assignee)
                    && severities.contains(&candidate.item.severity))
            {
                candidate.admit(DimensionName::Hierarchy);
            }
        }
    }
}

impl Dimension for ByOwnership {
    fn name(&self) -> DimensionName {
        DimensionName::Ownership
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        for candidate in candidates {
            if let Some(service) = candidate.item.service.as_deref()
                && context.owned.contains(service)
            {
                candidate.admit(DimensionName::Ownership);
            }
        }
    }
}

impl Dimension for ByDependency {
    fn name(&self) -> DimensionName {
        DimensionName::Dependency
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        let severities = &context.settings.dependency_severities;
        for candidate in candidates {
            if let Some(service) = candidate.item.service.as_deref()
                && context.dependencies.contains(service)
                && severities.contains(&candidate.item.severity)
            {
                candidate.admit(DimensionName::Dependency);
            }
        }
    }
}

impl Dimension for ByAge {
    fn name(&self) -> DimensionName {
        DimensionName::Temporal
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        let scale = context.settings.temporal_scale_days;
        for candidate in candidates {
            candidate.temporal_weight =
                temporal_weight(candidate.item.created_at, context.now, scale);
        }
    }
}

impl Dimension for ByAuthority {
    fn name(&self) -> DimensionName {
        DimensionName::Authority
    }

    fn apply(&self, context: &PlateContext<'_>, candidates: &mut Vec<Candidate<'_>>) {
        let settings = context.settings;
        for candidate in candidates.iter_mut() {
            candidate.authority_weight = settings.authority_of(candidate.item.source.as_str());
        }
        candidates.retain(|c| c.authority_weight >= settings.min_authority);
    }
}

/// `exp(-age / scale)`, the age in milliseconds clamped at zero, the scale in days.
pub fn temporal_weight(created_at: DateTime<Utc>, now: DateTime<Utc>, scale_days: f64) -> f64 {
    let age_ms = (now - created_at).num_milliseconds().max(0) as f64;
    (-age_ms / (scale_days * 86_400_000.0)).exp()
}

/// The dimensions in the order the plate applies them. Permission is first, always.
pub const DIMENSIONS: [&(dyn Dimension + Sync); 7] = [
    &ByPermission,
    &ByScope,
    &ByHierarchy,
    &ByOwnership,
    &ByDependency,
    &ByAge,
    &ByAuthority,
];
