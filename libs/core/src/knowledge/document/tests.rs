//! Documents of our own making, one per structure.

use super::*;

fn fields(record: &Record) -> Vec<(&str, Vec<&str>)> {
    record
        .fields
        .iter()
        .map(|f| {
            (
                f.key.as_str(),
                f.values.iter().map(String::as_str).collect(),
            )
        })
        .collect()
}

#[test]
fn a_header_block_then_markup_prose() {
    let doc = parse(
        "PEP: 8\nTitle: Style Guide\nAuthor: Guido <guido@example.org>,\n    Barry <barry@example.org>\nStatus: Active\n\n\
         Introduction\n============\n\nThis document gives coding conventions.\n\n\
         Code\n----\n\nAn example::\n\n    x = 1\n\nAfter the code.\n\n.. note::\n\n   Not prose.\n",
    );
    assert_eq!(doc.records.len(), 1);
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("PEP", vec!["8"]),
            ("Title", vec!["Style Guide"]),
            (
                "Author",
                vec!["Guido <guido@example.org>,", "Barry <barry@example.org>"]
            ),
            ("Status", vec!["Active"]),
        ]
    );
    assert_eq!(doc.title.as_deref(), Some("Introduction"));
    let texts: Vec<(&[String], &str)> = doc
        .sections
        .iter()
        .map(|s| (s.headings.as_slice(), s.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (
                &["Introduction".to_owned()][..],
                "This document gives coding conventions."
            ),
            (
                &["Introduction".to_owned(), "Code".to_owned()][..],
                "After the code."
            ),
        ]
    );
}

#[test]
fn yaml_json_and_toml_documents_are_records() {
    let doc = parse(
        "title: Pod Topology Spread\nkep-number: 895\nauthors:\n- \"@Huang-Wei\"\n- \"@other\"\nmilestone:\n  alpha: \"v1.16\"\n  beta: v1.18\n",
    );
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("title", vec!["Pod Topology Spread"]),
            ("kep-number", vec!["895"]),
            ("authors", vec!["@Huang-Wei", "@other"]),
            ("milestone alpha", vec!["v1.16"]),
            ("milestone beta", vec!["v1.18"]),
        ]
    );
    assert!(doc.sections.is_empty());
    let doc = parse("[{\"name\": \"a\", \"owner\": \"x\"}, {\"name\": \"b\", \"owner\": \"y\"}]");
    assert_eq!(doc.records.len(), 2);
    assert_eq!(
        fields(&doc.records[1]),
        vec![("name", vec!["b"]), ("owner", vec!["y"])]
    );
    let doc = parse("name = \"ledger\"\nversion = \"1.10\"\n\n[owner]\nteam = \"atlas\"\n");
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("name", vec!["ledger"]),
            ("owner team", vec!["atlas"]),
            ("version", vec!["1.10"]),
        ]
    );
}

#[test]
fn stanzas_of_records_and_front_matter() {
    let doc = parse(
        "Package: a\nVersion: 1.0\nDescription: short\n long text\n .\n more\n\nPackage: b\nVersion: 2.0\n",
    );
    assert_eq!(doc.records.len(), 2);
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("Package", vec!["a"]),
            ("Version", vec!["1.0"]),
            ("Description", vec!["short long text more"]),
        ]
    );
    let doc = parse("---\nname: Tessaly Dock\nowner: Atlas\n---\nSome prose.\n");
    assert_eq!(
        fields(&doc.records[0]),
        vec![("name", vec!["Tessaly Dock"]), ("owner", vec!["Atlas"])]
    );
    assert_eq!(doc.prose(), "Some prose.");
}

#[test]
fn headings_label_sections_and_lists_keep_their_lead_in() {
    let doc = parse(
        "# KEP-1: Thing\n\n<!-- toc -->\n- [Summary](#summary)\n<!-- /toc -->\n\n## Summary\n\nThis adds things.\nIt includes:\n- one part\n- another part\n\nSchedule\n--------\n\n- 3.12.0 beta 1: Monday, 2023-05-22\n- 3.12.0 final: Monday, 2023-10-02\n\n```\ncode: here\n```\n\n| Plan | Price |\n|---|---|\n| Pro | 49 |\n",
    );
    assert_eq!(doc.title.as_deref(), Some("KEP-1: Thing"));
    let texts: Vec<&str> = doc.sections.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "Summary.",
            "This adds things.",
            "It includes: one part.",
            "It includes: another part.",
        ]
    );
    assert_eq!(doc.sections[1].headings, vec!["KEP-1: Thing", "Summary"]);
    assert_eq!(doc.records[0].layout, Layout::Keyed);
    assert_eq!(doc.records[0].subject.as_deref(), Some("Pro"));
    let items: Vec<_> = doc.records.iter().map(fields).collect();
    assert_eq!(
        items,
        vec![
            vec![("Price", vec!["49"])],
            vec![
                ("3.12.0 beta 1", vec!["Monday, 2023-05-22"]),
                ("3.12.0 final", vec!["Monday, 2023-10-02"]),
            ],
        ]
    );
    assert!(!doc.prose().contains("Schedule"));
    let doc = parse("name: x\nversion: 1.10\nsize: 3\nlist:\n- 1.20\n");
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("name", vec!["x"]),
            ("version", vec!["1.10"]),
            ("size", vec!["3"]),
            ("list", vec!["1.20"]),
        ]
    );
}

