//! Error codes shared by every service, the [`ServiceError`] trait every error enum a request can
//! end in implements, and the domain's own error type.
//!
//! `ErrorCode` is a deliberately small set; the edge (`ontoloop-proto`) maps each variant to
//! exactly one gRPC code with an exhaustive match, so a new variant forces a decision there, and
//! turns any [`ServiceError`] into a gRPC status in that one place (as quickwit's `ServiceError`).

use ontoloop_org::{ContextError, OrgError};

/// What kind of failure a caller must be able to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The request is malformed; the message names the field.
    InvalidArgument,
    /// The thing asked for does not exist.
    NotFound,
    /// The caller did not prove who it is (no bearer token, or one that does not verify).
    Unauthenticated,
    /// The caller may not see or do this.
    PermissionDenied,
    /// The request conflicts with the current state (for example a decision already taken).
    FailedPrecondition,
    /// A dependency (store, queue) cannot be reached right now; retrying may help.
    Unavailable,
    /// The behaviour is specified but not built yet; the message names what is missing.
    Unimplemented,
    /// A bug or an invariant broken inside ontoloop.
    Internal,
}

/// An error a request can end in: it says which [`ErrorCode`] it is, and its `Display` is the
/// message the caller reads. Implemented by every error enum a service hands to its edge.
pub trait ServiceError: std::fmt::Display {
    /// The kind of failure, for the caller to tell apart.
    fn error_code(&self) -> ErrorCode;
}

/// An error raised by domain rules, carrying the code and, where it applies, the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DomainError {
    code: ErrorCode,
    field: Option<String>,
    message: String,
}

impl DomainError {
    /// A required field is absent or blank.
    pub fn missing(field: &str) -> Self {
        Self {
            code: ErrorCode::InvalidArgument,
            field: Some(field.to_owned()),
            message: format!("{field} is required"),
        }
    }

    /// A field has a value that cannot be accepted.
    pub fn invalid(field: &str, why: impl std::fmt::Display) -> Self {
        Self {
            code: ErrorCode::InvalidArgument,
            field: Some(field.to_owned()),
            message: format!("{field}: {why}"),
        }
    }

    /// Specified behaviour that is not built yet.
    pub fn unimplemented(what: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::Unimplemented,
            field: None,
            message: what.into(),
        }
    }

    /// Any other failure with an explicit code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            field: None,
            message: message.into(),
        }
    }

    /// The error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A dependency's failure while doing `action`, keeping the dependency's code; displays as
/// `action: cause` (for example `read the review queue: database operation failed: …`).
#[derive(Debug, thiserror::Error)]
#[error("{action}: {source}")]
pub struct During<E> {
    action: &'static str,
    source: E,
}

impl<E> During<E> {
    /// `source` happened while doing `action` (phrased as an action: `read maintenance runs`).
    pub fn new(action: &'static str, source: E) -> Self {
        Self { action, source }
    }
}

impl<E: ServiceError> ServiceError for During<E> {
    fn error_code(&self) -> ErrorCode {
        self.source.error_code()
    }
}

impl ServiceError for DomainError {
    fn error_code(&self) -> ErrorCode {
        self.code
    }
}

// The org crate sits below this one, so its errors get their codes here.
impl ServiceError for OrgError {
    fn error_code(&self) -> ErrorCode {
        match self {
            OrgError::UnknownPerson(_)
            | OrgError::UnknownTeam(_)
            | OrgError::DuplicatePerson(_)
            | OrgError::DuplicateTeam(_)
            | OrgError::ManagerCycle { .. }
            | OrgError::TeamCycle { .. }
            | OrgError::TeamNotEmpty(_) => ErrorCode::FailedPrecondition,
            OrgError::DuplicateItem { .. }
            | OrgError::Blank(_)
            | OrgError::Missing(_)
            | OrgError::InvalidField { .. }
            | OrgError::InvalidSetting { .. } => ErrorCode::InvalidArgument,
            OrgError::TooManyItems(_) => ErrorCode::Internal,
        }
    }
}

impl ServiceError for ContextError {
    fn error_code(&self) -> ErrorCode {
        match self {
            ContextError::NotFound(_) | ContextError::Expired(_) => ErrorCode::NotFound,
        }
    }
}

impl From<OrgError> for DomainError {
    fn from(err: OrgError) -> Self {
        let field = match &err {
            OrgError::Missing(field) | OrgError::InvalidField { field, .. } => Some(field.clone()),
            OrgError::Blank(field) => Some((*field).to_owned()),
            _ => None,
        };
        Self {
            code: err.error_code(),
            field,
            message: err.to_string(),
        }
    }
}

/// A JSON error's message without serde's trailing " at line L column C" (the position is
/// reported in its own fields).
pub fn without_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix)
        .map_or(text.clone(), str::to_owned)
}
