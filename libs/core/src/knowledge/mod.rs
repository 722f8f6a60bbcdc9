//! The knowledge model: an ontology loaded from configuration, the pattern extractor, entity
//! names and aliases, versioned facts with provenance, and the answer policy that decides what
//! an agent is told. Everything here is pure: callers pass pages, facts and the time in.

pub mod answer;
pub mod ask;
pub mod claim;
pub mod communities;
pub mod designs;
pub mod document;
pub mod encoder;
pub mod extract;
pub mod firewall;
pub mod graph;
pub mod maintenance;
pub mod model;
pub mod names;
pub mod ontology;
pub mod passage;
pub mod pattern;
pub mod pipeline;
pub mod question;
pub mod scope;
pub mod semantic;
pub mod structured;
pub mod vectors;
pub mod words;

pub use answer::{
    Answer, AnswerStatus, Candidate, Finding, Hedge, HedgeCode, ScopedValue, SlotContext,
    SlotDecision, decide, same_value,
};
pub use extract::{Claim, ClaimSubject, extract_claims, pattern_claims, split_sentences};
pub use graph::{
    Access, Changes, Entity, Fact, Graph, NameNeedles, PageVersion, RECORD_ORIGIN, RecordValue,
    SourceRef, current_versions, plain_words, readable, record_origin, versions_announced,
    versions_in_effect, versions_to_read,
};
pub use maintenance::{MaintenanceMode, MaintenanceReport, estimate_tokens, pages_to_read};
pub use model::{ClaimModel, CostCounter, ModelCost, ModelError, ModelUsage, Ungrounded, ground};
pub use names::NameNormaliser;
pub use ontology::{Ontology, OntologyError, Predicate, PredicateKind};
pub use pattern::{Pattern, PatternError, Slot};
pub use pipeline::{ExtractSettings, Extraction, ExtractionSetup, Stage, TenantExtract};
pub use scope::{Scope, ScopeError};
pub use semantic::Lexicon;
