use super::*;
use crate::knowledge::graph::{PageVersion, RecordValue};
use crate::knowledge::ontology::tests::sample;
use crate::knowledge::scope::Scope;
use chrono::Utc;

/// Version 1 of page `id` from `origin`, saying `body`, readable by all.
fn page(id: &str, origin: &str, body: &str) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version: 1,
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        updated_at: Utc::now(),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

fn graph() -> (Ontology, Graph) {
    let ontology = sample();
    let mut graph = Graph::new(&ontology);
    let body = "The Pro plan costs €49 per user per month. Tessaly Dock is included in the Pro plan. \
                Payments service is owned by the Atlas team. The Atlas team is led by Derya Kaya. \
                Tessaly Dock is our warehouse slotting tool. Customers can request a refund within 30 days of purchase.";
    let page = page("p", "faq", body);
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
fn a_name_found_only_by_the_type_noun_asked_for_is_not_the_subject() {
    let (ontology, mut graph) = graph();
    let page = page("q", "faq", "Kite is owned by the Atlas team.");
    graph.apply_page(&ontology, &page, Utc::now());
    // A record names a plan in full; "Team plan" is then found by its key, "team", the noun
    // "Which team" asks for, and is longer than "Kite".
    graph.apply_record(
        &ontology,
        &RecordValue {
            source: "record:billing",
            sequence: 1,
            entity: "Team plan",
            predicate: "price",
            value: "99",
            at: Utc::now(),
            effective_from: None,
            scope: &Scope::everywhere(),
        },
    );
    let m = map_question("Which team owns Kite?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(
        (m.entity.as_str(), m.path.as_slice()),
        ("Kite", &["owned_by".to_owned()][..])
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
    let claims =
        crate::knowledge::extract_claims(&ontology, "Tessaly Pier is included in the Pro plan.");
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

/// Systems that depend on each other, the teams that maintain them and who leads those.
fn systems() -> (Ontology, Graph) {
    let ontology = Ontology::from_json(
        r#"{
          "predicates": [
            {"name": "depends_on", "subject_type": "system", "object_type": "system",
             "patterns": ["{s} depends on {o}."]},
            {"name": "maintained_by", "subject_type": "system", "object_type": "team",
             "patterns": ["{s} is maintained by the {o} team."]},
            {"name": "led_by", "subject_type": "team", "object_type": "person",
             "patterns": ["The {s} team is led by {o}."]},
            {"name": "hosted_in", "subject_type": "system", "object_type": "region",
             "patterns": ["{s} is hosted in the {o} region."]}
          ],
          "authority": {"default": 2}
        }"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let page = page(
        "systems",
        "wiki",
        "Kite depends on Ledger. Ledger is maintained by the Quartz team. \
               Kite is maintained by the Opal team. The Quartz team is led by Ana Ruiz. \
               The Opal team is led by Ben Okafor. Kite is hosted in the North region.",
    );
    graph.apply_page(&ontology, &page, Utc::now());
    (ontology, graph)
}

fn systems_mapped(question: &str) -> Mapped {
    let (ontology, graph) = systems();
    map_question(question, &graph, &ontology, &[]).expect("maps")
}

#[test]
fn a_middle_relation_named_by_a_verb_phrase_is_a_hop() {
    let m = systems_mapped("Who leads the team that maintains the system Kite depends on?");
    assert_eq!(m.entity, "Kite");
    assert_eq!(m.path, ["depends_on", "maintained_by", "led_by"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
    let m = systems_mapped("Who leads the team that maintains Kite?");
    assert_eq!(m.path, ["maintained_by", "led_by"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
}

#[test]
fn a_hop_no_word_names_is_taken_from_the_types() {
    let m = systems_mapped("Who should I call about a Kite outage?");
    assert_eq!(m.path, ["maintained_by", "led_by"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
}

#[test]
fn a_relation_the_path_skips_is_named() {
    // The ontology knows no reporting line: the verb between the name and its preposition
    // is left unexplained, and so is one of a relative clause.
    let m = systems_mapped("Who leads the team that maintains the system Kite reports to?");
    assert_eq!(m.path, ["maintained_by", "led_by"]);
    assert_eq!(m.unexplained, ["reports"]);
    let m = systems_mapped("Who leads the team that audits Kite?");
    assert_eq!(m.path, ["maintained_by", "led_by"]);
    assert_eq!(m.unexplained, ["audits"]);
    // The question's own verb, when the answer is not of the kind asked for ("who", a
    // team); when it is, the verb reads as that relation ("which team reviews").
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "flown_by", "subject_type": "mission", "object_type": "crew",
             "patterns": ["The {s} mission is flown by crew {o}."]},
            {"name": "commanded_by", "subject_type": "crew", "object_type": "astronaut",
             "patterns": ["Crew {s} is commanded by {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let page = page(
        "crews",
        "wiki",
        "The Heron mission is flown by crew Lyra. Crew Lyra is commanded by Ines Moreau.",
    );
    graph.apply_page(&ontology, &page, Utc::now());
    let m = map_question(
        "Who audits the crew that is flown on the Heron mission?",
        &graph,
        &ontology,
        &[],
    )
    .expect("maps");
    assert_eq!(m.path, ["flown_by"]);
    assert_eq!(m.unexplained, ["audits"]);
    let m = systems_mapped("Which team reviews changes to Kite?");
    assert_eq!(m.path, ["maintained_by"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
    // A word of another relation the path does not follow.
    let m = systems_mapped("Which team maintains Kite in the region it is hosted in?");
    assert_eq!(m.path, ["maintained_by"]);
    assert_eq!(m.unexplained, ["hosted"]);
}

/// A toy sentence encoder: the words it is given vectors for, else a dimension of the
/// word's own (unrelated to every other word).
struct Toy(&'static [(&'static str, [f32; 3])]);

impl crate::knowledge::encoder::SentenceEncoder for Toy {
    fn id(&self) -> &str {
        "toy"
    }

    fn encode(
        &self,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, crate::knowledge::encoder::EncodeError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0f32; 3 + 1024];
                match self.0.iter().find(|(w, _)| w == text) {
                    Some((_, known)) => v[..3].copy_from_slice(known),
                    None => {
                        let at = text
                            .bytes()
                            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                        v[3 + (at % 1024) as usize] = 1.0;
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

/// Design documents with a status, a title and an author, one of them read; the ontology
/// read with `encoder` when given.
fn documents(encoder: Option<Toy>) -> (Ontology, Graph) {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "status", "subject_type": "pep", "object_type": "text",
             "patterns": ["The status of {s} is {o}."]},
            {"name": "title", "subject_type": "pep", "object_type": "text",
             "patterns": ["The title of {s} is {o}."]},
            {"name": "author", "subject_type": "pep", "object_type": "person",
             "patterns": ["{s} was written by {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let page = page(
        "pep-8",
        "pep",
        "The status of PEP 8 is Active. The title of PEP 8 is Style Guide.",
    );
    graph.apply_page(&ontology, &page, Utc::now());
    let ontology = match encoder {
        Some(toy) => ontology.with_extraction(
            crate::knowledge::ExtractSettings::default(),
            Some(std::sync::Arc::new(toy)),
        ),
        None => ontology,
    };
    (ontology, graph)
}

/// Similarities as all-MiniLM-L6-v2 has them for single words, roughly: "state" 0.45 from
/// "status" and 0.4 from "title" (kin by form to "status"); "mood" the same, kin to neither;
/// "condition" 0.48 from "status"; "shade" as close to both; "tone" far from both.
const MEANINGS: &[(&str, [f32; 3])] = &[
    ("status", [1.0, 0.0, 0.0]),
    ("title", [0.0, 1.0, 0.0]),
    ("state", [0.45, 0.4, 0.798]),
    ("mood", [0.45, 0.4, 0.798]),
    ("condition", [0.48, 0.2, 0.854]),
    ("shade", [0.45, 0.45, 0.771]),
    ("tone", [0.3, 0.0, 0.954]),
];

#[test]
fn a_noun_asked_for_that_names_no_relation_well_enough_is_guessed_by_meaning_and_form() {
    let (ontology, graph) = documents(Some(Toy(MEANINGS)));
    // Kin by form to "status" and closest to it in meaning, by a small lead.
    let m = map_question("What state is PEP 8 in?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(m.path, ["status"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
    let why = m.guessed.expect("a guess");
    assert!(
        why.contains("\"state\" was read as status")
            && why.contains("0.45")
            && why.contains("kin by form"),
        "{why}"
    );
    // Closest in meaning by a clear lead.
    let m = map_question("What condition is PEP 8 in?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(m.path, ["status"]);
    assert!(m.guessed.is_some_and(|why| !why.contains("kin")));
    // A word the slot's own words name is no guess.
    let m = map_question("What is the status of PEP 8?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(
        (m.path.as_slice(), m.guessed),
        (&["status".to_owned()][..], None)
    );
    for unclear in [
        // As close as "state" but kin to no slot: meaning alone does not lead enough.
        "What mood is PEP 8 in?",
        // As close to two slots: no lead.
        "What shade is PEP 8 in?",
        // Not close enough to any.
        "What tone is PEP 8 in?",
        // The word is the question's verb, not the noun it asks for.
        "What does PEP 8 state?",
        // A question about the thing as a whole.
        "What state is PEP 8 about?",
    ] {
        assert_eq!(
            map_question(unclear, &graph, &ontology, &[]),
            Err(Unmapped::NoPredicate),
            "{unclear}"
        );
    }
    // Without an encoder nothing is guessed.
    let (plain, graph) = documents(None);
    assert_eq!(
        map_question("What state is PEP 8 in?", &graph, &plain, &[]),
        Err(Unmapped::NoPredicate)
    );
}

#[test]
fn a_question_of_no_word_but_its_names_that_fits_several_slots_alike_names_none() {
    let (ontology, graph) = documents(None);
    // "What is" fits the status and the title alike, and nothing else chooses.
    assert_eq!(
        map_question("What is PEP 8 for?", &graph, &ontology, &[]),
        Err(Unmapped::NoPredicate)
    );
    // One slot of the kind asked for is the answer ("What is Tessaly Dock?" in
    // maps_direct_questions), and a word of the question chooses among several.
    let m = map_question("What is the title of PEP 8?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(m.path, ["title"]);
}

#[test]
fn a_question_ending_in_called_asks_for_the_slot_of_a_name() {
    let (ontology, graph) = documents(None);
    for question in ["What is PEP 8 called?", "What is PEP 8 titled?"] {
        let m = map_question(question, &graph, &ontology, &[]).expect("maps");
        assert_eq!(m.path, ["title"], "{question}");
        assert!(m.unexplained.is_empty() && m.guessed.is_none(), "{m:?}");
    }
    // Not the last word: the question asks for what the rest of it names.
    let m = map_question(
        "Who is named as the author of PEP 8?",
        &graph,
        &ontology,
        &[],
    )
    .expect("maps");
    assert_eq!(m.path, ["author"]);
}

#[test]
fn a_guess_takes_the_closest_slot_only_by_a_floor_and_a_lead_or_kinship() {
    let no_kin = |_: usize, _: usize| false;
    // Words × slots.
    let similar = vec![vec![0.45, 0.2, 0.1], vec![0.3, 0.32, 0.0]];
    let found = guess(&similar, &[0, 1], &[0, 1, 2], no_kin).expect("a guess");
    assert_eq!((found.slot, found.word, found.kin), (0, 0, false));
    assert!((found.next - 0.32).abs() < 1e-9);
    // Only among the entity's own slots, and only the words asked for.
    assert_eq!(
        guess(&similar, &[0, 1], &[1, 2], no_kin),
        None,
        "0.32 is under the floor"
    );
    assert_eq!(guess(&similar, &[1], &[0, 1, 2], no_kin), None);
    // Ahead by less than the gap: only when kin by form, and never when tied.
    let close = vec![vec![0.45, 0.4]];
    assert_eq!(guess(&close, &[0], &[0, 1], no_kin), None);
    let kin = |_: usize, slot: usize| slot == 0;
    assert!(guess(&close, &[0], &[0, 1], kin).is_some_and(|g| g.kin));
    let tied = vec![vec![0.45, 0.45]];
    assert_eq!(guess(&tied, &[0], &[0, 1], |_: usize, _: usize| true), None);
    assert_eq!(guess(&close, &[], &[0, 1], kin), None);
    assert!(
        guess(&close, &[0], &[0], no_kin).is_some(),
        "alone, it leads by its floor"
    );
    assert!(kin_by_form("state", "status") && kin_by_form("licence", "license"));
    assert!(!kin_by_form("stage", "status") && !kin_by_form("mood", "type"));
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

/// A schedule of our own: four dates of one release line, each its own relation.
fn schedule() -> (Ontology, Graph) {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "initial_release", "subject_type": "release_line", "object_type": "date",
             "patterns": ["{s} was first released on {o}."]},
            {"name": "lts_start", "subject_type": "release_line", "object_type": "date",
             "patterns": ["{s} enters long-term support on {o}."]},
            {"name": "maintenance_start", "subject_type": "release_line", "object_type": "date",
             "patterns": ["{s} moves to maintenance on {o}."]},
            {"name": "end_of_life", "subject_type": "release_line", "object_type": "date",
             "patterns": ["{s} reaches end of life on {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let page = page(
        "schedule",
        "wiki",
        "Kestrel was first released on 2020-01-07. Kestrel enters long-term support on \
               2020-10-20. Kestrel moves to maintenance on 2021-10-19. Kestrel reaches end of \
               life on 2023-04-30.",
    );
    graph.apply_page(&ontology, &page, Utc::now());
    (ontology, graph)
}

#[test]
fn a_relations_initials_written_after_a_name_are_the_relation() {
    let (ontology, graph) = schedule();
    let m = map_question("When is Kestrel EOL?", &graph, &ontology, &[]).expect("maps");
    assert_eq!(
        (m.entity.as_str(), m.path),
        ("Kestrel", vec!["end_of_life".to_owned()])
    );
}

#[test]
fn among_paths_explained_alike_the_one_the_question_calls_by_name_is_taken() {
    let (ontology, graph) = schedule();
    // "enter" is a word of lts_start's pattern, "maintenance" of maintenance_start's name.
    let m = map_question(
        "When does Kestrel enter its maintenance phase?",
        &graph,
        &ontology,
        &[],
    )
    .expect("maps");
    assert_eq!(m.path, ["maintenance_start"]);
    // A light verb names what it passes into, which the path explains.
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
    // A verb that is no light verb still names its own relation: the answer is hedged.
    let m = map_question(
        "When does Kestrel end its maintenance phase?",
        &graph,
        &ontology,
        &[],
    )
    .expect("maps");
    assert!(!m.unexplained.is_empty(), "{:?}", m.path);
}

#[test]
fn slots_tied_on_the_kind_asked_alone_name_none() {
    let (ontology, graph) = schedule();
    // Every slot is a date and no word of the question explains one: the ontology's order
    // would choose, not the question.
    assert_eq!(
        map_question("When is Kestrel due?", &graph, &ontology, &[]),
        Err(Unmapped::NoPredicate)
    );
}

#[test]
fn a_number_stands_alone_only_outside_a_longer_or_dotted_one() {
    assert!(stands_alone("When is Node 8 EOL?", "8"));
    assert!(stands_alone("When does v8 come out?", "8"));
    assert!(stands_alone("Is 8.", "8"));
    assert!(!stands_alone("When does v0.8 come out?", "8"));
    assert!(!stands_alone("When does 8.1 come out?", "8"));
    assert!(!stands_alone("When does Node 18 come out?", "8"));
    assert!(!stands_alone("Is Python 3.14.0 final?", "14"));
}

#[test]
fn a_word_of_the_noun_phrase_asked_for_after_what_is_the_names_no_other_relation() {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "lts_start", "subject_type": "release_line", "object_type": "date",
             "patterns": ["{s} enters long-term support on {o}."]},
            {"name": "codename", "subject_type": "release_line", "object_type": "text",
             "patterns": ["The codename of {s} is {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let body = "Kestrel enters long-term support on 2020-10-20. The codename of Kestrel is Erbium.";
    graph.apply_page(&ontology, &page("schedule", "wiki", body), Utc::now());
    let m = map_question(
        "What is the LTS codename of Kestrel?",
        &graph,
        &ontology,
        &[],
    )
    .expect("maps");
    assert_eq!(m.path, ["codename"]);
    assert!(m.unexplained.is_empty(), "{:?}", m.unexplained);
}

#[test]
fn what_is_the_release_of_asks_for_a_version_not_its_date_or_a_text() {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "codename", "subject_type": "cycle", "object_type": "text",
             "patterns": ["The codename of {s} is {o}."]},
            {"name": "latest_version", "subject_type": "cycle", "object_type": "version",
             "patterns": ["The latest release of {s} is {o}."]},
            {"name": "latest_release_date", "subject_type": "cycle", "object_type": "date",
             "patterns": ["The latest release of {s} came out on {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let body = "The codename of Kestrel is Erbium. The latest release of Kestrel is 1.2.3. \
                The latest release of Kestrel came out on 2020-10-20.";
    graph.apply_page(&ontology, &page("kestrel", "wiki", body), Utc::now());
    for (question, path) in [
        ("What is the latest release of Kestrel?", "latest_version"),
        ("What is the current version of Kestrel?", "latest_version"),
        (
            "Which patch release of Kestrel is the newest?",
            "latest_version",
        ),
        (
            "When was the latest release of Kestrel?",
            "latest_release_date",
        ),
        (
            "What is the date of the latest release of Kestrel?",
            "latest_release_date",
        ),
        ("What is the codename of Kestrel?", "codename"),
    ] {
        let m = map_question(question, &graph, &ontology, &[]).expect("maps");
        assert_eq!(m.path, [path], "{question}");
    }
}

#[test]
fn a_name_written_before_a_number_asks_about_the_numbered_thing() {
    let words = |text: &str| crate::knowledge::words::words_plain(text);
    assert!(numbered_in(
        &words("When is Ubuntu 25.04 EOL?"),
        &words("Ubuntu")
    ));
    assert!(numbered_in(
        &words("Is Python 3.12.1 out?"),
        &words("Python 3.12")
    ));
    assert!(!numbered_in(
        &words("When is Python 3.12 EOL?"),
        &words("Python 3.12")
    ));
    // Written once on its own: asked about.
    assert!(!numbered_in(
        &words("Is Ubuntu 24.04 an Ubuntu LTS?"),
        &words("Ubuntu")
    ));
    assert!(!numbered_in(&words("Who owns v20?"), &words("Node")));
}

#[test]
fn the_word_date_chooses_no_slot_of_dates_over_another() {
    let ontology = Ontology::from_json(
        r#"{"predicates": [
            {"name": "initial_release", "subject_type": "cycle", "object_type": "date",
             "patterns": ["{s} was released on {o}."]},
            {"name": "latest_release_date", "subject_type": "cycle", "object_type": "date",
             "patterns": ["The latest release of {s} came out on {o}."]}],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology");
    let mut graph = Graph::new(&ontology);
    let body = "Kestrel was released on 2020-01-02. \
                The latest release of Kestrel came out on 2020-10-20.";
    graph.apply_page(&ontology, &page("kestrel", "wiki", body), Utc::now());
    for (question, path) in [
        ("What is the release date of Kestrel?", "initial_release"),
        (
            "What is the date of the latest release of Kestrel?",
            "latest_release_date",
        ),
    ] {
        let m = map_question(question, &graph, &ontology, &[]).expect("maps");
        assert_eq!(m.path, [path], "{question}");
    }
}

#[test]
fn a_version_named_by_whose_it_is_is_no_version_of_the_subject() {
    let asked = asked_types("What Python version does requests need?");
    assert!(
        asked.contains("version") && !asked.contains(VERSIONS),
        "{asked:?}"
    );
    for question in [
        "Which patch release of requests is the newest?",
        "What is the latest version of requests?",
        "Which requests release is current?",
    ] {
        assert!(asked_types(question).contains(VERSIONS), "{question}");
    }
}

#[test]
fn what_is_a_thing_about_names_no_kind() {
    let asked = asked_types("What is PEP 594 about?");
    assert!(
        !asked.contains("pep") && !asked.contains("594"),
        "{asked:?}"
    );
}
