use super::*;
use crate::knowledge::ontology::tests::sample;
use crate::knowledge::semantic::profiles;

fn claims(text: &str) -> Vec<(String, String, String)> {
    claims_of(&sample(), text)
}

fn claims_of(ontology: &Ontology, text: &str) -> Vec<(String, String, String)> {
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    read(
        ontology,
        &profiles(ontology),
        &Lexicon::default(),
        &normaliser,
        &|_: &[&str]| None,
        text,
    )
    .claims
    .into_iter()
    .map(|c| (c.predicate, c.subject.name().to_owned(), c.object))
    .collect()
}

fn triple(p: &str, s: &str, o: &str) -> (String, String, String) {
    (p.into(), s.into(), o.into())
}

#[test]
fn key_value_sentences_name_predicate_and_subject() {
    assert_eq!(
        claims(
            "Owner of Routing engine: the Atlas team. Pricing for Pro: €49 per user, billed monthly."
        ),
        vec![
            triple("owned_by", "Routing engine", "Atlas"),
            triple("price", "Pro", "49")
        ]
    );
    assert_eq!(
        claims("Refund window: 30 days of purchase."),
        vec![triple("refund_days", "Refund policy", "30")]
    );
    assert_eq!(claims("Objective: halve late deliveries."), Vec::new());
}

#[test]
fn front_matter_and_tables() {
    let text = "---\nname: Tessaly Dock\nowner: Atlas\n---\nSome prose.\n\n| Plan | Price |\n|---|---|\n| Pro | €49 |\n| Starter | €19 |\n";
    assert_eq!(
        claims(text),
        vec![
            triple("owned_by", "Tessaly Dock", "Atlas"),
            triple("price", "Pro", "49"),
            triple("price", "Starter", "19"),
        ]
    );
}

fn records_ontology() -> Ontology {
    Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "title", "subject_type": "pep", "object_type": "text",
             "patterns": ["The title of {s} is {o}."]},
            {"name": "status", "subject_type": "pep", "object_type": "text",
             "patterns": ["{s} has the status {o}."]},
            {"name": "author", "subject_type": "pep", "object_type": "person",
             "patterns": ["{s} was written by {o}."]},
            {"name": "maintained_by", "subject_type": "package", "object_type": "person",
             "patterns": ["{s} is maintained by {o}."]},
            {"name": "latest_milestone", "subject_type": "pep", "object_type": "release",
             "patterns": ["{s} last targeted {o}."]},
            {"name": "beta_milestone", "subject_type": "pep", "object_type": "release",
             "patterns": ["{s} reaches beta in {o}."]},
            {"name": "release_date", "subject_type": "release", "object_type": "date",
             "patterns": ["{s} is released on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology")
}

#[test]
fn a_header_block_names_its_subject_and_fields_name_predicates() {
    let ontology = records_ontology();
    let got = claims_of(
        &ontology,
        "PEP: 8\nTitle: Style Guide\nAuthor: Guido van Rossum <guido@example.org>,\n  Barry <b@example.org>\nStatus: Active\nCreated: 05-Jul-2001\n\nIntroduction\n============\n\nSome prose.\n",
    );
    assert_eq!(
        got,
        vec![
            triple(ALIAS, "PEP-8", "Style Guide"),
            triple("title", "PEP-8", "Style Guide"),
            triple("author", "PEP-8", "Guido van Rossum"),
            triple("status", "PEP-8", "Active"),
        ]
    );
    // A package record: the key naming a type names the subject; "Maintainer" is
    // maintained_by by its words.
    let got = claims_of(
        &ontology,
        "Package: ledger\nVersion: 1.10\nMaintainer: Ana Ruiz <ana@example.org>\n",
    );
    assert_eq!(got, vec![triple("maintained_by", "ledger", "Ana Ruiz")]);
}

