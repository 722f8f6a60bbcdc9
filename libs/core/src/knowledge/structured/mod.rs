//! The structured extractor: front matter, `Key: value` lines and Markdown tables whose keys or
//! headers name a predicate, by its name or its words.
//!
//! A key names a predicate when its words overlap the predicate's vocabulary; what else the key
//! names is the subject ("Owner of Routing engine", "Pricing for Pro"), unless the predicate has a
//! fixed subject. The value is the object: a number, a name or a description, by the predicate's
//! object type.

use std::collections::{BTreeMap, BTreeSet};

use super::document::{self, Field, Layout, Record};
use super::extract::{Claim, ClaimSubject};
use super::names::NameNormaliser;
use super::ontology::{Ontology, Predicate, PredicateKind};
use super::semantic::{
    Lexicon, Mention, Profile, Token, mentions, refusal, tokens, values, without_type_noun,
};
use super::words::{STOPWORDS, stem};

mod fields;

use fields::*;
pub(crate) use fields::{
    ValueKind, date_part, has_shape, key_words, looks_like_date, numbered, value_kind,
};

/// Extractor id.
pub const STRUCTURED_ID: &str = "structured/v2";

/// Keys longer than this are prose, not keys.
const MAX_KEY_WORDS: usize = 7;

/// Keys that name a record's subject when no key names an entity type, best first.
const SUBJECT_KEYS: &[&str] = &["name", "id", "entity", "subject", "title"];

/// Words that make a key an identifier of what its other words name (`kep-number`, `rfc id`).
const ID_WORDS: &[&str] = &["number", "id", "no", "num", "key", "name"];

/// How well a key must name a predicate by its words (share of the key's words, and of the
/// predicate's name, that meet), or by meaning (the encoder's similarity to the predicate's own
/// words), for a field to be read as that predicate.
const MIN_FIELD_WORDS: f64 = 0.5;
const MIN_FIELD_COSINE: f64 = 0.62;

/// How close in meaning a field name left over must be to the one free predicate of its values'
/// shape to be read as it by elimination (the similarity at which a question's word is taken to
/// name a relation).
const LEFTOVER_COSINE: f64 = 0.5;

/// What the structured stage read: its claims, the sentences it claimed, and the text left for
/// the other stages (the page's prose: records, headings, code and comments removed).
pub(crate) struct Structured {
    pub claims: Vec<Claim>,
    pub claimed: BTreeSet<String>,
    pub rest: String,
}

/// For field keys, their similarity to each predicate's own words (`Extraction::
/// word_similarities`): one row per key, one column per predicate; `None` without an encoder.
pub(crate) type KeySimilarity<'a> = &'a dyn Fn(&[&str]) -> Option<Vec<Vec<f64>>>;

