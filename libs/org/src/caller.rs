//! The identity every request carries: a principal acting for a tenant, with the groups the
//! identity provider asserts. The one caller type of the workspace (`ontoloop_core` re-exports it).

use crate::error::OrgError;

/// Who is asking: a principal acting for a tenant. Tenant and principal are required and
/// non-blank; permission filters are derived from this and nothing else.
///
/// Groups only ever widen access through ACL entries that name them; they come from the bearer
/// token (`caller_from` in `ontoloop-proto`), and a caller without a token has none.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    tenant: String,
    principal: String,
    groups: Vec<String>,
}

impl Caller {
    /// A caller without groups; a blank part is refused with the name of the field.
    pub fn new(tenant: &str, principal: &str) -> Result<Caller, OrgError> {
        let (tenant, principal) = (tenant.trim(), principal.trim());
        if tenant.is_empty() {
            return Err(OrgError::Missing("caller.tenant".to_owned()));
        }
        if principal.is_empty() {
            return Err(OrgError::Missing("caller.principal".to_owned()));
        }
        Ok(Caller {
            tenant: tenant.to_owned(),
            principal: principal.to_owned(),
            groups: Vec::new(),
        })
    }

    /// Parses the `TENANT/PRINCIPAL` form the command line uses.
    pub fn parse(text: &str) -> Result<Caller, OrgError> {
        match text.split_once('/') {
            Some((tenant, principal)) => Caller::new(tenant, principal),
            None => Err(OrgError::InvalidField {
                field: "caller".to_owned(),
                reason: format!("expected TENANT/PRINCIPAL, got {text:?}"),
            }),
        }
    }

    /// The same caller with these groups (blank ones are dropped).
    pub fn with_groups(mut self, groups: impl IntoIterator<Item = String>) -> Caller {
        self.groups = groups
            .into_iter()
            .filter(|g| !g.trim().is_empty())
            .collect();
        self
    }

    /// The tenant the caller acts for.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The principal (person or agent id); also the person id in the organisation graph.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// Groups asserted by the identity provider.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// The one ACL rule of the workspace (pages, facts, work items): an empty ACL admits the
    /// whole tenant; otherwise an entry must name the principal or one of the caller's groups.
    pub fn admitted_by(&self, acl: &[String]) -> bool {
        acl.is_empty()
            || acl
                .iter()
                .any(|entry| *entry == self.principal || self.groups.contains(entry))
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tenant, self.principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tenant_and_principal() {
        let caller = Caller::parse("acme/alice").expect("valid caller");
        assert_eq!(caller.tenant(), "acme");
        assert_eq!(caller.principal(), "alice");
        assert_eq!(caller.to_string(), "acme/alice");
        assert!(caller.groups().is_empty());
    }

    #[test]
    fn blank_parts_name_the_field() {
        assert_eq!(
            Caller::new(" ", "alice"),
            Err(OrgError::Missing("caller.tenant".into()))
        );
        assert_eq!(
            Caller::new("acme", ""),
            Err(OrgError::Missing("caller.principal".into()))
        );
        let err = Caller::parse("acme").expect_err("no slash");
        assert!(matches!(err, OrgError::InvalidField { ref field, .. } if field == "caller"));
        assert_eq!(
            Caller::new("acme", "bob")
                .expect("valid")
                .with_groups(["oncall".to_owned(), " ".to_owned()])
                .groups(),
            ["oncall".to_owned()]
        );
    }

    #[test]
    fn an_acl_admits_its_principals_and_the_members_of_its_groups() {
        let acl = |entries: &[&str]| entries.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let bob = Caller::new("acme", "bob").expect("valid");
        let finance = bob.clone().with_groups(["finance".to_owned()]);
        assert!(bob.admitted_by(&[]));
        assert!(bob.admitted_by(&acl(&["cfo", "bob"])));
        assert!(!bob.admitted_by(&acl(&["cfo", "finance"])));
        assert!(finance.admitted_by(&acl(&["cfo", "finance"])));
        // A group is not a principal: a caller called `finance` without the group is not in it.
        let named = Caller::new("acme", "cfo").expect("valid");
        assert!(!named.admitted_by(&acl(&["finance"])));
    }
}
