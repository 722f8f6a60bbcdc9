//! Growing an ontology from a tenant's corpus (issue 40): entity types and predicates proposed
//! from its pages and from the questions agents failed to get answered. Structure comes first:
//! recurring fields of records (header blocks, YAML / TOML / JSON, front matter, `Key of Subject:
//! value` lines) become predicates, the key naming an identifier (`kep-number`) or an id pattern
//! in titles (`KEP-12`) the subject's type; then recurring statements between typed names in
//! prose ([`phrases`]). A failed question is matched to the predicate whose words (or meaning,
//! with an encoder) its relation words ask for, and adds those words to its vocabulary.
//!
//! Pure: pages and questions in, a [`Proposal`] out. It generalises from document structure,
//! never from any world's wording; the same code reads every tenant.

mod fields;
mod fixed;
mod phrases;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::knowledge::ask::key_words;
use crate::knowledge::encoder::{SentenceEncoder, cosine};
use crate::knowledge::words::stem;
use crate::patterns::relation_words;

/// One page of the corpus, as the tenant holds it now.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its text.
    pub body: &'a str,
}

/// What shapes a proposal.
#[derive(Debug, Clone)]
pub struct Options {
    /// Entity types the tenant already has (kept when a proposed type is one of them).
    pub known_types: Vec<String>,
    /// Distinct subjects a field or statement must be seen with to be proposed.
    pub min_subjects: usize,
    /// Predicates proposed, at most (those with the most subjects first).
    pub max_predicates: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            known_types: Vec::new(),
            min_subjects: 2,
            max_predicates: 64,
        }
    }
}

/// Example sentences or fields a proposed predicate keeps, at most.
pub const MAX_EXAMPLES: usize = 3;

/// Facts a proposed predicate's preview keeps, at most.
pub const MAX_PREVIEW_FACTS: usize = 200;

/// Patterns a proposed predicate carries, at most (its canonical statement, then one per
/// distinct way failed questions asked for it).
pub(crate) const MAX_PATTERNS: usize = 8;

/// Cosine similarity (by the sentence encoder) at which a failed question's relation words ask
/// for a predicate that shares no word with them.
pub const QUESTION_MIN_SIMILARITY: f32 = 0.5;

/// An entity type proposed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedType {
    /// Its name, a lower-case noun (`kep`, `team`).
    pub name: String,
    /// What named it: `id key kep-number`, `id pattern KEP-12`, `type noun`.
    pub from: String,
    /// Entities of the type seen, a few.
    pub examples: Vec<String>,
}

/// One fact a proposed predicate would add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewFact {
    /// The subject's name.
    pub subject: String,
    /// The object as written.
    pub object: String,
    /// The page it comes from.
    pub page: String,
}

/// A predicate proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedPredicate {
    /// Its name (`latest_milestone`).
    pub name: String,
    /// What it was found from: `field latest-milestone`, `statement`.
    pub from: String,
    /// The type of its subjects.
    pub subject_type: String,
    /// The type of its objects: `number`, `date`, `version`, `text` or an entity type.
    pub object_type: String,
    /// A fixed subject, for a statement about one thing only (no `{s}` in its patterns).
    pub subject: Option<String>,
    /// Its words: the key's or statement's, and those failed questions asked it with.
    pub vocabulary: Vec<String>,
    /// Its patterns, as an ontology writes them (`The latest milestone of {s} is {o}.`).
    pub patterns: Vec<String>,
    /// Fields or sentences of the corpus stating it, a few.
    pub examples: Vec<String>,
    /// Distinct subjects it was seen with.
    pub subjects: usize,
    /// The facts it would add (at most [`MAX_PREVIEW_FACTS`]).
    pub facts: Vec<PreviewFact>,
    /// The failed questions it would answer.
    pub answers: Vec<String>,
}

/// An ontology proposed from a corpus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Entity types.
    pub types: Vec<ProposedType>,
    /// Predicates, those with the most subjects first.
    pub predicates: Vec<ProposedPredicate>,
}

impl Proposal {
    /// The ontology document (the `ontology.set` body) holding the predicates `keep` accepts,
    /// with `authority` as the origins' ranks; `None` when it keeps none.
    pub fn ontology(
        &self,
        keep: impl Fn(&ProposedPredicate) -> bool,
        authority: &BTreeMap<String, i32>,
    ) -> Option<serde_json::Value> {
        let predicates: Vec<serde_json::Value> = self
            .predicates
            .iter()
            .filter(|p| keep(p))
            .map(ProposedPredicate::document)
            .collect();
        if predicates.is_empty() {
            return None;
        }
        let mut authority = authority.clone();
        authority
            .entry(crate::knowledge::ontology::DEFAULT_ORIGIN.to_owned())
            .or_insert(1);
        Some(serde_json::json!({"predicates": predicates, "authority": authority}))
    }

