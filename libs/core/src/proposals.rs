//! Drafting proposed graph updates from the records a connected source holds about an entity the
//! graph lacks. Pure: the caller passes the tenant's ontology and graph, the documents found and
//! the domain vocabulary.
//!
//! Each slot (entity, predicate) the documents state becomes one draft. Its value is the one most
//! documents state (ties: the alphabetically first, so drafts are deterministic); its confidence
//! is the share of documents that agree, and its confidence variance the variance of that
//! agreement across the documents (`p·(1−p)`): zero when every source agrees, up to 0.25 when they
//! split evenly.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::knowledge::{ClaimSubject, Graph, Ontology, PredicateKind, extract_claims, same_value};
use crate::patterns::fold;

/// A document found in a connected source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundDoc {
    /// Source id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Body text.
    pub body: String,
}

/// One drafted update.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// Entity, as the documents name it.
    pub entity: String,
    /// Predicate.
    pub predicate: String,
    /// Current values in the graph, joined with `; ` (empty when the slot is new).
    pub before: String,
    /// Proposed value.
    pub after: String,
    /// Share of the documents stating the slot that state this value.
    pub confidence: f64,
    /// `confidence · (1 − confidence)`.
    pub confidence_variance: f64,
    /// Documents stating this value, by id.
    pub sources: Vec<String>,
    /// Domain of the predicate.
    pub domain: String,
}

/// The domain of a predicate: the first domain (in name order) one of whose words the predicate
/// name contains, else `general`.
pub fn domain_of(predicate: &str, domains: &BTreeMap<String, Vec<String>>) -> String {
    let name = predicate.to_lowercase();
    domains
        .iter()
        .find(|(_, words)| {
            words
                .iter()
                .any(|w| !w.trim().is_empty() && name.contains(&w.trim().to_lowercase()))
        })
        .map_or_else(|| "general".to_owned(), |(domain, _)| domain.clone())
}

/// Whether a named subject is the missing entity `key` (folded): equal, or one names the other
/// as whole words ("Kite" and "Project Kite").
fn names(subject: &str, key: &str) -> bool {
    let subject = fold(subject);
    if subject.is_empty() || key.is_empty() {
        return false;
    }
    let padded = |s: &str| format!(" {s} ");
    subject == key
        || padded(&subject).contains(&padded(key))
        || padded(key).contains(&padded(&subject))
}

