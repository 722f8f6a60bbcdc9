//! Unit tests of `firewall`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::*;
use crate::Caller;
use crate::knowledge::graph::{PageVersion, RecordValue};
use crate::knowledge::ontology::tests::sample;
use chrono::TimeZone;

/// `ALL` holds every code once: the match has no wildcard arm, so a new code must be given
/// its place here, and the count then asks for it in `ALL`.
#[test]
fn all_lists_every_reason_code_once() {
    let place = |code: ReasonCode| match code {
        ReasonCode::UnknownEntity => 0,
        ReasonCode::ExpiredRelationship => 1,
        ReasonCode::Contradicted => 2,
        ReasonCode::NotInGraph => 3,
        ReasonCode::SingleSource => 4,
        ReasonCode::LowConfidence => 5,
        ReasonCode::BrokenChain => 6,
        ReasonCode::TemporalInconsistency => 7,
        ReasonCode::FirewallUnavailable => 8,
    };
    let places: Vec<usize> = ReasonCode::ALL.into_iter().map(place).collect();
    assert_eq!(places, (0..=8).collect::<Vec<usize>>());
}

fn day(d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, d, 9, 0, 0)
        .single()
        .expect("date")
}

fn policy() -> FirewallPolicy {
    FirewallPolicy {
        min_independent_sources: 2,
        reliable_authority: 2,
        authoritative_authority: 3,
        confidence_standard: 0.7,
        confidence_high_risk: 0.95,
        confidence_exploratory: 0.6,
        high_risk_domains: vec!["financial".into()],
        multi_valued_predicates: Vec::new(),
        max_text_bytes: 1024,
        max_claims: 100,
        llm: LlmSettings {
            enabled: false,
            base_url: String::new(),
            model: String::new(),
            api_key: String::new(),
            timeout_ms: 1000,
            prompt_version: String::new(),
        },
    }
}

/// No page's newest version: facts are read under their own ACL.
static NO_PAGES: BTreeMap<String, PageVersion> = BTreeMap::new();

/// The policy the tests check under.
static POLICY: LazyLock<FirewallPolicy> = LazyLock::new(policy);

/// What `caller` checks against: `graph` of `ontology` as of day 25, at `threshold`, every fact
/// read under its own ACL.
fn view<'a>(
    ontology: &'a Ontology,
    graph: &'a Graph,
    caller: &'a Caller,
    threshold: f64,
) -> FirewallView<'a> {
    FirewallView {
        ontology,
        graph,
        access: Access::new(caller, &NO_PAGES),
        as_of: day(25),
        policy: &POLICY,
        threshold,
    }
}

fn page(id: &str, version: u64, origin: &str, body: &str, d: u32, acl: &[&str]) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version,
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        updated_at: day(d),
        acl: acl.iter().map(|s| s.to_string()).collect(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

fn world() -> (Ontology, Graph) {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    // Each page version as [`page`] takes it, applied on its day.
    type Version<'a> = (&'a str, u64, &'a str, &'a str, u32, &'a [&'a str]);
    #[rustfmt::skip]
    let pages: [Version; 7] = [
        ("pricing", 1, "pricing-page", "The Pro plan costs €49 per user per month.", 1, &[]),
        ("faq", 1, "faq", "The Pro plan costs €49 per user per month. Payments service is owned by the Atlas team.", 1, &[]),
        ("wiki", 1, "wiki", "Payments service is owned by the Atlas team. Tessaly Dock is included in the Pro plan.", 1, &[]),
        ("notes", 1, "meeting-notes", "The Starter plan costs €24 per user per month.", 2, &[]),
        ("board", 1, "pricing-page", "The Secret plan costs €999 per user per month.", 1, &["cfo"]),
        ("pricing", 2, "pricing-page", "The Pro plan costs €59 per user per month.", 20, &[]),
        ("faq", 2, "faq", "The Pro plan costs €59 per user per month. Payments service is owned by the Atlas team.", 20, &[]),
    ];
    for (id, version, origin, body, d, acl) in pages {
        let p = page(id, version, origin, body, d, acl);
        graph.apply_page(&ontology, &p, p.updated_at);
    }
    (ontology, graph)
}

