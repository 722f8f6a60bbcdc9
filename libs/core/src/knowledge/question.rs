//! Natural-language questions to (entity, predicate path), through the ontology's own words.
//!
//! Entities are linked by finding a known name or alias in the question (longest first).
//! Predicates are scored by the overlap between the question's words and each predicate's
//! vocabulary (its name, unit and pattern words), plus the answer type the question asks for
//! ("who" a person, "which team" a team, "how much" a number, "what is" a text). When the best
//! predicate does not apply to the entity's type, one hop through a predicate whose object type
//! is the target's subject type is added.

use std::collections::BTreeSet;

use super::graph::Graph;
use super::ontology::{Ontology, Predicate, PredicateKind};

/// A question mapped onto the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The entity name found in the question (or the predicate's fixed subject).
    pub entity: String,
    /// Predicates to follow.
    pub path: Vec<String>,
}

/// Why a question could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unmapped {
    /// No predicate's words appear in the question.
    #[error("the question matches no predicate of the ontology")]
    NoPredicate,
    /// No known entity appears in the question and the predicate has no fixed subject.
    #[error("the question names no known entity")]
    NoEntity,
}

pub(crate) const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "is", "are", "was", "be", "do", "does", "did",
    "what", "which", "who", "how", "i", "we", "our", "it", "its", "that", "this", "with", "by",
    "and", "or", "should", "can", "have", "has", "their", "they", "about", "after", "at", "from",
    "s",
];

/// Irregular English verb forms folded onto the stem of their base, so `led` meets `lead`
/// and `kept` meets `keep`. General English, not any ontology's words.
const IRREGULAR: &[(&str, &str)] = &[
    ("led", "lead"),
    ("kept", "keep"),
    ("paid", "pay"),
    ("sold", "sell"),
    ("held", "hold"),
    ("ran", "run"),
    ("bought", "buy"),
    ("owner", "own"),
    ("owners", "own"),
    ("leader", "lead"),
];

/// Words of a text, lower-cased and lightly stemmed (`owns`, `owned` → `own`).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&w.to_lowercase()))
        .collect()
}

