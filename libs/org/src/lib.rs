//! Multidimensional retrieval over ephemeral organisation, product and context graphs.
//!
//! This crate owns the pure domain of that retrieval: the caller every request carries
//! ([`caller`]), HR records and events ([`hr`]), the
//! organisation graph rebuilt or patched from them ([`org`]), the product graph built from facts
//! ([`product`]) that documentation files state ([`docs`]), per-project context graphs with time
//! to live ([`context`]), work items and their permission rule ([`items`]), the dimensional
//! filters that assemble a caller's plate ([`filters`]), and answers to simple org
//! questions ([`ask`]). The seeded world generator and the brute-force oracle of the plate, for tests and
//! benchmarks only, live in `ontoloop-testkit`.
//!
//! Invariants:
//! - It never does IO: no network, no disk, no clock reads; time is passed in. Stores, queues and
//!   gRPC wire these types up elsewhere.
//! - It never relaxes the permission filter: every plate candidate comes from the caller's tenant
//!   and passes the ACL check before any other dimension sees it, no setting can turn that off,
//!   and permission never depends on the (ephemeral, possibly stale) graphs.
//! - Readers never see a half-built graph: graphs are built aside and published whole through
//!   [`swap::Swap`].

#![warn(missing_docs)]

pub mod ask;
pub mod caller;
pub mod context;
pub mod docs;
pub mod error;
pub mod filters;
pub mod hr;
pub mod items;
pub mod org;
pub mod product;
pub mod swap;

pub use ask::{OrgAnswer, OrgQuestion, answer_org_question, parse_org_question};
pub use caller::Caller;
pub use context::{ContextError, ContextGraph, ContextRegistry, ContextSettings};
pub use error::OrgError;
pub use filters::{DimensionName, Plate, PlateItem, PlateRequest, PlateSettings, plate};
pub use hr::{Affected, HrEvent, OrgRecords, Person, Team, apply};
pub use items::{ItemIndex, Scope, Severity, Source, WorkItem};
pub use org::{OrgGraph, Patched};
pub use product::{Fact, ProductGraph};
pub use swap::Swap;

/// A value of the embedded defaults (`libs/settings/src/defaults.toml`, where every default is
/// written once), read the way `ontoloop-settings` reads it, for this crate's tests (the settings
/// crate depends on this one).
#[cfg(test)]
pub(crate) fn embedded_default<T: serde::de::DeserializeOwned>(key: &str) -> T {
    config::Config::builder()
        .add_source(config::File::from_str(
            include_str!("../../settings/src/defaults.toml"),
            config::FileFormat::Toml,
        ))
        .build()
        .and_then(|c| c.get::<T>(key))
        .unwrap_or_else(|err| panic!("the embedded default {key} loads: {err}"))
}