/// Alice's verdict on one claim, as of day 25 at the standard threshold.
fn alices_verdict(
    graph: &Graph,
    ontology: &Ontology,
    claim: (&str, &str, &str),
) -> Vec<ReasonCode> {
    check(graph, ontology, "alice", &[claim], 0.7).remove(0)
}

fn check(
    graph: &Graph,
    ontology: &Ontology,
    principal: &str,
    claims: &[(&str, &str, &str)],
    threshold: f64,
) -> Vec<Vec<ReasonCode>> {
    let everywhere: Vec<_> = claims.iter().map(|&(s, p, o)| (s, p, o, "")).collect();
    check_scoped(graph, ontology, principal, &everywhere, threshold)
        .into_iter()
        .map(|r| r.into_iter().map(|x| x.code).collect())
        .collect()
}

/// Claims `(subject, predicate, object, scope)` checked as of day 25; every reason.
fn check_scoped(
    graph: &Graph,
    ontology: &Ontology,
    principal: &str,
    claims: &[(&str, &str, &str, &str)],
    threshold: f64,
) -> Vec<Vec<Reason>> {
    let caller = Caller::new("t", principal).expect("caller");
    let view = view(ontology, graph, &caller, threshold);
    let claims: Vec<ClaimToCheck> = claims
        .iter()
        .map(|(s, p, o, scope)| ClaimToCheck {
            triple: Triple {
                subject: s.to_string(),
                predicate: p.to_string(),
                object: o.to_string(),
            },
            chain: Vec::new(),
            scope: Scope::parse(scope).expect("scope"),
        })
        .collect();
    check_answer(&view, &claims)
}

#[test]
fn a_scoped_claim_is_checked_against_the_value_of_its_scope() {
    let ontology = crate::knowledge::ontology::tests::scoped_sample();
    let mut graph = Graph::new(&ontology);
    for id in ["refunds-a", "refunds-b"] {
        graph.apply_page(
            &ontology,
            &page(
                id,
                1,
                "wiki",
                "Customers can request a refund within 30 days of purchase. In the EU, \
                     customers can request a refund within 14 days of purchase.",
                1,
                &[],
            ),
            day(1),
        );
    }
    let codes = |graph: &Graph, claims: &[(&str, &str, &str, &str)]| -> Vec<Vec<ReasonCode>> {
        check_scoped(graph, &ontology, "alice", claims, 0.7)
            .into_iter()
            .map(|r| r.into_iter().map(|x| x.code).collect())
            .collect()
    };
    let policy = "Refund policy";
    assert_eq!(
        codes(
            &graph,
            &[
                (policy, "refund_days", "14", "region=EU"),
                (policy, "refund_days", "30", ""),
                // No statement for the US: the general value holds there.
                (policy, "refund_days", "30", "region=US"),
            ]
        ),
        vec![Vec::<ReasonCode>::new(); 3],
        "each value in its own scope passes, and they are not inconsistent"
    );
    assert_eq!(
        codes(
            &graph,
            &[
                (policy, "refund_days", "30", "region=EU"),
                (policy, "refund_days", "14", ""),
            ]
        ),
        vec![
            vec![ReasonCode::Contradicted],
            vec![ReasonCode::Contradicted]
        ]
    );
    // A value known only for the EU: a claim for everywhere is not in the graph, and the
    // reason names the scope it holds in.
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "record:billing",
            sequence: 1,
            entity: "Pro",
            predicate: "price",
            value: "59",
            at: day(2),
            effective_from: None,
            scope: &Scope::parse("region=EU").expect("scope"),
        },
    );
    let general = check_scoped(
        &graph,
        &ontology,
        "alice",
        &[("Pro", "price", "59", "")],
        0.7,
    );
    let [reason] = general[0].as_slice() else {
        panic!("one reason: {general:?}");
    };
    assert_eq!(reason.code, ReasonCode::NotInGraph);
    assert!(reason.message.contains("\"59\" in region=EU"), "{reason:?}");
    assert_eq!(
        codes(&graph, &[("Pro", "price", "59", "region=EU")]),
        vec![Vec::<ReasonCode>::new()]
    );
}

