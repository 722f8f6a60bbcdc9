//! Passages: a page cut into chunks at its headings and paragraphs, each with an anchor that
//! survives edits elsewhere on the page (doc id, version, a hash of the chunk's words, its
//! character span); the resolution of a passage cited earlier against the versions written since
//! (current, moved, revised or gone); and reciprocal rank fusion of ranked lists. Pure: callers
//! pass the page versions in, already filtered to what the caller may read.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::extract::split_sentences;
use super::graph::{PageVersion, plain_words};

/// A paragraph longer than this many characters is cut at sentence ends into chunks of at most
/// this size (a sentence longer than it at white space), so one chunk stays one readable
/// passage and one embedding input.
pub const MAX_CHUNK_CHARS: usize = 1_200;

/// A chunk's text must share at least this share of words (Dice coefficient over the word
/// sets) with the text it is taken to be a revision of.
pub const REVISION_MIN_SIMILARITY: f64 = 0.5;

/// A passage followed from page to page more often than this is given up as gone (a move from
/// page to page and back can otherwise be followed forever).
pub const MAX_MOVES_FOLLOWED: usize = 16;

/// Where a chunk sits: enough to find it again after the page changed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Anchor {
    /// Page id.
    pub doc_id: String,
    /// Page version the chunk was cut from.
    pub version: u64,
    /// 16 hex digits of the SHA-256 of the chunk's words (lower case, punctuation and spacing
    /// dropped): the same for the same text wherever it sits, re-wrapped or re-punctuated.
    pub hash: String,
    /// First character of the chunk in the version's body (Unicode scalar values, from 0).
    pub start: usize,
    /// One past its last character.
    pub end: usize,
}

/// One passage of a page version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Where it sits.
    pub anchor: Anchor,
    /// The headings above it, outermost first.
    pub headings: Vec<String>,
    /// Its text, trimmed.
    pub text: String,
}

impl Chunk {
    /// What a search index reads: the page's `title`, the headings, then the text, so a
    /// paragraph under "Refunds" is found by a question about refunds that its own words do not
    /// name.
    pub fn indexed_text(&self, title: &str) -> String {
        let mut text = [title.trim()]
            .into_iter()
            .chain(self.headings.iter().map(String::as_str))
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" / ");
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&self.text);
        text
    }
}

/// The hash of a chunk's text, as [`Anchor::hash`] has it.
pub fn chunk_hash(text: &str) -> String {
    let digest = Sha256::digest(plain_words(text).as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The chunks of a page version's body, in order. A Markdown heading line (`#` to `######`)
/// starts a section and is not a chunk itself; a run of non-blank lines is a paragraph; a
/// paragraph longer than [`MAX_CHUNK_CHARS`] is cut at sentence ends.
pub fn chunk_page(doc_id: &str, version: u64, body: &str) -> Vec<Chunk> {
    let mut pieces = Vec::new(); // (byte start, byte end, headings)
    let mut headings: Vec<(usize, String)> = Vec::new();
    let mut paragraph: Option<(usize, usize)> = None;
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let (start, end) = (offset, offset + line.len());
        offset = end;
        let trimmed = line.trim();
        let heading = heading_of(trimmed);
        if (trimmed.is_empty() || heading.is_some())
            && let Some((from, to)) = paragraph.take()
        {
            split_long(body, from, to, &current(&headings), &mut pieces);
        }
        if let Some((level, title)) = heading {
            headings.retain(|(above, _)| *above < level);
            headings.push((level, title.to_string()));
        } else if !trimmed.is_empty() {
            paragraph = Some((paragraph.map_or(start, |(from, _)| from), end));
        }
    }
    if let Some((from, to)) = paragraph {
        split_long(body, from, to, &current(&headings), &mut pieces);
    }
    let mut chars = CharOffsets::new(body);
    pieces
        .into_iter()
        .map(|(from, to, headings)| {
            let text = &body[from..to];
            let (start, end) = (chars.at(from), chars.at(to));
            Chunk {
                anchor: Anchor {
                    doc_id: doc_id.to_string(),
                    version,
                    hash: chunk_hash(text),
                    start,
                    end,
                },
                headings,
                text: text.to_string(),
            }
        })
        .collect()
}

/// What a citation handed out earlier is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The same text at the same place of the same page (the page may have a newer version;
    /// the chunk carries it).
    Current(Chunk),
    /// The same text, elsewhere on the page or on another page.
    Moved(Chunk),
    /// The passage was changed; the chunk is its text now.
    Revised(Chunk),
    /// The passage, or its page, was deleted.
    Gone,
}

