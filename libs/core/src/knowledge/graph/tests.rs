//! Unit tests of `graph`.

use super::*;
use crate::knowledge::ontology::tests::sample;
use chrono::TimeZone;

fn at(day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, day, 9, 0, 0)
        .single()
        .expect("valid date")
}

fn page(id: &str, version: u64, origin: &str, body: &str, day: u32) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version,
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        updated_at: at(day),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

/// What a pricing page says of a plan.
fn price(plan: &str, euros: u32) -> String {
    format!("The {plan} plan costs €{euros} per user per month.")
}

/// A pricing page with the Pro plan at `pro` and the Starter plan at 19.
fn pro_and_starter(pro: u32) -> String {
    format!("{} {}", price("Pro", pro), price("Starter", 19))
}

fn current<'a>(graph: &'a Graph, entity: &str, predicate: &str) -> Vec<&'a str> {
    values_where(graph, entity, predicate, Fact::is_current)
}

/// The values of `predicate` on `entity` of the facts `keep` keeps, sorted.
fn values_where<'a>(
    graph: &'a Graph,
    entity: &str,
    predicate: &str,
    keep: impl Fn(&Fact) -> bool,
) -> Vec<&'a str> {
    let id = graph
        .resolve(entity)
        .map(|e| e.id.clone())
        .unwrap_or_default();
    let mut values: Vec<&str> = graph
        .facts_of(&id)
        .filter(|f| f.predicate == predicate && keep(f))
        .map(|f| f.object.as_str())
        .collect();
    values.sort();
    values
}

/// The values of `predicate` on `entity` that hold at `when`.
fn held_at<'a>(
    graph: &'a Graph,
    entity: &str,
    predicate: &str,
    when: DateTime<Utc>,
) -> Vec<&'a str> {
    values_where(graph, entity, predicate, |f| f.valid_at(when))
}

#[test]
fn a_page_version_announced_for_later_holds_from_its_day_and_a_newer_one_cancels_it() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let v1 = page("d1", 1, "pricing-page", &price("Gold", 80), 1);
    graph.apply_page(&ontology, &v1, at(1));
    // Published on the 5th, in effect from the 20th.
    let mut v2 = page("d1", 2, "pricing-page", &price("Gold", 95), 5);
    v2.effective_from = Some(at(20));
    assert_eq!(v2.effective_at(), at(20));
    graph.apply_page(&ontology, &v2, at(5));
    assert_eq!(held_at(&graph, "Gold plan", "price", at(10)), ["80"]);
    assert_eq!(held_at(&graph, "Gold plan", "price", at(20)), ["95"]);
    // Which version is in effect when, and what a full read reads on the 10th.
    let pages = [v1.clone(), v2.clone()];
    assert_eq!(versions_in_effect(&pages, at(10))[0].version, 1);
    assert_eq!(versions_in_effect(&pages, at(21))[0].version, 2);
    let read: Vec<u64> = versions_to_read(&pages, at(10))
        .iter()
        .map(|p| p.version)
        .collect();
    assert_eq!(read, [1, 2], "in effect first, then the announced one");
    // A correction published on the 8th, in effect at once, states the old price: the
    // announcement is cancelled and the old value holds on past the 20th.
    let v3 = page("d1", 3, "pricing-page", &price("Gold", 80), 8);
    graph.apply_page(&ontology, &v3, at(8));
    assert_eq!(held_at(&graph, "Gold plan", "price", at(10)), ["80"]);
    assert_eq!(held_at(&graph, "Gold plan", "price", at(25)), ["80"]);
    assert!(
        graph
            .facts()
            .iter()
            .filter(|f| f.object == "95")
            .all(|f| f.valid_to == Some(f.valid_from)),
        "the cancelled value never holds: {:?}",
        graph.facts()
    );
    let pages = [v1, v2, v3];
    assert_eq!(versions_in_effect(&pages, at(25))[0].version, 3);
    assert_eq!(
        versions_to_read(&pages, at(10)).len(),
        1,
        "nothing left announced"
    );
    // A rebuild retires the page's facts and reads the page again: the retired facts keep
    // the end the rebuild gave them.
    let mut rebuilt = Graph::new(&ontology);
    let v1 = page("d3", 1, "pricing-page", &price("Gold", 80), 1);
    rebuilt.apply_page(&ontology, &v1, at(1));
    rebuilt.retire_page_facts(at(10));
    let mut again = v1.clone();
    again.version = 2;
    rebuilt.apply_page(&ontology, &again, at(10));
    assert_eq!(
        rebuilt.facts()[0].valid_to,
        Some(at(10)),
        "{:?}",
        rebuilt.facts()
    );
    // A version whose effective time is before its capture takes effect at the capture.
    let mut late = page("d2", 1, "pricing-page", &price("Gold", 80), 9);
    late.effective_from = Some(at(2));
    assert_eq!(late.effective_at(), at(9));
}

