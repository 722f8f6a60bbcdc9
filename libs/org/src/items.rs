//! Work items (tickets, incidents, reports), who may read them, and the per-tenant index the
//! plate draws its candidates from.
//!
//! # Permission rule
//!
//! A caller may read an item when the item's tenant is the caller's tenant **and** either the
//! item's ACL is empty (the item is open to the whole tenant) or one ACL entry equals the caller's
//! principal or one of the caller's groups. Being the assignee grants nothing by itself, and the
//! rule never consults the organisation or product graphs, so a stale or wrong graph can change
//! what is relevant but never what is readable.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::caller::Caller;
use crate::error::OrgError;

/// How urgent something is: a work item, or a failure signal or pattern (the one severity of
/// the workspace; `ontoloop_core` re-exports it). Ordered least urgent first, so
/// `severity >= threshold` reads as "at least this urgent".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Can wait; an isolated signal.
    Low,
    /// Normal work; a recurring signal.
    Medium,
    /// Serious, needs attention soon; frequent or spread over several agents.
    High,
    /// Service down or data at risk; frequent and widespread.
    Critical,
}

impl Severity {
    /// Every severity, least urgent first.
    pub const ALL: [Severity; 4] = [
        Severity::Low,
        Severity::Medium,
        Severity::High,
        Severity::Critical,
    ];

    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What area of work an item belongs to; roles see different scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Code changes and reviews.
    Code,
    /// Defects.
    Bugs,
    /// New capabilities.
    Features,
    /// Running systems and incidents.
    Production,
    /// Business-critical matters.
    Critical,
    /// Plans and direction.
    Strategic,
}

impl Scope {
    /// All scopes.
    pub const ALL: [Scope; 6] = [
        Scope::Code,
        Scope::Bugs,
        Scope::Features,
        Scope::Production,
        Scope::Critical,
        Scope::Strategic,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Code => "code",
            Scope::Bugs => "bugs",
            Scope::Features => "features",
            Scope::Production => "production",
            Scope::Critical => "critical",
            Scope::Strategic => "strategic",
        }
    }
}

/// Where an item came from; sources differ in authority.
///
/// On the wire a source is its name (`jira`, `servicenow`, `production_logs`, `email`, `slack`,
/// `rumor`); any other string is kept as [`Source::Other`]. Known names are matched
/// case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Source {
    /// Jira tickets.
    Jira,
    /// ServiceNow records.
    ServiceNow,
    /// Alerts and errors from production logs.
    ProductionLogs,
    /// Email threads.
    Email,
    /// Slack messages.
    Slack,
    /// Hearsay.
    Rumor,
    /// Any other system, by name.
    Other(String),
}

impl Source {
    /// Wire name; the key in [`crate::filters::PlateSettings::authority`].
    pub fn as_str(&self) -> &str {
        match self {
            Source::Jira => "jira",
            Source::ServiceNow => "servicenow",
            Source::ProductionLogs => "production_logs",
            Source::Email => "email",
            Source::Slack => "slack",
            Source::Rumor => "rumor",
            Source::Other(name) => name,
        }
    }
}

impl From<&str> for Source {
    fn from(name: &str) -> Source {
        match name.to_ascii_lowercase().as_str() {
            "jira" => Source::Jira,
            "servicenow" => Source::ServiceNow,
            "production_logs" => Source::ProductionLogs,
            "email" => Source::Email,
            "slack" => Source::Slack,
            "rumor" => Source::Rumor,
            _ => Source::Other(name.to_owned()),
        }
    }
}

impl From<String> for Source {
    fn from(name: String) -> Source {
        Source::from(name.as_str())
    }
}

impl From<Source> for String {
    fn from(source: Source) -> String {
        source.as_str().to_owned()
    }
}

/// One unit of work: a ticket, an incident, a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    /// Id, unique within the tenant.
    pub id: String,
    /// Owning tenant.
    pub tenant: String,
    /// Short title.
    pub title: String,
    /// Person id of the assignee, if any.
    #[serde(default)]
    pub assignee: Option<String>,
    /// Service id the item is filed against, if any.
    #[serde(default)]
    pub service: Option<String>,
    /// Urgency.
    pub severity: Severity,
    /// Area of work.
    pub scope: Scope,
    /// System of origin.
    pub source: Source,
    /// When the item was created.
    pub created_at: DateTime<Utc>,
    /// Principals or groups allowed to read it; empty means the whole tenant (module docs).
    #[serde(default)]
    pub acl: Vec<String>,
}

impl WorkItem {
    /// The permission rule of the module docs.
    pub fn readable_by(&self, caller: &Caller) -> bool {
        self.tenant == caller.tenant() && caller.admitted_by(&self.acl)
    }
}

/// Work items partitioned by tenant and indexed by assignee and service, built once and shared.
///
/// A plate only ever looks into the caller's tenant partition, so its work grows with the
/// caller's neighbourhood, not with the number of items.
#[derive(Debug, Clone, Default)]
pub struct ItemIndex {
    tenants: HashMap<String, TenantItems>,
    len: usize,
}