/// A light stem: irregular forms first (`led` → `lead`), then common suffixes.
pub(crate) fn stem(word: &str) -> String {
    if let Some((_, base)) = IRREGULAR.iter().find(|(form, _)| *form == word) {
        return (*base).to_owned();
    }
    let mut w = word.to_owned();
    for suffix in ["ing", "ed", "es", "s"] {
        if w.len() > suffix.len() + 2 && w.ends_with(suffix) {
            w.truncate(w.len() - suffix.len());
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    if w.len() > 4 && w.ends_with("ly") {
        w.truncate(w.len() - 2);
    }
    w
}

pub(crate) fn content_words(text: &str) -> BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

pub(crate) fn vocabulary(predicate: &Predicate) -> BTreeSet<String> {
    let mut text = predicate.name.replace('_', " ");
    if let Some(unit) = &predicate.unit {
        text.push(' ');
        text.push_str(unit);
    }
    for pattern in &predicate.patterns {
        text.push(' ');
        text.push_str(&pattern.literal_text());
    }
    content_words(&text)
}

/// The object types a question asks for, from its question words.
fn asked_types(question: &str) -> BTreeSet<String> {
    let lower = question.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut types = BTreeSet::new();
    for (i, token) in tokens.iter().enumerate() {
        match *token {
            "who" | "whom" => {
                types.insert("person".to_owned());
            }
            "which" | "what" => {
                if let Some(next) = tokens.get(i + 1) {
                    types.insert((*next).to_owned());
                }
                if tokens.get(i + 1) == Some(&"is") || tokens.get(i + 1) == Some(&"are") {
                    types.insert("text".to_owned());
                }
            }
            "much" | "many" | "long" | "price" | "cost" | "percent" => {
                types.insert("number".to_owned());
            }
            _ => {}
        }
    }
    types
}

/// A name known from outside the graph (stated in a page retrieval just read), with the entity
/// type its sentence implies, if any.
pub type ExtraName = (String, Option<String>);

/// Names and implied types stated by these claims: a subject takes its predicate's subject type
/// (when it has one), an entity object its object type.
pub fn names_in_claims(ontology: &Ontology, claims: &[super::extract::Claim]) -> Vec<ExtraName> {
    let mut names = Vec::new();
    for claim in claims {
        let predicate = ontology.predicate(&claim.predicate);
        let subject_type = predicate.and_then(|p| {
            (p.subject_types.len() == 1 && p.subject_types[0] != "any")
                .then(|| p.subject_types[0].clone())
        });
        names.push((claim.subject.name().to_owned(), subject_type));
        let object_type = predicate
            .filter(|p| p.object_is_entity())
            .map(|p| p.object_type.clone());
        names.push((claim.object.clone(), object_type));
    }
    names
}

/// Known names in the question, longest first: graph names and aliases, fixed subjects, and
/// `extra` names (for example subjects stated in pages retrieval found).
fn linked_names(
    question: &str,
    graph: &Graph,
    ontology: &Ontology,
    extra: &[ExtraName],
) -> Vec<String> {
    let haystack = format!(" {} ", words_plain(question).join(" "));
    let mut names: Vec<String> = graph
        .entities()
        .flat_map(|e| e.aliases.iter().cloned().chain([e.name.clone()]))
        .collect();
    names.extend(
        ontology
            .predicates()
            .iter()
            .filter_map(|p| p.fixed_subject.clone()),
    );
    names.extend(extra.iter().map(|(name, _)| name.clone()));
    // A name is found by its words or by its key ("Kestrel mission" is asked as "Kestrel"),
    // except a predicate's fixed subject, whose key is a common word ("Refund policy").
    let normaliser = graph.normaliser();
    let fixed: BTreeSet<String> = ontology
        .predicates()
        .iter()
        .filter_map(|p| p.fixed_subject.as_deref())
        .map(|name| normaliser.key(name))
        .collect();
    let mut found: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let key = normaliser.key(name);
            let mut needles = vec![words_plain(name).join(" ")];
            if !fixed.contains(&key) {
                needles.push(words_plain(&key).join(" "));
            }
            needles
                .iter()
                .any(|needle| !needle.is_empty() && haystack.contains(&format!(" {needle} ")))
        })
        .collect();
    found.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    found.dedup();
    found
}