#[test]
fn a_page_is_read_under_its_newest_acl_in_every_version_and_fact() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let v1 = page("d09", 1, "pricing-page", &price("Gold", 80), 1);
    graph.apply_page(&ontology, &v1, at(1));
    let fact = graph.facts()[0].clone();
    assert!(fact.acl.is_empty(), "read from a page the tenant may read");
    let mut v2 = page("d09", 2, "pricing-page", &price("Gold", 95), 5);
    v2.acl = vec!["cfo".to_owned()];
    let latest = BTreeMap::from([("d09".to_owned(), v2.clone())]);
    let bob = Caller::new("t", "bob").expect("caller");
    let cfo = Caller::new("t", "cfo").expect("caller");
    let narrowed = Access::new(&bob, &latest);
    assert!(
        !narrowed.fact(&fact),
        "a narrowed page narrows its old facts"
    );
    assert!(!narrowed.page(&v1) && !narrowed.page(&v2));
    assert!(!narrowed.source("d09"));
    let cfo_access = Access::new(&cfo, &latest);
    assert!(cfo_access.fact(&fact) && cfo_access.page(&v1) && cfo_access.page(&v2));
    // A group of the token admits its members, and only them.
    let mut v3 = v2.clone();
    v3.version = 3;
    v3.acl = vec!["finance".to_owned()];
    let latest = BTreeMap::from([("d09".to_owned(), v3.clone())]);
    assert!(!Access::new(&bob, &latest).fact(&fact));
    let in_finance = bob.clone().with_groups(["finance".to_owned()]);
    let finance = Access::new(&in_finance, &latest);
    assert!(finance.fact(&fact) && finance.page(&v3));
    assert!(!finance.page(&v2), "v2's own ACL names cfo only");
    // Widening the page does not open what a narrower version said.
    let mut secret = fact.clone();
    secret.acl = vec!["cfo".to_owned()];
    let mut v4 = v3.clone();
    v4.version = 4;
    v4.acl = Vec::new();
    let latest = BTreeMap::from([("d09".to_owned(), v4.clone())]);
    assert!(!Access::new(&bob, &latest).fact(&secret));
    assert!(Access::new(&bob, &latest).page(&v4));
    // A record source is no page: the fact's own ACL decides.
    let mut record = fact;
    record.source.source_id = "record:billing".to_owned();
    assert!(Access::new(&bob, &latest).fact(&record));
}

#[test]
fn an_entity_only_hidden_facts_name_is_unknown_to_the_caller() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let public = page("d10", 1, "pricing-page", &price("Gold", 80), 1);
    let mut secret = page("d11", 1, "pricing-page", &price("Onyx", 400), 2);
    secret.acl = vec!["cfo".to_owned()];
    graph.apply_page(&ontology, &public, at(1));
    graph.apply_page(&ontology, &secret, at(2));
    let latest = BTreeMap::from([
        ("d10".to_owned(), public.clone()),
        ("d11".to_owned(), secret.clone()),
    ]);
    let cfo = Caller::new("t", "cfo").expect("caller");
    assert!(
        graph.visible_to(&Access::new(&cfo, &latest)).is_none(),
        "a caller every fact admits sees the whole graph"
    );
    let bob = Caller::new("t", "bob").expect("caller");
    let seen = graph
        .visible_to(&Access::new(&bob, &latest))
        .expect("bob sees less");
    assert!(graph.resolve("Onyx plan").is_some());
    assert!(
        seen.resolve("Onyx plan").is_none(),
        "hidden entity resolved"
    );
    assert!(seen.resolve("Gold plan").is_some());
    assert_eq!(current(&seen, "Gold plan", "price"), vec!["80"]);
    assert!(seen.facts().iter().all(|f| f.source.source_id == "d10"));
}

