//! ontoloop's domain: the types and rules every service shares.
//!
//! This crate owns the vocabulary (callers, services, signals, error codes) and, as the product
//! grows, the knowledge model and its policies. It must never do IO: no network, no disk, no
//! clock reads hidden inside a rule (time is passed in), and it never imports tonic or prost —
//! conversions from wire types live at the edge, in `ontoloop-proto`.

pub mod backoff;
pub mod cache;
pub mod digest;
pub mod error;
pub mod events;
pub mod grow;
pub mod knowledge;
pub mod patterns;
pub mod proposals;
pub mod redact;
pub mod service;
pub mod settings;
pub mod signal;
pub mod supervisor;
pub mod topics;
pub mod world;

pub use backoff::Backoff;
pub use cache::{CacheBudget, Lru};
pub use error::{DomainError, During, ErrorCode, ServiceError};
pub use ontoloop_org::Caller;
pub use redact::redact_url;
pub use service::ServiceKind;
pub use signal::{Severity, SeverityThresholds, SignalType, severity};
