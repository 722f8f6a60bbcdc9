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
    /// name's key must not be matched alone.
    pub fn found_in(&self, words: &[String], skip_key: impl Fn(&str) -> bool) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for from in 0..words.len() {
            let mut needle = String::new();
            for word in &words[from..] {
                if !needle.is_empty() {
                    needle.push(' ');
                }
                needle.push_str(word);
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