/// Reads the records of `text` (header blocks, YAML / TOML / JSON, front matter, tables, lists
/// of `Key: value` items) and the `Key: value` sentences of its prose.
pub(crate) fn read(
    ontology: &Ontology,
    profiles: &[Profile],
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    similarity: KeySimilarity<'_>,
    text: &str,
) -> Structured {
    let type_nouns = ontology.type_nouns();
    let ctx = Ctx {
        ontology,
        profiles,
        lexicon,
        normaliser,
        type_stems: type_nouns.iter().map(|n| stem(n)).collect(),
        type_nouns,
        predicate_words: profiles
            .iter()
            .flat_map(|p| p.words.keys().cloned())
            .collect(),
        name_words: name_word_counts(ontology),
    };
    let doc = document::parse(text);
    let mut claims = Vec::new();
    let mut claimed = BTreeSet::new();
    let title = doc.title.as_deref().map(titled);
    // The types of what the page's header records are about: a list's items name other things.
    let page_types: BTreeSet<&str> = doc
        .records
        .iter()
        .filter(|r| r.layout.is_header())
        .filter_map(|r| ctx.record_subject(r).and_then(|(_, _, noun)| noun))
        .collect();
    // The page's own title: its header's title field, else its first heading.
    let page_title = doc
        .records
        .iter()
        .filter(|r| r.layout.is_header())
        .flat_map(|r| &r.fields)
        .find(|f| f.key.trim().eq_ignore_ascii_case("title"))
        .and_then(|f| f.values.first().cloned())
        .or_else(|| doc.title.clone());
    let mut named = BTreeSet::new();
    // A list's `Key: value` items, each key naming its own subject.
    let mut as_items = |record: &Record, claims: &mut Vec<Claim>| {
        let items = ctx.items(record, &page_types);
        let aliases: Vec<Claim> = items
            .iter()
            .filter(|c| named.insert(c.subject.name().to_owned()))
            .filter_map(|c| {
                let subject = c.subject.name();
                let full = titled_version(page_title.as_deref()?, subject)?;
                alias(subject, &full, &c.sentence)
            })
            .collect();
        claims.extend(items);
        claims.extend(aliases);
    };
    // Records of one kind (consecutive keyed records: one mapping's entries, one table's rows)
    // are read together.
    let mut at = 0;
    while at < doc.records.len() {
        let record = &doc.records[at];
        at += 1;
        match record.layout {
            Layout::Header => claims.extend(ctx.header(record, title.as_ref(), similarity)),
            Layout::ListedHeader => {
                let stated = ctx.header(record, title.as_ref(), similarity);
                if stated.iter().any(|c| c.predicate != ALIAS) {
                    claims.extend(stated);
                } else {
                    as_items(record, &mut claims);
                }
            }
            Layout::Keyed => {
                let start = at - 1;
                while at < doc.records.len() && doc.records[at].layout == Layout::Keyed {
                    at += 1;
                }
                claims.extend(ctx.keyed(
                    &doc.records[start..at],
                    page_title.as_deref(),
                    similarity,
                ));
            }
            Layout::Items => as_items(record, &mut claims),
        }
    }
    // A titled page names its subject ("KEP-12: Pod spread" is KEP-12, also called Pod spread).
    if let Some(Titled {
        id,
        name: Some(name),
    }) = &title
        && doc.records.iter().all(|r| !r.layout.is_header())
        && !ctx.known(name)
    {
        claims.extend(alias(id, name, &format!("{id}: {name}")));
    }
    let rest = doc.prose();
    for sentence in super::extract::split_sentences(&rest) {
        for line in sentence.lines() {
            // A colon before `//` is a link's scheme (`<https://...>`), not a key's end.
            if let Some((key, value)) = line.split_once(':')
                && !value.starts_with("//")
                && let Some(claim) = ctx.key_value(None, key, value, line)
            {
                claims.push(claim);
                claimed.insert(sentence.trim().to_owned());
            }
        }
    }
    Structured {
        claims,
        claimed,
        rest,
    }
}

/// What a page titled `title` calls a subject written as a bare version: "Python 3.14 Release
/// Schedule" calls `3.14` and `3.14.0 beta 1` "Python 3.14" and "Python 3.14.0 beta 1" (the
/// word the title writes before the version the subject starts with).
fn titled_version(title: &str, subject: &str) -> Option<String> {
    let first = subject.split_whitespace().next()?;
    if !first.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let words: Vec<&str> = title.split_whitespace().collect();
    words.windows(2).find_map(|pair| {
        let (word, version) = (pair[0], pair[1].trim_end_matches([',', ':', ';']));
        let versioned = version.contains('.')
            && version.chars().all(|c| c.is_ascii_digit() || c == '.')
            && (first == version || first.starts_with(&format!("{version}.")));
        (versioned
            && word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().all(char::is_alphabetic))
        .then(|| format!("{word} {subject}"))
    })
}

/// Words a page's title may have to name the things its records number (`Python`, `Node.js`,
/// `Red Hat Enterprise Linux`).
const MAX_NAMING_TITLE_WORDS: usize = 4;