impl Resolution {
    /// `current`, `moved`, `revised` or `gone`.
    pub fn name(&self) -> &'static str {
        match self {
            Resolution::Current(_) => "current",
            Resolution::Moved(_) => "moved",
            Resolution::Revised(_) => "revised",
            Resolution::Gone => "gone",
        }
    }
}

/// A citation that cannot be resolved because it was never handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CitationError {
    /// No version of that number of that page is readable.
    #[error("no version {version} of page {doc_id}")]
    UnknownVersion {
        /// The page.
        doc_id: String,
        /// The version asked for.
        version: u64,
    },
    /// The version has no chunk with that hash.
    #[error("version {version} of page {doc_id} has no passage with hash {hash}")]
    UnknownPassage {
        /// The page.
        doc_id: String,
        /// The version.
        version: u64,
        /// The hash asked for.
        hash: String,
    },
}

/// The page versions a resolution may read, already limited to what the caller may read.
pub trait PageHistory {
    /// Every version of the page, oldest first; empty when the page is unknown.
    fn versions(&self, doc_id: &str) -> Vec<PageVersion>;
    /// The pages other than `except` with a version written at or after `since` that holds a
    /// chunk of hash `hash`, in a stable order.
    fn pages_with_chunk(&self, hash: &str, since: DateTime<Utc>, except: &str) -> Vec<String>;
}

/// Resolves a citation: the cited chunk is followed version by version through its page — by
/// its hash, or failing that by the nearest text among the chunks new in that version — and,
/// when it leaves the page, to the page that took its text at that time. Where the trail ends
/// decides: the same text at the same place is current, the same text elsewhere moved, other
/// text revised, no trail gone.
pub fn resolve(cited: &Anchor, history: &dyn PageHistory) -> Result<Resolution, CitationError> {
    let versions = history.versions(&cited.doc_id);
    let at = versions
        .iter()
        .position(|v| v.version == cited.version && !v.deleted)
        .ok_or_else(|| CitationError::UnknownVersion {
            doc_id: cited.doc_id.clone(),
            version: cited.version,
        })?;
    let chunks = chunk_page(&cited.doc_id, cited.version, &versions[at].body);
    let mut tracked = nearest_span(chunks.iter().filter(|c| c.anchor.hash == cited.hash), cited)
        .cloned()
        .ok_or_else(|| CitationError::UnknownPassage {
            doc_id: cited.doc_id.clone(),
            version: cited.version,
            hash: cited.hash.clone(),
        })?;
    let (mut versions, mut at, mut previous) = (versions, at, chunks);
    // The last version of each page the trail left the passage in: it may come back to a page,
    // but only to a later version.
    let mut passed: BTreeMap<String, u64> = BTreeMap::new();
    let mut moves = 0;
    loop {
        let since = match follow(tracked, &versions[at], &versions[at + 1..], previous) {
            Trail::Kept(chunk) => return Ok(classify(cited, chunk)),
            Trail::Lost { last, seen_at } => {
                tracked = last;
                seen_at
            }
        };
        passed.insert(tracked.anchor.doc_id.clone(), tracked.anchor.version);
        moves += 1;
        if moves > MAX_MOVES_FOLLOWED {
            return Ok(Resolution::Gone);
        }
        let Some((page, page_versions, from)) = history
            .pages_with_chunk(&tracked.anchor.hash, since, &tracked.anchor.doc_id)
            .into_iter()
            .find_map(|page| {
                let page_versions = history.versions(&page);
                let after = passed.get(&page).copied().unwrap_or(0);
                let from = page_versions.iter().position(|v| {
                    v.updated_at >= since
                        && v.version > after
                        && !v.deleted
                        && chunk_page(&page, v.version, &v.body)
                            .iter()
                            .any(|c| c.anchor.hash == tracked.anchor.hash)
                })?;
                Some((page, page_versions, from))
            })
        else {
            return Ok(Resolution::Gone);
        };
        let arrived = &page_versions[from];
        let chunks = chunk_page(&page, arrived.version, &arrived.body);
        tracked = nearest_span(
            chunks
                .iter()
                .filter(|c| c.anchor.hash == tracked.anchor.hash),
            &tracked.anchor,
        )
        .cloned()
        .unwrap_or(tracked);
        (versions, at, previous) = (page_versions, from, chunks);
    }
}