#[test]
fn yaml_records_nested_keys_and_a_dated_list() {
    let ontology = records_ontology();
    let got = claims_of(
        &ontology,
        "title: Faster things\npep-number: 12\nauthors:\n- \"@ana\"\n- \"@bo\"\nstatus: implemented\nlatest-milestone: \"v1.19\"\nmilestone:\n  alpha: \"v1.16\"\n  beta: \"v1.18\"\n",
    );
    assert_eq!(
        got,
        vec![
            triple(ALIAS, "PEP-12", "Faster things"),
            triple("title", "PEP-12", "Faster things"),
            triple("author", "PEP-12", "ana"),
            triple("status", "PEP-12", "implemented"),
            triple("latest_milestone", "PEP-12", "v1.19"),
            triple("beta_milestone", "PEP-12", "v1.18"),
        ]
    );
    let got = claims_of(
        &ontology,
        "# Release schedule\n\nActual:\n\n- 3.12.0 beta 1: Monday, 2023-05-22\n- 3.12.0 final: Monday, 2023-10-02\n",
    );
    assert_eq!(
        got,
        vec![
            triple("release_date", "3.12.0 beta 1", "Monday, 2023-05-22"),
            triple("release_date", "3.12.0 final", "Monday, 2023-10-02"),
        ]
    );
}

#[test]
fn a_key_with_a_word_of_its_own_or_a_value_that_repeats_it_is_not_the_predicate() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "license", "subject_type": "package", "object_type": "text",
             "patterns": ["{s} is distributed under {o}."]},
            {"name": "requires_python", "subject_type": "package", "object_type": "text",
             "patterns": ["{s} needs Python {o}."]},
            {"name": "author", "subject_type": "package", "object_type": "person",
             "patterns": ["{s} was written by {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let got = claims_of(
        &ontology,
        "Name: ledger\nRequires-Dist: certifi (>=2017.4.17)\nLicense-File: LICENSE.txt\nAuthor-email: Ana Ruiz <ana@example.org>\n",
    );
    assert_eq!(got, vec![triple("author", "ledger", "Ana Ruiz")]);
    let got = claims_of(
        &ontology,
        "Name: ledger\nAuthor-email: ana@example.org\nLicense-Expression: MIT\nRequires-Python: >=3.8\n",
    );
    assert_eq!(
        got,
        vec![
            triple("license", "ledger", "MIT"),
            triple("requires_python", "ledger", ">=3.8"),
        ]
    );
    // A key naming a file holds a file's name, whatever the file is called.
    for file in ["AUTHORS", "COPYING.rst", "vendor/typeshed/LICENSE"] {
        let got = claims_of(&ontology, &format!("Name: ledger\nLicense-File: {file}\n"));
        assert_eq!(got, vec![], "{file}");
    }
    // A field folded over several paragraphs holds a text of its own (a whole licence), not a
    // value; the fields after it are still the record's.
    let got = claims_of(
        &ontology,
        "Name: ledger\nLicense: Permission is hereby granted, free of charge, to any person\n        obtaining a copy of this software, subject to the following conditions:\n        \n        The above notice shall be included in all copies.\nRequires-Python: >=3.9\n\nLedger keeps books.\n",
    );
    assert_eq!(got, vec![triple("requires_python", "ledger", ">=3.9")]);
    // A link's scheme in prose is no `Key: value`.
    let got = claims_of(
        &ontology,
        "Name: ledger\nLicense-Expression: MIT\n\nLedger is used by `many projects <https://example.org/search?q=ledger>`_, including pip.\n",
    );
    assert_eq!(got, vec![triple("license", "ledger", "MIT")]);
}

#[test]
fn a_value_has_the_shape_of_its_type_or_is_weak() {
    assert!(has_shape("date", "Monday, 2023-05-22"));
    assert!(has_shape("release_date", "05-Jul-2001"));
    assert!(!has_shape("date", "Monday"));
    assert!(has_shape("release", "v1.19"));
    assert!(!has_shape("release", "TBD"));
    assert!(!has_shape("version", "2023-05-22"));
    assert!(!has_shape("version", "May 22, 2023"));
    // A calendar version is written with dots alone.
    assert!(has_shape("release", "2016.2.28") && has_shape("version", "24.1.0"));
    assert!(has_shape("number", "49"));
    assert!(!has_shape("number", "several"));
    assert!(has_shape("team", "anything at all"));
    // Words of a type's name, not letters: a runtime is no time.
    assert_eq!(value_kind("runtime"), ValueKind::Name);
}