#[test]
fn garbage_parses() {
    for text in [
        "",
        "---",
        "{",
        "[1,2",
        ":::",
        "a:\n  - b: [",
        "|\n|",
        "```",
        "x\n===\n===",
    ] {
        let _ = parse(text);
    }
}

#[test]
fn field_values_carry_no_markup() {
    let doc = parse(
        "Status: **Accepted**\nOwner: [Ana Ruiz](mailto:ana@example.org)\n\n- 3.12.0 final: `2023-10-02`\n\n| Plan | Price |\n|---|---|\n| Pro | **49** |\n",
    );
    let values: Vec<Vec<&str>> = doc
        .records
        .iter()
        .flat_map(|r| {
            r.fields
                .iter()
                .map(|f| f.values.iter().map(String::as_str).collect())
        })
        .collect();
    assert_eq!(
        values,
        vec![
            vec!["Accepted"],
            vec!["Ana Ruiz"],
            vec!["49"],
            vec!["2023-10-02"]
        ]
    );
    // Marks inside a header's text are its text.
    let doc = parse("PEP: 604\nTitle: Complementary syntax for ``Union[]``\nAuthor: Ana\n");
    assert_eq!(
        doc.records[0].fields[1].values,
        vec!["Complementary syntax for ``Union[]``"]
    );
}

#[test]
fn a_field_folded_over_paragraphs_is_prose_under_its_key() {
    let body = "Name: ledger\nDescription: Ledger keeps books.\n        It is small.\n        \n        It has no server.\nPlatform: any\n\nMore prose.\n";
    let doc = parse(body);
    assert_eq!(
        fields(&doc.records[0]),
        vec![("Name", vec!["ledger"]), ("Platform", vec!["any"])]
    );
    let texts: Vec<(&[String], &str)> = doc
        .sections
        .iter()
        .map(|s| (s.headings.as_slice(), s.text.as_str()))
        .collect();
    let description = vec!["Description".to_owned()];
    assert_eq!(
        texts,
        vec![
            (description.as_slice(), "Ledger keeps books. It is small."),
            (description.as_slice(), "It has no server."),
            (&[][..], "More prose."),
        ]
    );
    // Not a data page: it has prose of its own.
    assert!(!is_data(body));
}

#[test]
fn a_mapping_of_records_is_one_record_per_entry() {
    let doc = parse(
        r#"{"v1": {"start": "2015-09-08", "codename": "Ash"}, "v2": {"start": "2016-04-26", "end": "2019-04-30"}}"#,
    );
    let subjects: Vec<_> = doc
        .records
        .iter()
        .map(|r| (r.layout, r.subject.as_deref()))
        .collect();
    assert_eq!(
        subjects,
        vec![(Layout::Keyed, Some("v1")), (Layout::Keyed, Some("v2"))]
    );
    assert_eq!(
        fields(&doc.records[1]),
        vec![("start", vec!["2016-04-26"]), ("end", vec!["2019-04-30"])]
    );
    assert_eq!(doc.records[0].fields[1].line, "v1 codename: Ash");
    // Sections of one thing share few field names: one record, its keys joined.
    let doc = parse(r#"{"metadata": {"name": "web", "team": "atlas"}, "spec": {"replicas": 3}}"#);
    assert_eq!(doc.records.len(), 1);
    assert_eq!(doc.records[0].layout, Layout::Header);
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("metadata name", vec!["web"]),
            ("metadata team", vec!["atlas"]),
            ("spec replicas", vec!["3"]),
        ]
    );
    // Nested in a record of its own: the record, then one per entry.
    let doc = parse(
        "name: ledger\nreleases:\n  \"1.0\":\n    date: 2020-01-02\n  \"2.0\":\n    date: 2021-03-04\n",
    );
    let subjects: Vec<_> = doc.records.iter().map(|r| r.subject.as_deref()).collect();
    assert_eq!(subjects, vec![None, Some("1.0"), Some("2.0")]);
    assert_eq!(fields(&doc.records[0]), vec![("name", vec!["ledger"])]);
    assert_eq!(fields(&doc.records[2]), vec![("date", vec!["2021-03-04"])]);
}