fn words_plain(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The type of the entity a name refers to: from the graph, the name's own type noun, or what
/// the pages just read imply.
fn entity_type(
    graph: &Graph,
    ontology: &Ontology,
    name: &str,
    extra: &[ExtraName],
) -> Option<String> {
    if let Some(entity) = graph.resolve(name) {
        if let Some(t) = &entity.entity_type {
            return Some(t.clone());
        }
        // Infer from the predicates it is the subject of.
        let mut types: BTreeSet<String> = BTreeSet::new();
        for fact in graph.facts().iter().filter(|f| f.entity == entity.id) {
            if let Some(p) = ontology.predicate(&fact.predicate)
                && p.subject_types.len() == 1
            {
                types.insert(p.subject_types[0].clone());
            }
        }
        if types.len() == 1 {
            return types.into_iter().next();
        }
    }
    graph.normaliser().type_of(name).or_else(|| {
        let key = graph.normaliser().key(name);
        extra
            .iter()
            .filter(|(n, t)| t.is_some() && graph.normaliser().key(n) == key)
            .find_map(|(_, t)| t.clone())
    })
}

/// Maps a question. `extra_names` are names known from outside the graph (pages just read).
pub fn map_question(
    question: &str,
    graph: &Graph,
    ontology: &Ontology,
    extra_names: &[ExtraName],
) -> Result<Mapped, Unmapped> {
    let names = linked_names(question, graph, ontology, extra_names);
    let entity = names.first().cloned();
    // Score predicates on the words left once the entity's own words are removed.
    let mut remaining = content_words(question);
    if let Some(entity) = &entity {
        for w in content_words(entity) {
            remaining.remove(&w);
        }
    }
    let asked = asked_types(question);
    let mut scored: Vec<(f64, &Predicate)> = ontology
        .predicates()
        .iter()
        .filter(|p| p.kind == PredicateKind::Slot)
        .map(|p| {
            let overlap = vocabulary(p).intersection(&remaining).count() as f64;
            let bonus = if asked.contains(&p.object_type) {
                1.5
            } else {
                0.0
            };
            (overlap + bonus, p)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let Some(&(_, target)) = scored.first() else {
        return Err(Unmapped::NoPredicate);
    };
    let entity = match (entity, &target.fixed_subject) {
        (_, Some(fixed)) => fixed.clone(),
        (Some(entity), None) => entity,
        (None, None) => return Err(Unmapped::NoEntity),
    };
    let mut path = vec![target.name.clone()];
    if target.fixed_subject.is_none()
        && let Some(kind) = entity_type(graph, ontology, &entity, extra_names)
        && !target.applies_to(&kind)
        && let Some(hop) = ontology.predicates().iter().find(|p| {
            p.kind == PredicateKind::Slot
                && p.applies_to(&kind)
                && target.subject_types.contains(&p.object_type)
        })
    {
        path.insert(0, hop.name.clone());
    }
    Ok(Mapped { entity, path })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::graph::PageVersion;
    use crate::knowledge::ontology::tests::sample;
    use chrono::Utc;

    fn graph() -> (Ontology, Graph) {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let body = "The Pro plan costs €49 per user per month. Tessaly Dock is included in the Pro plan. \
                    Payments service is owned by the Atlas team. The Atlas team is led by Derya Kaya. \
                    Tessaly Dock is our warehouse slotting tool. Customers can request a refund within 30 days of purchase.";
        let page = PageVersion {
            source_id: "p".into(),
            version: 1,
            title: "p".into(),
            origin: "faq".into(),
            body: body.into(),
            updated_at: Utc::now(),
            acl: Vec::new(),
            confidence: 1.0,
        };
        graph.apply_page(&ontology, &page, Utc::now());
        (ontology, graph)
    }

    fn mapped(question: &str) -> (String, Vec<String>) {
        let (ontology, graph) = graph();
        let m = map_question(question, &graph, &ontology, &[]).expect("maps");
        (m.entity, m.path)
    }

    #[test]
    fn maps_direct_questions() {
        assert_eq!(
            mapped("How much does the Pro plan cost per user per month?"),
            ("Pro".into(), vec!["price".into()])
        );
        assert_eq!(
            mapped("Which team owns the Payments service?"),
            ("Payments service".into(), vec!["owned_by".into()])
        );
        assert_eq!(
            mapped("Who leads the Atlas team?"),
            ("Atlas".into(), vec!["led_by".into()])
        );
        assert_eq!(
            mapped("What is Tessaly Dock?"),
            ("Tessaly Dock".into(), vec!["does".into()])
        );
        assert_eq!(
            mapped("How many days do customers have to request a refund?"),
            ("Refund policy".into(), vec!["refund_days".into()])
        );
    }

    #[test]
    fn adds_a_hop_when_the_target_does_not_apply_to_the_entity() {
        assert_eq!(
            mapped("How much does the plan that includes Tessaly Dock cost?"),
            (
                "Tessaly Dock".into(),
                vec!["included_in".into(), "price".into()]
            )
        );
        assert_eq!(
            mapped("Who should I page about a Payments service outage?"),
            (
                "Payments service".into(),
                vec!["owned_by".into(), "led_by".into()]
            )
        );
    }

    #[test]
    fn pages_just_read_type_a_name_the_graph_lacks() {
        let (ontology, graph) = graph();
        let claims = crate::knowledge::extract_claims(
            &ontology,
            "Tessaly Pier is included in the Pro plan.",
        );
        let extra = names_in_claims(&ontology, &claims);
        let m = map_question(
            "How much does the plan that includes Tessaly Pier cost?",
            &graph,
            &ontology,
            &extra,
        )
        .expect("maps");
        assert_eq!(
            (m.entity.as_str(), m.path.clone()),
            (
                "Tessaly Pier",
                vec!["included_in".to_owned(), "price".to_owned()]
            )
        );
    }

    #[test]
    fn says_when_it_cannot() {
        let (ontology, graph) = graph();
        assert_eq!(
            map_question("Is it raining?", &graph, &ontology, &[]),
            Err(Unmapped::NoPredicate)
        );
        assert_eq!(
            map_question("Which team owns the moon?", &graph, &ontology, &[]),
            Err(Unmapped::NoEntity)
        );
    }
}
