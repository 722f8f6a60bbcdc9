//! How a field is read: the words of its key and the predicate they name (by words, or the
//! encoder's similarity), and its value typed by the predicate's object type (a number, a
//! date, a version, a person, an enumeration) or refused for the wrong shape.

use super::*;

/// The words of a key, lower case: `latest-milestone`, `owningSig` and `Python-Version` give
/// two each.
pub(crate) fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase();
            word.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Fields grouped by their name, in the order the names first come.
pub(super) fn by_key<'f>(
    fields: impl Iterator<Item = &'f Field>,
) -> Vec<(&'f str, Vec<&'f Field>)> {
    let mut keys: Vec<(&str, Vec<&Field>)> = Vec::new();
    for field in fields {
        match keys.iter_mut().find(|(k, _)| *k == field.key) {
            Some((_, same)) => same.push(field),
            None => keys.push((field.key.as_str(), vec![field])),
        }
    }
    keys
}

/// For each word of the ontology's predicate names (as [`key_fit`] stems them), how many
/// predicates' names hold it.
pub(super) fn name_word_counts(ontology: &Ontology) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for predicate in ontology.predicates() {
        if predicate.kind == PredicateKind::Rename {
            continue;
        }
        let words: BTreeSet<String> = key_words(&predicate.name)
            .iter()
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .map(|w| field_stem(w))
            .collect();
        for word in words {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    counts
}

/// A key as a phrase for the encoder (`latest-milestone` as "latest milestone").
pub(super) fn key_phrase(key: &str) -> String {
    key_words(key).join(" ")
}

/// A stem that also folds an agent noun into its verb ("maintainer" and "maintained" meet).
pub(super) fn field_stem(word: &str) -> String {
    let s = stem(word);
    match s.strip_suffix("er").or_else(|| s.strip_suffix("or")) {
        Some(base) if base.len() >= 3 && s.len() >= 5 => stem(base),
        _ => s,
    }
}

/// How well a key names a predicate by its words: the share of the key's words that are the
/// predicate's (its name, its patterns' words, its object type), averaged with the share of its
/// name's words the key holds, when one of the two is whole (`Author-email` holds the author;
/// `milestone beta` is beta_milestone). A word of the name counts for less the more predicates'
/// names hold it (`name_words`): `lts` names `lts_start` better than `start` does when
/// `maintenance_start` holds `start` too. The fit also says whether the key holds only part of
/// the name (`releaseDate` of `latest_release_date`).
pub(super) fn key_fit(
    key: &str,
    predicate: &Predicate,
    profile: &Profile,
    name_words: &BTreeMap<String, usize>,
) -> KeyFit {
    let name: BTreeSet<String> = key_words(&predicate.name)
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| field_stem(w))
        .collect();
    let vocabulary: BTreeSet<String> = profile
        .words
        .keys()
        .map(|w| field_stem(w))
        .chain(name.iter().cloned())
        .chain(std::iter::once(field_stem(&predicate.object_type)))
        .collect();
    let key: BTreeSet<String> = key_words(key)
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && w.chars().any(char::is_alphabetic))
        .flat_map(|w| {
            compound(w, &vocabulary)
                .or_else(|| acronym(w, &name, &vocabulary))
                .unwrap_or_else(|| vec![field_stem(w)])
        })
        .collect();
    if key.is_empty() || name.is_empty() {
        return KeyFit::NONE;
    }
    let weight = |w: &String| 1.0 / name_words.get(w).copied().unwrap_or(1).max(1) as f64;
    let of_key = key.iter().filter(|w| vocabulary.contains(*w)).count() as f64 / key.len() as f64;
    let held: f64 = name.iter().filter(|w| key.contains(*w)).map(weight).sum();
    let of_name = held / name.iter().map(weight).sum::<f64>();
    let part = of_name < 1.0 - 1e-9;
    if of_key < 1.0 && part {
        // Each side has a word the other lacks: `Requires-Dist` is what a package requires, not
        // the Python it requires. With no word in common, meaning alone may still decide.
        return if of_key > 0.0 || held > 0.0 {
            KeyFit {
                score: KEY_CONTRADICTS,
                part,
            }
        } else {
            KeyFit::NONE
        };
    }
    KeyFit {
        score: (of_key + of_name) / 2.0,
        part,
    }
}

/// How well a key names a predicate by its words ([`key_fit`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct KeyFit {
    /// 0 for no word in common, [`KEY_CONTRADICTS`] for a key naming something else, else in
    /// (0, 1], 1 for a key and a name of the same words.
    pub(super) score: f64,
    /// The key holds only part of the predicate's name: it names something more general
    /// (`releaseDate` of `latest_release_date` and of `initial_release`).
    pub(super) part: bool,
}