    /// The ontology document `current` (the one in force; `None` when none is set) with this
    /// proposal's predicates added after its own. A predicate `current` has by name stays as it
    /// is; everything else of `current` (authority, scopes) is kept, and an ontology set for the
    /// first time ranks every origin 1. Fails when `current` is not an ontology document.
    pub fn extend(&self, current: Option<&serde_json::Value>) -> Result<serde_json::Value, String> {
        let mut doc = match current {
            Some(serde_json::Value::Object(doc)) => doc.clone(),
            Some(_) => return Err("the ontology in force is not a JSON object".to_owned()),
            None => serde_json::Map::new(),
        };
        let mut predicates = match doc.remove("predicates") {
            Some(serde_json::Value::Array(predicates)) => predicates,
            None => Vec::new(),
            Some(_) => return Err("the ontology in force has no list of predicates".to_owned()),
        };
        let taken: BTreeSet<String> = predicates
            .iter()
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        predicates.extend(
            self.predicates
                .iter()
                .filter(|p| !taken.contains(&p.name))
                .map(ProposedPredicate::document),
        );
        doc.insert(
            "predicates".to_owned(),
            serde_json::Value::Array(predicates),
        );
        doc.entry("authority").or_insert_with(|| {
            let mut authority = serde_json::Map::new();
            authority.insert(
                crate::knowledge::ontology::DEFAULT_ORIGIN.to_owned(),
                serde_json::Value::from(1),
            );
            serde_json::Value::Object(authority)
        });
        Ok(serde_json::Value::Object(doc))
    }

    /// The proposal as a reviewer edited it: the predicates `edit` drops left out, those it
    /// renames renamed. Fails, saying why, when it names a predicate the proposal does not
    /// have, gives a name that is no predicate name, makes two predicates one name, or drops
    /// every predicate (that is a rejection).
    pub fn edited(&self, edit: &Edit) -> Result<Proposal, String> {
        let names: BTreeSet<&str> = self.predicates.iter().map(|p| p.name.as_str()).collect();
        for name in edit.drop.iter().chain(edit.rename.keys()) {
            if !names.contains(name.as_str()) {
                return Err(format!("{name:?} is not a predicate of the proposal"));
            }
        }
        let mut edited = self.clone();
        edited.predicates.retain(|p| !edit.drop.contains(&p.name));
        for p in &mut edited.predicates {
            if let Some(new) = edit.rename.get(&p.name) {
                let new = new.trim();
                if !is_predicate_name(new) {
                    return Err(format!(
                        "{new:?} is not a predicate name: lower-case letters, digits and \
                         underscores, starting with a letter, at most {MAX_NAME_CHARS} characters"
                    ));
                }
                p.name = new.to_owned();
            }
        }
        let mut seen = BTreeSet::new();
        for p in &edited.predicates {
            if !seen.insert(p.name.as_str()) {
                return Err(format!("two predicates would be named {:?}", p.name));
            }
        }
        if edited.predicates.is_empty() {
            return Err("the edit drops every predicate: reject the proposal instead".to_owned());
        }
        Ok(edited)
    }

    /// The distinct failed questions its predicates would answer, in order.
    pub fn answered(&self) -> Vec<&str> {
        let mut answered: Vec<&str> = Vec::new();
        for question in self.predicates.iter().flat_map(|p| &p.answers) {
            if !answered.contains(&question.as_str()) {
                answered.push(question);
            }
        }
        answered
    }
}

impl ProposedPredicate {
    /// Its entry in an ontology document.
    fn document(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "name": self.name,
            "subject_type": self.subject_type,
            "object_type": self.object_type,
            "patterns": self.patterns,
        });
        if let Some(subject) = &self.subject {
            doc["subject"] = serde_json::Value::String(subject.clone());
        }
        doc
    }
}

/// A reviewer's edit of a proposal: predicates dropped, predicates renamed (old name to new).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// Names of the predicates left out.
    #[serde(default)]
    pub drop: Vec<String>,
    /// New names, by the proposed name.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
}