#[test]
fn a_tables_rows_are_records_named_by_their_first_cell() {
    let doc = parse(
        "| Release | Status | Codename | End-of-life |\n| :--: | :--: | :--: | :--: |\n\
         | [22.x][] | **Maintenance LTS** | [Jod][] | 2027-04-30 |\n\
         | 23.x | End-of-Life | - | [2025-06-01](https://example.org/eol) |\n| | orphan | x | y |\n",
    );
    let rows: Vec<_> = doc
        .records
        .iter()
        .map(|r| (r.layout, r.subject.as_deref(), fields(r)))
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                Layout::Keyed,
                Some("22.x"),
                vec![
                    ("Status", vec!["Maintenance LTS"]),
                    ("Codename", vec!["Jod"]),
                    ("End-of-life", vec!["2027-04-30"]),
                ]
            ),
            (
                Layout::Keyed,
                Some("23.x"),
                vec![
                    ("Status", vec!["End-of-Life"]),
                    ("End-of-life", vec!["2025-06-01"]),
                ]
            ),
        ]
    );
    assert_eq!(doc.records[0].fields[1].line, "22.x | Codename: Jod");
    // Brackets that are no link stay.
    assert_eq!(
        text::without_links("a [1] b [c](d) [e][f] [g]"),
        "a [1] b c e [g]"
    );
}

#[test]
fn a_list_of_records_named_by_their_first_field_is_one_record_per_item() {
    let doc = parse(
        "---\ntitle: Ledger\nreleases:\n  - releaseCycle: \"1.10\"\n    releaseDate: 2024-01-02\n    \
         eol: false\n  - releaseCycle: \"1.9\"\n    releaseDate: 2023-05-06\n    eol: 2025-05-06\n\
         ---\n\nLedger keeps books.\n",
    );
    let subjects: Vec<_> = doc
        .records
        .iter()
        .map(|r| (r.layout, r.subject.as_deref()))
        .collect();
    assert_eq!(
        subjects,
        vec![
            (Layout::Header, None),
            (Layout::Keyed, Some("1.10")),
            (Layout::Keyed, Some("1.9")),
        ]
    );
    assert_eq!(fields(&doc.records[0]), vec![("title", vec!["Ledger"])]);
    assert_eq!(
        fields(&doc.records[2]),
        vec![
            ("releaseDate", vec!["2023-05-06"]),
            ("eol", vec!["2025-05-06"])
        ]
    );
    assert_eq!(
        doc.records[1].fields[0].line,
        "releaseCycle: 1.10, releaseDate: 2024-01-02"
    );
    // Items that open with different keys, or name one thing twice, are no such list.
    for list in [
        "- a: x\n  b: 1\n- c: y\n  b: 2\n",
        "- a: x\n  b: 1\n- a: x\n  b: 2\n",
    ] {
        let doc = parse(&format!("name: n\nitems:\n{}", indent(list)));
        assert!(
            doc.records.iter().all(|r| r.layout == Layout::Header),
            "{list}: {doc:?}"
        );
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

#[test]
fn a_list_of_key_value_items_opening_a_page_is_a_header() {
    let doc = parse(
        "# Use a queue\n\n* Status: accepted\n* Deciders: [Ana](https://example.org/ana),\n  Bo\n\
         * Date: 2024-05-02\n\nThe team met.\n\n- Owner: Ana\n- Reviewer: Bo\n",
    );
    assert_eq!(doc.title.as_deref(), Some("Use a queue"));
    let layouts: Vec<Layout> = doc.records.iter().map(|r| r.layout).collect();
    // The list after the prose is items.
    assert_eq!(layouts, vec![Layout::ListedHeader, Layout::Items]);
    assert_eq!(
        fields(&doc.records[0]),
        vec![
            ("Status", vec!["accepted"]),
            ("Deciders", vec!["Ana, Bo"]),
            ("Date", vec!["2024-05-02"]),
        ]
    );
    assert_eq!(doc.sections.len(), 1);
    // An item that is no field makes the list none.
    let doc = parse("- Status: accepted\n- we should ship\n");
    assert!(doc.records.iter().all(|r| r.layout != Layout::ListedHeader));
}
