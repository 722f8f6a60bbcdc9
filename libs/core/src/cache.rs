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

    /// Keeps `value` (about `bytes` big) under `key`, replacing what was there, and evicts the
    /// least recently used entries until the budget holds again. Returns the evicted keys.
    pub fn insert(&mut self, key: &str, value: V, bytes: usize) -> Vec<String> {
        self.remove(key);
        self.tick += 1;
        self.entries.insert(
            key.to_owned(),
            Entry {
                value,
                bytes,
                used: self.tick,
            },
        );
        self.order.insert(self.tick, key.to_owned());
        self.bytes += bytes;
        let mut evicted = Vec::new();
        while self.entries.len() > 1 && self.over_budget() {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                self.bytes -= entry.bytes;
            }
            evicted.push(oldest);
        }
        evicted
    }

    /// Drops the entry of `key`, if any.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let entry = self.entries.remove(key)?;
        self.order.remove(&entry.used);
        self.bytes -= entry.bytes;
        Some(entry.value)
    }

    fn over_budget(&self) -> bool {
        self.entries.len() > self.budget.max_entries
            || (self.budget.max_bytes > 0 && self.bytes > self.budget.max_bytes)
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
    fn a_budget_of_no_entries_is_refused() {
        assert_eq!(
            budget(0, 0).validate().expect_err("zero").key,
            "max_entries"
        );
        assert!(budget(1, 0).validate().is_ok());
    }
}
