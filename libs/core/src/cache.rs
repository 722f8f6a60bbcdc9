//! Per-tenant caches under a budget: the most tenants kept and an approximate byte budget,
//! least recently used out first.
//!
//! A cache holds what can be rebuilt from the store, so evicting an entry never changes an
//! answer: the next use of that tenant rebuilds it.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::settings::InvalidSetting;

/// How much one cache may hold (a `[cache]` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheBudget {
    /// Most entries (tenants) kept.
    pub max_entries: usize,
    /// Approximate bytes kept, as the entries' own estimates add up; 0 for no byte budget.
    pub max_bytes: usize,
}

impl CacheBudget {
    /// Checks the budget can hold at least one entry; the error names the key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.max_entries == 0 {
            return Err(InvalidSetting::new(
                "max_entries",
                "must be greater than zero",
            ));
        }
        Ok(())
    }
}

struct Entry<V> {
    value: V,
    bytes: usize,
    used: u64,
}

/// A map from keys to values that keeps at most [`CacheBudget::max_entries`] entries and about
/// [`CacheBudget::max_bytes`] bytes, evicting the least recently used first. The newest entry is
/// always kept, even alone over the byte budget (its caller holds it anyway).
pub struct Lru<V> {
    budget: CacheBudget,
    entries: HashMap<String, Entry<V>>,
    /// Keys by last use, oldest first.
    order: BTreeMap<u64, String>,
    bytes: usize,
    tick: u64,
}

impl<V> Lru<V> {
    /// An empty cache under `budget`.
    pub fn new(budget: CacheBudget) -> Self {
        Self {
            budget,
            entries: HashMap::new(),
            order: BTreeMap::new(),
            bytes: 0,
            tick: 0,
        }
    }

    /// The entry of `key`, now the most recently used.
    pub fn get(&mut self, key: &str) -> Option<&V> {
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        self.order.remove(&entry.used);
        entry.used = self.tick;
        self.order.insert(self.tick, key.to_owned());
        Some(&entry.value)
    }