#[test]
fn a_new_version_supersedes_only_what_changed() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let v1 = page("d02", 1, "pricing-page", &pro_and_starter(49), 1);
    graph.apply_page(&ontology, &v1, at(1));
    let v2 = page("d02", 2, "pricing-page", &pro_and_starter(59), 22);
    let changes = graph.apply_page(&ontology, &v2, at(22));
    assert_eq!(changes.writes, 2, "one superseded, one added");
    assert_eq!(current(&graph, "Pro plan", "price"), vec!["59"]);
    let starter: Vec<_> = graph.facts().iter().filter(|f| f.object == "19").collect();
    assert_eq!(starter.len(), 1);
    assert_eq!(
        starter[0].source.version, 1,
        "unchanged fact keeps its provenance"
    );
    assert_eq!(starter[0].seen_version, 2);
    let old = graph
        .facts()
        .iter()
        .find(|f| f.object == "49")
        .expect("history is kept");
    assert_eq!(old.valid_to, Some(at(22)));
    let pro = graph.resolve("pro").expect("pro").id.clone();
    assert_eq!(
        graph
            .slot_at(&pro, "price", at(10))
            .map(|f| f.object.as_str())
            .collect::<Vec<_>>(),
        vec!["49"],
        "as of before the change"
    );
}

#[test]
fn a_tombstone_ends_every_fact_of_its_page_and_as_of_before_still_sees_them() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let v1 = page("d03", 1, "pricing-page", &pro_and_starter(49), 1);
    graph.apply_page(&ontology, &v1, at(1));
    let other = page("d04", 1, "wiki", &price("Team", 29), 2);
    graph.apply_page(&ontology, &other, at(2));
    let tombstone = PageVersion::tombstone(&v1, at(20));
    assert!(tombstone.deleted && tombstone.body.is_empty());
    assert_eq!(
        (tombstone.version, tombstone.acl.clone()),
        (2, v1.acl.clone())
    );
    let changes = graph.apply_page(&ontology, &tombstone, at(20));
    assert_eq!(changes.writes, 2, "both facts of the page end");
    assert!(current(&graph, "Pro plan", "price").is_empty());
    assert!(current(&graph, "Starter plan", "price").is_empty());
    assert_eq!(
        current(&graph, "Team plan", "price"),
        vec!["29"],
        "other pages stay"
    );
    let pro = graph.resolve("pro").expect("pro").id.clone();
    assert_eq!(
        graph
            .slot_at(&pro, "price", at(10))
            .map(|f| f.object.as_str())
            .collect::<Vec<_>>(),
        vec!["49"],
        "as of before the deletion"
    );
    assert_eq!(graph.slot_at(&pro, "price", at(21)).count(), 0);
    // The page comes back with a new version: its facts are read again.
    let v3 = page("d03", 3, "pricing-page", &price("Pro", 52), 25);
    graph.apply_page(&ontology, &v3, at(25));
    assert_eq!(current(&graph, "Pro plan", "price"), vec!["52"]);
}

