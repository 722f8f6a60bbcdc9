//! Unit tests of `passage`.

use std::collections::HashMap;

use chrono::TimeZone;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

fn version(doc: &str, number: u64, second: i64, body: &str) -> PageVersion {
    PageVersion {
        source_id: doc.to_string(),
        version: number,
        title: doc.to_string(),
        origin: "test".to_string(),
        body: body.to_string(),
        updated_at: Utc.timestamp_opt(1_700_000_000 + second, 0).unwrap(),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

/// Pages as a store would hand them out, with each version's chunk hashes kept.
#[derive(Default)]
struct Pages {
    versions: BTreeMap<String, Vec<PageVersion>>,
    hashes: HashMap<(String, u64), HashSet<String>>,
}

impl Pages {
    fn write(&mut self, doc: &str, second: i64, body: Option<&str>) -> PageVersion {
        let history = self.versions.entry(doc.to_string()).or_default();
        let number = history.last().map_or(1, |v| v.version + 1);
        let written = match (body, history.last()) {
            (Some(body), _) => version(doc, number, second, body),
            (None, Some(latest)) => PageVersion::tombstone(
                latest,
                Utc.timestamp_opt(1_700_000_000 + second, 0).unwrap(),
            ),
            (None, None) => panic!("nothing to delete"),
        };
        let hashes = chunk_page(doc, number, &written.body)
            .into_iter()
            .map(|c| c.anchor.hash)
            .collect();
        self.hashes.insert((doc.to_string(), number), hashes);
        history.push(written.clone());
        written
    }
}

impl PageHistory for Pages {
    fn versions(&self, doc_id: &str) -> Vec<PageVersion> {
        self.versions.get(doc_id).cloned().unwrap_or_default()
    }

    fn pages_with_chunk(&self, hash: &str, since: DateTime<Utc>, except: &str) -> Vec<String> {
        self.versions
            .iter()
            .filter(|(doc, _)| doc.as_str() != except)
            .filter(|(doc, versions)| {
                versions.iter().any(|v| {
                    v.updated_at >= since
                        && self.hashes[&((*doc).clone(), v.version)].contains(hash)
                })
            })
            .map(|(doc, _)| doc.clone())
            .collect()
    }
}

#[test]
fn a_page_is_cut_at_headings_and_paragraphs_with_character_spans() {
    let body = "# Billing\n\nRefunds take 5 days.\nThey go to the card.\n\n## Fees — détails\n\nNo fee in the EU.\n";
    let chunks = chunk_page("billing", 3, body);
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Refunds take 5 days.\nThey go to the card.",
            "No fee in the EU."
        ]
    );
    assert_eq!(chunks[0].headings, ["Billing"]);
    assert_eq!(chunks[1].headings, ["Billing", "Fees — détails"]);
    for chunk in &chunks {
        let by_chars: String = body
            .chars()
            .skip(chunk.anchor.start)
            .take(chunk.anchor.end - chunk.anchor.start)
            .collect();
        assert_eq!(
            by_chars, chunk.text,
            "the span counts characters, not bytes"
        );
        assert_eq!(
            (chunk.anchor.doc_id.as_str(), chunk.anchor.version),
            ("billing", 3)
        );
    }
    assert_eq!(
        chunks[1].indexed_text(""),
        "Billing / Fees — détails\nNo fee in the EU."
    );
    assert_eq!(
        chunks[1].indexed_text("Pricing FAQ"),
        "Pricing FAQ / Billing / Fees — détails\nNo fee in the EU."
    );
    assert!(chunk_page("empty", 1, "# Only a title\n\n\n").is_empty());
}

#[test]
fn markup_is_never_a_passage() {
    let body = "Style Guide\n===========\n\nIntroduction\n------------\n\nThis gives conventions.\n\n<!--\na comment\n-->\n```\ncode here\n```\n\n====\nCode\n====\n\nUse four spaces.\n";
    let chunks = chunk_page("pep", 1, body);
    let got: Vec<(&str, Vec<String>)> = chunks
        .iter()
        .map(|c| (c.text.as_str(), c.headings.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "This gives conventions.",
                vec!["Style Guide".to_owned(), "Introduction".to_owned()]
            ),
            ("Use four spaces.", vec!["Code".to_owned()]),
        ]
    );
}