#[test]
fn a_supported_current_multi_sourced_claim_passes() {
    let (o, g) = world();
    let passed = Vec::<ReasonCode>::new();
    assert_eq!(
        alices_verdict(&g, &o, ("Payments service", "owned_by", "Atlas")),
        passed
    );
    assert_eq!(
        alices_verdict(&g, &o, ("Pro", "price", "59")),
        passed,
        "an authoritative source suffices"
    );
}

#[test]
fn a_value_announced_for_later_is_not_current_and_the_contradiction_names_it() {
    let (o, mut g) = world();
    // Recorded on day 22 for day 28; the check is as of day 25.
    g.apply_record(
        &o,
        &RecordValue {
            source: "record:billing",
            sequence: 1,
            entity: "Pro",
            predicate: "price",
            value: "69",
            at: day(22),
            effective_from: Some(day(28)),
            scope: &Scope::everywhere(),
        },
    );
    assert!(
        alices_verdict(&g, &o, ("Pro", "price", "59")).is_empty(),
        "the value in effect still passes"
    );
    let caller = Caller::new("t", "alice").expect("caller");
    let view = view(&o, &g, &caller, 0.7);
    let claim = ClaimToCheck {
        triple: Triple {
            subject: "Pro".into(),
            predicate: "price".into(),
            object: "69".into(),
        },
        chain: Vec::new(),
        scope: Scope::everywhere(),
    };
    let reasons = check_answer(&view, std::slice::from_ref(&claim)).remove(0);
    let contradicted = reasons
        .iter()
        .find(|r| r.code == ReasonCode::Contradicted)
        .expect("contradicted");
    assert!(
        contradicted
            .message
            .contains("\"69\" is announced to take effect on 2026-09-28"),
        "{contradicted:?}"
    );
    // From day 28 the announced value is the one in effect.
    let later = FirewallView {
        as_of: day(29),
        ..view
    };
    assert_eq!(check_answer(&later, &[claim]), vec![Vec::new()]);
}

#[test]
fn an_expired_relationship_is_blocked_with_its_reason() {
    let (o, g) = world();
    let verdict = &alices_verdict(&g, &o, ("Pro plan", "price", "49"));
    assert!(
        verdict.contains(&ReasonCode::ExpiredRelationship),
        "{verdict:?}"
    );
    assert!(verdict.contains(&ReasonCode::Contradicted), "{verdict:?}");
}

#[test]
fn unknown_entities_are_blocked() {
    let (o, g) = world();
    assert_eq!(
        alices_verdict(&g, &o, ("Tessaly Harbor", "price", "30")),
        vec![ReasonCode::UnknownEntity]
    );
    assert_eq!(
        alices_verdict(&g, &o, ("Payments service", "owned_by", "Zeta")),
        vec![ReasonCode::UnknownEntity]
    );
}

#[test]
fn a_single_source_is_blocked_on_provenance_alone() {
    let (o, g) = world();
    assert_eq!(
        alices_verdict(&g, &o, ("Tessaly Dock", "included_in", "Pro")),
        vec![ReasonCode::SingleSource]
    );
}

#[test]
fn a_draft_is_contradicted_and_unsupported() {
    let (o, g) = world();
    let verdict = &alices_verdict(&g, &o, ("Starter", "price", "24"));
    assert!(verdict.contains(&ReasonCode::SingleSource), "{verdict:?}");
    let verdict = &alices_verdict(&g, &o, ("Starter", "price", "19"));
    assert!(verdict.contains(&ReasonCode::Contradicted), "{verdict:?}");
}

#[test]
fn raising_the_confidence_threshold_blocks_what_passed() {
    let (o, g) = world();
    assert!(alices_verdict(&g, &o, ("Pro", "price", "59")).is_empty());
    assert_eq!(
        check(&g, &o, "alice", &[("Pro", "price", "59")], 1.01)[0],
        vec![ReasonCode::LowConfidence]
    );
    assert_eq!(policy().threshold(Risk::Standard, "Financial"), 0.95);
    assert_eq!(policy().threshold(Risk::Exploratory, "marketing"), 0.6);
}