impl KeyFit {
    /// No word in common.
    const NONE: KeyFit = KeyFit {
        score: 0.0,
        part: true,
    };
}

/// A key without the words that name where its values, numbered references all, point
/// (`Rust Issue: rust-lang/rust#8122` is an issue, in Rust's tracker); the key itself when no
/// such word or no other word is left.
pub(super) fn without_namespace(key: &str, fields: &[&Field]) -> String {
    let spaces: Vec<Vec<String>> = fields
        .iter()
        .filter_map(|f| {
            let (tracker, _) = super::reference(f.values.first()?)?;
            Some(key_words(tracker))
        })
        .collect();
    if spaces.is_empty() || spaces.len() < fields.len() {
        return key.to_owned();
    }
    let words = key_words(key);
    let kept: Vec<&String> = words
        .iter()
        .filter(|w| !spaces.iter().all(|space| space.contains(w)))
        .collect();
    if kept.is_empty() || kept.len() == words.len() {
        return key.to_owned();
    }
    kept.iter()
        .map(|w| w.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words a label of an address holds at most (`Project-URL: Bug Tracker, https://…`).
const MAX_LABEL_WORDS: usize = 3;

/// The fields a field of labelled addresses holds: each value written `Label, address` (an
/// address with `://` and no space, a label of at most [`MAX_LABEL_WORDS`] words) is a field
/// named by its label, on the same line. None for any other field. (A classifier's path,
/// `License :: OSI Approved :: BSD License`, is not read so: on pypi's records it stated
/// licences the records' own fields leave unsaid or state otherwise.)
pub(super) fn labelled(field: &Field) -> Vec<Field> {
    field
        .values
        .iter()
        .filter_map(|value| {
            let (label, address) = value.split_once(',')?;
            let (label, address) = (label.trim(), address.trim());
            let is_label = !label.is_empty()
                && label.split_whitespace().count() <= MAX_LABEL_WORDS
                && label.chars().any(char::is_alphabetic)
                && label
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
            let is_address = address.contains("://") && !address.contains(char::is_whitespace);
            (is_label && is_address).then(|| Field {
                key: label.to_owned(),
                values: vec![address.to_owned()],
                line: field.line.clone(),
            })
        })
        .collect()
}

/// A key word written as two words of `vocabulary` run together (`homepage`: home, page;
/// `codename`), each of at least three letters, as those two (stemmed as [`key_fit`] stems);
/// `None` when it is no such compound or is a word of `vocabulary` itself.
fn compound(word: &str, vocabulary: &BTreeSet<String>) -> Option<Vec<String>> {
    if vocabulary.contains(&field_stem(word)) || !word.is_ascii() {
        return None;
    }
    (3..word.len().saturating_sub(2)).find_map(|at| {
        let (a, b) = (field_stem(&word[..at]), field_stem(&word[at..]));
        (vocabulary.contains(&a) && vocabulary.contains(&b)).then(|| vec![a, b])
    })
}

/// Letters an acronym may hold for the small words of the phrase it shortens (`o` of "end of
/// life", `f` of "date for ...", `t` of "time to ...", `a` of "... and ..."), each at most once.
const ACRONYM_SMALL_WORDS: &[char] = &['o', 'f', 't', 'a'];

/// A key word that is an acronym of a predicate's whole name (`eol`: end, of, life;
/// `eoas`: end of active support, for `active_support_end`; `ga`: general availability): one
/// initial of each of the name's words (`name`, stemmed as [`key_fit`] stems, at least two), in
/// any order, and at most one letter of each small word besides; the name's words then.
/// `None` for a word of `vocabulary`, an identifier word, or any other word.
pub(super) fn acronym(
    word: &str,
    name: &BTreeSet<String>,
    vocabulary: &BTreeSet<String>,
) -> Option<Vec<String>> {
    if name.len() < 2
        || !(2..=6).contains(&word.len())
        || !word.chars().all(|c| c.is_ascii_lowercase())
        || vocabulary.contains(&field_stem(word))
        || super::ID_WORDS.contains(&word)
        || STOPWORDS.contains(&word)
    {
        return None;
    }
    let mut letters: Vec<char> = word.chars().collect();
    for initial in name.iter().filter_map(|w| w.chars().next()) {
        let at = letters.iter().position(|&c| c == initial)?;
        letters.remove(at);
    }
    letters.sort_unstable();
    let small = letters.windows(2).all(|pair| pair[0] != pair[1])
        && letters.iter().all(|c| ACRONYM_SMALL_WORDS.contains(c));
    small.then(|| name.iter().cloned().collect())
}

/// What [`key_fit`] gives a key that shares some words with a predicate but names something
/// else; below zero, so not even meaning makes the field that predicate.
pub(super) const KEY_CONTRADICTS: f64 = -1.0;

/// A numbered subject named by its type: `KEP-12` (a short type noun is an acronym), `Issue 12`.
pub(crate) fn numbered(noun: &str, number: &str) -> String {
    if noun.chars().count() <= 4 {
        format!("{}-{number}", noun.to_uppercase())
    } else {
        let mut chars = noun.chars();
        let first: String = chars
            .next()
            .map(|c| c.to_uppercase().collect())
            .unwrap_or_default();
        format!("{first}{} {number}", chars.as_str())
    }
}

/// What a field's value states for `predicate`, if it has the object type's shape: a number, a
/// date, a version, a name (the first of a list; a handle's `@` and an e-mail address dropped)
/// or, for a description, the value as written.
pub(super) fn typed_value(predicate: &Predicate, field: &Field) -> Option<String> {
    let first = unquoted(field.values.first()?);
    let first = first.as_str();
    let object = predicate.object_type.to_lowercase();
    if first.is_empty() {
        return None;
    }
    let kind = value_kind(&object);
    if is_filler(first) {
        return None;
    }
    // A value that only repeats a word of its key or predicate (`License-File: LICENSE.txt`)
    // is a label, not a value.
    let stem_of_value = field_stem(
        &first
            .split('.')
            .next()
            .unwrap_or(first)
            .trim()
            .to_lowercase(),
    );
    if key_words(&field.key)
        .iter()
        .chain(key_words(&predicate.name).iter())
        .any(|w| field_stem(w) == stem_of_value)
    {
        return None;
    }
    // A field whose key names a file holds a file's name (`License-File: AUTHORS`,
    // `COPYING.rst`), the value of no predicate that is not itself about files.
    let names_file = |words: Vec<String>| words.iter().any(|w| FILE_WORDS.contains(&w.as_str()));
    if names_file(key_words(&field.key))
        && !names_file(key_words(&predicate.name))
        && !names_file(key_words(&predicate.object_type))
    {
        return None;
    }
    match kind {
        ValueKind::Text => Some(if field.values.len() > 1 {
            field
                .values
                .iter()
                .map(|v| unquoted(v))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            first.to_owned()
        }),
        ValueKind::Number => values(&tokens(first)).first().map(|v| v.text.clone()),
        ValueKind::Date => date_part(first),
        ValueKind::Version => (version_shaped(first) && first.split_whitespace().count() <= 3)
            .then(|| first.to_owned()),
        // A list of numbers names several things by id (`Superseded-By: 649, 749`): all of
        // them, as written, where a list of names gives its first.
        ValueKind::Name if id_list(first) => Some(first.to_owned()),
        ValueKind::Name => {
            let name = person_name(first);
            // A bare e-mail address names no one.
            (!name.is_empty() && !name.contains('@') && name.split_whitespace().count() <= 6)
                .then(|| without_type_noun(&name, &predicate.object_type))
        }
    }
}

/// A value without the quotes or brackets around all of it (`"v1.19"`, `(2022-11-07)`; not
/// the quote of `"abi3t": Stable ABI`), its white space runs one space.
pub(super) fn unquoted(value: &str) -> String {
    let v = value.trim();
    let inner = [('"', '"'), ('\'', '\''), ('(', ')'), ('[', ']')]
        .iter()
        .find_map(|&(open, close)| {
            v.strip_prefix(open)
                .and_then(|r| r.strip_suffix(close))
                .filter(|inner| !inner.contains([open, close]))
        })
        .unwrap_or(v);
    inner.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Words that make a key name a file (general English, not any ontology's words).
pub(super) const FILE_WORDS: &[&str] = &["file", "files", "filename", "path", "filepath"];

/// A flag where a value may stand (`eol: false`, `lts: true`): it states no date, number or
/// name.
pub(super) fn is_flag(value: &str) -> bool {
    ["true", "false", "yes", "no"]
        .iter()
        .any(|flag| value.trim().eq_ignore_ascii_case(flag))
}

/// A filler where a tool had nothing to write (`License: UNKNOWN`): no value.
pub(super) fn is_filler(value: &str) -> bool {
    ["UNKNOWN", "None", "N/A", "n/a"].contains(&value)
}

/// Whether `value` is a list of two or more numbers (`649, 749`).
pub(super) fn id_list(value: &str) -> bool {
    let parts: Vec<&str> = value.split([',', ';']).map(str::trim).collect();
    parts.len() > 1
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// The shape an object type's values have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    Text,
    Number,
    Date,
    Version,
    Name,
}

/// The shape of an object type's values, by the type's name.
pub(crate) fn value_kind(object_type: &str) -> ValueKind {
    let own: Vec<String> = key_words(object_type);
    let has = |words: &[&str]| own.iter().any(|o| words.contains(&o.as_str()));
    if has(&[
        "text",
        "any",
        "string",
        "description",
        "status",
        "state",
        "stage",
    ]) {
        ValueKind::Text
    } else if has(&["number", "count", "integer", "amount", "price", "percent"]) {
        ValueKind::Number
    } else if has(&["date", "day", "time", "datetime", "timestamp", "deadline"]) {
        ValueKind::Date
    } else if has(&["version", "release", "milestone"]) {
        ValueKind::Version
    } else {
        ValueKind::Name
    }
}

/// A name from a field value: the first of a comma-separated list, without a leading `@`, an
/// e-mail address in `<...>` or `(...)`, or quotes.
pub(super) fn person_name(value: &str) -> String {
    let first = value.split([',', ';']).next().unwrap_or(value).trim();
    let mut name = first.to_owned();
    for (open, close) in [('<', '>'), ('(', ')')] {
        if let Some(at) = name.find(open) {
            let end = name[at..].find(close).map_or(name.len(), |e| at + e + 1);
            let inner = name[at + 1..end.saturating_sub(1).max(at + 1)].to_owned();
            name.replace_range(at..end, "");
            // `Tim Peters <tim@example.org>`, and the old `tim@example.org (Tim Peters)`.
            if name.trim().is_empty() || (name.contains('@') && !inner.contains('@')) {
                name = inner;
            }
        }
    }
    name.trim()
        .trim_start_matches('@')
        .trim_matches(['"', '\''])
        .trim()
        .to_owned()
}

/// Whether `value` has the shape of `object_type`'s values: a date for dates, a number for
/// numbers, a version (with a digit, not a date) for versions; names and text any.
pub(crate) fn has_shape(object_type: &str, value: &str) -> bool {
    let value = value.trim();
    match value_kind(&object_type.to_lowercase()) {
        ValueKind::Date => looks_like_date(value),
        ValueKind::Version => version_shaped(value),
        ValueKind::Number => value.chars().any(|c| c.is_ascii_digit()),
        ValueKind::Text | ValueKind::Name => true,
    }
}

/// A version's shape: a digit, no address (`https://…/assets/1423115`), and not a date — unless only digits and dots, as a calendar
/// version is written (`2016.2.28`, certifi's; `24.1.0`), where a date would take a dash, a
/// slash or a month's name.
fn version_shaped(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_digit())
        && !value.contains("://")
        && (!looks_like_date(value) || value.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The one element of `items`, if there is exactly one.
pub(super) fn only<'a>(items: &[&'a Predicate]) -> Option<&'a Predicate> {
    match items {
        [one] => Some(one),
        _ => None,
    }
}

/// The date a value states, without a remark after it: `Monday, 2023-05-22 (expected)` and
/// `2020-05-15 (security hotfix; recalled)` give the date as written before the remark.
pub(crate) fn date_part(value: &str) -> Option<String> {
    let value = value.trim();
    let cut = value
        .find([';', '('])
        .or_else(|| value.find(" - "))
        .or_else(|| value.find(" – "))
        .map_or(value, |at| &value[..at]);
    let date = cut.trim().trim_end_matches(['.', ',']).trim();
    looks_like_date(date).then(|| date.to_owned())
}

/// A date in a common written form: ISO (`2023-05-22`), `22-May-2023`, `May 22, 2023`,
/// `22 May 2023`, `2023/05/22`, with or without a weekday.
pub(crate) fn looks_like_date(text: &str) -> bool {
    let has_year = text
        .split(|c: char| !c.is_ascii_digit())
        .any(|d| d.len() == 4 && (d.starts_with("19") || d.starts_with("20")));
    let lower = text.to_lowercase();
    let month = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .any(|m| lower.contains(m));
    let numeric = text
        .split(['-', '/', '.'])
        .filter(|p| !p.is_empty())
        .count()
        >= 3;
    has_year && (month || numeric) && text.split_whitespace().count() <= 5
}
