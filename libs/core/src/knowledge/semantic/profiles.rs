//! What the semantic extractor knows of each predicate before it reads a sentence: its words,
//! weighted by how few predicates share them, and its patterns as plain prototype sentences for
//! the encoder; with the words and type nouns every sentence's reading looks up.

use std::collections::{BTreeMap, BTreeSet};

use crate::knowledge::ontology::{Ontology, Predicate};

/// What the extractor knows of one predicate: its weighted words and prototype sentences.
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    pub words: BTreeMap<String, f64>,
    pub unit: BTreeSet<String>,
    pub prototypes: Vec<String>,
}

/// Every predicate's profile, in the ontology's order, with what each sentence's reading looks
/// up: the words any predicate uses and the ontology's type nouns (gathered once, not per
/// sentence).
#[derive(Debug, Clone)]
pub(crate) struct Profiles {
    list: Vec<Profile>,
    pub(super) words: BTreeSet<String>,
    pub(super) type_nouns: Vec<String>,
}

impl std::ops::Deref for Profiles {
    type Target = [Profile];

    fn deref(&self) -> &[Profile] {
        &self.list
    }
}

/// Profiles of every predicate: content words weighted by how few predicates share them.
pub(crate) fn profiles(ontology: &Ontology) -> Profiles {
    let list = predicate_profiles(ontology);
    Profiles {
        words: list.iter().flat_map(|p| p.words.keys().cloned()).collect(),
        type_nouns: ontology.type_nouns(),
        list,
    }
}

fn predicate_profiles(ontology: &Ontology) -> Vec<Profile> {
    let vocabularies: Vec<BTreeSet<String>> = ontology
        .predicates()
        .iter()
        .map(crate::knowledge::ontology::vocabulary)
        .collect();
    let count = vocabularies.len() as f64;
    let mut df: BTreeMap<&str, f64> = BTreeMap::new();
    for vocabulary in &vocabularies {
        for w in vocabulary {
            *df.entry(w.as_str()).or_default() += 1.0;
        }
    }
    ontology
        .predicates()
        .iter()
        .zip(&vocabularies)
        .map(|(p, vocabulary)| Profile {
            words: vocabulary
                .iter()
                .map(|w| (w.clone(), (1.0 + count / df[w.as_str()]).ln()))
                .collect(),
            unit: p
                .unit
                .as_deref()
                .map(crate::knowledge::words::content_words)
                .unwrap_or_default(),
            prototypes: p
                .patterns
                .iter()
                .flat_map(|pat| {
                    [
                        prototype(p, pat.source(), false),
                        prototype(p, pat.source(), true),
                    ]
                })
                .collect(),
        })
        .collect()
}

/// A pattern as a plain sentence: a slot becomes its type noun ("the team"), or vanishes when
/// the pattern already names the type after it ("The {s} team" reads "The team"), so an encoder
/// compares the shape of the statement rather than any name.
fn prototype(predicate: &Predicate, source: &str, someone: bool) -> String {
    let subject_type = predicate
        .subject_types
        .first()
        .filter(|t| t.as_str() != "any")
        .cloned();
    let object_type = match predicate.object_type.as_str() {
        "text" | "any" => None,
        other => Some(other.to_owned()),
    };
    let mut text = source.to_owned();
    for (slot, kind) in [
        ("{s}", subject_type),
        ("{o:number}", Some("number".to_owned())),
        ("{o}", object_type),
    ] {
        let Some(at) = text.find(slot) else { continue };
        let after = text[at + slot.len()..].trim_start().to_lowercase();
        let replacement = match kind.as_deref() {
            Some("number") => "10".to_owned(),
            Some(t) if after.starts_with(t) => String::new(),
            Some(_) if someone => "someone".to_owned(),
            Some(t) => format!("the {t}"),
            None => "something".to_owned(),
        };
        text.replace_range(at..at + slot.len(), &replacement);
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
