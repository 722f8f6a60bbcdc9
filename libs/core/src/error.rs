//! Error codes shared by every service, and the domain's own error type.
//!
//! `ErrorCode` is a deliberately small set; the edge maps each variant to exactly one gRPC code
//! with an exhaustive match, so a new variant forces a decision there.

/// What kind of failure a caller must be able to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The request is malformed; the message names the field.
    InvalidArgument,
    /// The thing asked for does not exist.
    NotFound,
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

/// A JSON error's message without serde's trailing " at line L column C" (the position is
/// reported in its own fields).
pub fn without_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix)
        .map_or(text.clone(), str::to_owned)
}
