//! Questions about the knowledge as a whole (`crate::overview`): how two entities relate, and
//! the main themes, asked through `asking` above it.

use ontoloop_core::knowledge::{AnswerStatus, Ontology};

use super::about_tests::{ask, page, snapshot};
use crate::Snapshot;

const ONTOLOGY: &str = r#"{"predicates": [
    {"name": "depends_on", "subject_type": "service", "object_type": "service",
     "patterns": ["{s} depends on {o}."]},
    {"name": "maintained_by", "subject_type": "service", "object_type": "team",
     "patterns": ["{s} is maintained by the {o} team."]}],
    "authority": {"default": 2}}"#;

fn world() -> Snapshot {
    snapshot(
        Ontology::from_json(ONTOLOGY).expect("ontology"),
        vec![
            page(
                "payments",
                "Kite depends on Ledger. Ledger depends on Vault. Kite is maintained by the Payments team. Ledger is maintained by the Payments team.",
            ),
            page(
                "search",
                "Atlas depends on Beacon. Beacon depends on Comet. Atlas is maintained by the Search team. Comet is maintained by the Search team.",
            ),
        ],
    )
}

#[test]
fn how_two_entities_relate_is_the_chain_of_facts_with_their_evidence() {
    let model = world();
    let asked = ask(&model, "How does Kite relate to Vault?");
    assert_eq!(asked.answer.status, AnswerStatus::Answered, "{asked:?}");
    assert_eq!(
        asked.answer.value, "Kite —depends_on→ Ledger; Ledger —depends_on→ Vault",
        "{asked:?}"
    );
    assert_eq!(asked.answer.hops.len(), 2);
    for (_, _, decision) in &asked.answer.hops {
        assert_eq!(
            decision
                .evidence
                .first()
                .map(|c| c.source.source_id.as_str()),
            Some("payments"),
            "each step cites its page: {decision:?}"
        );
    }
    let reverse = ask(&model, "What is the relationship between Vault and Kite?");
    assert_eq!(reverse.answer.hops.len(), 2, "{reverse:?}");
    // Nothing ties the two pages' services: the question goes on as any other.
    let apart = ask(&model, "How is Kite connected to Atlas?");
    assert_ne!(apart.answer.status, AnswerStatus::Answered, "{apart:?}");
}

#[test]
fn the_main_themes_are_the_communities_named_by_their_central_entities() {
    let model = world();
    let asked = ask(&model, "What are the main themes?");
    assert_eq!(asked.answer.status, AnswerStatus::Answered, "{asked:?}");
    let themes: Vec<&str> = asked.answer.value.split("; ").collect();
    assert_eq!(themes.len(), 2, "{asked:?}");
    assert!(
        themes.iter().any(|t| t.starts_with("Ledger")),
        "Ledger is the most tied in its community: {themes:?}"
    );
    assert!(
        themes.iter().all(|t| t.ends_with("(4 entities)")),
        "{themes:?}"
    );
    let cited: Vec<&str> = asked
        .answer
        .hops
        .iter()
        .filter_map(|(_, _, d)| d.evidence.first())
        .map(|c| c.source.source_id.as_str())
        .collect();
    assert!(
        cited.contains(&"payments") && cited.contains(&"search"),
        "{cited:?}"
    );
    // A question naming something is not an overview of everything.
    let about = ask(&model, "Give me an overview of Kite");
    assert_ne!(about.answer.value, asked.answer.value, "{about:?}");
}

#[test]
fn the_entity_graph_and_communities_are_built_once_per_graph_and_kept() {
    let model = world();
    let kept = model.overview_of(&model.graph);
    assert_eq!(
        kept.built(),
        (false, false),
        "nothing is built before a question"
    );
    let relate = ask(&model, "How does Kite relate to Vault?");
    assert_eq!(relate.answer.status, AnswerStatus::Answered, "{relate:?}");
    assert_eq!(
        kept.built(),
        (true, false),
        "relating needs the entity graph, not the communities"
    );
    let first = ask(&model, "What are the main themes?");
    assert_eq!(kept.built(), (true, true));
    let again = ask(&model, "What are the main themes?");
    assert_eq!(again.answer.value, first.answer.value);
    assert!(
        std::sync::Arc::ptr_eq(&kept, &model.overview_of(&model.graph)),
        "every question of the same graph shares one overview"
    );
    // Another graph (a caller's view) has an overview of its own.
    let other = std::sync::Arc::new((*model.graph).clone());
    assert!(!std::sync::Arc::ptr_eq(&kept, &model.overview_of(&other)));
}

#[test]
fn a_changed_graph_forgets_its_overviews() {
    let mut memo = crate::overview::OverviewMemo::default();
    let graph = world().graph;
    let kept = memo.of(&graph);
    assert!(std::sync::Arc::ptr_eq(&kept, &memo.of(&graph)));
    memo.graph_changed();
    assert!(
        !std::sync::Arc::ptr_eq(&kept, &memo.of(&graph)),
        "after a change the next question builds afresh"
    );
}
