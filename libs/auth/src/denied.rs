//! Why a call was refused at the trust boundary, with its error code.

use ontoloop_core::{ErrorCode, ServiceError};

use crate::error::AuthError;
use crate::roles::{Identity, Role};

/// A call refused before the service handles it: no proof of identity (UNAUTHENTICATED), or an
/// identity that may not do what it asks (PERMISSION_DENIED).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// No `authorization: Bearer` header.
    #[error("missing bearer token: send `authorization: Bearer <JWT>`")]
    NoToken,
    /// The header is there but does not hold a usable token.
    #[error("{0}")]
    Token(AuthError),
    /// The identity lacks the role the call needs.
    #[error("{what} needs role `{needed}`; the token grants: {granted}")]
    Role {
        /// The method or event asked for.
        what: String,
        /// The role it needs.
        needed: Role,
        /// The roles the token grants, as text.
        granted: String,
    },
    /// The request's `caller` names someone other than the token.
    #[error("{field} {given:?} does not match the bearer token's")]
    Caller {
        /// `caller.tenant` or `caller.principal` (with the signal's index in a stream).
        field: String,
        /// What the body said.
        given: String,
    },
}

impl Denied {
    /// Refuses `identity` unless it may act in `needed` for `what`.
    pub fn unless_may(identity: &Identity, needed: Role, what: &str) -> Result<(), Denied> {
        if identity.may(needed) {
            return Ok(());
        }
        Err(Denied::Role {
            what: what.to_owned(),
            needed,
            granted: identity.roles_text(),
        })
    }
}

impl ServiceError for Denied {
    fn error_code(&self) -> ErrorCode {
        match self {
            Denied::NoToken | Denied::Token(_) => ErrorCode::Unauthenticated,
            Denied::Role { .. } | Denied::Caller { .. } => ErrorCode::PermissionDenied,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn refusals_name_the_role_and_carry_their_code() {
        let agent = Identity {
            tenant: "acme".to_owned(),
            principal: "bot".to_owned(),
            groups: Vec::new(),
            roles: BTreeSet::from([Role::Agent]),
        };
        assert_eq!(Denied::unless_may(&agent, Role::Agent, "Ask"), Ok(()));
        let err = Denied::unless_may(&agent, Role::Reviewer, "Decide").expect_err("denied");
        assert_eq!(err.error_code(), ErrorCode::PermissionDenied);
        assert_eq!(
            err.to_string(),
            "Decide needs role `reviewer`; the token grants: agent"
        );
        assert_eq!(Denied::NoToken.error_code(), ErrorCode::Unauthenticated);
        assert_eq!(
            Denied::Token(AuthError::Expired).to_string(),
            "token has expired"
        );
    }
}