/// The text of `chunk` as its span in `body` says (spans count characters).
fn spanned(body: &str, chunk: &Chunk) -> String {
    body.chars()
        .skip(chunk.anchor.start)
        .take(chunk.anchor.end - chunk.anchor.start)
        .collect()
}

#[test]
fn a_header_block_is_no_passage_and_labels_every_passage_by_the_fields_naming_the_document() {
    let body = "PEP: 594\nTitle: Removing dead batteries\n  from the standard library\n\
                Author: Christian Heimes <christian@python.org>\nStatus: Draft\n\n\n\
                Abstract\n========\n\nThis PEP proposes to remove modules.\n\n\
                Rationale\n=========\n\nThey are a burden.\n";
    let chunks = chunk_page("pep-0594", 1, body);
    let got: Vec<(&str, Vec<String>)> = chunks
        .iter()
        .map(|c| (c.text.as_str(), c.headings.clone()))
        .collect();
    let label = "PEP 594: Removing dead batteries from the standard library".to_owned();
    assert_eq!(
        got,
        vec![
            (
                "This PEP proposes to remove modules.",
                vec![label.clone(), "Abstract".to_owned()]
            ),
            ("They are a burden.", vec![label, "Rationale".to_owned()]),
        ]
    );
    assert_eq!(
        chunks[0].indexed_text("pep-0594.rst"),
        "pep-0594.rst / PEP 594: Removing dead batteries from the standard library / Abstract\n\
         This PEP proposes to remove modules."
    );
    for chunk in &chunks {
        assert_eq!(spanned(body, chunk), chunk.text);
    }
    // A header naming nothing labels nothing; it is still no passage.
    let unnamed = chunk_page(
        "notes",
        1,
        "Status: Draft\nCreated: 2024-01-01\n\nWe met.\n",
    );
    assert_eq!(unnamed.len(), 1);
    assert_eq!(
        (unnamed[0].text.as_str(), unnamed[0].headings.clone()),
        ("We met.", Vec::new())
    );
}

#[test]
fn a_field_folded_over_paragraphs_is_text_under_its_key() {
    let body = "Metadata-Version: 1.1\nName: PyYAML\nVersion: 3.11\n\
                Description: YAML is a data serialization format\n        \
                designed for human readability.\n        \n        \
                PyYAML features a complete YAML 1.1 parser.\n\
                Platform: Any\n";
    let chunks = chunk_page("pyyaml", 1, body);
    let got: Vec<(String, Vec<String>)> = chunks
        .iter()
        .map(|c| {
            (
                c.text.split_whitespace().collect::<Vec<_>>().join(" "),
                c.headings.clone(),
            )
        })
        .collect();
    let under = vec!["PyYAML".to_owned(), "Description".to_owned()];
    assert_eq!(
        got,
        vec![
            (
                "YAML is a data serialization format designed for human readability.".to_owned(),
                under.clone()
            ),
            (
                "PyYAML features a complete YAML 1.1 parser.".to_owned(),
                under
            ),
        ]
    );
    for chunk in &chunks {
        assert_eq!(spanned(body, chunk), chunk.text);
    }
}