/// The longest predicate name an edit may give.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `name` can name a predicate: `[a-z][a-z0-9_]*`, at most [`MAX_NAME_CHARS`].
fn is_predicate_name(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Proposes an ontology for `pages`, matching each of the `failed` questions to the predicate
/// it asks for. `encoder`, when loaded, matches a question by meaning as well as by words.
pub fn propose(
    pages: &[Page<'_>],
    failed: &[&str],
    options: &Options,
    encoder: Option<&dyn SentenceEncoder>,
) -> Proposal {
    let mut types = Types::default();
    let mut predicates = fields::propose(pages, options, &mut types);
    let taken: BTreeSet<String> = predicates.iter().map(|p| p.name.clone()).collect();
    predicates.extend(phrases::propose(pages, failed, options, &mut types, &taken));
    let taken: BTreeSet<String> = predicates.iter().map(|p| p.name.clone()).collect();
    predicates.extend(fixed::propose(pages, failed, &mut types, &taken));
    predicates.sort_by(|a, b| b.subjects.cmp(&a.subjects).then(a.name.cmp(&b.name)));
    predicates.truncate(options.max_predicates);
    // Every question is matched against the predicates as the corpus gave them, then their
    // words are added: one question's words never pull another question its way.
    let matched: Vec<(&str, usize)> = failed
        .iter()
        .filter_map(|q| asked_for(q, &predicates, encoder).map(|at| (*q, at)))
        .collect();
    for (question, at) in matched {
        {
            let words = question_words(question);
            let p = &mut predicates[at];
            p.answers.push(question.to_owned());
            if words.is_empty() {
                continue;
            }
            for w in &words {
                if !p.vocabulary.contains(w) {
                    p.vocabulary.push(w.clone());
                }
            }
            let pattern = asked_pattern(p, &words);
            if p.patterns.len() < MAX_PATTERNS && !p.patterns.contains(&pattern) {
                p.patterns.push(pattern);
            }
        }
    }
    Proposal {
        types: types.into_proposed(&options.known_types),
        predicates,
    }
}

/// The relation words a failed question asks with (its key words less names, pronouns and
/// auxiliaries: "Which milestone did KEP-12 last target?" asks `milestone last target`).
pub fn question_words(question: &str) -> Vec<String> {
    relation_words(&key_words(question).join(" "), question)
}

/// The predicate a failed question asks for: the most of its relation words among the
/// predicate's words (stemmed), with the encoder's similarity of the two added when one is
/// loaded, and a subject the question names preferred; `None` when nothing fits or two fit
/// alike.
fn asked_for(
    question: &str,
    predicates: &[ProposedPredicate],
    encoder: Option<&dyn SentenceEncoder>,
) -> Option<usize> {
    let words = question_words(question);
    let lower = question.to_lowercase();
    let named: BTreeSet<String> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let names_subject = |p: &ProposedPredicate| {
        p.facts.iter().any(|f| {
            let words: Vec<String> = f
                .subject
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect();
            !words.is_empty() && words.iter().all(|w| named.contains(w))
        })
    };
    if words.is_empty() {
        // "What is X?" asks for no relation but what X is: the one description of X.
        let mut described = predicates
            .iter()
            .enumerate()
            .filter(|(_, p)| p.object_type == "text" && p.subject.is_none() && names_subject(p));
        let (at, _) = described.next()?;
        return described.next().is_none().then_some(at);
    }
    let asked: BTreeSet<String> = words.iter().map(|w| stem(w)).collect();
    let meaning: Option<Vec<f32>> = encoder.and_then(|e| {
        let mut texts = vec![words.join(" ")];
        texts.extend(predicates.iter().map(phrase_of));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = e.encode(&refs).ok()?;
        let (first, rest) = vectors.split_first()?;
        Some(rest.iter().map(|v| cosine(first, v)).collect())
    });
    let owns: Vec<BTreeSet<String>> = predicates
        .iter()
        .map(|p| {
            p.vocabulary
                .iter()
                .map(|w| stem(w))
                .chain(std::iter::once(stem(&p.object_type)))
                .chain(std::iter::once(stem(&p.subject_type)))
                .collect()
        })
        .collect();
    // A word few predicates have says more than one many have (a type noun most share): each
    // weighs ln(1 + n / df), a word of one predicate alone 1.
    let n = predicates.len() as f64;
    let weight = |w: &String| {
        let df = owns.iter().filter(|own| own.contains(w)).count().max(1) as f64;
        (1.0 + n / df).ln() / (1.0 + n).ln()
    };
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (i, p) in predicates.iter().enumerate() {
        let overlap: f64 = asked.intersection(&owns[i]).map(weight).sum();
        let cos = meaning.as_ref().map_or(0.0, |m| f64::from(m[i]));
        if overlap == 0.0 && cos < f64::from(QUESTION_MIN_SIMILARITY) {
            continue;
        }
        // Words the predicate's name has that the question does not ask weigh a little against.
        let name_words: Vec<String> = p.name.split('_').map(stem).collect();
        let unasked = name_words.iter().filter(|w| !asked.contains(*w)).count() as f64;
        let subject_named = names_subject(p)
            || p.subject
                .as_deref()
                .is_some_and(|s| lower.contains(&s.to_lowercase()));
        let score = overlap + cos - 0.1 * unasked / name_words.len().max(1) as f64
            + if subject_named { 0.5 } else { 0.0 };
        scored.push((score, i));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    match scored.as_slice() {
        [] => None,
        [(_, one)] => Some(*one),
        [(best, at), (second, _), ..] => (best - second >= 0.05).then_some(*at),
    }
}

/// A predicate's words as a phrase, for the encoder.
fn phrase_of(p: &ProposedPredicate) -> String {
    let mut words = vec![p.name.replace('_', " ")];
    words.extend(p.vocabulary.iter().take(6).cloned());
    words.join(" ")
}

/// The pattern that carries a question's relation words into a predicate's vocabulary (the
/// question reader and the semantic stage read a predicate by its patterns' words).
fn asked_pattern(p: &ProposedPredicate, words: &[String]) -> String {
    let object = if p.object_type == "number" {
        "{o:number}"
    } else {
        "{o}"
    };
    match &p.subject {
        Some(_) => format!("The {} is {object}.", words.join(" ")),
        None => format!("{{s}} {} {object}.", words.join(" ")),
    }
}

/// Entity types found while reading, with their evidence.
#[derive(Debug, Default)]
pub(crate) struct Types {
    found: BTreeMap<String, (String, BTreeSet<String>)>,
}

impl Types {
    /// Records `name` as a type, found by `from`, with `example` an entity of it.
    pub(crate) fn add(&mut self, name: &str, from: &str, example: &str) {
        let entry = self
            .found
            .entry(name.to_owned())
            .or_insert_with(|| (from.to_owned(), BTreeSet::new()));
        if entry.1.len() < MAX_EXAMPLES {
            entry.1.insert(example.to_owned());
        }
    }

    fn into_proposed(self, known: &[String]) -> Vec<ProposedType> {
        self.found
            .into_iter()
            .map(|(name, (from, examples))| ProposedType {
                from: if known.contains(&name) {
                    format!("{from} (known)")
                } else {
                    from
                },
                name,
                examples: examples.into_iter().collect(),
            })
            .collect()
    }
}

/// The lower-case words of a key (`latest-milestone`, `owningSig`: two each), as the structured
/// stage reads them.
pub(crate) use crate::knowledge::structured::key_words as key_words_of;

/// A predicate or type name from words: `latest_milestone`.
pub(crate) fn name_of(words: &[String]) -> String {
    words.join("_")
}

/// The shape of a set of values, as an object type: `number`, `date`, `version`, `text`, or
/// `None` for names (an entity type, named by the caller).
pub(crate) fn value_shape(values: &[String]) -> Option<&'static str> {
    let n = values.len().max(1) as f64;
    let share = |f: &dyn Fn(&str) -> bool| values.iter().filter(|v| f(v)).count() as f64 / n;
    if share(&|v| crate::knowledge::structured::looks_like_date(v)) >= 0.8 {
        Some("date")
    } else if share(&is_version) >= 0.5 && share(&|v| is_version(v) || is_number(v)) >= 0.8 {
        Some("version")
    } else if share(&is_number) >= 0.8 {
        Some("number")
    } else if share(&|v| v.split_whitespace().count() > 5) >= 0.3
        || share(&|v| matches!(v.to_lowercase().as_str(), "true" | "false" | "yes" | "no")) >= 0.5
    {
        Some("text")
    } else {
        None
    }
}

/// A number as written (`49`, `€49`, `99.9%`, `1,200`).
pub(crate) fn is_number(value: &str) -> bool {
    let v = value
        .trim()
        .trim_matches(|c: char| matches!(c, '€' | '$' | '£' | '%'))
        .replace(',', "");
    !v.is_empty() && v.parse::<f64>().is_ok()
}

/// A release or version: `v1.28`, `3.12.0`, `1.33` (a dot, digits, an optional `v`).
pub(crate) fn is_version(value: &str) -> bool {
    let v = value.trim().trim_start_matches(['v', 'V']);
    v.contains('.')
        && v.split('.').count() >= 2
        && v.split('.')
            .all(|part| !part.is_empty() && part.chars().next().is_some_and(|c| c.is_ascii_digit()))
        && (value.trim().starts_with(['v', 'V']) || v.split('.').count() >= 3)
}

#[cfg(test)]
mod tests;