#[test]
fn dated_list_items_take_the_date_predicate_their_key_names_and_leave_remarks_out() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "created", "subject_type": "pep", "object_type": "date",
             "patterns": ["{s} was first drafted on {o}."]},
            {"name": "release_date", "subject_type": "release", "object_type": "date",
             "patterns": ["{s} ships on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let got = claims_of(
        &ontology,
        "PEP: 745\nTitle: Python 3.14 Release Schedule\nCreated: 24-Apr-2024\n\nSchedule\n========\n\nActual:\n\n- 3.14.0 beta 1: Wednesday, 2025-05-07\n- 3.14.1: Tuesday, 2025-12-02 (security hotfix; recalled)\n- 3.14.2: 2026-02-03 (expected)\n",
    );
    assert_eq!(
        got,
        vec![
            triple(ALIAS, "PEP-745", "Python 3.14 Release Schedule"),
            triple("created", "PEP-745", "24-Apr-2024"),
            triple("release_date", "3.14.0 beta 1", "Wednesday, 2025-05-07"),
            triple("release_date", "3.14.1", "Tuesday, 2025-12-02"),
            triple("release_date", "3.14.2", "2026-02-03"),
            triple(ALIAS, "3.14.0 beta 1", "Python 3.14.0 beta 1"),
            triple(ALIAS, "3.14.1", "Python 3.14.1"),
            triple(ALIAS, "3.14.2", "Python 3.14.2"),
        ]
    );
    // Without a header: a version-like key names a release.
    let got = claims_of(
        &ontology,
        "Release dates, as planned.\n\n- 3.14.0 final: 2025-10-07\n",
    );
    assert_eq!(
        got,
        vec![triple("release_date", "3.14.0 final", "2025-10-07")]
    );
    assert_eq!(
        titled_version("Python 3.14 Release Schedule", "3.14.0 beta 1").as_deref(),
        Some("Python 3.14.0 beta 1")
    );
    assert_eq!(
        titled_version("Python 3.14 Release Schedule", "3.15.0 final"),
        None
    );
    assert_eq!(titled_version("Release Schedule", "3.14"), None);
    assert_eq!(
        date_part("Monday, 2023-05-22 (expected)").as_deref(),
        Some("Monday, 2023-05-22")
    );
    assert_eq!(date_part("TBD (after the sprint)"), None);
}

#[test]
fn a_titled_page_names_its_subject() {
    let got = claims_of(
        &records_ontology(),
        "# KEP-895: Pod Topology Spread\n\n## Summary\n\nIt spreads pods.\n",
    );
    assert_eq!(got, vec![triple(ALIAS, "KEP-895", "Pod Topology Spread")]);
}

#[test]
fn a_short_list_value_is_one_name_and_a_bare_version_takes_the_titles_product() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "release_manager", "subject_type": "release", "object_type": "person",
             "patterns": ["{o} manages the releases of {s}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let got = claims_of(
        &ontology,
        "PEP: 745\nTitle: Python 3.14 Release Schedule\n\nCrew\n====\n\nThe crew.\n\n- 3.14 release manager: Hugo van Kemenade\n- Windows installers: Steve Dower\n",
    );
    assert_eq!(
        got,
        vec![
            triple("release_manager", "3.14", "Hugo van Kemenade"),
            triple(ALIAS, "3.14", "Python 3.14"),
        ]
    );
}

#[test]
fn a_list_of_ids_is_answered_whole_a_list_of_names_by_its_first() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "superseded_by", "subject_type": "pep", "object_type": "pep",
             "patterns": ["{s} was replaced by {o}."]},
            {"name": "author", "subject_type": "pep", "object_type": "person",
             "patterns": ["{s} was written by {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let got = claims_of(
        &ontology,
        "PEP: 563\nAuthor: Ana Ruiz <ana@example.org>, Bo Li\nSuperseded-By: 649, 749\nTitle: UNKNOWN\n",
    );
    assert_eq!(
        got,
        vec![
            triple("author", "PEP-563", "Ana Ruiz"),
            triple("superseded_by", "PEP-563", "649, 749"),
        ]
    );
}

/// A release schedule's ontology of our own making: one subject type, four dates and a name.
fn schedule_ontology() -> Ontology {
    Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "codename", "subject_type": "line", "object_type": "text",
             "patterns": ["{s} is code-named {o}."]},
            {"name": "general_availability", "subject_type": "line", "object_type": "date",
             "patterns": ["{s} became generally available on {o}."]},
            {"name": "lts_start", "subject_type": "line", "object_type": "date",
             "patterns": ["Long-term support of {s} starts on {o}."]},
            {"name": "maintenance_start", "subject_type": "line", "object_type": "date",
             "patterns": ["{s} goes into maintenance on {o}."]},
            {"name": "end_of_life", "subject_type": "line", "object_type": "date",
             "patterns": ["Support for {s} ends on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology")
}

