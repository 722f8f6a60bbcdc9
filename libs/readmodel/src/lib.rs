//! Per-tenant read models of the knowledge, for the services that read it (retrieval and the
//! firewall): the graph, the current version of every page, the extraction log, a BM25 index of
//! the pages and (built at their first use) one of their passages and the passages' vectors by
//! the sentence encoder, patched with what each commit
//! wrote whenever the tenant's knowledge version moves (built whole at first use and on an
//! ontology change).
//!
//! `asking` answers one question from a read model (retrieval's `Ask` and `Lookup`, and the
//! analyst's gate replaying recent questions against the live graph and a shadow); `QueryLog`
//! keeps those recent questions; `claims` keeps the claims of the pages questions read. A
//! follower task brings the models callers read forward after each commit (`Snapshots::follow`).
//!
//! It only reads the store, but for the query log; it must never write knowledge (the analyst
//! is the one writer).

pub mod about;
pub mod asking;
mod claims;
mod dense;
mod hybrid;
pub mod overview;
mod query_log;
mod ram;
mod search;
pub mod searching;
mod snapshot;

pub use dense::{
    DenseCoverage, DenseError, DenseIndex, DenseState, INLINE_DENSE_PASSAGES, LazyDense,
    MAX_DENSE_PASSAGES, PassageKey,
};
pub use hybrid::{FUSION_K, Hybrid, Ranked, Ranking};
pub use query_log::{Asker, QUERY_LOG_BUFFER, QueryLog, RECENT_QUESTIONS};
pub use search::{PageFilter, PageIndex, PassageHit, PassageIndex};
pub use snapshot::{
    CACHE_ENTRIES_METRIC, ReadableHistory, Snapshot, SnapshotError, SnapshotGuard, Snapshots,
};
