//! Tests of `designs`.

use super::*;
use crate::Caller;
use crate::knowledge::graph::RecordValue;
use crate::knowledge::ontology::tests::sample;
use chrono::TimeZone;

fn at(day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, day, 9, 0, 0)
        .single()
        .expect("valid date")
}

fn gold(version: u64, price: u32, day: u32, acl: &[&str]) -> PageVersion {
    PageVersion {
        source_id: "d09".into(),
        version,
        title: "Gold pricing".into(),
        origin: "pricing-page".into(),
        body: format!("The Gold plan costs €{price} per user per month."),
        updated_at: at(day),
        acl: acl.iter().map(|s| s.to_string()).collect(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

/// Version 1 of a page, readable by everyone, is in the graph; version 2, restricted to
/// `acl`, is not read yet. Returns each design's answer for `caller`.
fn ask_gold(caller: &Caller, acl: &[&str]) -> Vec<(Design, Answer)> {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    graph.apply_page(&ontology, &gold(1, 80, 1, &[]), at(1));
    let current = BTreeMap::from([("d09".to_owned(), gold(2, 95, 5, acl))]);
    let log = BTreeMap::from([("d09".to_owned(), 1)]);
    // A search that ignores permissions: the view must filter on its own.
    let search = |_: &str, _: usize| vec!["d09".to_owned()];
    let view = KnowledgeView {
        ontology: &ontology,
        graph: &graph,
        current: &current,
        log: &log,
        search: &search,
        access: Access::new(caller, &current),
        as_of: at(10),
        hedge_below_authority: 0,
        top_k: 3,
        scope: &Scope::everywhere(),
        claims: &crate::knowledge::extract::Extract,
    };
    let hops = ["price".to_owned()];
    Design::ALL
        .into_iter()
        .map(|d| {
            (
                d,
                answer(&view, d, "Gold", &hops, "How much is the Gold plan?"),
            )
        })
        .collect()
}

#[test]
fn a_caller_the_newest_version_excludes_learns_nothing_of_any_version() {
    let bob = Caller::new("t", "bob").expect("caller");
    for (design, answer) in ask_gold(&bob, &["cfo"]) {
        assert_eq!(
            answer.status,
            AnswerStatus::Abstained,
            "{design:?}: {answer:?}"
        );
        let shown = format!("{answer:?}");
        for secret in ["80", "95", "d09", "version"] {
            assert!(
                !shown.contains(secret),
                "{design:?} shows {secret:?}: {shown}"
            );
        }
    }
    let cfo = Caller::new("t", "cfo").expect("caller");
    let ontoloop = &ask_gold(&cfo, &["cfo"])[0].1;
    assert_eq!(ontoloop.value, "95", "{ontoloop:?}");
    assert!(
        ontoloop.hops.iter().all(|(_, _, d)| d.hedges.is_empty()),
        "{ontoloop:?}"
    );
    // A group named in the ACL admits the token's members of it, and no one else.
    let finance = bob.clone().with_groups(["finance".to_owned()]);
    assert_eq!(ask_gold(&finance, &["finance"])[0].1.value, "95");
    assert_eq!(
        ask_gold(&bob, &["finance"])[0].1.status,
        AnswerStatus::Abstained
    );
}

#[test]
fn a_value_announced_for_later_is_noted_beside_the_value_in_effect() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    graph.apply_page(&ontology, &gold(1, 80, 1, &[]), at(1));
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "record:billing",
            sequence: 1,
            entity: "Gold",
            predicate: "price",
            value: "99",
            at: at(3),
            effective_from: Some(at(20)),
            scope: &Scope::everywhere(),
        },
    );
    let current = BTreeMap::from([("d09".to_owned(), gold(1, 80, 1, &[]))]);
    let log = BTreeMap::from([("d09".to_owned(), 1)]);
    let search = |_: &str, _: usize| vec!["d09".to_owned()];
    let caller = Caller::new("t", "bob").expect("caller");
    let ask = |as_of| {
        let view = KnowledgeView {
            ontology: &ontology,
            graph: &graph,
            current: &current,
            log: &log,
            search: &search,
            access: Access::new(&caller, &current),
            as_of,
            hedge_below_authority: 0,
            top_k: 3,
            scope: &Scope::everywhere(),
            claims: &crate::knowledge::extract::Extract,
        };
        answer(
            &view,
            Design::Ontoloop,
            "Gold",
            &["price".to_owned()],
            "How much is the Gold plan?",
        )
    };
    let before = ask(at(10));
    assert_eq!(
        (before.status, before.value.as_str()),
        (AnswerStatus::Answered, "80"),
        "{before:?}"
    );
    let [upcoming] = before.upcoming() else {
        panic!("one upcoming change: {before:?}");
    };
    assert_eq!(
        (upcoming.value.as_str(), upcoming.valid_from),
        ("99", at(20))
    );
    let after = ask(at(21));
    assert_eq!(after.value, "99", "{after:?}");
    assert!(after.upcoming().is_empty(), "{after:?}");
}

