//! Questions about an entity as a whole (`crate::about`), asked through `asking` above it.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use ontoloop_core::Caller;
use ontoloop_core::SignalType;
use ontoloop_core::knowledge::PageVersion;

use crate::Snapshot;
use crate::asking::{Answering, Asking, ask_text};

use crate::about::*;
use ontoloop_core::knowledge::ask::Asked;
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::knowledge::{AnswerStatus, Graph, Ontology, Scope};

const ONTOLOGY: &str = r#"{"predicates": [
    {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR",
     "patterns": ["The {s} plan costs €{o:number} per month."]},
    {"name": "owned_by", "subject_type": "plan", "object_type": "team",
     "patterns": ["The {s} plan is owned by the {o} team."]}],
    "authority": {"default": 2}}"#;

pub(super) fn page(id: &str, body: &str) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version: 1,
        title: id.into(),
        origin: "wiki".into(),
        body: body.into(),
        updated_at: Utc::now(),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

/// A read model of `pages` read under `ontology`, as the analyst reads them.
pub(super) fn snapshot(ontology: Ontology, pages: Vec<PageVersion>) -> Snapshot {
    let mut graph = Graph::new(&ontology);
    let mut log = BTreeMap::new();
    for p in &pages {
        graph.apply_page(&ontology, p, Utc::now());
        log.insert(p.source_id.clone(), p.version);
    }
    Snapshot::from_parts(1, Arc::new(ontology), graph, pages, log, None).expect("snapshot")
}

pub(super) fn ask(snapshot: &Snapshot, text: &str) -> Asked {
    let caller = Caller::new("t", "alice").expect("caller");
    let asking = Asking {
        text,
        scope: Scope::everywhere(),
        design: Design::Ontoloop,
        as_of: Utc::now(),
        ranking: None,
    };
    let answering = Answering::from(&ontoloop_settings::Settings::defaults().retrieval);
    ask_text(snapshot, answering, &caller, asking)
        .expect("answer")
        .0
}

fn cited(asked: &Asked) -> Vec<&str> {
    asked
        .passages
        .iter()
        .map(|p| p.chunk.anchor.doc_id.as_str())
        .collect()
}

#[test]
fn with_no_ontology_pages_answer_and_a_titled_page_names_an_entity() {
    let model = snapshot(
        Ontology::empty(),
        vec![
            page(
                "kep-12",
                "# KEP-12: Pod Spread\n\nPods spread evenly across zones so that one \
                 zone failing takes few replicas down.",
            ),
            page("lunch", "# Lunch\n\nThe canteen serves soup on Fridays."),
        ],
    );
    assert!(model.graph.facts().is_empty(), "no predicate, no fact");
    let kep = model
        .graph
        .resolve("Pod Spread")
        .expect("named by its title");
    assert_eq!(model.graph.resolve("KEP-12").map(|e| &e.id), Some(&kep.id));
    // A question in words: passages, and the gap it reveals.
    let asked = ask(&model, "How do pods spread across zones?");
    assert_eq!(asked.answer.status, AnswerStatus::AnsweredPassages);
    assert_eq!(cited(&asked), ["kep-12"]);
    let signals = asked.signals.expect("signals");
    assert_eq!(signals[0].kind, SignalType::RelationshipUnknown);
    // About the entity as a whole, by its id or its name: it, and the passages naming it.
    for question in [
        "What do we know about KEP-12?",
        "What is Pod Spread?",
        "Tell me about pod spread",
    ] {
        let asked = ask(&model, question);
        assert_eq!(
            asked.answer.status,
            AnswerStatus::AnsweredPassages,
            "{question}"
        );
        assert_eq!(asked.question.entity, kep.id, "{question}");
        assert!(asked.answer.hops.is_empty(), "{question}");
        assert_eq!(cited(&asked), ["kep-12"], "{question}");
        assert_eq!(
            asked.signals,
            Some(Vec::new()),
            "{question}: nothing missing"
        );
    }
    // Something asked of it is not about it as a whole.
    assert_eq!(
        asked_about("Who reviewed KEP-12?", &model.graph, &model.ontology),
        None
    );
    assert_eq!(
        asked_about("What is lunch?", &model.graph, &model.ontology),
        None
    );
}