#[test]
fn a_rename_keeps_the_old_name_and_merges_a_node_made_under_the_new_one() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    graph.apply_page(
        &ontology,
        &page(
            "d06",
            1,
            "product-page",
            "Tessaly Track is owned by the Helix team.",
            1,
        ),
        at(1),
    );
    graph.apply_page(
        &ontology,
        &page(
            "d16",
            1,
            "faq",
            "Tessaly Beacon is included in the Starter plan.",
            2,
        ),
        at(2),
    );
    assert_ne!(
        graph.resolve("Tessaly Track").map(|e| &e.id),
        graph.resolve("Tessaly Beacon").map(|e| &e.id)
    );
    let before_rename = graph.facts().to_vec();
    let mut changes = Changes::default();
    graph.rename("Tessaly Track", "Tessaly Beacon", &mut changes);
    let track = graph
        .resolve("Tessaly Track")
        .expect("old name still resolves");
    assert_eq!(track.name, "Tessaly Beacon");
    assert_eq!(
        graph.resolve("tessaly beacon").map(|e| &e.id),
        Some(&track.id)
    );
    assert_eq!(
        current(&graph, "Tessaly Track", "included_in"),
        vec!["Starter"]
    );
    assert_eq!(changes.merged.len(), 1);
    each_entity_lists_its_facts(&graph);
    // A reader's copy patched with what the rename wrote (facts moved to another entity)
    // lists them alike.
    let mut patched = Graph::new(&ontology);
    patched.patch(&[], Vec::new(), before_rename);
    patched.patch(&[], Vec::new(), graph.facts().to_vec());
    each_entity_lists_its_facts(&patched);
}

/// `facts_of` gives every entity's facts as a scan of every fact would, in id order.
fn each_entity_lists_its_facts(graph: &Graph) {
    let mut entities: BTreeSet<&str> = graph.facts().iter().map(|f| f.entity.as_str()).collect();
    entities.extend(graph.by_entity.keys().map(String::as_str));
    for entity in entities {
        let listed: Vec<u64> = graph.facts_of(entity).map(|f| f.id).collect();
        let scanned: Vec<u64> = graph
            .facts()
            .iter()
            .filter(|f| f.entity == entity)
            .map(|f| f.id)
            .collect();
        assert_eq!(listed, scanned, "facts of {entity}");
    }
}

#[test]
fn a_record_supersedes_every_spelling_of_its_slot() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    graph.apply_page(
        &ontology,
        &page("d02", 1, "pricing-page", &price("Pro", 49), 1),
        at(1),
    );
    graph.apply_page(
        &ontology,
        &page("d15", 1, "faq", &price("pro", 49), 1),
        at(1),
    );
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "record:billing",
            sequence: 7,
            entity: "Pro",
            predicate: "price",
            value: "59",
            at: at(22),
            effective_from: None,
            scope: &Scope::everywhere(),
        },
    );
    assert_eq!(current(&graph, "PRO plan", "price"), vec!["59"]);
    let record = graph
        .facts()
        .iter()
        .find(|f| f.is_current())
        .expect("record fact");
    assert_eq!(record.authority, 4);
    assert_eq!(record.source.origin, RECORD_ORIGIN);
    assert_eq!(record_origin("registry:missions"), "registry");
    assert_eq!(record_origin("cmdb"), RECORD_ORIGIN);
}

fn valid_values(graph: &Graph, day: u32) -> Vec<&str> {
    let mut values: Vec<&str> = graph
        .facts()
        .iter()
        .filter(|f| f.predicate == "price" && f.valid_at(at(day)))
        .map(|f| f.object.as_str())
        .collect();
    values.sort();
    values
}

#[test]
fn a_record_value_announced_for_later_holds_from_its_time_and_is_not_cancelled_meanwhile() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let set = |graph: &mut Graph, seq, value, day, effective: Option<u32>| {
        graph.apply_record(
            &ontology,
            &RecordValue {
                source: "record:billing",
                sequence: seq,
                entity: "Pro",
                predicate: "price",
                value,
                at: at(day),
                effective_from: effective.map(at),
                scope: &Scope::everywhere(),
            },
        );
    };
    set(&mut graph, 1, "59", 2, None);
    // Announced on day 3 for day 10.
    set(&mut graph, 2, "69", 3, Some(10));
    assert_eq!(valid_values(&graph, 4), vec!["59"]);
    assert_eq!(valid_values(&graph, 10), vec!["69"]);
    // A value recorded on day 5 for now holds until the announced one takes over.
    set(&mut graph, 3, "64", 5, None);
    assert_eq!(valid_values(&graph, 4), vec!["59"]);
    assert_eq!(valid_values(&graph, 6), vec!["64"]);
    assert_eq!(valid_values(&graph, 12), vec!["69"]);
    // An effective time before the event's own is the event's time: never retroactive.
    set(&mut graph, 4, "61", 14, Some(1));
    assert_eq!(valid_values(&graph, 12), vec!["69"]);
    assert_eq!(valid_values(&graph, 14), vec!["61"]);
    // A second announcement for the same instant replaces the first.
    set(&mut graph, 5, "70", 15, Some(20));
    set(&mut graph, 6, "72", 16, Some(20));
    assert_eq!(valid_values(&graph, 19), vec!["61"]);
    assert_eq!(valid_values(&graph, 21), vec!["72"]);
    // A rebuild retires page facts only: a record of a system whose source names its own
    // origin stays, and so does the schedule.
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "registry:plans",
            sequence: 7,
            entity: "Team",
            predicate: "price",
            value: "30",
            at: at(17),
            effective_from: None,
            scope: &Scope::everywhere(),
        },
    );
    graph.retire_page_facts(at(18));
    assert_eq!(valid_values(&graph, 19), vec!["30", "61"]);
    assert_eq!(valid_values(&graph, 21), vec!["30", "72"]);
}

