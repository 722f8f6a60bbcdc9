//! The four roles, the identity a token proves, and which role each RPC needs.

use std::collections::BTreeSet;
use std::fmt;

/// What a caller may do. `Admin` may do everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// An AI agent: asks, looks up, reads its plate and project contexts, validates answers,
    /// reports failure signals.
    Agent,
    /// A system that pushes docs, records, HR changes and work items of its own tenant.
    Integration,
    /// A person working through the review queue.
    Reviewer,
    /// Everything, including `ontology.set` and `graph.maintain` events.
    Admin,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Agent, Role::Integration, Role::Reviewer, Role::Admin];

    /// The role's name in tokens and messages.
    pub fn name(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Integration => "integration",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        }
    }

    /// The role named `name`, if any.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL
            .into_iter()
            .find(|role| role.name() == name.trim())
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Who a verified token says is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The tenant the caller acts for.
    pub tenant: String,
    /// The principal (person or agent id).
    pub principal: String,
    /// Groups the identity provider asserts.
    pub groups: Vec<String>,
    /// Roles granted; role names a token carries that ontoloop does not know are left out.
    pub roles: BTreeSet<Role>,
}

impl Identity {
    /// Whether the identity may act in `role` (it holds it, or is an admin).
    pub fn may(&self, role: Role) -> bool {
        self.roles.contains(&role) || self.roles.contains(&Role::Admin)
    }

    /// The roles as text, for a refusal (`none` when there are none).
    pub fn roles_text(&self) -> String {
        if self.roles.is_empty() {
            return "none".to_owned();
        }
        let names: Vec<&str> = self.roles.iter().map(|r| r.name()).collect();
        names.join(", ")
    }
}

/// What a gRPC method path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without a token: health checks and server reflection.
    Open,
    /// A verified token whose identity may act in this role.
    Role(Role),
}

const OPEN_PREFIXES: [&str; 3] = [
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

/// The role each ontoloop RPC needs, by gRPC method path.
const RPC_ROLES: &[(&str, Role)] = &[
    ("/ontoloop.v1.RetrievalService/Ask", Role::Agent),
    ("/ontoloop.v1.RetrievalService/Lookup", Role::Agent),
    ("/ontoloop.v1.RetrievalService/ResolveCitation", Role::Agent),
    ("/ontoloop.v1.RetrievalService/Plate", Role::Agent),
    ("/ontoloop.v1.RetrievalService/ProjectContext", Role::Agent),
    ("/ontoloop.v1.RetrievalService/Search", Role::Agent),
    ("/ontoloop.v1.FirewallService/Validate", Role::Agent),
    ("/ontoloop.v1.TelemetryService/ReportSignal", Role::Agent),
    ("/ontoloop.v1.TelemetryService/ReportSignals", Role::Agent),
    // `ontology.set` and `graph.maintain` events further need admin (telemetry checks the kind).
    ("/ontoloop.v1.TelemetryService/PushEvent", Role::Integration),
    ("/ontoloop.v1.AnalystService/NextReview", Role::Reviewer),
    ("/ontoloop.v1.AnalystService/Decide", Role::Reviewer),
    ("/ontoloop.v1.AnalystService/ListPatterns", Role::Reviewer),
    (
        "/ontoloop.v1.AnalystService/ListMaintenanceRuns",
        Role::Reviewer,
    ),
    ("/ontoloop.v1.AnalystService/TenantSummary", Role::Reviewer),
    // Names pages and their hashes, not what they say: what a pushing system needs to push
    // only what changed.
    ("/ontoloop.v1.AnalystService/ListPages", Role::Integration),
];

/// The role the table lists for an ontoloop RPC, `None` for a path it does not list.
pub fn rpc_role(path: &str) -> Option<Role> {
    RPC_ROLES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, role)| *role)
}

/// What a gRPC method path needs. Health and reflection are open; an ontoloop RPC needs its
/// role; any other path needs admin, so a method added without a table entry is never open.
pub fn access(path: &str) -> Access {
    if OPEN_PREFIXES.iter().any(|prefix| path.starts_with(prefix)) {
        return Access::Open;
    }
    Access::Role(rpc_role(path).unwrap_or(Role::Admin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(roles: &[Role]) -> Identity {
        Identity {
            tenant: "acme".to_owned(),
            principal: "bot".to_owned(),
            groups: Vec::new(),
            roles: roles.iter().copied().collect(),
        }
    }

    #[test]
    fn admin_may_do_everything_and_others_only_their_role() {
        let admin = identity(&[Role::Admin]);
        assert!(Role::ALL.iter().all(|role| admin.may(*role)));
        let agent = identity(&[Role::Agent]);
        assert!(agent.may(Role::Agent));
        assert!(!agent.may(Role::Integration));
        assert!(!agent.may(Role::Reviewer));
        assert!(!agent.may(Role::Admin));
        assert_eq!(identity(&[]).roles_text(), "none");
        assert_eq!(
            identity(&[Role::Reviewer, Role::Agent]).roles_text(),
            "agent, reviewer"
        );
    }

    #[test]
    fn paths_map_to_roles_and_unknown_paths_need_admin() {
        assert_eq!(access("/grpc.health.v1.Health/Check"), Access::Open);
        assert_eq!(
            access("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"),
            Access::Open
        );
        assert_eq!(
            access("/ontoloop.v1.RetrievalService/Ask"),
            Access::Role(Role::Agent)
        );
        assert_eq!(
            access("/ontoloop.v1.TelemetryService/PushEvent"),
            Access::Role(Role::Integration)
        );
        assert_eq!(
            access("/ontoloop.v1.AnalystService/Decide"),
            Access::Role(Role::Reviewer)
        );
        assert_eq!(
            access("/ontoloop.v1.AnalystService/Forget"),
            Access::Role(Role::Admin)
        );
        assert_eq!(access(""), Access::Role(Role::Admin));
        assert_eq!(rpc_role(""), None);
        assert_eq!(Role::parse(" reviewer"), Some(Role::Reviewer));
        assert_eq!(Role::parse("root"), None);
    }
}
