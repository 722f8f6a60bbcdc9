//! The identity every request carries.

use crate::error::DomainError;

/// Who is asking: a principal acting for a tenant. Both parts are required and non-blank;
/// permission filters are derived from this and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    tenant: String,
    principal: String,
}

impl Caller {
    /// Builds a caller, rejecting blank parts with the name of the missing field.
    pub fn new(tenant: &str, principal: &str) -> Result<Self, DomainError> {
        let tenant = tenant.trim();
        let principal = principal.trim();
        if tenant.is_empty() {
            return Err(DomainError::missing("caller.tenant"));
        }
        if principal.is_empty() {
            return Err(DomainError::missing("caller.principal"));
        }
        Ok(Self {
            tenant: tenant.to_owned(),
            principal: principal.to_owned(),
        })
    }

    /// Parses the `TENANT/PRINCIPAL` form the command line uses.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        match text.split_once('/') {
            Some((tenant, principal)) => Self::new(tenant, principal),
            None => Err(DomainError::invalid(
                "caller",
                format!("expected TENANT/PRINCIPAL, got {text:?}"),
            )),
        }
    }

    /// The tenant the caller acts for.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The principal (person or agent id).
    pub fn principal(&self) -> &str {
        &self.principal
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
    }

    #[test]
    fn blank_parts_name_the_field() {
        let err = Caller::new(" ", "alice").expect_err("blank tenant");
        assert_eq!(err.field(), Some("caller.tenant"));
        let err = Caller::new("acme", "").expect_err("blank principal");
        assert_eq!(err.field(), Some("caller.principal"));
        let err = Caller::parse("acme").expect_err("no slash");
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);
    }
}