    /// The entry of `key` to change in place, now the most recently used. Its byte estimate stays
    /// what it was when inserted.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        self.order.remove(&entry.used);
        entry.used = self.tick;
        self.order.insert(self.tick, key.to_owned());
        Some(&mut entry.value)
    }

    /// The entry of `key` to change in place, now the most recently used; made by `make` (the
    /// value and its estimated bytes) and kept when absent, evicting as [`Self::insert`] does.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> (V, usize)) -> &mut V {
        if !self.entries.contains_key(key) {
            let (value, bytes) = make();
            return self.insert_get(key, value, bytes).0;
        }
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.entry(key.to_owned()).or_insert_with(|| {
            // Not reached: the key was just found. Kept correct anyway, as an entry of no bytes.
            let (value, _) = make();
            Entry {
                value,
                bytes: 0,
                used: 0,
            }
        });
        self.order.remove(&entry.used);
        entry.used = tick;
        self.order.insert(tick, key.to_owned());
        &mut entry.value
    }

    /// The entry of `key` without marking it used (for sweeps and gauges).
    pub fn peek(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|entry| &entry.value)
    }

    /// The kept keys and entries, in no particular order, without marking them used.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.entries
            .iter()
            .map(|(key, entry)| (key.as_str(), &entry.value))
    }

    /// The kept keys and entries to change in place, without marking them used.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut V)> {
        self.entries
            .iter_mut()
            .map(|(key, entry)| (key.as_str(), &mut entry.value))
    }

    /// Drops every entry `keep` says no to.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &V) -> bool) {
        let gone: Vec<String> = self
            .entries
            .iter()
            .filter(|(key, entry)| !keep(key, &entry.value))
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// Whether another entry fits without evicting one (by count).
    pub fn has_room(&self) -> bool {
        self.entries.len() < self.budget.max_entries
    }

    /// Keeps `value` (about `bytes` big) under `key`, replacing what was there, and evicts the
    /// least recently used entries until the budget holds again. Returns the evicted keys.
    pub fn insert(&mut self, key: &str, value: V, bytes: usize) -> Vec<String> {
        self.insert_get(key, value, bytes).1
    }

    /// [`Self::insert`], returning the kept value to change in place with the evicted keys.
    pub fn insert_get(&mut self, key: &str, value: V, bytes: usize) -> (&mut V, Vec<String>) {
        self.remove(key);
        // Room is made first, so the new entry is never the one evicted.
        let mut evicted = Vec::new();
        while !self.entries.is_empty() && self.over_budget_with(bytes) {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                self.bytes -= entry.bytes;
            }
            evicted.push(oldest);
        }
        self.tick += 1;
        self.order.insert(self.tick, key.to_owned());
        self.bytes += bytes;
        let entry = self.entries.entry(key.to_owned()).or_insert(Entry {
            value,
            bytes,
            used: self.tick,
        });
        (&mut entry.value, evicted)
    }

    /// Drops the entry of `key`, if any.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let entry = self.entries.remove(key)?;
        self.order.remove(&entry.used);
        self.bytes -= entry.bytes;
        Some(entry.value)
    }

    /// Whether one more entry of `bytes` would break the budget.
    fn over_budget_with(&self, bytes: usize) -> bool {
        self.entries.len() + 1 > self.budget.max_entries
            || (self.budget.max_bytes > 0 && self.bytes + bytes > self.budget.max_bytes)
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The kept entries' estimated bytes, added up.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max_entries: usize, max_bytes: usize) -> CacheBudget {
        CacheBudget {
            max_entries,
            max_bytes,
        }
    }

    #[test]
    fn the_least_recently_used_goes_first_when_the_count_is_full() {
        let mut lru = Lru::new(budget(2, 0));
        assert!(lru.insert("a", 1, 10).is_empty());
        assert!(lru.insert("b", 2, 10).is_empty());
        assert_eq!(lru.get("a"), Some(&1), "a is now newer than b");
        assert_eq!(lru.insert("c", 3, 10), vec!["b".to_owned()]);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get("b"), None);
        assert_eq!(lru.get("a"), Some(&1));
        assert_eq!(lru.get("c"), Some(&3));
        assert_eq!(lru.bytes(), 20);
    }

    #[test]
    fn the_byte_budget_evicts_as_many_as_needed_but_keeps_the_newest() {
        let mut lru = Lru::new(budget(10, 100));
        for key in ["a", "b", "c", "d"] {
            assert!(lru.insert(key, (), 25).is_empty());
        }
        assert_eq!(lru.bytes(), 100);
        assert_eq!(
            lru.insert("e", (), 60),
            vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]
        );
        assert_eq!((lru.len(), lru.bytes()), (2, 85));
        // An entry over the whole budget is kept alone.
        assert_eq!(
            lru.insert("f", (), 500),
            vec!["d".to_owned(), "e".to_owned()]
        );
        assert_eq!((lru.len(), lru.bytes()), (1, 500));
        assert!(lru.get("f").is_some());
    }

    #[test]
    fn replacing_an_entry_counts_its_new_size_once() {
        let mut lru = Lru::new(budget(2, 0));
        lru.insert("a", 1, 10);
        lru.insert("b", 2, 10);
        assert!(lru.insert("a", 3, 40).is_empty(), "a replaced, not added");
        assert_eq!((lru.len(), lru.bytes()), (2, 50));
        assert_eq!(lru.remove("b"), Some(2));
        assert_eq!((lru.len(), lru.bytes()), (1, 40));
        assert_eq!(lru.get("a"), Some(&3));
        // b was removed, so a third key fits without evicting a.
        assert!(lru.insert("c", 4, 1).is_empty());
    }

    #[test]
    fn changing_in_place_marks_used_and_retain_keeps_the_books() {
        let mut lru = Lru::new(budget(2, 0));
        lru.insert("a", 1, 10);
        lru.insert("b", 2, 10);
        *lru.get_mut("a").expect("kept") += 10;
        assert_eq!(lru.peek("a"), Some(&11));
        assert!(!lru.has_room());
        assert_eq!(
            lru.insert("c", 3, 10),
            vec!["b".to_owned()],
            "a was used last"
        );
        lru.retain(|key, _| key != "a");
        assert_eq!((lru.len(), lru.bytes()), (1, 10));
        assert!(lru.has_room());
        let mut seen: Vec<(String, i32)> = lru.iter().map(|(k, v)| (k.to_owned(), *v)).collect();
        seen.sort();
        assert_eq!(seen, vec![("c".to_owned(), 3)]);
    }

    #[test]
    fn a_budget_of_no_entries_is_refused() {
        assert_eq!(
            budget(0, 0).validate().expect_err("zero").key,
            "max_entries"
        );
        assert!(budget(1, 0).validate().is_ok());
    }
}
