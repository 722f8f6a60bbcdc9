//! A claim: one statement read from text, with the stage that read it. The bottom of the
//! knowledge model: the graph keeps claims as facts, every reading stage makes them.

use super::ontology::PredicateKind;

/// Version of the rule set, recorded on every fact it produces.
pub const RULE_SET: &str = "patterns/v1";

/// Who a claim is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimSubject {
    /// Named in the sentence.
    Named(String),
    /// The predicate's fixed subject.
    Fixed(String),
}

impl ClaimSubject {
    /// The subject's name.
    pub fn name(&self) -> &str {
        match self {
            ClaimSubject::Named(name) | ClaimSubject::Fixed(name) => name,
        }
    }
}

/// One statement a sentence makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Predicate name.
    pub predicate: String,
    /// Slot claim or rename.
    pub kind: PredicateKind,
    /// Subject (for a rename: the current name).
    pub subject: ClaimSubject,
    /// Object (for a rename: the former name).
    pub object: String,
    /// The sentence, trimmed.
    pub sentence: String,
    /// Id of the extractor stage that read it (`patterns/v1`, `structured/v2`, ...).
    pub extractor: String,
    /// The stage's confidence in what it read, 0 to 1.
    pub confidence: f64,
}