#[test]
fn badges_banners_and_directives_are_no_passage() {
    let body = "# Requests\n\n\
                [![Version](https://img.shields.io/v.svg)](https://pypi.org/r/)\n\
                [![Downloads](https://pepy.tech/badge.svg)](https://pepy.tech/r)\n\n\
                <h1 align=\"center\">\n\n\
                ![banner](https://example.org/banner.svg)\n\n\
                </h1>\n\n\
                .. image:: https://example.org/logo.png\n   :alt: logo\n\n\
                .. note::\n\n   See the tutorial first.\n\n\
                |Logo| |Build Status|\n\n\
                ![Black Logo](https://example.org/logo.png)\n\
                <h2 align=\"center\">The Uncompromising Code Formatter</h2>\n\n\
                **Requests** is a simple, yet elegant, HTTP library.\n\n\
                See the <a href=\"https://docs\">documentation</a> or [the guide](https://g).\n";
    let texts: Vec<String> = chunk_page("requests", 1, body)
        .into_iter()
        .map(|c| c.text)
        .collect();
    assert_eq!(
        texts,
        [
            "**Requests** is a simple, yet elegant, HTTP library.",
            "See the <a href=\"https://docs\">documentation</a> or [the guide](https://g)."
        ]
    );
}

#[test]
fn a_record_has_no_opening_and_a_record_with_a_text_does() {
    assert!(is_record(
        "title: Pod Spread\nkep-number: 12\nstatus: implementable\n"
    ));
    assert!(!is_record("# Pod Spread\n\nPods spread evenly.\n"));
    assert!(!is_record(
        "Name: PyYAML\nVersion: 3.11\nDescription: YAML is a format\n        \n        \
         PyYAML reads it.\n"
    ));
}

#[test]
fn lines_that_only_look_like_fields_stay_prose() {
    // One field is no header; nor is a paragraph whose later line is no field.
    for body in [
        "Note: the office is closed on Friday.\n\nBring a badge.\n",
        "Owner: Atlas team\nThe Atlas team took it over in May.\n",
    ] {
        let chunks = chunk_page("p", 1, body);
        assert_eq!(chunks[0].anchor.start, 0, "{body:?}: {chunks:?}");
        assert!(chunks.iter().all(|c| c.headings.is_empty()));
    }
}

#[test]
fn a_long_paragraph_is_cut_at_sentence_ends_and_a_run_on_one_at_white_space() {
    let sentence = "The quarterly ledger is closed by the finance team on the last day. ";
    let body = sentence.repeat(60);
    let chunks = chunk_page("long", 1, &body);
    assert!(chunks.len() > 1);
    for chunk in &chunks {
        assert!(chunk.text.chars().count() <= MAX_CHUNK_CHARS);
        assert!(
            chunk.text.ends_with("day."),
            "cut at a sentence end: {:?}",
            chunk.text
        );
    }
    let run_on = "word ".repeat(1_000);
    let chunks = chunk_page("run-on", 1, &run_on);
    assert!(
        chunks
            .iter()
            .all(|c| c.text.chars().count() <= MAX_CHUNK_CHARS)
    );
    let words: usize = chunks
        .iter()
        .map(|c| c.text.split_whitespace().count())
        .sum();
    assert_eq!(words, 1_000, "no word lost or cut in two");
    let unbroken = "x".repeat(3 * MAX_CHUNK_CHARS);
    let pieces: Vec<usize> = chunk_page("unbroken", 1, &unbroken)
        .iter()
        .map(|c| c.text.len())
        .collect();
    assert_eq!(pieces, [MAX_CHUNK_CHARS; 3]);
}

#[test]
fn the_hash_is_the_same_text_rewrapped_or_repunctuated_and_differs_for_other_words() {
    assert_eq!(
        chunk_hash("Refunds take 5 days."),
        chunk_hash("refunds  take\n5 days")
    );
    assert_ne!(
        chunk_hash("Refunds take 5 days."),
        chunk_hash("Refunds take 7 days.")
    );
    assert_eq!(chunk_hash("a").len(), 16);
}

#[test]
fn rank_fusion_rewards_items_ranked_well_by_several_lists() {
    let fused = fuse_ranks(&[vec!["a", "b", "c"], vec!["b", "c", "a", "d"]], 60.0);
    let order: Vec<&str> = fused.iter().map(|(item, _)| *item).collect();
    assert_eq!(order, ["b", "a", "c", "d"]);
    assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
    let tied = fuse_ranks(&[vec!["x", "y"], vec!["y", "x"]], 60.0);
    assert_eq!(tied[0].0, "x", "a tie keeps the order first met");
    assert!(fuse_ranks::<&str>(&[], 60.0).is_empty());
}