#[test]
fn values_that_differ_by_scope_need_a_scope_and_a_scope_gets_its_value() {
    let ontology = crate::knowledge::ontology::tests::scoped_sample();
    let mut graph = Graph::new(&ontology);
    let refunds = PageVersion {
        source_id: "refunds".into(),
        version: 1,
        title: "Refunds".into(),
        origin: "pricing-page".into(),
        body: "Customers can request a refund within 30 days of purchase. In the EU, \
               customers can request a refund within 14 days of purchase."
            .into(),
        updated_at: at(1),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    };
    graph.apply_page(&ontology, &refunds, at(1));
    let mut scopes: Vec<(String, String)> = graph
        .facts()
        .iter()
        .map(|f| (f.scope.to_string(), f.object.clone()))
        .collect();
    scopes.sort();
    assert_eq!(
        scopes,
        vec![
            ("everywhere".to_owned(), "30".to_owned()),
            ("region=EU".to_owned(), "14".to_owned())
        ]
    );
    // The system of record sets the US value: the general one stands.
    let us = Scope::parse("region=US").expect("scope");
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "record:policies",
            sequence: 2,
            entity: "Refund policy",
            predicate: "refund_days",
            value: "21",
            at: at(2),
            effective_from: None,
            scope: &us,
        },
    );
    let current = BTreeMap::from([("refunds".to_owned(), refunds)]);
    let log = BTreeMap::from([("refunds".to_owned(), 1)]);
    let search = |_: &str, _: usize| vec!["refunds".to_owned()];
    let caller = Caller::new("t", "bob").expect("caller");
    let ask = |scope: &str| {
        let scope = Scope::parse(scope).expect("scope");
        let view = KnowledgeView {
            ontology: &ontology,
            graph: &graph,
            current: &current,
            log: &log,
            search: &search,
            access: Access::new(&caller, &current),
            as_of: at(5),
            hedge_below_authority: 0,
            top_k: 3,
            scope: &scope,
            claims: &crate::knowledge::extract::Extract,
        };
        answer(
            &view,
            Design::Ontoloop,
            "Refund policy",
            &["refund_days".to_owned()],
            "How many days do customers have to request a refund?",
        )
    };
    let general = ask("");
    assert_eq!(general.status, AnswerStatus::NeedsScope, "{general:?}");
    assert!(general.value.is_empty());
    let listed: Vec<(String, &str)> = general
        .scoped()
        .iter()
        .map(|v| (v.scope.encode(), v.value.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (String::new(), "30"),
            ("region=EU".to_owned(), "14"),
            ("region=US".to_owned(), "21")
        ]
    );
    for (scope, value) in [
        ("region=EU", "14"),
        ("region=US", "21"),
        // No statement for that region: the general value holds there.
        ("region=APAC", "30"),
        ("region=EU, segment=Enterprise", "14"),
    ] {
        let one = ask(scope);
        assert_eq!(
            (one.status, one.value.as_str()),
            (AnswerStatus::Answered, value),
            "{scope}: {one:?}"
        );
        assert!(one.scoped().is_empty());
    }
    // A segment the regions' values do not name still depends on the region.
    assert_eq!(ask("segment=Enterprise").status, AnswerStatus::NeedsScope);
}

#[test]
fn values_are_cleaned_for_the_next_hop() {
    assert_eq!(clean_value("the Atlas team."), "Atlas team");
    assert_eq!(clean_value(" Pro "), "Pro");
    assert_eq!(
        Design::from_name("hybridversioned"),
        Some(Design::HybridVersioned)
    );
}