/// One tenant's items and their lookups; positions index `items`.
#[derive(Debug, Clone, Default)]
pub struct TenantItems {
    items: Vec<WorkItem>,
    by_id: HashMap<String, u32>,
    by_assignee: HashMap<String, Vec<u32>>,
    by_service: HashMap<String, Vec<u32>>,
}

impl ItemIndex {
    /// Indexes items, refusing two items with one id in one tenant.
    pub fn build(items: impl IntoIterator<Item = WorkItem>) -> Result<ItemIndex, OrgError> {
        let mut index = ItemIndex::default();
        for item in items {
            let partition = index.tenants.entry(item.tenant.clone()).or_default();
            let Ok(position) = u32::try_from(partition.items.len()) else {
                return Err(OrgError::TooManyItems(item.tenant));
            };
            if partition.by_id.insert(item.id.clone(), position).is_some() {
                return Err(OrgError::DuplicateItem {
                    tenant: item.tenant,
                    id: item.id,
                });
            }
            for (key, by) in [
                (&item.assignee, &mut partition.by_assignee),
                (&item.service, &mut partition.by_service),
            ] {
                if let Some(key) = key {
                    by.entry(key.clone()).or_default().push(position);
                }
            }
            partition.items.push(item);
            index.len += 1;
        }
        Ok(index)
    }

    /// Number of items over all tenants.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// One tenant's partition.
    pub fn tenant(&self, tenant: &str) -> Option<&TenantItems> {
        self.tenants.get(tenant)
    }

    /// One item by tenant and id.
    pub fn get(&self, tenant: &str, id: &str) -> Option<&WorkItem> {
        self.tenant(tenant).and_then(|t| t.get(id))
    }
}

impl TenantItems {
    /// Number of items in the tenant.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the tenant has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// One item by id.
    pub fn get(&self, id: &str) -> Option<&WorkItem> {
        self.by_id.get(id).and_then(|&p| self.at(p))
    }

    /// The item at a position returned by the lookups below.
    pub fn at(&self, position: u32) -> Option<&WorkItem> {
        self.items.get(position as usize)
    }

    /// Positions of the items assigned to a person.
    pub fn assigned_to(&self, person: &str) -> &[u32] {
        self.by_assignee.get(person).map_or(&[], Vec::as_slice)
    }

    /// Positions of the items filed against a service.
    pub fn on_service(&self, service: &str) -> &[u32] {
        self.by_service.get(service).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn item(id: &str, tenant: &str, acl: &[&str]) -> WorkItem {
        WorkItem {
            id: id.into(),
            tenant: tenant.into(),
            title: format!("item {id}"),
            assignee: Some("alice".into()),
            service: Some("api".into()),
            severity: Severity::High,
            scope: Scope::Bugs,
            source: Source::Jira,
            created_at: Utc
                .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
                .single()
                .expect("valid date"),
            acl: acl.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    #[test]
    fn permission_needs_tenant_and_acl() {
        let alice = Caller::new("acme", "alice").expect("valid caller");
        let bob = Caller::new("acme", "bob")
            .expect("valid caller")
            .with_groups(["oncall".to_owned()]);
        let eve = Caller::new("evil", "alice").expect("valid caller");
        let open = item("1", "acme", &[]);
        let restricted = item("2", "acme", &["carol", "oncall"]);
        assert!(open.readable_by(&alice) && open.readable_by(&bob));
        assert!(!open.readable_by(&eve), "another tenant never reads");
        assert!(
            !restricted.readable_by(&alice),
            "being the assignee grants nothing"
        );
        assert!(restricted.readable_by(&bob), "group entry");
    }

    #[test]
    fn sources_keep_unknown_names() {
        assert_eq!(Source::from("ServiceNow"), Source::ServiceNow);
        assert_eq!(
            Source::from("confluence"),
            Source::Other("confluence".into())
        );
        let json = serde_json::to_string(&item("1", "acme", &[])).expect("serialises");
        assert!(json.contains(r#""source":"jira""#), "{json}");
        assert!(json.contains(r#""severity":"high""#), "{json}");
        let back: WorkItem = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, item("1", "acme", &[]));
        assert_eq!(
            Severity::ALL.map(Severity::name),
            ["low", "medium", "high", "critical"]
        );
        assert_eq!(Scope::ALL.len(), 6);
    }

    #[test]
    fn index_partitions_by_tenant() {
        let index = ItemIndex::build([
            item("1", "acme", &[]),
            item("1", "globex", &[]),
            item("2", "acme", &[]),
        ])
        .expect("ids unique per tenant");
        assert_eq!(index.len(), 3);
        let acme = index.tenant("acme").expect("acme indexed");
        assert_eq!(acme.assigned_to("alice").len(), 2);
        assert_eq!(acme.on_service("api").len(), 2);
        assert!(acme.on_service("db").is_empty());
        assert_eq!(
            index.get("globex", "1").map(|i| i.tenant.as_str()),
            Some("globex")
        );
        let duplicate = ItemIndex::build([item("1", "acme", &[]), item("1", "acme", &[])]);
        assert_eq!(
            duplicate.map(|_| ()),
            Err(OrgError::DuplicateItem {
                tenant: "acme".into(),
                id: "1".into()
            })
        );
    }
}