#[test]
fn a_citation_never_handed_out_is_an_error_naming_what_is_missing() {
    let mut pages = Pages::default();
    let v1 = pages.write("doc", 0, Some("# Doc\n\nFirst paragraph here.\n"));
    let chunk = chunk_page("doc", 1, &v1.body).remove(0);
    let mut anchor = chunk.anchor.clone();
    anchor.version = 9;
    assert_eq!(
        resolve(&anchor, &pages),
        Err(CitationError::UnknownVersion {
            doc_id: "doc".into(),
            version: 9
        })
    );
    anchor.version = 1;
    anchor.hash = "0000000000000000".into();
    let refused = resolve(&anchor, &pages).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("no passage with hash 0000000000000000")
    );
}

#[test]
fn each_way_a_passage_can_change_is_told_apart() {
    let mut pages = Pages::default();
    let body = "# Doc\n\nAlpha paragraph stays put here.\n\nBeta paragraph about refunds and cards.\n\nGamma paragraph will be deleted soon.\n\nDelta paragraph travels to another page.\n";
    let v1 = pages.write("doc", 0, Some(body));
    let cited: Vec<Anchor> = chunk_page("doc", 1, &v1.body)
        .into_iter()
        .map(|c| c.anchor)
        .collect();
    pages.write(
        "other",
        1,
        Some("# Other\n\nUnrelated words of the other page.\n"),
    );
    pages.write(
            "doc",
            2,
            Some("# Doc\n\nAlpha paragraph stays put here.\n\nBeta paragraph about refunds and debit cards.\n\nDelta paragraph travels to another page.\n"),
        );
    pages.write("doc", 3, Some("# Doc\n\nAlpha paragraph stays put here.\n\nBeta paragraph about refunds and debit cards.\n"));
    pages.write(
            "other",
            3,
            Some("# Other\n\nUnrelated words of the other page.\n\nDelta paragraph travels to another page.\n"),
        );
    let names: Vec<&str> = cited
        .iter()
        .map(|anchor| resolve(anchor, &pages).unwrap().name())
        .collect();
    assert_eq!(names, ["current", "revised", "gone", "moved"]);
    match resolve(&cited[1], &pages).unwrap() {
        Resolution::Revised(now) => {
            assert_eq!(now.text, "Beta paragraph about refunds and debit cards.");
            assert_eq!(now.anchor.version, 3);
        }
        other => panic!("expected revised, got {other:?}"),
    }
    match resolve(&cited[3], &pages).unwrap() {
        Resolution::Moved(now) => assert_eq!(now.anchor.doc_id, "other"),
        other => panic!("expected moved, got {other:?}"),
    }
    pages.write("doc", 4, None);
    assert_eq!(resolve(&cited[0], &pages).unwrap(), Resolution::Gone);
}

/// A world of pages edited at random, with each paragraph's identity known.
struct World {
    rng: StdRng,
    pages: Pages,
    /// Paragraph id to its text; a deleted paragraph is removed.
    paragraphs: HashMap<u64, String>,
    /// Live page to its paragraph ids in order.
    docs: BTreeMap<String, Vec<u64>>,
    next_paragraph: u64,
    next_doc: u64,
    second: i64,
}

