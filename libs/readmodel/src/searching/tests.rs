//! Tests of `searching`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use ontoloop_core::Caller;
use ontoloop_core::knowledge::{Graph, Ontology, PageVersion, Scope};

use super::*;

const ONTOLOGY: &str = r#"{"predicates": [
    {"name": "refund_days", "subject_type": "policy", "object_type": "number",
     "patterns": ["{s} take {o:number} days."]},
    {"name": "owned_by", "subject_type": "service", "object_type": "team",
     "patterns": ["The {s} service is owned by the {o} team."]}],
    "scopes": {"region": ["EU", "US"]},
    "authority": {"default": 2}}"#;

fn page(id: &str, origin: &str, body: &str, acl: &[&str]) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version: 1,
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        updated_at: Utc::now(),
        acl: acl.iter().map(|a| a.to_string()).collect(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

fn snapshot(pages: Vec<PageVersion>) -> Snapshot {
    let ontology = Ontology::from_json(ONTOLOGY).expect("ontology");
    let mut graph = Graph::new(&ontology);
    let mut log = BTreeMap::new();
    for p in &pages {
        graph.apply_page(&ontology, p, Utc::now());
        log.insert(p.source_id.clone(), p.version);
    }
    Snapshot::from_parts(1, Arc::new(ontology), graph, pages, log, None).expect("snapshot")
}

fn searching(query: &str) -> Searching<'_> {
    Searching {
        query,
        k: DEFAULT_SEARCH_K,
        ranking: None,
        as_of: Utc::now(),
        filter: PageFilter::default(),
        scope: Scope::everywhere(),
    }
}

fn ids(found: &[Found]) -> Vec<String> {
    found
        .iter()
        .map(|f| f.passage.chunk.anchor.doc_id.clone())
        .collect()
}

#[test]
fn a_search_ranks_what_the_caller_may_read_within_its_filter_and_scope() {
    let model = snapshot(vec![
        page(
            "docs/refunds-eu",
            "wiki",
            "In the EU, refunds take 14 days.",
            &[],
        ),
        page(
            "docs/refunds-us",
            "wiki",
            "In the US, refunds take 30 days.",
            &[],
        ),
        page(
            "docs/refunds",
            "git",
            "Refunds are paid to the card used.",
            &[],
        ),
        page(
            "board/refunds",
            "wiki",
            "Refunds cost us 2% of revenue.",
            &["board"],
        ),
        page(
            "docs/payments",
            "wiki",
            "The Payments service is owned by the Atlas team. Refunds go through it.",
            &[],
        ),
    ]);
    let alice = Caller::new("t", "alice").expect("caller");
    let (found, ranking) = search(&model, &alice, &searching("refunds")).expect("search");
    assert_eq!(ranking, Ranking::Bm25, "no model here: BM25");
    let mut all = ids(&found);
    all.sort_unstable();
    assert_eq!(
        all,
        [
            "docs/payments",
            "docs/refunds",
            "docs/refunds-eu",
            "docs/refunds-us"
        ],
        "never the board's page"
    );
    // Each hit cites its passage and names the entities it mentions.
    let payments = found
        .iter()
        .find(|f| f.passage.chunk.anchor.doc_id == "docs/payments")
        .expect("payments");
    assert_eq!(payments.passage.chunk.anchor.version, 1);
    assert!(!payments.passage.chunk.anchor.hash.is_empty());
    let mut named: Vec<&str> = payments.entities.iter().map(|e| e.name.as_str()).collect();
    named.sort_unstable();
    assert_eq!(named, ["Atlas", "Payments", "Refunds"]);
    // k, origins, a prefix.
    let one = Searching {
        k: 1,
        ..searching("refunds")
    };
    assert_eq!(search(&model, &alice, &one).expect("search").0.len(), 1);
    let git = Searching {
        filter: PageFilter {
            origins: vec!["git".into()],
            prefix: String::new(),
        },
        ..searching("refunds")
    };
    assert_eq!(
        ids(&search(&model, &alice, &git).expect("search").0),
        ["docs/refunds"]
    );
    let board = Caller::new("t", "carol")
        .expect("caller")
        .with_groups(["board".to_owned()]);
    let prefixed = Searching {
        filter: PageFilter {
            origins: Vec::new(),
            prefix: "board/".into(),
        },
        ..searching("refunds")
    };
    assert_eq!(
        ids(&search(&model, &board, &prefixed).expect("search").0),
        ["board/refunds"]
    );
    assert!(
        search(&model, &alice, &prefixed)
            .expect("search")
            .0
            .is_empty()
    );
    // A scope keeps the passages that hold there: the EU's and those naming no region.
    let eu = Searching {
        scope: Scope::parse("region=EU").expect("scope"),
        ..searching("refunds")
    };
    let mut in_eu = ids(&search(&model, &alice, &eu).expect("search").0);
    in_eu.sort_unstable();
    assert_eq!(in_eu, ["docs/payments", "docs/refunds", "docs/refunds-eu"]);
    // DENSE without the model is refused with the reason.
    let dense = Searching {
        ranking: Some(Ranking::Dense),
        ..searching("refunds")
    };
    let refused = search(&model, &alice, &dense).expect_err("no model");
    assert!(refused.to_string().contains("DENSE"), "{refused}");
}
