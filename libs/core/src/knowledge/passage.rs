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

mod header;

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
/// or an underlined one (RST, setext) starts a section and is not a chunk itself; nor is a
/// header block of `Key: value` lines at the top of a text page, whose naming fields label every
/// chunk of the page instead (above its headings); a run of non-blank lines is a paragraph; a
/// paragraph longer than [`MAX_CHUNK_CHARS`] is cut at sentence ends. A data page (YAML, TOML,
/// JSON, header blocks only) is one record: its text is cut only by length.
pub fn chunk_page(doc_id: &str, version: u64, body: &str) -> Vec<Chunk> {
    let mut pieces = Vec::new(); // (byte start, byte end, headings)
    let lines = lines_of(body);
    let header = header::header(&lines);
    // A data document (YAML, TOML, JSON, header blocks) is one passage: its `#` lines are
    // comments, not headings, and its lines are fields of one record, not paragraphs. Unless a
    // field of its header holds a text of several paragraphs: those are its passages.
    if record(body, header.as_ref()) {
        split_long(body, 0, body.len(), &[], &mut pieces);
        return finish(doc_id, version, body, pieces);
    }
    let mut headings: Vec<(usize, String)> = Vec::new();
    // Underline styles of RST / setext headings, in the order first seen (their levels).
    let mut styles: Vec<char> = Vec::new();
    let mut paragraph: Option<(usize, usize)> = None;
    let mut i = 0;
    // A header block at the top is no passage: it labels every passage of the page (above any
    // heading, level 0), and a field folded over several paragraphs is text under its key.
    if let Some(header) = header {
        if let Some(label) = header.label {
            headings.push((0, label));
        }
        for (key, from, to) in header.texts {
            let mut labelled = current(&headings);
            labelled.push(key);
            split_long(body, from, to, &labelled, &mut pieces);
        }
        i = header.end;
    }
    // Inside an HTML comment, or a fenced code block (its fence): neither is a passage.
    let mut in_comment = false;
    let mut fence: Option<&str> = None;
    while i < lines.len() {
        let (start, line) = lines[i];
        let end = start + line.len();
        let trimmed = line.trim();
        i += 1;
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if in_comment {
            in_comment = !trimmed.contains("-->");
            continue;
        }
        // An RST directive or comment (`.. note::`, `.. image::`) and the indented block under
        // it: markup, as the document parser reads it.
        if paragraph.is_none()
            && (trimmed.starts_with(".. ") || trimmed == "..")
            && !line.starts_with([' ', '\t'])
        {
            while lines
                .get(i)
                .is_some_and(|(_, l)| l.trim().is_empty() || l.starts_with([' ', '\t']))
            {
                i += 1;
            }
            continue;
        }
        let code = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        let comment = trimmed.starts_with("<!--");
        let next = lines.get(i).map_or("", |(_, l)| l.trim());
        let atx = heading_of(trimmed);
        let underlined = atx.is_none()
            && paragraph.is_none()
            && !trimmed.is_empty()
            && super::document::underline(trimmed).is_none()
            && super::document::underline(next).is_some();
        let rule = paragraph.is_none() && super::document::underline(trimmed).is_some();
        if (trimmed.is_empty() || atx.is_some() || underlined || code.is_some() || comment)
            && let Some((from, to)) = paragraph.take()
        {
            paragraph_piece(body, (from, to), &current(&headings), &mut pieces);
        }
        if let Some(open) = code {
            fence = Some(open);
        } else if comment {
            in_comment = !trimmed.contains("-->");
        } else if let Some((level, title)) = atx {
            headings.retain(|(above, _)| *above < level);
            headings.push((level, title.to_string()));
        } else if underlined {
            let style = super::document::underline(next).unwrap_or('=');
            let level = match styles.iter().position(|s| *s == style) {
                Some(at) => at + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            headings.retain(|(above, _)| *above < level);
            headings.push((level, trimmed.to_string()));
            i += 1;
        } else if rule {
            // An RST overline, or a transition: no text.
        } else if !trimmed.is_empty() {
            paragraph = Some((paragraph.map_or(start, |(from, _)| from), end));
        }
    }
    if let Some((from, to)) = paragraph {
        paragraph_piece(body, (from, to), &current(&headings), &mut pieces);
    }
    finish(doc_id, version, body, pieces)
}

/// Whether a page version's body is a record rather than text: a data document (YAML, TOML,
/// JSON, header blocks and nothing else) none of whose fields holds a text of several
/// paragraphs. It is one passage, the record itself: no opening says what it is about.
pub fn is_record(body: &str) -> bool {
    record(body, header::header(&lines_of(body)).as_ref())
}

/// The lines of `body`, each with its end of line and its byte offset.
fn lines_of(body: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        lines.push((offset, line));
        offset += line.len();
    }
    lines
}