/// Drafts updates for the entity `key` (a folded name) from `docs`.
pub fn draft_updates(
    ontology: &Ontology,
    graph: &Graph,
    key: &str,
    docs: &[FoundDoc],
    domains: &BTreeMap<String, Vec<String>>,
    at: DateTime<Utc>,
) -> Vec<Draft> {
    // slot → value (folded) → (value as stated, documents)
    type Values = BTreeMap<String, (String, Vec<String>)>;
    let mut slots: BTreeMap<(String, String), (String, Values)> = BTreeMap::new();
    for doc in docs {
        // Headings name a record; they are not sentences of it.
        let text: Vec<&str> = doc
            .body
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('#'))
            .collect();
        for claim in extract_claims(ontology, &text.join(" ")) {
            if claim.kind != PredicateKind::Slot {
                continue;
            }
            let ClaimSubject::Named(subject) = &claim.subject else {
                continue;
            };
            if !names(subject, key) {
                continue;
            }
            let slot = slots
                .entry((fold(subject), claim.predicate.clone()))
                .or_insert_with(|| (subject.clone(), BTreeMap::new()));
            let value = slot
                .1
                .entry(fold(&claim.object))
                .or_insert_with(|| (claim.object.clone(), Vec::new()));
            if !value.1.contains(&doc.id) {
                value.1.push(doc.id.clone());
            }
        }
    }
    let mut drafts = Vec::new();
    for ((_, predicate), (entity, values)) in slots {
        let total: usize = values.values().map(|(_, docs)| docs.len()).sum();
        // Most documents first; BTreeMap order breaks ties alphabetically.
        let Some((after, sources)) = values.into_values().fold(
            None::<(String, Vec<String>)>,
            |best, candidate| match best {
                Some(best) if best.1.len() >= candidate.1.len() => Some(best),
                _ => Some(candidate),
            },
        ) else {
            continue;
        };
        let before: Vec<String> = graph
            .resolve(&entity)
            .map(|e| {
                graph
                    .slot_at(&e.id, &predicate, at)
                    .map(|f| f.object.clone())
                    .collect()
            })
            .unwrap_or_default();
        if before.iter().any(|b| same_value(b, &after)) {
            // The graph already states it: nothing to update.
            continue;
        }
        let confidence = sources.len() as f64 / total.max(1) as f64;
        drafts.push(Draft {
            domain: domain_of(&predicate, domains),
            entity,
            predicate,
            before: before.join("; "),
            after,
            confidence,
            confidence_variance: confidence * (1.0 - confidence),
            sources,
        });
    }
    drafts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::graph::RecordValue;
    use crate::knowledge::scope::Scope;

    fn ontology() -> Ontology {
        Ontology::from_value(serde_json::json!({
            "predicates": [
                {"name": "owner", "subject_type": "project", "object_type": "team",
                 "patterns": ["{s} is owned by the {o} team."]},
                {"name": "budget", "subject_type": "project", "object_type": "number",
                 "patterns": ["{s} has a budget of {o}."]}
            ],
            "authority": {"default": 1}
        }))
        .expect("ontology")
    }

    fn domains() -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([("financial".to_owned(), vec!["budget".to_owned()])])
    }

    fn doc(id: &str, body: &str) -> FoundDoc {
        FoundDoc {
            id: id.into(),
            title: id.into(),
            body: body.into(),
        }
    }

    #[test]
    fn agreeing_sources_give_full_confidence_and_split_sources_variance() {
        let ontology = ontology();
        let graph = Graph::new(&ontology);
        let docs = [
            doc(
                "a",
                "# Project Kite\nProject Kite is owned by the Atlas team.\nProject Kite has a budget of 40000.",
            ),
            doc(
                "b",
                "Project Kite is owned by the Atlas team. Project Kite has a budget of 90000.",
            ),
            doc("c", "Project Wren is owned by the Birch team."),
        ];
        let drafts = draft_updates(&ontology, &graph, "kite", &docs, &domains(), Utc::now());
        assert_eq!(drafts.len(), 2, "{drafts:?}");
        let owner = drafts
            .iter()
            .find(|d| d.predicate == "owner")
            .expect("owner");
        assert_eq!((owner.after.as_str(), owner.confidence), ("Atlas", 1.0));
        assert_eq!(owner.confidence_variance, 0.0);
        assert_eq!(owner.domain, "general");
        assert_eq!(owner.sources, vec!["a".to_owned(), "b".to_owned()]);
        let budget = drafts
            .iter()
            .find(|d| d.predicate == "budget")
            .expect("budget");
        assert_eq!(budget.confidence, 0.5);
        assert_eq!(budget.confidence_variance, 0.25);
        assert_eq!(budget.domain, "financial");
        assert_eq!(
            budget.after, "40000",
            "ties go to the alphabetically first value"
        );
    }

    #[test]
    fn slots_the_graph_already_states_are_not_drafted() {
        let ontology = ontology();
        let mut graph = Graph::new(&ontology);
        let at = Utc::now() - chrono::Duration::seconds(5);
        graph.apply_record(
            &ontology,
            &RecordValue {
                source: "record:hr",
                sequence: 1,
                entity: "Project Kite",
                predicate: "owner",
                value: "Atlas",
                at,
                effective_from: None,
                scope: &Scope::everywhere(),
            },
        );
        let docs = [doc("a", "Project Kite is owned by the Atlas team.")];
        assert!(
            draft_updates(
                &ontology,
                &graph,
                "project kite",
                &docs,
                &domains(),
                Utc::now()
            )
            .is_empty()
        );
        let docs = [doc("a", "Project Kite is owned by the Birch team.")];
        let drafts = draft_updates(
            &ontology,
            &graph,
            "project kite",
            &docs,
            &domains(),
            Utc::now(),
        );
        assert_eq!(drafts.len(), 1);
        assert_eq!(
            (drafts[0].before.as_str(), drafts[0].after.as_str()),
            ("Atlas", "Birch")
        );
    }

    #[test]
    fn domains_match_words_in_the_predicate() {
        let domains = domains();
        assert_eq!(domain_of("annual_budget", &domains), "financial");
        assert_eq!(domain_of("owner", &domains), "general");
    }
}