/// `subject` named as the page titled `title` numbers it: a bare number or version (`3.12`,
/// `22.04`, `18`) after a short title (`Python 3.12`); any other subject, or under no title or
/// a long one, as it is.
fn titled_number(title: Option<&str>, subject: &str) -> String {
    let bare = subject.starts_with(|c: char| c.is_ascii_digit())
        && !subject.contains(char::is_whitespace)
        && subject
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    match title.map(str::trim) {
        Some(title)
            if bare
                && title.starts_with(char::is_alphabetic)
                && title.split_whitespace().count() <= MAX_NAMING_TITLE_WORDS =>
        {
            format!("{title} {subject}")
        }
        _ => subject.to_owned(),
    }
}

/// A title split into an id and a name: "KEP-12: Pod spread", "PEP 8 – Style Guide".
struct Titled {
    id: String,
    name: Option<String>,
}

fn titled(title: &str) -> Titled {
    for sep in [": ", " – ", " — ", " - "] {
        if let Some((id, name)) = title.split_once(sep)
            && is_id(id)
            && !name.trim().is_empty()
        {
            return Titled {
                id: id.trim().to_owned(),
                name: Some(name.trim().to_owned()),
            };
        }
    }
    Titled {
        id: title.trim().to_owned(),
        name: None,
    }
}

/// An identifier: letters then a number (`KEP-12`, `PEP 8`, `RFC2616`), at most two words.
fn is_id(text: &str) -> bool {
    let t = text.trim();
    t.split_whitespace().count() <= 2
        && t.chars().next().is_some_and(char::is_alphabetic)
        && t.chars().last().is_some_and(|c| c.is_ascii_digit())
        && t.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | ' ' | '_'))
}

/// The number a reference ends in, written as one word with `#` before the number
/// (`rust-lang/rfcs#3498`, `#812`), without leading zeros.
fn reference_number(value: &str) -> Option<&str> {
    reference(value).map(|(_, number)| number)
}

/// A numbered reference: the tracker it points into (`rust-lang/rfcs`, or nothing before a
/// bare `#812`) and its number without leading zeros.
fn reference(value: &str) -> Option<(&str, &str)> {
    let (tracker, number) = value.trim().rsplit_once('#')?;
    let ok = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
        && !tracker.contains(char::is_whitespace);
    let number = number.trim_start_matches('0');
    (ok && !number.is_empty()).then_some((tracker, number))
}

/// A field name's fit to a predicate ([`Ctx::schema`]).
struct Fit {
    /// By the name's words ([`key_fit`]), else by meaning.
    score: f64,
    /// The name's and the predicate's index.
    key: usize,
    predicate: usize,
    by_words: bool,
    /// The name holds only part of the predicate's name.
    part: bool,
}

/// A claim that `name` is another name of `id` (kept as an alias, as a rename keeps the old
/// name). A title already known is not claimed again: two documents may share a title (a PEP
/// and the one that replaces it), and an alias would make them one entity.
fn alias(id: &str, name: &str, line: &str) -> Option<Claim> {
    (!name.trim().is_empty() && id.trim() != name.trim() && !is_filler(name.trim())).then(|| {
        Claim {
            predicate: ALIAS.to_owned(),
            kind: PredicateKind::Rename,
            subject: ClaimSubject::Named(id.trim().to_owned()),
            object: name.trim().to_owned(),
            sentence: line.trim().to_owned(),
            extractor: STRUCTURED_ID.to_owned(),
            confidence: 1.0,
        }
    })
}

/// The predicate name of a structural alias claim (not an ontology predicate).
pub const ALIAS: &str = "alias";

struct Ctx<'a> {
    ontology: &'a Ontology,
    profiles: &'a [Profile],
    lexicon: &'a Lexicon,
    normaliser: &'a NameNormaliser,
    type_nouns: Vec<String>,
    type_stems: BTreeSet<String>,
    predicate_words: BTreeSet<String>,
    /// [`name_word_counts`] of the ontology.
    name_words: BTreeMap<String, usize>,
}

