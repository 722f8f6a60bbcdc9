use super::*;
use crate::knowledge::Ontology;

fn record(number: u32, stage: &str, latest: &str, beta: &str, owner: &str) -> String {
    format!(
        "title: Thing {number}\nrfc-number: {number}\nauthors:\n- \"@writer{number}\"\n\
         owning-group: group-{owner}\nstage: {stage}\nlatest-milestone: \"{latest}\"\n\
         milestone:\n  beta: \"{beta}\"\ncreation-date: 2024-0{number}-01\n"
    )
}

fn records() -> Vec<(String, String)> {
    vec![
        (
            "a/rfc.yaml".to_owned(),
            record(1, "beta", "v2.4", "v2.4", "storage"),
        ),
        (
            "b/rfc.yaml".to_owned(),
            record(2, "alpha", "v2.5", "v2.7", "network"),
        ),
        (
            "c/rfc.yaml".to_owned(),
            record(3, "stable", "v2.6", "v2.5", "storage"),
        ),
        (
            "c/README.md".to_owned(),
            "# RFC-3: Thing 3\n\n## Summary\n\nIt does things.".to_owned(),
        ),
    ]
}

fn pages(docs: &[(String, String)]) -> Vec<Page<'_>> {
    docs.iter()
        .map(|(id, body)| Page {
            id,
            title: id,
            body,
        })
        .collect()
}

fn by_name<'a>(proposal: &'a Proposal, name: &str) -> &'a ProposedPredicate {
    proposal
        .predicates
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", names(proposal)))
}

fn names(proposal: &Proposal) -> Vec<&str> {
    proposal
        .predicates
        .iter()
        .map(|p| p.name.as_str())
        .collect()
}

#[test]
fn recurring_fields_become_typed_predicates_of_the_id_keys_type() {
    let docs = records();
    let proposal = propose(&pages(&docs), &[], &Options::default(), None);
    let types: Vec<&str> = proposal.types.iter().map(|t| t.name.as_str()).collect();
    assert!(
        types.contains(&"rfc") && types.contains(&"person"),
        "{types:?}"
    );
    let shapes: Vec<(&str, &str, &str)> = proposal
        .predicates
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.subject_type.as_str(),
                p.object_type.as_str(),
            )
        })
        .collect();
    for expected in [
        ("stage", "rfc", "text"),
        ("latest_milestone", "rfc", "version"),
        ("milestone_beta", "rfc", "version"),
        ("creation_date", "rfc", "date"),
        ("authors", "rfc", "person"),
        ("owning_group", "rfc", "group"),
        ("title", "rfc", "text"),
    ] {
        assert!(shapes.contains(&expected), "{expected:?} in {shapes:?}");
    }
    let stage = by_name(&proposal, "stage");
    assert_eq!(stage.subjects, 3);
    assert_eq!(stage.patterns, vec!["The stage of {s} is {o}."]);
    assert_eq!(
        stage.examples.first().map(String::as_str),
        Some("stage: beta")
    );
    assert!(
        stage
            .facts
            .iter()
            .any(|f| f.subject == "RFC-2" && f.object == "alpha")
    );
    // The id key names the subject; it is not a predicate of its own.
    assert!(!names(&proposal).contains(&"rfc_number"));
}

#[test]
fn a_failed_question_adds_its_relation_words_to_the_predicate_it_asks_for() {
    let docs = records();
    let failed = [
        "Which milestone did RFC-2 (Thing 2) last target?",
        "In which release does RFC-1 reach beta?",
        "What stage is RFC-3 in?",
        "Where is the cafeteria?",
    ];
    let proposal = propose(&pages(&docs), &failed, &Options::default(), None);
    let stage = by_name(&proposal, "stage");
    assert_eq!(stage.answers, vec![failed[2].to_owned()]);
    let beta = by_name(&proposal, "milestone_beta");
    assert_eq!(beta.answers, vec![failed[1].to_owned()]);
    assert!(
        beta.vocabulary.contains(&"reach".to_owned()),
        "{:?}",
        beta.vocabulary
    );
    assert!(
        beta.patterns
            .contains(&"{s} release reach beta {o}.".to_owned()),
        "{:?}",
        beta.patterns
    );
    // "milestone" is a word of three predicates: without an encoder, the one whose other name
    // words the question does not contradict is not told apart, so the question stays unmatched
    // rather than guessed.
    let matched: usize = proposal.predicates.iter().map(|p| p.answers.len()).sum();
    assert!(matched >= 2, "{matched}");
    assert!(
        proposal
            .predicates
            .iter()
            .all(|p| !p.answers.contains(&failed[3].to_owned()))
    );
}