/// What a citation was of, to judge what it should resolve to.
struct Cited {
    anchor: Anchor,
    paragraph: u64,
    text: String,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut world = World {
            rng: StdRng::seed_from_u64(seed),
            pages: Pages::default(),
            paragraphs: HashMap::new(),
            docs: BTreeMap::new(),
            next_paragraph: 0,
            next_doc: 0,
            second: 0,
        };
        for _ in 0..20 {
            world.new_doc();
        }
        world
    }

    fn word(&mut self) -> String {
        let len = self.rng.random_range(3..9);
        (0..len)
            .map(|_| self.rng.random_range(b'a'..=b'z') as char)
            .collect()
    }

    fn paragraph_text(&mut self) -> String {
        let words = self.rng.random_range(10..26);
        let mut text: Vec<String> = (0..words).map(|_| self.word()).collect();
        text[0][..1].make_ascii_uppercase();
        let mut text = text.join(" ");
        text.push('.');
        text
    }

    fn new_paragraph(&mut self) -> u64 {
        let id = self.next_paragraph;
        self.next_paragraph += 1;
        let text = self.paragraph_text();
        self.paragraphs.insert(id, text);
        id
    }

    fn new_doc(&mut self) {
        let doc = format!("doc-{}", self.next_doc);
        self.next_doc += 1;
        let count = self.rng.random_range(3..8);
        let ids = (0..count).map(|_| self.new_paragraph()).collect();
        self.docs.insert(doc.clone(), ids);
        self.publish(&doc);
    }

    /// The body of a live page and where each of its paragraphs sits (in characters).
    fn render(&self, doc: &str) -> (String, Vec<(u64, usize, usize)>) {
        let mut body = format!("# {doc}\n\n");
        let mut spans = Vec::new();
        for (i, id) in self.docs[doc].iter().enumerate() {
            if i > 0 && i % 4 == 0 {
                body.push_str(&format!("## Part {}\n\n", i / 4));
            }
            let start = body.chars().count();
            body.push_str(&self.paragraphs[id]);
            spans.push((*id, start, body.chars().count()));
            body.push_str("\n\n");
        }
        (body, spans)
    }

    fn publish(&mut self, doc: &str) {
        let (body, _) = self.render(doc);
        self.pages.write(doc, self.second, Some(&body));
    }

    fn live_doc(&mut self) -> String {
        let at = self.rng.random_range(0..self.docs.len());
        self.docs.keys().nth(at).cloned().expect("a live page")
    }

    /// One random edit: a rewrite, a move on the page or to another, a deletion of a
    /// paragraph or a page, or a new paragraph or page.
    fn edit(&mut self) {
        self.second += 1;
        if self.docs.len() < 5 {
            self.new_doc();
            return;
        }
        let doc = self.live_doc();
        let len = self.docs[&doc].len();
        if len == 0 {
            let id = self.new_paragraph();
            self.docs.get_mut(&doc).unwrap().push(id);
            self.publish(&doc);
            return;
        }
        let at = self.rng.random_range(0..len);
        let id = self.docs[&doc][at];
        match self.rng.random_range(0..100) {
            0..25 => {
                // Rewrite up to 40% of the words.
                let mut words: Vec<String> = self.paragraphs[&id]
                    .trim_end_matches('.')
                    .split(' ')
                    .map(String::from)
                    .collect();
                let changes = self.rng.random_range(1..=(words.len() * 2 / 5).max(1));
                for _ in 0..changes {
                    let at = self.rng.random_range(0..words.len());
                    words[at] = self.word();
                }
                self.paragraphs.insert(id, format!("{}.", words.join(" ")));
                self.publish(&doc);
            }
            25..45 if len > 1 => {
                let moved = self.docs.get_mut(&doc).unwrap().remove(at);
                let to = self.rng.random_range(0..len);
                self.docs.get_mut(&doc).unwrap().insert(to, moved);
                self.publish(&doc);
            }
            45..60 => {
                let to = self.live_doc();
                if to == doc {
                    return;
                }
                let moved = self.docs.get_mut(&doc).unwrap().remove(at);
                let place = self.rng.random_range(0..=self.docs[&to].len());
                self.docs.get_mut(&to).unwrap().insert(place, moved);
                self.publish(&doc);
                self.publish(&to);
            }
            60..72 => {
                let gone = self.docs.get_mut(&doc).unwrap().remove(at);
                self.paragraphs.remove(&gone);
                self.publish(&doc);
            }
            72..75 => {
                for gone in self.docs.remove(&doc).unwrap() {
                    self.paragraphs.remove(&gone);
                }
                self.pages.write(&doc, self.second, None);
            }
            75..95 => {
                let id = self.new_paragraph();
                let place = self.rng.random_range(0..=len);
                self.docs.get_mut(&doc).unwrap().insert(place, id);
                self.publish(&doc);
            }
            _ => self.new_doc(),
        }
    }

    /// Citations of `count` random passages as the pages are now (every one when `None`).
    fn cite(&mut self, count: Option<usize>) -> Vec<Cited> {
        let mut all = Vec::new();
        for doc in self.docs.keys() {
            let (body, spans) = self.render(doc);
            let version = self.pages.versions[doc].last().unwrap().version;
            for (chunk, (id, start, end)) in chunk_page(doc, version, &body).into_iter().zip(spans)
            {
                assert_eq!((chunk.anchor.start, chunk.anchor.end), (start, end));
                all.push(Cited {
                    anchor: chunk.anchor,
                    paragraph: id,
                    text: chunk.text,
                });
            }
        }
        if let Some(count) = count {
            while all.len() > count {
                let at = self.rng.random_range(0..all.len());
                all.swap_remove(at);
            }
        }
        all
    }

    /// What `cited` should resolve to, from the paragraph's own history.
    fn expected(&self, cited: &Cited) -> &'static str {
        let Some(text) = self.paragraphs.get(&cited.paragraph) else {
            return "gone";
        };
        if *text != cited.text {
            return "revised";
        }
        let (doc, start, end) = self
            .docs
            .keys()
            .find_map(|doc| {
                let (_, spans) = self.render(doc);
                spans
                    .into_iter()
                    .find(|(id, ..)| *id == cited.paragraph)
                    .map(|(_, start, end)| (doc.clone(), start, end))
            })
            .expect("a live paragraph is on a live page");
        if doc == cited.anchor.doc_id && (start, end) == (cited.anchor.start, cited.anchor.end) {
            "current"
        } else {
            "moved"
        }
    }
}