fn claims_with(
    ontology: &Ontology,
    similarity: KeySimilarity<'_>,
    text: &str,
) -> Vec<(String, String, String)> {
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    read(
        ontology,
        &profiles(ontology),
        &Lexicon::default(),
        &normaliser,
        similarity,
        text,
    )
    .claims
    .into_iter()
    .map(|c| (c.predicate, c.subject.name().to_owned(), c.object))
    .collect()
}

/// A toy encoder's similarities for the schedule's keys: `start` is close to the availability
/// date only in part, and is one of the LTS and maintenance predicates' own words.
fn toy_similarity(keys: &[&str]) -> Option<Vec<Vec<f64>>> {
    Some(
        keys.iter()
            .map(|key| match *key {
                "start" => vec![0.2, 0.55, 1.0, 1.0, 0.3],
                "alpha" => vec![0.2, 0.4, 0.2, 0.2, 0.2],
                _ => vec![0.1; 5],
            })
            .collect(),
    )
}

const SCHEDULE: &str = r#"{
  "v0.9": {"start": "2012-06-25", "end": "2014-07-31"},
  "v1": {"start": "2015-09-08", "lts": "2015-10-12", "maintenance": "2017-04-01",
         "end": "2018-04-30", "codename": "Ash"},
  "v2": {"start": "2016-04-26", "lts": "2016-10-18", "maintenance": "2018-04-30",
         "end": "2019-04-30", "codename": ""},
  "v3": {"alpha": "2016-09-01", "start": "2016-10-25", "maintenance": "2017-04-30",
         "end": "2017-06-30"}
}"#;

#[test]
fn records_of_one_kind_are_read_as_one_schema_by_their_keys() {
    let ontology = schedule_ontology();
    let got = claims_with(&ontology, &toy_similarity, SCHEDULE);
    let of = |line: &str| -> Vec<(String, String)> {
        got.iter()
            .filter(|(_, s, _)| s == line)
            .map(|(p, _, o)| (p.clone(), o.clone()))
            .collect()
    };
    let pair = |p: &str, o: &str| (p.to_owned(), o.to_owned());
    // `lts` names the LTS start better than `start` does; `start`, left over, is the one date
    // predicate left, close enough in meaning; `alpha` is not.
    assert_eq!(
        of("v1"),
        vec![
            pair("general_availability", "2015-09-08"),
            pair("lts_start", "2015-10-12"),
            pair("maintenance_start", "2017-04-01"),
            pair("end_of_life", "2018-04-30"),
            pair("codename", "Ash"),
        ]
    );
    // A record without `lts` reads `start` as its kind does; an empty codename is no value.
    assert_eq!(
        of("v0.9"),
        vec![
            pair("general_availability", "2012-06-25"),
            pair("end_of_life", "2014-07-31"),
        ]
    );
    assert!(!of("v2").iter().any(|(p, _)| p == "codename"));
    assert_eq!(
        of("v3"),
        vec![
            pair("general_availability", "2016-10-25"),
            pair("maintenance_start", "2017-04-30"),
            pair("end_of_life", "2017-06-30"),
        ]
    );
    // Each value's provenance names its record.
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    let read = read(
        &ontology,
        &profiles(&ontology),
        &Lexicon::default(),
        &normaliser,
        &toy_similarity,
        SCHEDULE,
    );
    assert!(
        read.claims
            .iter()
            .any(|c| c.sentence == "v1 codename: Ash" && c.extractor == STRUCTURED_ID),
        "{:?}",
        read.claims
    );
}

#[test]
fn a_key_whose_words_fit_two_predicates_alike_names_neither() {
    let ontology = schedule_ontology();
    // Without the encoder, and alone in its records, `start` could be the LTS start or the
    // maintenance start: it is neither.
    let got = claims_with(
        &ontology,
        &|_: &[&str]| None,
        r#"{"v0.9": {"start": "2012-06-25", "end": "2014-07-31"},
            "v0.10": {"start": "2013-03-11", "end": "2016-10-31"}}"#,
    );
    assert_eq!(
        got,
        vec![
            triple("end_of_life", "v0.9", "2014-07-31"),
            triple("end_of_life", "v0.10", "2016-10-31"),
        ]
    );
}