#[test]
fn the_proposal_is_an_ontology_the_structured_stage_reads() {
    let docs = records();
    let proposal = propose(&pages(&docs), &[], &Options::default(), None);
    let authority = BTreeMap::from([("default".to_owned(), 2)]);
    let doc = proposal
        .ontology(
            |p| ["stage", "latest_milestone", "owning_group"].contains(&p.name.as_str()),
            &authority,
        )
        .expect("three predicates kept");
    let ontology = Ontology::from_value(doc).expect("a valid ontology");
    let claims = ontology.extraction().claims(
        &ontology,
        &docs[1].1,
        &crate::knowledge::names::Lexicon::default(),
    );
    let mut read: Vec<(String, String, String)> = claims
        .iter()
        .filter(|c| c.predicate != "alias")
        .map(|c| {
            (
                c.predicate.clone(),
                c.subject.name().to_owned(),
                c.object.clone(),
            )
        })
        .collect();
    read.sort();
    assert_eq!(
        read,
        vec![
            ("latest_milestone".into(), "RFC-2".into(), "v2.5".into()),
            (
                "owning_group".into(),
                "RFC-2".into(),
                "group-network".into()
            ),
            ("stage".into(), "RFC-2".into(), "alpha".into()),
        ]
    );
    assert!(proposal.ontology(|_| false, &authority).is_none());
}

#[test]
fn recurring_statements_between_typed_names_become_predicates() {
    let docs: Vec<(String, String)> = [
        "The Lime team owns Quill. Quill is included in the Basic plan.",
        "The Basic plan costs €9 per seat. Mango belongs to the Plum team.",
        "The Plum team owns Mango. The Gold plan costs €29 per seat.",
        "Quill belongs to the Lime team. Gold has a 99.9% uptime. Basic has a 99.5% uptime.",
        "We never said the Gold plan costs €19 per seat.",
    ]
    .iter()
    .enumerate()
    .map(|(i, body)| (format!("p{i}"), (*body).to_owned()))
    .collect();
    let failed = ["Which team owns Quill?"];
    let proposal = propose(&pages(&docs), &failed, &Options::default(), None);
    let owned = proposal
        .predicates
        .iter()
        .find(|p| p.patterns.contains(&"The {o} team owns {s}.".to_owned()))
        .unwrap_or_else(|| panic!("{:#?}", proposal.predicates));
    // "belongs to" states the same facts, the other way round: one predicate, two patterns.
    assert!(
        owned
            .patterns
            .contains(&"{s} belongs to the {o} team.".to_owned())
    );
    assert_eq!(
        (owned.subject_type.as_str(), owned.object_type.as_str()),
        ("any", "team")
    );
    assert_eq!(owned.answers, vec![failed[0].to_owned()]);
    let price = proposal
        .predicates
        .iter()
        .find(|p| {
            p.patterns
                .contains(&"The {s} plan costs €{o:number} per seat.".to_owned())
        })
        .unwrap_or_else(|| panic!("{:#?}", proposal.predicates));
    assert_eq!(
        (price.subject_type.as_str(), price.object_type.as_str()),
        ("plan", "number")
    );
    // The negated sentence is not read: no fact of 19.
    assert!(
        price.facts.iter().all(|f| f.object != "€19"),
        "{:?}",
        price.facts
    );
    let uptime = proposal
        .predicates
        .iter()
        .find(|p| {
            p.patterns
                .contains(&"{s} has a {o:number}% uptime.".to_owned())
        })
        .unwrap_or_else(|| panic!("{:#?}", proposal.predicates));
    assert_eq!(uptime.subjects, 2);
    let doc = proposal
        .ontology(|_| true, &BTreeMap::new())
        .expect("predicates");
    Ontology::from_value(doc).expect("every proposed pattern compiles");
}