/// Every name and the types the lexicon gives it, shared and added parts together.
fn entries(lexicon: &Lexicon, graph: &Graph) -> Vec<(String, Vec<String>)> {
    graph
        .entities()
        .flat_map(|e| e.aliases.iter().chain([&e.name]))
        .map(|name| {
            let types = lexicon
                .types_of(graph.normaliser(), name)
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            (name.clone(), types)
        })
        .collect()
}

#[test]
fn the_lexicon_and_needles_kept_through_changes_equal_ones_computed_afresh() {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let products = ["Ledger", "Beacon", "Atlas Reports", "Kite"];
    let teams = ["Payments", "Growth", "Core"];
    let plans = ["Pro", "Team", "Starter"];
    let mut seed: u64 = 17;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize % n
    };
    let mut versions: BTreeMap<String, u64> = BTreeMap::new();
    for step in 0..300u32 {
        let day = 1 + step % 27;
        match next(10) {
            0..=5 => {
                // Now and then another spelling: a new alias of a known entity.
                let product = match products[next(products.len())] {
                    name if next(3) == 0 => name.to_uppercase(),
                    name => name.to_owned(),
                };
                let body = match next(4) {
                    0 => format!("{product} is owned by the {} team.", teams[next(3)]),
                    1 => format!("The {} team is led by Dana {}.", teams[next(3)], next(5)),
                    2 => format!("{product} is included in the {} plan.", plans[next(3)]),
                    _ => format!(
                        "The {} plan costs €{} per user per month.",
                        plans[next(3)],
                        10 + next(50)
                    ),
                };
                let id = format!("page-{}", next(6));
                let version = versions.entry(id.clone()).or_default();
                *version += 1;
                graph.apply_page(&ontology, &page(&id, *version, "wiki", &body, day), at(day));
            }
            6 | 7 => {
                graph.apply_record(
                    &ontology,
                    &RecordValue {
                        source: "crm",
                        sequence: u64::from(step),
                        entity: products[next(products.len())],
                        predicate: "owned_by",
                        value: teams[next(3)],
                        at: at(day),
                        effective_from: None,
                        scope: &Scope::everywhere(),
                    },
                );
            }
            8 => {
                let (old, new) = (products[next(4)], format!("{} Next", products[next(4)]));
                graph.rename(old, &new, &mut Changes::default());
            }
            _ => {
                if next(4) == 0 {
                    graph.retire_page_facts(at(day));
                } else {
                    // Asked between changes, as readers do: the kept views are then updated
                    // in place by the next change instead of computed again.
                    graph.lexicon(&ontology);
                    graph.needles();
                }
            }
        }
        let kept = graph.lexicon(&ontology);
        let fresh = graph.compute_lexicon(&ontology);
        assert_eq!(
            entries(&kept, &graph),
            entries(&fresh, &graph),
            "lexicon after step {step}"
        );
        assert_eq!(kept.len(), fresh.len(), "lexicon size after step {step}");
        assert_eq!(
            *graph.needles(),
            graph.compute_needles(),
            "needles after step {step}"
        );
    }
}