#[test]
fn a_tables_rows_are_records_of_their_first_cell() {
    let ontology = schedule_ontology();
    let got = claims_with(
        &ontology,
        &|_: &[&str]| None,
        "# Schedule\n\n| Line | Codename | Maintenance Start | End-of-life |\n|:--:|:--:|:--:|:--:|\n\
         | [v1][] | [**Ash**][ash] | 2017-04-01 | 2018-04-30 |\n| v2 | - | | 2019-04-30 |\n\n\
         [v1]: https://example.org/v1\n",
    );
    assert_eq!(
        got,
        vec![
            triple("codename", "v1", "Ash"),
            triple("maintenance_start", "v1", "2017-04-01"),
            triple("end_of_life", "v1", "2018-04-30"),
            triple("end_of_life", "v2", "2019-04-30"),
        ]
    );
}

#[test]
fn yaml_records_keyed_by_name_are_one_subject_each() {
    let ontology = schedule_ontology();
    let got = claims_with(
        &ontology,
        &|_: &[&str]| None,
        "lines:\n  v1:\n    codename: Ash\n    end-of-life: 2018-04-30\n  v2:\n    codename: Birch\n    end-of-life: 2019-04-30\n",
    );
    assert_eq!(
        got,
        vec![
            triple("codename", "v1", "Ash"),
            triple("end_of_life", "v1", "2018-04-30"),
            triple("codename", "v2", "Birch"),
            triple("end_of_life", "v2", "2019-04-30"),
        ]
    );
}

#[test]
fn a_labelled_address_is_a_field_named_by_its_label() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "home_page", "subject_type": "package", "object_type": "text",
             "patterns": ["The website of {s} is {o}."]},
            {"name": "license", "subject_type": "package", "object_type": "text",
             "patterns": ["{s} is distributed under {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    // What a package record with `fields` states of `predicate`.
    let stated = |predicate: &str, fields: &str| {
        claims_of(
            &ontology,
            &format!("Name: httpx\nVersion: 0.28.1\n{fields}"),
        )
        .into_iter()
        .filter(|(p, _, _)| p == predicate)
        .collect::<Vec<_>>()
    };
    let home_page = |fields: &str| stated("home_page", fields);
    // "Homepage" is "home" and "page" run together.
    assert_eq!(
        home_page(
            "Project-URL: Documentation, https://docs.example.org\n\
             Project-URL: Homepage, https://github.com/encode/httpx\n"
        ),
        vec![triple(
            "home_page",
            "httpx",
            "https://github.com/encode/httpx"
        )]
    );
    // A field named so outright comes first.
    assert_eq!(
        home_page(
            "Project-URL: Homepage, https://github.com/encode/httpx\n\
             Home-page: https://www.python-httpx.org\n"
        ),
        vec![triple("home_page", "httpx", "https://www.python-httpx.org")]
    );
    // Labels that name no predicate state none, a value with a comma is no label, and a
    // classifier's path states nothing.
    assert_eq!(
        home_page(
            "Project-URL: Source, https://github.com/encode/httpx\n\
             Summary: Fast, https://not-a-label and more\n"
        ),
        Vec::new()
    );
    assert_eq!(
        stated(
            "license",
            "Classifier: License :: OSI Approved :: BSD License\n"
        ),
        Vec::new()
    );
}

#[test]
fn a_list_of_numbered_records_names_each_by_the_pages_title_and_its_number() {
    let ontology = schedule_ontology();
    let page = |title: &str| {
        format!(
            "---\ntitle: {title}\nreleases:\n  - cycle: \"1.10\"\n    codename: Ash\n    \
             end-of-life: 2026-04-30\n  - cycle: \"1.9\"\n    codename: Birch\n    \
             end-of-life: 2025-04-30\n---\n"
        )
    };
    assert_eq!(
        claims_with(&ontology, &|_: &[&str]| None, &page("Ledger")),
        vec![
            triple("codename", "Ledger 1.10", "Ash"),
            triple("end_of_life", "Ledger 1.10", "2026-04-30"),
            triple("codename", "Ledger 1.9", "Birch"),
            triple("end_of_life", "Ledger 1.9", "2025-04-30"),
        ]
    );
    // A long title is no name to number things by.
    let got = claims_with(
        &ontology,
        &|_: &[&str]| None,
        &page("How the ledger team plans its releases"),
    );
    assert!(got.contains(&triple("codename", "1.10", "Ash")), "{got:?}");
    assert_eq!(titled_number(Some("Ledger"), "v1"), "v1");
    assert_eq!(titled_number(Some("Ledger"), "22.04"), "Ledger 22.04");
    assert_eq!(titled_number(None, "22.04"), "22.04");
}

#[test]
fn a_key_that_is_an_acronym_of_a_predicates_name_names_it() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "active_support_end", "subject_type": "cycle", "object_type": "date",
             "patterns": ["Active support for {s} ends on {o}."]},
            {"name": "end_of_life", "subject_type": "cycle", "object_type": "date",
             "patterns": ["{s} reaches end of life on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let got = claims_with(
        &ontology,
        &|_: &[&str]| None,
        "cycles:\n  - cycle: v1\n    eoas: 2024-04-01\n    eol: 2026-04-30\n  \
         - cycle: v2\n    eoas: 2025-04-01\n    eol: 2027-04-30\n  \
         - cycle: v0\n    eoas: true\n    eol: true\n  - cycle: v00\n    eoas: true\n",
    );
    // A flag (`eoas: true`, in most records) states no date and does not unmake the key.
    assert_eq!(
        got,
        vec![
            triple("active_support_end", "v1", "2024-04-01"),
            triple("end_of_life", "v1", "2026-04-30"),
            triple("active_support_end", "v2", "2025-04-01"),
            triple("end_of_life", "v2", "2027-04-30"),
        ]
    );
    let name = |words: &[&str]| words.iter().map(|w| w.to_string()).collect();
    let none = BTreeSet::new();
    assert!(acronym("eol", &name(&["end", "life"]), &none).is_some());
    assert!(acronym("ga", &name(&["general", "availability"]), &none).is_some());
    // Each of the name's words once, small words' letters at most once each.
    assert!(acronym("eo", &name(&["end", "life"]), &none).is_none());
    assert!(acronym("eool", &name(&["end", "life"]), &none).is_none());
    assert!(acronym("id", &name(&["incident", "date"]), &none).is_none());
    assert!(acronym("eol", &name(&["end"]), &none).is_none());
}