/// [`is_record`] with the page's header blocks read.
fn record(body: &str, header: Option<&header::Header>) -> bool {
    super::document::is_data(body) && header.is_none_or(|h| h.texts.is_empty())
}

/// The pieces of a body as chunks with their anchors.
fn finish(
    doc_id: &str,
    version: u64,
    body: &str,
    pieces: Vec<(usize, usize, Vec<String>)>,
) -> Vec<Chunk> {
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

/// Pushes the paragraph `body[from..to]` as [`split_long`] does, unless it is markup with no
/// prose ([`is_markup`]).
fn paragraph_piece(
    body: &str,
    (from, to): (usize, usize),
    headings: &[String],
    pieces: &mut Vec<(usize, usize, Vec<String>)>,
) {
    if !is_markup(&body[from..to]) {
        split_long(body, from, to, headings, pieces);
    }
}

/// Whether a paragraph is markup holding no prose: an RST directive or comment (`.. image::`,
/// `.. contents::`), lines of an HTML block, or nothing but HTML tags, Markdown images and links
/// around them (a row of badges, `[![Version](…svg)](…)`, a centred banner) and RST
/// substitutions (`|Logo|`, `|BuildStatus| |Coverage|`).
fn is_markup(text: &str) -> bool {
    let trimmed = text.trim_start();
    if trimmed.starts_with(".. ") || trimmed.trim_end() == ".." {
        return true;
    }
    // Lines of an HTML block (`<h2 align="center">The Formatter</h2>`: layout, not prose) or of
    // nothing but markup (a banner image above it).
    text.lines()
        .all(|line| html_block_line(line) || no_prose(line))
}

/// A line opening with an HTML tag (`<p …>`, `</div>`): a line of an HTML block.
fn html_block_line(line: &str) -> bool {
    let rest = line.trim_start();
    rest.strip_prefix('<').is_some_and(|tag| {
        tag.trim_start_matches('/')
            .starts_with(|c: char| c.is_ascii_alphabetic())
    })
}

/// Whether `text` holds no word once its HTML tags, Markdown images, link targets and RST
/// substitutions are taken out.
fn no_prose(text: &str) -> bool {
    let mut rest = text.to_owned();
    // HTML tags, then Markdown images `![alt](target)`, then link targets `](target)`.
    for (open, middle, close) in [
        ("<", "", ">"),
        ("![", "](", ")"),
        ("](", "", ")"),
        ("|", "", "|"),
    ] {
        let mut out = String::with_capacity(rest.len());
        let mut tail = rest.as_str();
        while let Some(at) = tail.find(open) {
            let after = &tail[at + open.len()..];
            let end = if middle.is_empty() {
                after.find(close).map(|e| e + close.len())
            } else {
                after.find(middle).and_then(|m| {
                    let past = &after[m + middle.len()..];
                    past.find(close).map(|e| m + middle.len() + e + close.len())
                })
            };
            let Some(end) = end else {
                break;
            };
            out.push_str(&tail[..at]);
            tail = &after[end..];
        }
        out.push_str(tail);
        rest = out;
    }
    !rest.chars().any(char::is_alphanumeric)
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
mod tests;