/// Reciprocal rank fusion of ranked lists (best first): each item scores `1 / (k + rank)`
/// summed over the lists it is in, rank from 1; `k` = 60 is the usual choice. Best first, ties
/// in the order the items were first met.
pub fn fuse_ranks<T: Clone + Ord>(lists: &[Vec<T>], k: f64) -> Vec<(T, f64)> {
    let mut scores: BTreeMap<T, (f64, usize)> = BTreeMap::new();
    let mut met = 0;
    for list in lists {
        for (rank, item) in list.iter().enumerate() {
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                met += 1;
                (0.0, met)
            });
            entry.0 += 1.0 / (k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(T, f64, usize)> = scores
        .into_iter()
        .map(|(item, (score, first))| (item, score, first))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused
        .into_iter()
        .map(|(item, score, _)| (item, score))
        .collect()
}

/// Dice coefficient of two texts' word sets, 0 to 1.
pub fn similarity(a: &str, b: &str) -> f64 {
    let words = |text: &str| -> HashSet<String> {
        plain_words(text)
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    2.0 * a.intersection(&b).count() as f64 / (a.len() + b.len()) as f64
}

enum Trail {
    /// Followed to the page's newest version: the chunk it is now.
    Kept(Chunk),
    /// Not in some version: deleted, or taken to another page.
    Lost {
        /// The chunk as the last version that had it had it.
        last: Chunk,
        /// When that version was written.
        seen_at: DateTime<Utc>,
    },
}

/// Follows `tracked`, a chunk of `holder` (whose chunks are `previous`), through `later`, the
/// page's versions after it, oldest first.
fn follow(
    tracked: Chunk,
    holder: &PageVersion,
    later: &[PageVersion],
    previous: Vec<Chunk>,
) -> Trail {
    let (mut tracked, mut previous, mut seen_at) = (tracked, previous, holder.updated_at);
    for version in later {
        let lost = |last: Chunk| Trail::Lost { last, seen_at };
        if version.deleted {
            return lost(tracked);
        }
        let chunks = chunk_page(&version.source_id, version.version, &version.body);
        let same = nearest_span(
            chunks
                .iter()
                .filter(|c| c.anchor.hash == tracked.anchor.hash),
            &tracked.anchor,
        );
        let next = same.or_else(|| {
            // A chunk whose text the version before also had is some other passage, still
            // there; only a chunk new in this version can be the tracked one rewritten.
            let before: HashSet<&str> = previous.iter().map(|c| c.anchor.hash.as_str()).collect();
            chunks
                .iter()
                .filter(|c| !before.contains(c.anchor.hash.as_str()))
                .map(|c| (similarity(&tracked.text, &c.text), c))
                .filter(|(score, _)| *score >= REVISION_MIN_SIMILARITY)
                .max_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(b.1.anchor.start.cmp(&a.1.anchor.start))
                })
                .map(|(_, c)| c)
        });
        let Some(next) = next.cloned() else {
            return lost(tracked);
        };
        tracked = next;
        previous = chunks;
        seen_at = version.updated_at;
    }
    Trail::Kept(tracked)
}