#[test]
fn a_name_close_in_meaning_takes_no_predicate_a_names_words_claim() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "latest_version", "subject_type": "cycle", "object_type": "version",
             "patterns": ["The latest release of {s} is {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    // The encoder finds `releaseLabel` closer to the latest version than `latest` is by its
    // words; the words decide.
    let similarity = |keys: &[&str]| {
        Some(
            keys.iter()
                .map(|k| vec![if *k == "release label" { 0.9 } else { 0.3 }])
                .collect(),
        )
    };
    let got = claims_with(
        &ontology,
        &similarity,
        "cycles:\n  - cycle: 11-24h2\n    releaseLabel: \"11 24H2\"\n    latest: 10.0.26100\n  \
         - cycle: 11-23h2\n    releaseLabel: \"11 23H2\"\n    latest: 10.0.22631\n",
    );
    assert_eq!(
        got,
        vec![
            triple("latest_version", "11-24h2", "10.0.26100"),
            triple("latest_version", "11-23h2", "10.0.22631"),
        ]
    );
}

#[test]
fn a_key_holding_part_of_two_predicates_names_names_neither_unless_one_is_taken() {
    let ontology = Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "initial_release", "subject_type": "cycle", "object_type": "date",
             "patterns": ["{s} was released on {o}."]},
            {"name": "latest_release_date", "subject_type": "cycle", "object_type": "date",
             "patterns": ["The latest release of {s} came out on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology");
    let page = |latest: bool| {
        let latest = |date: &str| {
            if latest {
                format!("    latestReleaseDate: {date}\n")
            } else {
                String::new()
            }
        };
        format!(
            "cycles:\n  - cycle: v1\n    releaseDate: 2024-04-01\n{}  \
             - cycle: v2\n    releaseDate: 2025-04-01\n{}",
            latest("2024-09-30"),
            latest("2025-06-30")
        )
    };
    // `releaseDate` alone could be either date; its words fit the latest release's a little
    // better, and a guess would state a wrong fact.
    assert_eq!(
        claims_with(&ontology, &|_: &[&str]| None, &page(false)),
        vec![]
    );
    // Beside `latestReleaseDate`, which names the latest release's date whole, it is the
    // other.
    assert_eq!(
        claims_with(&ontology, &|_: &[&str]| None, &page(true)),
        vec![
            triple("initial_release", "v1", "2024-04-01"),
            triple("latest_release_date", "v1", "2024-09-30"),
            triple("initial_release", "v2", "2025-04-01"),
            triple("latest_release_date", "v2", "2025-06-30"),
        ]
    );
}

