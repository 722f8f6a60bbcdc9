//! Predicates from recurring fields: a key seen in the records of several subjects (a header
//! block, a YAML / TOML / JSON document, front matter) or in several `Key of Subject: value`
//! lines of prose is a relation of the subject's type. The record's subject is named by a key
//! naming an identifier (`kep-number: 12` is `KEP-12`, of type `kep`), an id pattern in the
//! page's title (`KEP-12: Pod spread`), else an `id` or `name` field; its values say the object
//! type (dates, versions, numbers, handles, slugs sharing a prefix word, names with a type noun).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    MAX_EXAMPLES, MAX_PREVIEW_FACTS, Options, Page, PreviewFact, ProposedPredicate, Types,
    key_words_of, name_of, value_shape,
};
use crate::knowledge::document::{self, Record};
use crate::knowledge::extract::split_sentences;
use crate::knowledge::structured::numbered;

/// Words that make a key an identifier of what its other word names (`kep-number`, `rfc id`).
const ID_WORDS: &[&str] = &["number", "id", "no", "num", "key"];

/// Keys that name a record's subject when no key names an identifier of a type.
const SUBJECT_KEYS: &[&str] = &["id", "name", "title"];

/// The type given to subjects whose type nothing names.
const RECORD_TYPE: &str = "record";

/// A key longer than this many words is prose, not a field.
const MAX_KEY_WORDS: usize = 5;

/// One key seen across records.
#[derive(Default)]
struct Seen {
    key: String,
    subjects: BTreeSet<String>,
    values: Vec<String>,
    facts: Vec<PreviewFact>,
    examples: Vec<String>,
}