#[test]
fn unreadable_support_counts_as_none_and_reveals_nothing() {
    let (o, g) = world();
    let policy = policy();
    let alice = Caller::new("t", "alice").expect("caller");
    let access = Access::new(&alice, &NO_PAGES);
    // As the services check: on the caller's view of the graph.
    let seen = g
        .visible_to(&access)
        .expect("alice may not read every fact");
    let view = FirewallView {
        ontology: &o,
        graph: &seen,
        access,
        as_of: day(25),
        policy: &policy,
        threshold: 0.7,
    };
    let told = |subject: &str| -> Vec<(ReasonCode, String)> {
        check_triple(
            &view,
            &Triple {
                subject: subject.into(),
                predicate: "price".into(),
                object: "999".into(),
            },
            &Scope::everywhere(),
        )
        .into_iter()
        .map(|r| (r.code, r.message.replace(subject, "NAME")))
        .collect()
    };
    let hidden = told("Secret");
    assert!(!hidden.is_empty(), "a claim only hidden facts state passed");
    assert_eq!(hidden, told("Nowhere"), "told apart from a name never seen");
    assert!(hidden.iter().all(|(_, m)| !m.contains("board")));
    // On the whole graph too, the hidden fact is as absent as can be: the slot is unstated.
    assert_eq!(
        alices_verdict(&g, &o, ("Secret", "price", "999")),
        vec![ReasonCode::NotInGraph]
    );
    assert!(check(&g, &o, "cfo", &[("Secret", "price", "999")], 0.7)[0].is_empty());
}

#[test]
fn a_claim_resting_on_a_page_narrowed_since_is_not_passed() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let v1 = page(
        "gold",
        1,
        "pricing-page",
        "The Gold plan costs €80 per user per month.",
        1,
        &[],
    );
    graph.apply_page(&ontology, &v1, v1.updated_at);
    // Version 2 narrows the page to a group; the graph has not read it yet.
    let v2 = page(
        "gold",
        2,
        "pricing-page",
        "Gold: see the board.",
        3,
        &["finance"],
    );
    let latest = BTreeMap::from([("gold".to_owned(), v2)]);
    let policy = policy();
    let verdict = |caller: &Caller, price: &str| {
        let view = FirewallView {
            ontology: &ontology,
            graph: &graph,
            access: Access::new(caller, &latest),
            as_of: day(25),
            policy: &policy,
            threshold: 0.0,
        };
        check_triple(
            &view,
            &Triple {
                subject: "Gold".into(),
                predicate: "price".into(),
                object: price.into(),
            },
            &Scope::everywhere(),
        )
    };
    let bob = Caller::new("t", "bob").expect("caller");
    let reasons = verdict(&bob, "80");
    assert_eq!(
        reasons.iter().map(|r| r.code).collect::<Vec<_>>(),
        vec![ReasonCode::NotInGraph]
    );
    // A wrong value is refused alike: the verdict is no oracle for the hidden one.
    assert_eq!(verdict(&bob, "81"), reasons);
    assert!(
        reasons
            .iter()
            .all(|r| !r.message.contains("gold") && !r.message.contains("version")),
        "{reasons:?}"
    );
    let member = bob.with_groups(["finance".to_owned()]);
    assert!(
        !verdict(&member, "80")
            .iter()
            .any(|r| r.code == ReasonCode::NotInGraph),
        "a member of the group reads the page"
    );
}

#[test]
fn two_values_of_one_slot_in_one_answer_are_inconsistent() {
    let (o, g) = world();
    let verdicts = check(
        &g,
        &o,
        "alice",
        &[("Pro", "price", "59"), ("Pro plan", "price", "49")],
        0.7,
    );
    assert!(verdicts[0].contains(&ReasonCode::TemporalInconsistency));
    assert!(verdicts[1].contains(&ReasonCode::TemporalInconsistency));
}