/// An RFC's ontology of our own making.
fn rfc_ontology() -> Ontology {
    Ontology::from_value(serde_json::json!({
        "predicates": [
            {"name": "feature_name", "subject_type": "rfc", "object_type": "text",
             "patterns": ["The feature gate of {s} is {o}."]},
            {"name": "start_date", "subject_type": "rfc", "object_type": "date",
             "patterns": ["{s} was started on {o}."]},
            {"name": "tracking_issue", "subject_type": "rfc", "object_type": "text",
             "patterns": ["{s} is tracked in {o}."]},
            {"name": "release_date", "subject_type": "release", "object_type": "date",
             "patterns": ["{s} ships on {o}."]}
        ],
        "authority": {"default": 1}
    }))
    .expect("ontology")
}

#[test]
fn a_header_written_as_a_list_opening_the_page_is_read_as_a_header() {
    let ontology = rfc_ontology();
    let got = claims_of(
        &ontology,
        "- Feature Name: `lifetime_capture_rules_2024`\n- Start Date: 2023-07-26\n\
         - RFC PR: [rust-lang/rfcs#3498](https://github.com/rust-lang/rfcs/pull/3498)\n\
         - Tracking Issue: [rust-lang/rust#117587](https://github.com/rust-lang/rust/issues/117587)\n\
         \n## Summary\n\nLifetimes are captured.\n",
    );
    // The subject is the RFC its numbered reference names; a link is its text.
    assert_eq!(
        got,
        vec![
            triple("feature_name", "RFC-3498", "lifetime_capture_rules_2024"),
            triple("start_date", "RFC-3498", "2023-07-26"),
            triple("tracking_issue", "RFC-3498", "rust-lang/rust#117587"),
        ]
    );
    // Under the page's title too; a list after prose is no header, and a list of dates
    // under a title, stating nothing as a header, is each key's own date.
    let got = claims_of(
        &ontology,
        "# Lifetimes\n\n* Start Date: 2023-07-26\n* RFC PR: #3498\n",
    );
    assert_eq!(got, vec![triple("start_date", "RFC-3498", "2023-07-26")]);
    let dates = "- Ledger: 2026-04-30\n- Harbor: 2026-05-14\n";
    let got = claims_of(&ontology, &format!("# Releases\n\n{dates}"));
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().all(|(_, s, _)| s == "Ledger" || s == "Harbor"));
    assert_eq!(
        got,
        claims_of(&ontology, &format!("# Releases\n\nOur dates.\n\n{dates}"))
    );
    // A key word naming the tracker its reference points into is no word of what it is: a
    // `Rust Issue` is an issue, the tracking issue when no other is.
    let got = claims_of(
        &ontology,
        "- Start Date: 2014-03-11\n- RFC PR: [rust-lang/rfcs#1](https://example.org/1)\n\
         - Rust Issue: [rust-lang/rust#8122](https://example.org/8122)\n",
    );
    assert_eq!(
        got,
        vec![
            triple("start_date", "RFC-1", "2014-03-11"),
            triple("tracking_issue", "RFC-1", "rust-lang/rust#8122"),
        ]
    );
    // A date written in brackets is the date.
    let got = claims_of(
        &ontology,
        "- Start Date: (2022-11-07)\n- RFC PR: [rust-lang/rfcs#3346](https://example.org)\n",
    );
    assert_eq!(got, vec![triple("start_date", "RFC-3346", "2022-11-07")]);
    assert_eq!(unquoted("(a) and (b)"), "(a) and (b)");
    assert_eq!(reference_number("rust-lang/rfcs#0042"), Some("42"));
    assert_eq!(reference_number("#812"), Some("812"));
    assert_eq!(reference_number("see #812"), None);
    assert_eq!(reference_number("rust-lang/rfcs#"), None);
}