/// Predicates from the recurring fields of `pages`; the types naming their subjects go to
/// `types`.
pub(super) fn propose(
    pages: &[Page<'_>],
    options: &Options,
    types: &mut Types,
) -> Vec<ProposedPredicate> {
    // By (subject type, key words).
    let mut seen: BTreeMap<(String, Vec<String>), Seen> = BTreeMap::new();
    for page in pages {
        let doc = document::parse(page.body);
        let title = doc.title.clone().unwrap_or_else(|| page.title.to_owned());
        let title_id = title_id(&title);
        if let Some((kind, id)) = &title_id {
            types.add(kind, &format!("id pattern {id}"), id);
        }
        for record in doc.records.iter().filter(|r| r.layout.is_header()) {
            let Some((kind, subject, at)) = subject_of(record, title_id.as_ref(), types) else {
                continue;
            };
            for (i, field) in record.fields.iter().enumerate() {
                let words = key_words_of(&field.key);
                if Some(i) == at || words.is_empty() || words.len() > MAX_KEY_WORDS {
                    continue;
                }
                let Some(value) = field.values.first().map(|v| clean(v)) else {
                    continue;
                };
                if value.is_empty() {
                    continue;
                }
                note(
                    seen.entry((kind.clone(), words)).or_default(),
                    &field.key,
                    &subject,
                    &value,
                    &field.line,
                    page.id,
                );
            }
        }
        for section in &doc.sections {
            for sentence in split_sentences(&section.text) {
                if let Some((head, subject, value)) = prose_field(sentence) {
                    note(
                        seen.entry(("any".to_owned(), key_words_of(&head)))
                            .or_default(),
                        &head,
                        &subject,
                        &value,
                        sentence.trim(),
                        page.id,
                    );
                }
            }
        }
    }
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (_, words) in seen.keys() {
        *names.entry(name_of(words)).or_default() += 1;
    }
    let mut proposed = Vec::new();
    for ((subject_type, words), seen) in seen {
        if seen.subjects.len() < options.min_subjects {
            continue;
        }
        let mut name = name_of(&words);
        if names[&name] > 1 {
            name = format!("{name}_of_{subject_type}");
        }
        let object_type = object_type(&words, &seen.values, &subject_type, types);
        let phrase = words.join(" ");
        let object = if object_type == "number" {
            "{o:number}"
        } else {
            "{o}"
        };
        proposed.push(ProposedPredicate {
            name,
            from: format!("field {}", seen.key),
            subject_type,
            object_type,
            subject: None,
            vocabulary: words.clone(),
            patterns: vec![format!("The {phrase} of {{s}} is {object}.")],
            examples: seen.examples,
            subjects: seen.subjects.len(),
            facts: seen.facts,
            answers: Vec::new(),
        });
    }
    proposed
}

fn note(seen: &mut Seen, key: &str, subject: &str, value: &str, line: &str, page: &str) {
    if seen.key.is_empty() {
        seen.key = key.trim().to_owned();
    }
    seen.subjects.insert(subject.to_owned());
    seen.values.push(value.to_owned());
    if seen.examples.len() < MAX_EXAMPLES && !seen.examples.iter().any(|e| e == line) {
        seen.examples.push(line.trim().to_owned());
    }
    if seen.facts.len() < MAX_PREVIEW_FACTS {
        seen.facts.push(PreviewFact {
            subject: subject.to_owned(),
            object: value.to_owned(),
            page: page.to_owned(),
        });
    }
}

/// A record's subject: its type, its name and the field naming it (none when the page's title
/// names it).
fn subject_of(
    record: &Record,
    title_id: Option<&(String, String)>,
    types: &mut Types,
) -> Option<(String, String, Option<usize>)> {
    for (i, field) in record.fields.iter().enumerate() {
        let words = key_words_of(&field.key);
        if let [noun, id] = words.as_slice()
            && ID_WORDS.contains(&id.as_str())
            && !ID_WORDS.contains(&noun.as_str())
            && noun.chars().all(char::is_alphabetic)
            && let Some(value) = field.values.first().map(|v| clean(v))
            && !value.is_empty()
            && value.split_whitespace().count() <= 3
        {
            let subject = if value.chars().all(|c| c.is_ascii_digit()) {
                numbered(noun, &value)
            } else {
                value
            };
            types.add(noun, &format!("id key {}", field.key.trim()), &subject);
            return Some((noun.clone(), subject, Some(i)));
        }
    }
    if let Some((kind, id)) = title_id {
        return Some((kind.clone(), id.clone(), None));
    }
    for wanted in SUBJECT_KEYS {
        if let Some((i, field)) = record.field(wanted)
            && let Some(value) = field.values.first().map(|v| clean(v))
            && !value.is_empty()
            && value.split_whitespace().count() <= 12
        {
            return Some((RECORD_TYPE.to_owned(), value, Some(i)));
        }
    }
    None
}

/// An id pattern opening a title (`KEP-12: Pod spread`, `KEP-0752 EndpointSlices`, `RFC 2616`):
/// its type (the letters, lower case) and the id.
pub(crate) fn title_id(title: &str) -> Option<(String, String)> {
    let first = title.split_whitespace().next()?;
    let first = first.trim_end_matches([':', ',', '.']);
    let (letters, digits) = match first.split_once('-') {
        Some((l, d)) => (l, d),
        None => {
            let mut words = title.split_whitespace();
            let l = words.next()?;
            let d = words.next()?.trim_end_matches([':', ',', '.']);
            (l, d)
        }
    };
    let id_like = letters.len() >= 2
        && letters.len() <= 6
        && letters.chars().all(|c| c.is_ascii_uppercase())
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit());
    id_like.then(|| {
        let number = digits.trim_start_matches('0');
        let number = if number.is_empty() { "0" } else { number };
        (letters.to_lowercase(), format!("{letters}-{number}"))
    })
}

/// A `Key of Subject: value` sentence of prose ("Owner of Routing engine: the Atlas team.",
/// "Pricing for Pro: €49 per user"): the key's head, the subject and the value.
fn prose_field(sentence: &str) -> Option<(String, String, String)> {
    let (key, value) = sentence.trim().split_once(':')?;
    let value = clean(value.trim().trim_end_matches(['.', '!']));
    if value.is_empty() || value.split_whitespace().count() > 8 {
        return None;
    }
    let (head, subject) = key.split_once(" of ").or_else(|| key.split_once(" for "))?;
    let (head, subject) = (head.trim(), subject.trim());
    let head_words = head.split_whitespace().count();
    let subject_words = subject.split_whitespace().count();
    let named = subject.chars().next().is_some_and(char::is_uppercase);
    ((1..=3).contains(&head_words) && subject_words <= 4 && named)
        .then(|| (head.to_owned(), subject.to_owned(), value))
}