impl Ctx<'_> {
    /// A record about one subject: the subject from a field that names an entity type or an
    /// identifier (else the page's title), each other field read as the predicate its key names
    /// by words or meaning, one field per predicate and one predicate per field, best fit first.
    fn header(
        &self,
        record: &Record,
        title: Option<&Titled>,
        similarity: KeySimilarity<'_>,
    ) -> Vec<Claim> {
        let mut claims = Vec::new();
        let found = self.record_subject(record);
        let (subject, subject_field) = match &found {
            Some((subject, at, _)) => (Some(subject.clone()), Some(*at)),
            None => (title.map(|t| t.id.clone()), None),
        };
        if let (Some(subject), Some(at)) = (&subject, subject_field) {
            // The record's title or name, when another field named the subject, is another name
            // of it.
            for (i, field) in record.fields.iter().enumerate() {
                let key = field.key.to_lowercase();
                if i != at
                    && matches!(key.as_str(), "title" | "name")
                    && let Some(name) = field.values.first()
                    && !self.known(name)
                {
                    claims.extend(alias(subject, name, &field.line));
                }
            }
        }
        if let Some(Titled {
            id,
            name: Some(name),
        }) = title
            && subject.as_deref() == Some(id.as_str())
            && !self.known(name)
        {
            claims.extend(alias(id, name, &format!("{id}: {name}")));
        }
        // A field of labelled addresses (`Project-URL: Homepage, https://…`) holds a field per
        // label, after the record's own: a field named so outright comes first.
        let labelled: Vec<Field> = record.fields.iter().flat_map(labelled).collect();
        let fields: Vec<&Field> = record
            .fields
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != subject_field)
            .map(|(_, f)| f)
            .chain(&labelled)
            .collect();
        let keys = by_key(fields.iter().copied());
        let schema = self.schema(&keys, similarity);
        claims.extend(self.stated(subject.as_deref(), &fields, &schema));
        claims
    }

    /// Records of one kind, each about the subject its place names (a mapping's key, a table
    /// row's first cell): their field names are read as one schema, so a name means the same
    /// in every record (`start` beside `lts` in most records is not the LTS start in the few
    /// without one), and each record states its own values.
    ///
    /// A subject its place writes as a bare number or version (`"3.12"` in the releases of a
    /// page titled Python) is named with the page's short title before it (`Python 3.12`): the
    /// same number is another thing on another page.
    fn keyed(
        &self,
        records: &[Record],
        page_title: Option<&str>,
        similarity: KeySimilarity<'_>,
    ) -> Vec<Claim> {
        let keys = by_key(records.iter().flat_map(|r| &r.fields));
        let schema = self.schema(&keys, similarity);
        let mut claims = Vec::new();
        for record in records {
            let Some(subject) = record
                .subject
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let subject = titled_number(page_title, subject);
            let subject = subject.as_str();
            // Its title or name, if it has one, is another name of it.
            for field in &record.fields {
                if matches!(field.key.to_lowercase().trim(), "title" | "name")
                    && let Some(name) = field.values.first()
                    && !self.known(name)
                {
                    claims.extend(alias(subject, name, &field.line));
                }
            }
            let fields: Vec<&Field> = record.fields.iter().collect();
            claims.extend(self.stated(Some(subject), &fields, &schema));
        }
        claims
    }

    /// The claims of one record's `fields` about `subject` under `schema` (a field name's
    /// predicate).
    fn stated(
        &self,
        subject: Option<&str>,
        fields: &[&Field],
        schema: &BTreeMap<String, usize>,
    ) -> Vec<Claim> {
        let mut claims = Vec::new();
        let mut done = BTreeSet::new();
        for field in fields {
            let Some(&p) = schema.get(&field.key) else {
                continue;
            };
            // One value per predicate: the first field of its name that has one.
            if done.contains(&p) {
                continue;
            }
            let predicate = &self.ontology.predicates()[p];
            let subject = match &predicate.fixed_subject {
                Some(fixed) => ClaimSubject::Fixed(fixed.clone()),
                None => match subject {
                    Some(s) => ClaimSubject::Named(s.to_owned()),
                    None => continue,
                },
            };
            let Some(object) = typed_value(predicate, field) else {
                continue;
            };
            done.insert(p);
            claims.push(Claim {
                predicate: predicate.name.clone(),
                kind: predicate.kind,
                subject,
                object,
                sentence: field.line.clone(),
                extractor: STRUCTURED_ID.to_owned(),
                confidence: 1.0,
            });
        }
        claims
    }

    /// Which predicate each field name states (`keys`: each name with its fields, in one record
    /// or in records of one kind): one predicate per name and one name per predicate, the best
    /// fit first. A name that shares words with a predicate is judged by its words, weighted by
    /// how few predicates share each (`lts` names `lts_start` better than `start` does); one
    /// that shares none, by meaning (the encoder), and only after every name judged by its
    /// words has taken its predicate. A name whose words fit two free predicates alike, or hold
    /// only part of each one's name (`releaseDate`, with `latest_release_date` and
    /// `initial_release` free), names neither. Then, by elimination, a name left over whose
    /// values all have the shape of a date, number or version takes the one free predicate of
    /// that shape about the same subjects that it is close to in meaning, when no other name
    /// left over is. Most of a name's values must have the predicate's shape.
    fn schema(
        &self,
        keys: &[(&str, Vec<&Field>)],
        similarity: KeySimilarity<'_>,
    ) -> BTreeMap<String, usize> {
        let phrases: Vec<String> = keys.iter().map(|(k, _)| key_phrase(k)).collect();
        let phrase_refs: Vec<&str> = phrases.iter().map(String::as_str).collect();
        let by_meaning = similarity(&phrase_refs);
        let meaning = |k: usize, p: usize| {
            by_meaning
                .as_ref()
                .and_then(|rows| rows.get(k))
                .and_then(|row| row.get(p))
                .copied()
                .unwrap_or(0.0)
        };
        let predicates = self.ontology.predicates();
        // How many of a key's values type as each predicate's objects, of those that are no
        // flag (`eoas: true` where most records give a date states that no date is given).
        let typed = |k: usize, p: usize| {
            let fields: Vec<&&Field> = keys[k]
                .1
                .iter()
                .filter(|f| !f.values.iter().all(|v| is_flag(v)))
                .collect();
            let n = fields
                .iter()
                .filter(|f| typed_value(&predicates[p], f).is_some())
                .count();
            (n, fields.len())
        };
        let mostly_typed = |k: usize, p: usize| {
            let (n, of) = typed(k, p);
            n > 0 && n * 2 >= of
        };
        let mut fits: Vec<Fit> = Vec::new();
        let mut words_of: Vec<Vec<f64>> = vec![vec![0.0; predicates.len()]; keys.len()];
        for (k, (key, fields)) in keys.iter().enumerate() {
            let key = without_namespace(key, fields);
            for (p, (predicate, profile)) in predicates.iter().zip(self.profiles).enumerate() {
                if predicate.kind == PredicateKind::Rename {
                    continue;
                }
                let KeyFit { score: words, part } =
                    key_fit(&key, predicate, profile, &self.name_words);
                words_of[k][p] = words;
                if words == KEY_CONTRADICTS {
                    continue;
                }
                let (score, by_words) = if words > 0.0 {
                    (words, true)
                } else {
                    (meaning(k, p), false)
                };
                if (by_words && score < MIN_FIELD_WORDS)
                    || (!by_words && score < MIN_FIELD_COSINE)
                    || !mostly_typed(k, p)
                {
                    continue;
                }
                fits.push(Fit {
                    score,
                    key: k,
                    predicate: p,
                    by_words,
                    part,
                });
            }
        }
        // Names that share words with a predicate first: meaning alone (`releaseLabel`, close
        // to `latest_version`) takes only what no name's words claim (`latest`).
        fits.sort_by(|a, b| {
            b.by_words
                .cmp(&a.by_words)
                .then(b.score.total_cmp(&a.score))
                .then(a.key.cmp(&b.key))
                .then(a.predicate.cmp(&b.predicate))
        });
        let mut schema: BTreeMap<String, usize> = BTreeMap::new();
        let mut used_keys = BTreeSet::new();
        let mut used_predicates = BTreeSet::new();
        for fit in &fits {
            let (k, p) = (fit.key, fit.predicate);
            if used_keys.contains(&k) || used_predicates.contains(&p) {
                continue;
            }
            // Words that fit another free predicate as well name neither, nor do words that
            // are only part of each of two free predicates' names: which one is meant is a
            // guess, and a wrong guess states the wrong fact.
            let tied = fit.by_words
                && fits.iter().any(|other| {
                    other.key == k
                        && other.predicate != p
                        && other.by_words
                        && !used_predicates.contains(&other.predicate)
                        && ((other.score - fit.score).abs() < 1e-9 || (fit.part && other.part))
                });
            if tied {
                continue;
            }
            used_keys.insert(k);
            used_predicates.insert(p);
            schema.insert(keys[k].0.to_owned(), p);
        }
        // By elimination: a name left over and a free predicate of a typed shape.
        let subject_types: BTreeSet<&str> = used_predicates
            .iter()
            .flat_map(|&p| predicates[p].subject_types.iter().map(String::as_str))
            .collect();
        let candidates: Vec<(usize, usize)> = (0..keys.len())
            .filter(|k| !used_keys.contains(k))
            .flat_map(|k| {
                (0..predicates.len())
                    .filter(|p| !used_predicates.contains(p))
                    .map(move |p| (k, p))
            })
            .filter(|&(k, p)| {
                let predicate = &predicates[p];
                let (n, of) = typed(k, p);
                predicate.kind == PredicateKind::Slot
                    && predicate.fixed_subject.is_none()
                    && matches!(
                        value_kind(&predicate.object_type.to_lowercase()),
                        ValueKind::Date | ValueKind::Number | ValueKind::Version
                    )
                    && (subject_types.is_empty()
                        || predicate
                            .subject_types
                            .iter()
                            .any(|t| subject_types.contains(t.as_str())))
                    && n == of
                    && words_of[k][p] != KEY_CONTRADICTS
                    && meaning(k, p) >= LEFTOVER_COSINE
            })
            .collect();
        for &(k, p) in &candidates {
            let alone = candidates.iter().all(|&(k2, p2)| (k2 == k) == (p2 == p));
            if alone {
                schema.insert(keys[k].0.to_owned(), p);
            }
        }
        schema
    }

    /// The field naming a record's subject, the subject, and the entity type its key names: a
    /// key naming an entity type (`Package: ledger`; `kep-number: 12` gives `KEP-12`), else a
    /// key naming one with other words whose value is a numbered reference (`RFC PR:
    /// rust-lang/rfcs#3498` gives `RFC-3498`), else an identifier or name key (no type).
    fn record_subject(&self, record: &Record) -> Option<(String, usize, Option<&str>)> {
        let mut referenced = None;
        for (i, field) in record.fields.iter().enumerate() {
            let words = key_words(&field.key);
            let Some(noun) = self
                .type_nouns
                .iter()
                .find(|n| words.iter().any(|w| w == *n || stem(w) == stem(n)))
            else {
                continue;
            };
            let rest: Vec<&String> = words.iter().filter(|w| stem(w) != stem(noun)).collect();
            if !rest.iter().all(|w| ID_WORDS.contains(&w.as_str())) {
                if referenced.is_none()
                    && let Some(number) = field.values.first().and_then(|v| reference_number(v))
                {
                    referenced = Some((numbered(noun, number), i, Some(noun.as_str())));
                }
                continue;
            }
            let Some(value) = field.values.first() else {
                continue;
            };
            let value = value.trim().trim_matches(['"', '\'']);
            if value.is_empty() || value.split_whitespace().count() > 8 {
                continue;
            }
            if value.chars().all(|c| c.is_ascii_digit()) {
                return Some((numbered(noun, value), i, Some(noun.as_str())));
            }
            return Some((value.to_owned(), i, Some(noun.as_str())));
        }
        if referenced.is_some() {
            return referenced;
        }
        for wanted in SUBJECT_KEYS {
            if let Some((i, field)) = record.field(wanted)
                && let Some(value) = field.values.first()
                && value.split_whitespace().count() <= 12
            {
                return Some((value.trim().to_owned(), i, None));
            }
        }
        None
    }

    /// `Key: value` items of a list and table rows: each key (or row) names its own subject.
    fn items(&self, record: &Record, page_types: &BTreeSet<&str>) -> Vec<Claim> {
        let mut claims = Vec::new();
        for field in &record.fields {
            let Some(value) = field.values.first() else {
                continue;
            };
            match field.key.split_once(" of ") {
                Some((column, subject)) if field.line.contains(" | ") => {
                    claims.extend(self.key_value(Some(subject), column, value, &field.line));
                }
                // A value of another shape than the predicate's objects (a date where a
                // release is wanted) is not read as that predicate.
                _ => match self
                    .key_value(None, &field.key, value, &field.line)
                    .filter(|c| self.fits_shape(c))
                {
                    Some(claim) => claims.push(claim),
                    None => {
                        claims.extend(self.dated(&field.key, value, &field.line, page_types));
                    }
                },
            }
        }
        claims
    }

    /// Whether a claim's object has its predicate's shape.
    fn fits_shape(&self, claim: &Claim) -> bool {
        self.ontology
            .predicate(&claim.predicate)
            .is_some_and(|p| has_shape(&p.object_type, &claim.object))
    }

    /// A list item whose key names no predicate but whose value is a date ("3.12.0 beta 1:
    /// Monday, 2023-05-22"): the key names the subject of the one predicate with dates for
    /// objects. With several, the one not about what the page's header is about (`page_types`:
    /// a PEP's created date is its header's, a release's date its list's), else the one whose
    /// subject type has the key's shape (a version-like key names a release, a milestone, a
    /// version). A remark after the date (`(expected)`) is not part of it.
    fn dated(
        &self,
        key: &str,
        value: &str,
        line: &str,
        page_types: &BTreeSet<&str>,
    ) -> Option<Claim> {
        let date = date_part(value)?;
        if key.split_whitespace().count() > 6 {
            return None;
        }
        let dated: Vec<&Predicate> = self
            .ontology
            .predicates()
            .iter()
            .filter(|p| {
                p.kind == PredicateKind::Slot
                    && p.fixed_subject.is_none()
                    && value_kind(&p.object_type.to_lowercase()) == ValueKind::Date
            })
            .collect();
        let predicate = only(&dated).or_else(|| {
            let other: Vec<&Predicate> = dated
                .iter()
                .copied()
                .filter(|p| {
                    !p.subject_types
                        .iter()
                        .any(|t| page_types.contains(t.as_str()))
                })
                .collect();
            only(&other).or_else(|| {
                let versioned = key.split_whitespace().next().is_some_and(|w| {
                    w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit())
                });
                let shaped: Vec<&Predicate> = other
                    .iter()
                    .copied()
                    .filter(|p| {
                        p.subject_types.iter().any(|t| {
                            (value_kind(&t.to_lowercase()) == ValueKind::Version) == versioned
                        })
                    })
                    .collect();
                only(&shaped)
            })
        })?;
        Some(Claim {
            predicate: predicate.name.clone(),
            kind: predicate.kind,
            subject: ClaimSubject::Named(key.trim().to_owned()),
            object: date,
            sentence: line.trim().to_owned(),
            extractor: STRUCTURED_ID.to_owned(),
            confidence: 1.0,
        })
    }

    /// One key and value. `subject` is the page's or row's subject, when known from outside.
    fn key_value(
        &self,
        subject: Option<&str>,
        key: &str,
        value: &str,
        line: &str,
    ) -> Option<Claim> {
        let key_tokens = tokens(key);
        let key_words = key_tokens
            .iter()
            .filter(|t| t.text.chars().next().is_some_and(char::is_alphanumeric))
            .count();
        let value = document::plain(value);
        let value = value.trim().trim_end_matches(['.', '!']).trim();
        if key_words == 0 || key_words > MAX_KEY_WORDS || value.is_empty() {
            return None;
        }
        if refusal(line, false).is_some() {
            return None;
        }
        let stems: BTreeSet<String> = key_tokens
            .iter()
            .map(|t| stem(&t.lower))
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .collect();
        let mut best: Option<(f64, Claim)> = None;
        for (predicate, profile) in self.ontology.predicates().iter().zip(self.profiles) {
            if predicate.kind == PredicateKind::Rename {
                continue;
            }
            let score: f64 = profile
                .words
                .iter()
                .filter(|(w, _)| stems.contains(*w) && !self.is_type_noun(w))
                .map(|(_, weight)| weight)
                .sum();
            if score <= 0.0 {
                continue;
            }
            let Some(claim) = self.fill(predicate, profile, subject, key, value, line) else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, claim));
            }
        }
        best.map(|(_, claim)| claim)
    }

    /// Whether the graph already knows `name`.
    fn known(&self, name: &str) -> bool {
        self.lexicon.types_of(self.normaliser, name).is_some()
    }

    fn is_type_noun(&self, word: &str) -> bool {
        self.type_stems.contains(word)
    }

    fn fill(
        &self,
        predicate: &Predicate,
        profile: &Profile,
        subject: Option<&str>,
        key: &str,
        value: &str,
        line: &str,
    ) -> Option<Claim> {
        let subject = match &predicate.fixed_subject {
            Some(fixed) => ClaimSubject::Fixed(fixed.clone()),
            None => ClaimSubject::Named(match self.subject_in_key(profile, key) {
                Some(named) => named,
                None => subject?.to_owned(),
            }),
        };
        let object = match predicate.object_type.as_str() {
            "number" => values(&tokens(value)).first()?.text.clone(),
            "text" | "any" => value.to_owned(),
            _ => {
                let found = self.mentions(&tokens(value));
                let short = value.split_whitespace().count() <= 4;
                let name = match found.as_slice() {
                    // A short value its names are parts of is one name ("Hugo van Kemenade").
                    _ if short
                        && found.len() <= 2
                        && found.iter().all(|m| value.contains(&m.name)) =>
                    {
                        person_name(value)
                    }
                    [one] => one.name.clone(),
                    _ => return None,
                };
                without_type_noun(&name, &predicate.object_type)
            }
        };
        Some(Claim {
            predicate: predicate.name.clone(),
            kind: predicate.kind,
            subject,
            object,
            sentence: line.trim().to_owned(),
            extractor: STRUCTURED_ID.to_owned(),
            confidence: 1.0,
        })
    }

    /// The known names `tokens` mention, read with this ontology's lexicon and words.
    fn mentions(&self, tokens: &[Token<'_>]) -> Vec<Mention> {
        mentions(
            tokens,
            self.lexicon,
            self.normaliser,
            &self.type_nouns,
            &self.predicate_words,
        )
    }

    /// What the key names besides the predicate's words: "Owner of Routing engine" names
    /// "Routing engine".
    fn subject_in_key(&self, profile: &Profile, key: &str) -> Option<String> {
        let key_tokens = tokens(key);
        let found = self.mentions(&key_tokens);
        if let Some(m) = found
            .iter()
            .find(|m| !profile.words.contains_key(&stem(&m.name.to_lowercase())))
        {
            return Some(m.name.clone());
        }
        let rest: Vec<&str> = key_tokens
            .iter()
            .filter(|t| t.text.chars().next().is_some_and(char::is_alphanumeric))
            .filter(|t| {
                let s = stem(&t.lower);
                !profile.words.contains_key(&s) && !STOPWORDS.contains(&s.as_str())
            })
            .map(|t| t.text)
            .collect();
        (!rest.is_empty() && rest.len() <= 4).then(|| rest.join(" "))
    }
}

#[cfg(test)]
mod tests;