#[test]
fn after_a_thousand_random_edits_every_earlier_citation_resolves_to_what_became_of_it() {
    const KINDS: [&str; 4] = ["current", "moved", "revised", "gone"];
    let mut world = World::new(16);
    let mut citations = world.cite(None);
    for edit in 1..=1_000 {
        world.edit();
        if edit % 100 == 0 && edit < 1_000 {
            citations.extend(world.cite(Some(40)));
        }
    }
    let mut table = [[0usize; 4]; 4];
    let mut wrong = Vec::new();
    for cited in &citations {
        let expected = world.expected(cited);
        let got = resolve(&cited.anchor, &world.pages).expect("a citation handed out resolves");
        if let (Resolution::Revised(now), false) = (&got, expected == "gone") {
            assert_eq!(Some(&now.text), world.paragraphs.get(&cited.paragraph));
        }
        let row = KINDS.iter().position(|k| *k == expected).unwrap();
        let column = KINDS.iter().position(|k| *k == got.name()).unwrap();
        table[row][column] += 1;
        if row != column {
            wrong.push((cited.anchor.clone(), expected, got.name()));
        }
    }
    println!(
        "{} citations after 1,000 edits; rows expected, columns resolved",
        citations.len()
    );
    println!(
        "{:>10} {:>8} {:>8} {:>8} {:>8}",
        "", KINDS[0], KINDS[1], KINDS[2], KINDS[3]
    );
    for (kind, row) in KINDS.iter().zip(table) {
        println!(
            "{kind:>10} {:>8} {:>8} {:>8} {:>8}",
            row[0], row[1], row[2], row[3]
        );
    }
    for (row, counts) in table.iter().enumerate() {
        assert!(
            counts[row] > 0,
            "the edits leave some citations {}",
            KINDS[row]
        );
    }
    assert!(
        wrong.is_empty(),
        "{} resolved wrongly: {wrong:?}",
        wrong.len()
    );
}
