//! Entity names: the normalised key under which every spelling of one entity meets.
//!
//! "Pro", "pro plan" and "Pro  Plan" are one key: case and spacing are folded and a trailing
//! entity-type noun from the ontology (`plan`, `team`, ...) is dropped when something remains.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::words::STOPWORDS;

/// Folds names into keys using the ontology's type nouns.
#[derive(Debug, Clone, Default)]
pub struct NameNormaliser {
    type_nouns: Vec<String>,
}

impl NameNormaliser {
    /// A normaliser that strips these trailing type nouns.
    pub fn new(type_nouns: Vec<String>) -> Self {
        Self { type_nouns }
    }

    /// The key of a name; empty when the name has no letters or digits.
    pub fn key(&self, name: &str) -> String {
        let folded: Vec<String> = name
            .split(|c: char| c.is_whitespace())
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '.')
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .flat_map(|w| identifier_parts(&w))
            .map(|w| bare_version(&w).unwrap_or(w))
            .collect();
        let mut words: &[String] = &folded;
        if words.len() > 1 && words[0] == "the" {
            words = &words[1..];
        }
        if words.len() > 1
            && words
                .last()
                .is_some_and(|last| self.type_nouns.iter().any(|n| n == last))
        {
            words = &words[..words.len() - 1];
        }
        words.join(" ")
    }

    /// The type noun a name ends with, if any (`Payments service` gives `service`).
    pub fn type_of(&self, name: &str) -> Option<String> {
        let last = name.split_whitespace().last()?.to_lowercase();
        self.type_nouns.iter().find(|n| **n == last).cloned()
    }
}

/// Names the extractor links, with the entity types each may have (none known: any).
///
/// A graph's names are many and each read of a text adds a few: the graph's part is `shared`
/// (frozen, behind an `Arc`), the read's own in `added`, so cloning a lexicon to extend it costs
/// what was added, not the graph's size.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    shared: Arc<BTreeMap<String, BTreeSet<String>>>,
    added: BTreeMap<String, BTreeSet<String>>,
}

impl Lexicon {
    /// Adds a name, and a type it may have.
    pub fn insert(&mut self, normaliser: &NameNormaliser, name: &str, entity_type: Option<&str>) {
        self.insert_types(normaliser, name, entity_type.into_iter());
    }

    /// Adds a name with the types it may have.
    pub fn insert_types<'t>(
        &mut self,
        normaliser: &NameNormaliser,
        name: &str,
        types: impl Iterator<Item = &'t str>,
    ) {
        let key = normaliser.key(name);
        if key.is_empty() || STOPWORDS.contains(&key.as_str()) {
            return;
        }
        let slot = self.added.entry(key).or_default();
        slot.extend(types.filter(|t| *t != "any").map(str::to_owned));
    }

    /// Names added since the last [`Lexicon::freeze`] that a lexicon keeps apart before it
    /// folds them into its shared part ([`Lexicon::settle`]).
    const MAX_ADDED: usize = 256;

    /// Folds what was added into the shared part once it is more than a few names, so clones
    /// stay cheap and lookups look in one place (the shared part is copied only when another
    /// lexicon still holds it).
    pub fn settle(&mut self) {
        if self.added.len() > Self::MAX_ADDED {
            *self = std::mem::take(self).freeze();
        }
    }

    /// This lexicon with everything added so far made shared: clones of it start from here at
    /// no cost.
    pub fn freeze(mut self) -> Self {
        if self.added.is_empty() {
            return self;
        }
        let added = std::mem::take(&mut self.added);
        let shared = Arc::make_mut(&mut self.shared);
        for (key, types) in added {
            shared.entry(key).or_default().extend(types);
        }
        self
    }

    /// Whether the key is known, and the types it may have.
    pub(crate) fn get(&self, key: &str) -> Option<std::borrow::Cow<'_, BTreeSet<String>>> {
        use std::borrow::Cow;
        match (self.shared.get(key), self.added.get(key)) {
            (Some(shared), Some(added)) => Some(Cow::Owned(shared.union(added).cloned().collect())),
            (Some(one), None) | (None, Some(one)) => Some(Cow::Borrowed(one)),
            (None, None) => None,
        }
    }

    /// The types a name is known to have (empty: known, of no known type), if it is known.
    pub fn types_of(
        &self,
        normaliser: &NameNormaliser,
        name: &str,
    ) -> Option<std::borrow::Cow<'_, BTreeSet<String>>> {
        self.get(&normaliser.key(name))
    }

    /// How many names it holds.
    pub fn len(&self) -> usize {
        self.shared.len()
            + self
                .added
                .keys()
                .filter(|k| !self.shared.contains_key(*k))
                .count()
    }

    /// Whether it holds no name.
    pub fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.added.is_empty()
    }
}

/// A version written with a `v` before it or a line's `.x` after it (`v18`, `v1.29`, `18.x`) as
/// the bare version (`18`, `1.29`), so "Node 18" finds what a record calls `v18`.
fn bare_version(word: &str) -> Option<String> {
    let bare = word.strip_prefix('v').unwrap_or(word);
    let bare = bare.strip_suffix(".x").unwrap_or(bare);
    let is_version = bare.len() < word.len()
        && bare.starts_with(|c: char| c.is_ascii_digit())
        && bare
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
    is_version.then(|| bare.to_owned())
}

/// An identifier written with a hyphen (`kep-12`) as its two words, so "KEP-12" and "KEP 12"
/// meet; any other word as it is.
fn identifier_parts(word: &str) -> Vec<String> {
    if let Some((letters, digits)) = word.split_once('-')
        && !letters.is_empty()
        && letters.chars().all(char::is_alphabetic)
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
    {
        return vec![letters.to_owned(), digits.to_owned()];
    }
    vec![word.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normaliser() -> NameNormaliser {
        NameNormaliser::new(vec![
            "plan".into(),
            "team".into(),
            "service".into(),
            "policy".into(),
        ])
    }

    #[test]
    fn spellings_of_one_entity_share_a_key() {
        let n = normaliser();
        assert_eq!(n.key("Pro"), "pro");
        assert_eq!(n.key("Pro plan"), "pro");
        assert_eq!(n.key("  PRO   Plan "), "pro");
        assert_eq!(n.key("the Atlas team"), "atlas");
        assert_eq!(n.key("Payments service"), "payments");
        assert_eq!(n.key("Tessaly Dock"), "tessaly dock");
        assert_eq!(n.key("KEP-12"), n.key("kep 12"));
        assert_eq!(n.key("sig-node"), "sig-node");
        // A version is the same with or without its `v`, and a line's `.x`.
        assert_eq!(n.key("v18"), "18");
        assert_eq!(n.key("18.x"), n.key("v18"));
        assert_eq!(n.key("v0.10"), "0.10");
        assert_eq!(n.key("Release v1.29"), "release 1.29");
        assert_eq!(n.key("vault"), "vault");
        assert_eq!(n.key("v"), "v");
        assert_eq!(n.key("3.x.y"), "3.x.y");
    }

    #[test]
    fn a_lone_type_noun_is_kept() {
        let n = normaliser();
        assert_eq!(n.key("Plan"), "plan");
        assert_eq!(n.type_of("Payments service").as_deref(), Some("service"));
        assert_eq!(n.type_of("Tessaly Dock"), None);
    }
}