#[test]
fn a_question_about_a_known_entity_gets_its_slots_and_the_passages_that_name_it() {
    let ontology = Ontology::from_json(ONTOLOGY).expect("ontology");
    let model = snapshot(
        ontology,
        vec![
            page("pricing", "The Pro plan costs €49 per month."),
            page("teams", "The Pro plan is owned by the Atlas team."),
            page("other", "The Basic plan costs €9 per month."),
        ],
    );
    let asked = ask(&model, "What do we know about the Pro plan?");
    assert_eq!(
        asked.answer.status,
        AnswerStatus::AnsweredPassages,
        "{asked:#?}"
    );
    let slots: Vec<(&str, &str)> = asked
        .answer
        .hops
        .iter()
        .map(|(_, predicate, d)| (predicate.as_str(), d.value.as_str()))
        .collect();
    assert_eq!(slots, [("price", "49"), ("owned_by", "Atlas")]);
    let evidence: Vec<&str> = asked
        .answer
        .hops
        .iter()
        .map(|(_, _, d)| d.evidence[0].source.source_id.as_str())
        .collect();
    assert_eq!(evidence, ["pricing", "teams"]);
    let mut pages = cited(&asked);
    pages.sort_unstable();
    assert_eq!(pages, ["pricing", "teams"], "never the Basic plan's page");
    assert_eq!(asked.signals, Some(Vec::new()));
    // A slot asked for is answered by it, not by an overview.
    let price = ask(&model, "How much does the Pro plan cost?");
    assert_eq!(price.answer.status, AnswerStatus::Answered);
    assert_eq!(price.answer.value, "49");
}

#[test]
fn a_question_about_a_document_gets_its_opening_first_never_its_header() {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "status", "subject_type": "pep", "object_type": "text",
             "patterns": ["The status of {s} is {o}."]}],
            "authority": {"default": 2}}"#,
    )
    .expect("ontology");
    let model = snapshot(
        ontology,
        vec![
            page(
                "peps/pep-0594.rst",
                "PEP: 594\nTitle: Removing dead batteries\nStatus: Draft\n\n\
                 Abstract\n========\n\nThis PEP proposes to remove old modules.\n\n\
                 Rationale\n=========\n\nPEP 594 modules are a burden: PEP 594 lists them \
                 and PEP 594 says why, as PEP 594 must.\n",
            ),
            page(
                "peps/pep-0596.rst",
                "PEP: 596\nTitle: Python 3.9 Release Schedule\nStatus: Active\n\n\
                 Abstract\n========\n\nThe removals of PEP 594 land in 3.13, as PEP 594 planned.\n",
            ),
        ],
    );
    for question in ["What is PEP 594 about?", "What does PEP 594 propose?"] {
        let asked = ask(&model, question);
        assert_eq!(
            asked.answer.status,
            AnswerStatus::AnsweredPassages,
            "{question}: {asked:#?}"
        );
        let first = &asked.passages[0];
        assert_eq!(
            (
                first.chunk.anchor.doc_id.as_str(),
                first.chunk.text.as_str()
            ),
            (
                "peps/pep-0594.rst",
                "This PEP proposes to remove old modules."
            ),
            "{question}"
        );
        assert!(
            asked
                .passages
                .iter()
                .all(|p| !p.chunk.text.contains("Status:")),
            "{question}: the header block is no passage"
        );
    }
}

#[test]
fn a_document_no_entity_names_gets_its_opening_first_when_asked_about_by_its_name() {
    let model = snapshot(
        Ontology::empty(),
        vec![
            page(
                "peps/pep-0602.rst",
                "PEP: 602\nTitle: Annual Release Cycle for Python\nStatus: Final\n\n\
                 Abstract\n========\n\nThis document describes a yearly release calendar.\n\n\
                 Rationale\n=========\n\nPEP 602 shortens the cycle: PEP 602 ships every year, \
                 as PEP 602 says.\n",
            ),
            page(
                "peps/pep-0619.rst",
                "PEP: 619\nTitle: Python 3.10 Release Schedule\nStatus: Active\n\n\
                 Abstract\n========\n\nThis schedule follows PEP 602: PEP 602 set its calendar.\n",
            ),
        ],
    );
    for question in [
        "What does PEP 602 propose?",
        "What is PEP 602 (annual release cycle) about?",
    ] {
        let asked = ask(&model, question);
        assert_eq!(
            asked.answer.status,
            AnswerStatus::AnsweredPassages,
            "{question}: {asked:#?}"
        );
        assert_eq!(
            asked.passages[0].chunk.text, "This document describes a yearly release calendar.",
            "{question}"
        );
    }
    // A question that asks something of it keeps the ranking's order.
    let asked = ask(&model, "Which schedule follows PEP 602?");
    assert_ne!(
        asked.passages.first().map(|p| p.chunk.text.as_str()),
        Some("This document describes a yearly release calendar."),
        "{asked:#?}"
    );
}

#[test]
fn a_page_named_in_lower_case_by_its_title_opens_with_its_first_passage_of_prose() {
    let model = snapshot(
        Ontology::empty(),
        vec![
            page(
                "black",
                "> “Any color you like.”\n\n\
                 _Black_ is the uncompromising Python code formatter.\n\n\
                 Formatting with black: black reformats, black is fast, black black.\n",
            ),
            page(
                "formatters",
                "Tools compared: black, black and black again; black wins for black code.\n",
            ),
        ],
    );
    let asked = ask(&model, "What is black for?");
    assert_eq!(
        asked.passages[0].chunk.text, "_Black_ is the uncompromising Python code formatter.",
        "{asked:#?}"
    );
}