/// A value as stated: quotes, a handle's `@` and markup trimmed.
fn clean(value: &str) -> String {
    document::plain(value)
        .trim()
        .trim_matches(['"', '\''])
        .trim()
        .to_owned()
}

/// The object type of a key's values: their shape (date, version, number, text), else an
/// entity type: `person` for handles and personal names, the prefix word slugs share
/// (`sig-node`), the type noun names end with (`the Atlas team`), or the key's last word when
/// values recur; `text` otherwise.
fn object_type(
    words: &[String],
    values: &[String],
    subject_type: &str,
    types: &mut Types,
) -> String {
    let firsts: Vec<String> = values
        .iter()
        .map(|v| match v.split_whitespace().next() {
            Some(first) if super::is_number(first) => first.to_owned(),
            _ => v.clone(),
        })
        .collect();
    if let Some(shape) = value_shape(&firsts) {
        return shape.to_owned();
    }
    let n = values.len().max(1) as f64;
    let share = |f: &dyn Fn(&str) -> bool| values.iter().filter(|v| f(v)).count() as f64 / n;
    let example = values.first().cloned().unwrap_or_default();
    if share(&|v| v.starts_with('@')) >= 0.5 || share(&personal_name) >= 0.6 {
        types.add("person", "handles and personal names", &example);
        return "person".to_owned();
    }
    if let Some(prefix) = common(values, |v| {
        let (head, rest) = v.split_once('-')?;
        (!rest.is_empty() && head.chars().all(|c| c.is_ascii_lowercase()) && head.len() >= 2)
            .then(|| head.to_owned())
    }) && prefix != subject_type
    {
        types.add(&prefix, "a prefix word values share", &example);
        return prefix;
    }
    if let Some(noun) = common(values, |v| {
        let mut words = v.split_whitespace();
        let last = words.next_back()?;
        let named = words.any(|w| w.chars().next().is_some_and(char::is_uppercase));
        (named && last.chars().all(|c| c.is_ascii_lowercase()) && last.len() >= 3)
            .then(|| last.to_owned())
    }) && noun != subject_type
    {
        types.add(&noun, "type noun", &example);
        return noun;
    }
    // Plain lower-case words (`in service`, `beta`) are a description, not names.
    if share(&|v| v.chars().all(|c| c.is_lowercase() || c == ' ')) >= 0.8 {
        return "text".to_owned();
    }
    let distinct: BTreeSet<&String> = values.iter().collect();
    if distinct.len() < values.len()
        && let Some(last) = words.last()
    {
        let noun = singular(last);
        if noun != subject_type && noun.chars().all(char::is_alphabetic) {
            types.add(noun, "a field's recurring values", &example);
            return noun.to_owned();
        }
    }
    "text".to_owned()
}

/// A plural noun's singular, roughly: `authors` is `author`; `status` and `class` stay.
fn singular(word: &str) -> &str {
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") || word.len() <= 3 {
        word
    } else {
        word.strip_suffix('s').unwrap_or(word)
    }
}

/// The value `of` gives at least half of `values`, if one does.
fn common(values: &[String], of: impl Fn(&str) -> Option<String>) -> Option<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for v in values {
        if let Some(k) = of(v) {
            *counts.entry(k).or_default() += 1;
        }
    }
    let (best, count) = counts.into_iter().max_by_key(|(_, c)| *c)?;
    (count * 2 >= values.len()).then_some(best)
}

/// Two or three capitalised words of letters: `Derya Kaya`.
fn personal_name(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    (2..=3).contains(&words.len())
        && words.iter().all(|w| {
            let mut chars = w.chars();
            chars.next().is_some_and(char::is_uppercase)
                && chars.all(|c| c.is_lowercase() || c == '-' || c == '\'')
        })
}
