//! Tests of `semantic`.

use super::*;
use crate::knowledge::ontology::tests::sample;

fn read(sentence: &str, known: &[(&str, Option<&str>)]) -> Vec<(String, String, String)> {
    let ontology = sample();
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    let mut lexicon = Lexicon::default();
    for (name, t) in known {
        lexicon.insert(&normaliser, name, *t);
    }
    claims_by_meaning(
        &ontology,
        &profiles(&ontology),
        &Scorer::Lexical,
        &lexicon,
        &normaliser,
        sentence,
    )
    .into_iter()
    .map(|(c, _)| (c.predicate, c.subject.name().to_owned(), c.object))
    .collect()
}

fn one(p: &str, s: &str, o: &str) -> Vec<(String, String, String)> {
    vec![(p.into(), s.into(), o.into())]
}

#[test]
fn paraphrases_of_slots_are_read() {
    assert_eq!(
        read("You pay €49 per user each month for the Pro plan.", &[]),
        one("price", "Pro plan", "49")
    );
    assert_eq!(
        read(
            "Refunds can be requested up to 14 days after purchase.",
            &[]
        ),
        one("refund_days", "Refund policy", "14")
    );
    assert_eq!(
        read("The Atlas team owns Payments service.", &[]),
        one("owned_by", "Payments service", "Atlas")
    );
    assert_eq!(
        read(
            "The Pro plan includes Tessaly Dock.",
            &[("Tessaly Dock", Some("product"))]
        ),
        one("included_in", "Tessaly Dock", "Pro")
    );
    assert_eq!(
        read("Meet Tessaly Dock, our warehouse slotting tool.", &[]),
        one("does", "Tessaly Dock", "warehouse slotting tool")
    );
    assert_eq!(
        read("Tessaly Beacon used to be called Tessaly Track.", &[]),
        one("formerly", "Tessaly Beacon", "Tessaly Track")
    );
}

#[test]
fn non_assertions_are_refused() {
    for sentence in [
        "The Enterprise plan is not €149 per user per month.",
        "If the Payments service moved, the Helix team would own it.",
        "A proposal to move Payments service to the Helix team was rejected.",
        "Sales once floated a €45 Pro plan.",
        "Older contracts kept refunds open for 90 days of purchase.",
        "Next year the Pro plan costs €79 per user per month.",
        "Does the Pro plan cost €49 per user per month?",
        "We don't refund within 60 days of purchase.",
    ] {
        assert_eq!(read(sentence, &[]), Vec::new(), "{sentence}");
    }
    assert_eq!(
        refusal("Tessaly Beacon was formerly called Track.", true),
        None
    );
    assert_eq!(
        refusal("Tessaly Beacon was never called Track.", true),
        Some(Refusal::Negation)
    );
}

#[test]
fn sentences_without_a_predicate_state_nothing() {
    for sentence in [
        "Atlas sits on the third floor in Izmir.",
        "Support answers chat from 08:00 to 20:00 on weekdays.",
        "It runs in two regions.",
        "Hello, good news.",
    ] {
        assert_eq!(read(sentence, &[]), Vec::new(), "{sentence}");
    }
}

#[test]
fn mentions_take_known_names_type_nouns_and_capitals() {
    let ontology = sample();
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    let mut lexicon = Lexicon::default();
    lexicon.insert(&normaliser, "Routing engine", Some("service"));
    let toks = tokens("Meet Tessaly Route, then ask the Helix team about Routing engine and SLA.");
    let words = BTreeSet::from(["sla".to_owned()]);
    let found = mentions(&toks, &lexicon, &normaliser, &ontology.type_nouns(), &words);
    let names: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|m| (m.name.as_str(), m.types.iter().next().map(String::as_str)))
        .collect();
    assert_eq!(
        names,
        vec![
            ("Tessaly Route", None),
            ("Helix team", Some("team")),
            ("Routing engine", Some("service"))
        ]
    );
}

#[test]
fn a_type_noun_before_a_name_types_it() {
    let ontology = sample();
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    let toks = tokens("Team Helix reports to the board, and so does team Atlas.");
    let found = mentions(
        &toks,
        &Lexicon::default(),
        &normaliser,
        &ontology.type_nouns(),
        &BTreeSet::new(),
    );
    let names: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|m| (m.name.as_str(), m.types.iter().next().map(String::as_str)))
        .collect();
    assert_eq!(
        names,
        vec![("Helix", Some("team")), ("Atlas", Some("team"))]
    );
}

#[test]
fn numbers_carry_their_units_but_not_clock_times() {
    let toks = tokens("A seat is €199 a month, 99.95% up, open 08:00 to 20:00.");
    let found = values(&toks);
    let texts: Vec<&str> = found.iter().map(|v| v.text.as_str()).collect();
    assert_eq!(texts, vec!["199", "99.95"]);
    assert!(found[0].unit.contains("eur") && found[0].unit.contains("month"));
    assert!(found[1].unit.contains("percent"));
}