#[test]
fn values_give_object_types() {
    let s = |v: &[&str]| value_shape(&v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>());
    assert_eq!(s(&["v1.28", "v1.30", "1.33"]), Some("version"));
    assert_eq!(s(&["2023-05-01", "2024-01-02"]), Some("date"));
    assert_eq!(s(&["49", "€19", "99.9%"]), Some("number"));
    assert_eq!(s(&["true", "false"]), Some("text"));
    assert_eq!(s(&["sig-node", "sig-apps"]), None);
    assert_eq!(
        fields::title_id("KEP-0752 EndpointSlices"),
        Some(("kep".into(), "KEP-752".into()))
    );
    assert_eq!(
        fields::title_id("RFC 2616: HTTP"),
        Some(("rfc".into(), "RFC-2616".into()))
    );
    assert_eq!(fields::title_id("Pricing"), None);
}

#[test]
fn a_reviewers_edit_drops_and_renames_and_the_rest_extends_the_ontology_in_force() {
    let docs = records();
    let proposal = propose(&pages(&docs), &[], &Options::default(), None);
    let edit = Edit {
        drop: vec!["title".to_owned()],
        rename: BTreeMap::from([("stage".to_owned(), "phase".to_owned())]),
    };
    let edited = proposal.edited(&edit).expect("a valid edit");
    assert!(!names(&edited).contains(&"title") && !names(&edited).contains(&"stage"));
    assert_eq!(
        by_name(&edited, "phase").patterns,
        ["The stage of {s} is {o}."]
    );
    // Bad edits say what is wrong.
    for (edit, says) in [
        (
            Edit {
                drop: vec!["nothing_like_it".to_owned()],
                ..Edit::default()
            },
            "not a predicate of the proposal",
        ),
        (
            Edit {
                rename: BTreeMap::from([("stage".to_owned(), "Phase!".to_owned())]),
                ..Edit::default()
            },
            "not a predicate name",
        ),
        (
            Edit {
                rename: BTreeMap::from([("stage".to_owned(), "title".to_owned())]),
                ..Edit::default()
            },
            "two predicates would be named",
        ),
        (
            Edit {
                drop: names(&proposal).iter().map(|n| (*n).to_owned()).collect(),
                ..Edit::default()
            },
            "reject the proposal instead",
        ),
    ] {
        let err = proposal.edited(&edit).expect_err("refused");
        assert!(err.contains(says), "{err}");
    }
    // Added after the predicates in force, which stay as they are, with their authority.
    let current = serde_json::json!({
        "predicates": [{"name": "phase", "subject_type": "rfc", "object_type": "text",
                        "patterns": ["{s} is in phase {o}."]}],
        "authority": {"wiki": 3, "default": 2}
    });
    let doc = edited.extend(Some(&current)).expect("extends");
    let listed: Vec<&str> = doc["predicates"]
        .as_array()
        .expect("predicates")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(listed[0], "phase");
    assert_eq!(listed.iter().filter(|n| **n == "phase").count(), 1);
    assert!(listed.contains(&"latest_milestone"), "{listed:?}");
    assert_eq!(doc["authority"], current["authority"]);
    Ontology::from_value(doc).expect("a valid ontology");
    // A first ontology ranks every origin alike.
    let first = edited.extend(None).expect("a first ontology");
    assert_eq!(first["authority"], serde_json::json!({"default": 1}));
    Ontology::from_value(first).expect("a valid ontology");
    assert!(edited.extend(Some(&serde_json::json!([]))).is_err());
    // The proposal is kept as JSON between the draft and the decision.
    let text = serde_json::to_string(&edited).expect("serialises");
    assert_eq!(
        serde_json::from_str::<Proposal>(&text).expect("reads back"),
        edited
    );
}