#[test]
fn many_values_of_one_slot_give_each_claim_one_bounded_reason() {
    let (o, g) = world();
    let alice = Caller::new("t", "alice").expect("caller");
    let view = view(&o, &g, &alice, 0.7);
    let long = "9".repeat(10 * MAX_QUOTED_CHARS);
    let mut claims: Vec<ClaimToCheck> = (0..2000)
        .map(|n| ClaimToCheck {
            triple: Triple {
                // Two names of one entity: one slot.
                subject: if n % 2 == 0 { "Pro" } else { "Pro plan" }.into(),
                predicate: "price".into(),
                object: if n == 0 { long.clone() } else { n.to_string() },
            },
            chain: Vec::new(),
            scope: Scope::everywhere(),
        })
        .collect();
    // The same value twice is one value of the slot.
    claims[2].triple.object = "1.".into();
    let verdicts = check_answer(&view, &claims);
    for (n, reasons) in verdicts.iter().enumerate() {
        let inconsistent: Vec<&Reason> = reasons
            .iter()
            .filter(|r| r.code == ReasonCode::TemporalInconsistency)
            .collect();
        assert_eq!(inconsistent.len(), 1, "claim {n}: {reasons:?}");
        let message = &inconsistent[0].message;
        assert!(message.contains("(and 1995 more values)"), "{message}");
        assert!(
            message.len() < 6 * MAX_QUOTED_CHARS,
            "{} bytes",
            message.len()
        );
    }
    assert!(verdicts[1].iter().any(|r| r.message.contains('…')));
    // Another slot, or a value that fits the graph, is untouched by the rule.
    let two = check(
        &g,
        &o,
        "alice",
        &[("Pro", "price", "59"), ("Starter", "price", "24")],
        0.7,
    );
    assert!(
        two.iter()
            .flatten()
            .all(|c| *c != ReasonCode::TemporalInconsistency)
    );
}

#[test]
fn quoted_inputs_are_cut_at_a_character_boundary() {
    assert_eq!(shown("short"), "short");
    let cut = shown(&"é".repeat(MAX_QUOTED_CHARS + 5)).into_owned();
    assert_eq!(cut.chars().count(), MAX_QUOTED_CHARS + 1);
    assert!(cut.ends_with('…'));
}

#[test]
fn chains_must_connect_and_hold_step_by_step() {
    let (o, g) = world();
    let alice = Caller::new("t", "alice").expect("caller");
    let view = view(&o, &g, &alice, 0.7);
    let t = |s: &str, p: &str, ob: &str| Triple {
        subject: s.into(),
        predicate: p.into(),
        object: ob.into(),
    };
    assert!(
        broken_chain(
            &view,
            &[
                t("Payments service", "owned_by", "Atlas"),
                t("Pro", "price", "59")
            ],
            &Scope::everywhere(),
        )
        .is_some_and(|r| r.message.contains("starts at"))
    );
    assert!(
        broken_chain(
            &view,
            &[t("Payments service", "owned_by", "Helix")],
            &Scope::everywhere()
        )
        .is_some()
    );
}

#[test]
fn honest_gap_a_wrong_fact_in_the_graph_is_enforced_as_confidently_as_a_right_one() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    // Two reliable pages agree on a wrong owner; the firewall cannot know better.
    for id in ["wiki-a", "wiki-b"] {
        graph.apply_page(
            &ontology,
            &page(
                id,
                1,
                "wiki",
                "Payments service is owned by the Wrong team.",
                1,
                &[],
            ),
            day(1),
        );
    }
    graph.apply_page(
        &ontology,
        &page("t", 1, "wiki", "The Right team is led by Ana.", 1, &[]),
        day(1),
    );
    assert!(
        alices_verdict(&graph, &ontology, ("Payments service", "owned_by", "Wrong")).is_empty()
    );
    assert!(
        alices_verdict(&graph, &ontology, ("Payments service", "owned_by", "Right"))
            .contains(&ReasonCode::Contradicted)
    );
}