/// The end of a trail against the citation it started from.
fn classify(cited: &Anchor, now: Chunk) -> Resolution {
    if now.anchor.hash != cited.hash {
        Resolution::Revised(now)
    } else if now.anchor.doc_id == cited.doc_id
        && now.anchor.start == cited.start
        && now.anchor.end == cited.end
    {
        Resolution::Current(now)
    } else {
        Resolution::Moved(now)
    }
}

/// Of several chunks with the same text, the one nearest to where `anchor` sat.
fn nearest_span<'a>(chunks: impl Iterator<Item = &'a Chunk>, anchor: &Anchor) -> Option<&'a Chunk> {
    chunks.min_by_key(|c| c.anchor.start.abs_diff(anchor.start))
}

/// A Markdown ATX heading's level and title.
fn heading_of(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(char::is_whitespace)))
        .then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

fn current(headings: &[(usize, String)]) -> Vec<String> {
    headings.iter().map(|(_, title)| title.clone()).collect()
}

/// Pushes the paragraph `body[from..to]` (trimmed) as one piece, or cut at sentence ends into
/// pieces of at most [`MAX_CHUNK_CHARS`] characters when longer.
fn split_long(
    body: &str,
    from: usize,
    to: usize,
    headings: &[String],
    pieces: &mut Vec<(usize, usize, Vec<String>)>,
) {
    let mut start = from;
    loop {
        let rest = &body[start..to];
        let lead = rest.len() - rest.trim_start().len();
        start += lead;
        let rest = body[start..to].trim_end();
        if rest.is_empty() {
            return;
        }
        if rest.chars().count() <= MAX_CHUNK_CHARS {
            pieces.push((start, start + rest.len(), headings.to_vec()));
            return;
        }
        // The byte just past MAX_CHUNK_CHARS characters; cut at the last sentence end before
        // it, else the last white space, else right there.
        let limit = rest
            .char_indices()
            .nth(MAX_CHUNK_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        // A sentence end as the extractor reads one, not at the window's edge (the text may
        // run on past it, as in "99.9").
        let sentence_end = split_sentences(window)
            .into_iter()
            .map(|sentence| sentence.as_ptr() as usize - window.as_ptr() as usize + sentence.len())
            .rfind(|end| *end < window.len() && window[..*end].ends_with(['.', '!', '?']));
        let cut = sentence_end
            .or_else(|| window.rfind(char::is_whitespace).filter(|i| *i > 0))
            .unwrap_or(limit);
        pieces.push((
            start,
            start + rest[..cut].trim_end().len(),
            headings.to_vec(),
        ));
        start += cut;
    }
}

/// Byte offsets to character offsets over one text, counted in one pass for offsets asked in
/// ascending order (a chunk's start and end, chunk after chunk).
struct CharOffsets<'a> {
    text: &'a str,
    byte: usize,
    chars: usize,
}

impl<'a> CharOffsets<'a> {
    fn new(text: &'a str) -> Self {
        CharOffsets {
            text,
            byte: 0,
            chars: 0,
        }
    }

    /// The character offset of byte `byte`, a char boundary at or after the one asked before.
    fn at(&mut self, byte: usize) -> usize {
        self.chars += self.text[self.byte..byte].chars().count();
        self.byte = byte;
        self.chars
    }
}

#[cfg(test)]
mod tests {
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
                for (chunk, (id, start, end)) in
                    chunk_page(doc, version, &body).into_iter().zip(spans)
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
            if doc == cited.anchor.doc_id && (start, end) == (cited.anchor.start, cited.anchor.end)
            {
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
}
