//! Document structure, read before sentences: what a page is made of.
//!
//! A page is parsed into *records* (runs of fields about one subject: a header block of
//! `Key: value` lines at the top, RFC 822 style with continuation lines; a YAML, TOML or JSON
//! document or front matter; one item of a list of mappings; one row of a table; the `Key: value`
//! items of a list) and *prose* (paragraphs under their headings). Markup never becomes content:
//! a heading (Markdown `#`, setext or reStructuredText underlined, with or without an overline)
//! labels the section below it and is never a sentence; code blocks, HTML comments and RST
//! directives are not prose; a list item is read with its list's lead-in.
//!
//! Pure and bounded: every input gives a `Document`, garbage included.

mod data;
mod text;

pub(crate) use text::{plain, underline};

use serde_json::Value;

use data::{
    looks_like_toml, looks_like_yaml, only_header_blocks, records_of, verbatim, yaml_documents,
    yaml_to_json,
};
use text::read_text;

/// Nested mappings deeper than this are not read (a generated config can nest without end).
const MAX_DEPTH: usize = 4;

/// A key longer than this many words is prose, not a field name.
const MAX_KEY_WORDS: usize = 5;

/// Values of one list field read, at most.
const MAX_LIST_VALUES: usize = 32;

/// One field: a key (nested keys joined by a space, `milestone beta`) and its values (one for a
/// scalar, one per item for a list), with the line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The key as written, nested keys joined with a space.
    pub key: String,
    /// Its values, in order; never empty.
    pub values: Vec<String>,
    /// The text it was read from, for provenance.
    pub line: String,
}

/// Fields about one subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Its fields, in order.
    pub fields: Vec<Field>,
    /// How it was laid out.
    pub layout: Layout,
    /// The subject its place names ([`Layout::Keyed`]): its key in a mapping of records, or
    /// its table row's first cell.
    pub subject: Option<String>,
}

impl Record {
    /// The first field whose key is `key`, case and surrounding space aside, with its position.
    pub fn field(&self, key: &str) -> Option<(usize, &Field)> {
        self.fields
            .iter()
            .enumerate()
            .find(|(_, f)| f.key.trim().eq_ignore_ascii_case(key))
    }
}

/// Where a record came from, which says how its subject is found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// A header block, front matter, or a YAML / TOML / JSON mapping: one subject, named by a
    /// field (or the page's title).
    #[default]
    Header,
    /// A header block written as a list of `Key: value` items opening a page (under its title
    /// at most): read as a header; when that states nothing, as [`Layout::Items`] (a list of
    /// release dates under a page's title, each key a subject).
    ListedHeader,
    /// `Key: value` items of a list: each key names its own subject.
    Items,
    /// One of several records of one kind, each about the subject its place names: an entry of
    /// a mapping of records (`{"v20": {"start": ..}, "v22": {..}}`, its key), an item of a list
    /// of records (`- releaseCycle: "3.12"`, its first field's value), a table's row (its
    /// first cell, the other cells fields under their column's header). Records of one kind
    /// in one document share their field names, which are read as one schema.
    Keyed,
}

impl Layout {
    /// Whether a record so laid out is about one subject: a header block, in whatever form.
    pub fn is_header(self) -> bool {
        matches!(self, Layout::Header | Layout::ListedHeader)
    }
}

/// A paragraph (or a list item read with its lead-in) and the headings above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The headings above it, outermost first.
    pub headings: Vec<String>,
    /// Its text: one or more sentences.
    pub text: String,
}

/// A parsed page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// Its records.
    pub records: Vec<Record>,
    /// Its title: the first top-level heading, if any.
    pub title: Option<String>,
    /// Its prose, in order.
    pub sections: Vec<Section>,
}

impl Document {
    /// The prose for the sentence stages: paragraphs separated by blank lines, a list item on a
    /// line of its own ending as a sentence.
    pub fn prose(&self) -> String {
        let mut out = String::new();
        for section in &self.sections {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&section.text);
        }
        out
    }
}

/// Whether `body` is data rather than text: a JSON, YAML or TOML document, or header blocks
/// and nothing else. Such a page is one record (or several), never a run of paragraphs.
pub fn is_data(body: &str) -> bool {
    let trimmed = body.trim();
    ((trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<Value>(trimmed).is_ok())
        || looks_like_yaml(trimmed)
        || looks_like_toml(trimmed)
        || only_header_blocks(trimmed)
}

/// Parses `body` into its structure.
pub fn parse(body: &str) -> Document {
    let body = without_comments(body);
    let trimmed = body.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
    {
        return Document {
            records: records_of(&value),
            ..Document::default()
        };
    }
    let mut doc = Document::default();
    let mut text: &str = &body;
    // Front matter: `---` on the first line, up to the next `---`.
    if let Some(after) = trimmed
        .strip_prefix("---\n")
        .or(trimmed.strip_prefix("---\r\n"))
        && let Some(end) = after.find("\n---")
    {
        let block = &after[..end];
        if let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(block) {
            doc.records
                .extend(verbatim(records_of(&yaml_to_json(value, 0)), block));
            let rest = &after[end + 4..];
            text = rest.split_once('\n').map_or("", |(_, r)| r);
        }
    } else if looks_like_yaml(trimmed) && !only_header_blocks(trimmed) {
        let mut records = Vec::new();
        for part in yaml_documents(trimmed) {
            if let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(part) {
                records.extend(verbatim(records_of(&yaml_to_json(value, 0)), part));
            }
        }
        if !records.is_empty() {
            doc.records = records;
            return doc;
        }
    } else if looks_like_toml(trimmed)
        && let Ok(value) = trimmed.parse::<toml::Table>()
        && let Ok(json) = serde_json::to_value(value)
    {
        doc.records = records_of(&json);
        return doc;
    }
    read_text(text, &mut doc);
    doc
}

/// A field name: at most a few words of letters, digits, `-`, `_` and `.`, starting with a
/// letter.
fn is_key(key: &str) -> bool {
    key.trim().chars().next().is_some_and(char::is_alphabetic) && is_item_key(key)
}

/// The key of a list item's `Key: value`, which may start with a digit (`3.12.0 beta 1`).
fn is_item_key(key: &str) -> bool {
    let key = key.trim();
    key.chars().next().is_some_and(char::is_alphanumeric)
        && key.split_whitespace().count() <= MAX_KEY_WORDS
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ' ' | '/'))
}

/// `Key: value` with a field name as key; the value may be empty (a continuation follows).
fn field_line(line: &str) -> Option<(&str, &str)> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let (key, value) = line.split_once(':')?;
    if !is_key(key) || value.starts_with("//") {
        return None;
    }
    if !(value.is_empty() || value.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key.trim(), value.trim()))
}

/// A list item's `Key: value`.
fn item_field(item: &str) -> Option<(&str, &str)> {
    let (key, value) = item.split_once(':')?;
    if !is_item_key(key) || value.starts_with("//") || value.trim().is_empty() {
        return None;
    }
    if !(value.is_empty() || value.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key.trim(), value.trim()))
}

/// `body` without HTML comments (`<!-- ... -->`, an unclosed one to the end).
fn without_comments(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find("<!--") {
        out.push_str(&rest[..at]);
        match rest[at..].find("-->") {
            Some(end) => rest = &rest[at + end + 3..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
