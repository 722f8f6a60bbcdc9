//! Words as the knowledge model compares them: stop words, a light stem, the words of a text and
//! of a predicate, and values compared the way people read them. The bottom of the model: it
//! reads only the ontology's predicates, and every layer above it (reading, answering, the
//! firewall) shares these.

use std::collections::BTreeSet;

pub(crate) const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "is", "are", "was", "be", "do", "does", "did",
    "what", "which", "who", "how", "i", "we", "our", "it", "its", "that", "this", "with", "by",
    "and", "or", "should", "can", "have", "has", "their", "they", "about", "after", "at", "from",
    "s",
];

/// Whether `word` (lower-cased) is a stop word or a question word: it says nothing of what a
/// question is about, so a search for the question leaves it out.
pub fn is_stop_word(word: &str) -> bool {
    STOPWORDS.contains(&word) || QUESTION_WORDS.contains(&word)
}

/// Irregular English verb forms folded onto the stem of their base, so `led` meets `lead`
/// and `kept` meets `keep`. General English, not any ontology's words.
const IRREGULAR: &[(&str, &str)] = &[
    ("led", "lead"),
    ("kept", "keep"),
    ("paid", "pay"),
    ("sold", "sell"),
    ("held", "hold"),
    ("ran", "run"),
    ("bought", "buy"),
    ("owner", "own"),
    ("owners", "own"),
    ("leader", "lead"),
];

/// Words of a text, lower-cased and lightly stemmed (`owns`, `owned` → `own`).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&w.to_lowercase()))
        .collect()
}

/// A light stem: irregular forms first (`led` → `lead`), then common suffixes.
pub(crate) fn stem(word: &str) -> String {
    if let Some((_, base)) = IRREGULAR.iter().find(|(form, _)| *form == word) {
        return (*base).to_owned();
    }
    let mut w = word.to_owned();
    for suffix in ["ing", "ed", "es", "s"] {
        if w.len() > suffix.len() + 2 && w.ends_with(suffix) {
            w.truncate(w.len() - suffix.len());
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    if w.len() > 4 && w.ends_with("ly") {
        w.truncate(w.len() - 2);
    }
    w
}

pub(crate) fn content_words(text: &str) -> BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

pub(crate) fn words_plain(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Words that open a question.
pub(crate) const QUESTION_WORDS: &[&str] =
    &["who", "whom", "which", "what", "how", "where", "when"];

/// Compares values the way people read them: case, surrounding space and a final period aside.
pub fn same_value(a: &str, b: &str) -> bool {
    normalise_value(a) == normalise_value(b)
}

pub(crate) fn normalise_value(value: &str) -> String {
    value.trim().trim_end_matches('.').trim().to_lowercase()
}
