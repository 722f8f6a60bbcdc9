//! Names as a question finds them: a text's plain words, and every name of the graph by the
//! words that name it.

use std::collections::{BTreeSet, HashMap};

use crate::knowledge::names::NameNormaliser;

/// A text's words, lowercase, split at anything not alphanumeric, joined by one space: how a
/// question and a name are compared.
pub fn plain_words(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every name and alias of the graph by the words a question must contain to name it: its own
/// words, and its key's words (`"Kestrel mission"` is asked as `"Kestrel"`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NameNeedles {
    by_words: HashMap<String, BTreeSet<String>>,
    by_key_words: HashMap<String, BTreeSet<String>>,
}

impl NameNeedles {
    /// Adds a name under its words and its key's words.
    pub(super) fn insert(&mut self, normaliser: &NameNormaliser, name: &str) {
        let words = plain_words(name);
        if !words.is_empty() {
            self.by_words
                .entry(words)
                .or_default()
                .insert(name.to_owned());
        }
        let key_words = plain_words(&normaliser.key(name));
        if !key_words.is_empty() {
            self.by_key_words
                .entry(key_words)
                .or_default()
                .insert(name.to_owned());
        }
    }

    /// The names whose words appear, in order and together, among `words` (lowercase words of
    /// a question): by their own words, and by their key's words unless `skip_key` says the
    /// name's key must not be matched alone. Numbers are whole: words split a version at its
    /// dots (`0.8` is `0 8`), so a name may not start with a digit right after a word ending in
    /// one, nor end with a digit right before a word starting with one (`8` is not found in
    /// `0.8`, nor `3.14` in `3.14.1`).
    pub fn found_in(&self, words: &[String], skip_key: impl Fn(&str) -> bool) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for from in 0..words.len() {
            if !starts_whole(words, from) {
                continue;
            }
            let mut needle = String::new();
            for (at, word) in words.iter().enumerate().skip(from) {
                if !needle.is_empty() {
                    needle.push(' ');
                }
                needle.push_str(word);
                if !ends_whole(words, at) {
                    continue;
                }
                if let Some(names) = self.by_words.get(&needle) {
                    found.extend(names.iter().cloned());
                }
                if let Some(names) = self.by_key_words.get(&needle) {
                    found.extend(names.iter().filter(|n| !skip_key(n)).cloned());
                }
            }
        }
        found
    }
}

fn starts_digit(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit())
}

fn ends_digit(word: &str) -> bool {
    word.ends_with(|c: char| c.is_ascii_digit())
}

/// Whether a run of words may start at `from`: not a number's part after a dot (`8` of `0 8`).
fn starts_whole(words: &[String], from: usize) -> bool {
    from == 0 || !(starts_digit(&words[from]) && ends_digit(&words[from - 1]))
}

/// Whether a run of words may end at `at`: not a number's part before a dot (`3 14` of
/// `3 14 1`).
fn ends_whole(words: &[String], at: usize) -> bool {
    !(ends_digit(&words[at]) && words.get(at + 1).is_some_and(|next| starts_digit(next)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_found_whole() {
        let normaliser = NameNormaliser::new(Vec::new());
        let mut needles = NameNeedles::default();
        for name in ["v8", "v0.10", "3.14", "PEP-8"] {
            needles.insert(&normaliser, name);
        }
        let found = |question: &str| {
            let words: Vec<String> = plain_words(question)
                .split(' ')
                .map(str::to_owned)
                .collect();
            needles
                .found_in(&words, |_| false)
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(found("When does Node 8 reach end of life?"), vec!["v8"]);
        assert_eq!(found("When does v8 reach end of life?"), vec!["v8"]);
        // `0.8` is no `8`, `3.14.1` no `3.14`.
        assert!(found("When does v0.8 reach end of life?").is_empty());
        assert!(found("When does Node 0.8 come out?").is_empty());
        assert!(found("When is Python 3.14.1 due?").is_empty());
        assert_eq!(found("Who manages Python 3.14?"), vec!["3.14"]);
        assert_eq!(
            found("When does Node.js 0.10 reach end of life?"),
            vec!["v0.10"]
        );
        // A number after a word is found (the question then ranks the longer name first).
        assert_eq!(found("What is PEP 8 about?"), vec!["PEP-8", "v8"]);
    }
}
