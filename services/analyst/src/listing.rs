//! A tenant's pages by their newest version, a bounded slice at a time, each with the hashes a
//! pushing system compares its files with (`ListPages`; `ontoloop ingest PATH` pushes only the
//! files whose content the store does not already hold).

use std::collections::BTreeMap;

use ontoloop_core::knowledge::PageVersion;

/// Pages in one slice at most (and when the request names no limit).
pub const MAX_LISTED: usize = 1000;

/// Origins one request may filter by at most.
pub const MAX_ORIGINS: usize = 64;

/// One page, by its newest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The page id.
    pub page_id: String,
    /// The newest version's origin.
    pub origin: String,
    /// The newest version's number.
    pub version: u64,
    /// Hex SHA-256 of its body, as the store keeps it.
    pub content_hash: String,
    /// Hex SHA-256 of its title.
    pub title_hash: String,
}

/// A slice of a tenant's pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slice {
    /// In page id order.
    pub pages: Vec<Listed>,
    /// The id to list after for the next slice; `None` when this is the last.
    pub next_after: Option<String>,
}

/// The first `limit` pages (by id) after `after`, of `origins` (empty: any), by their newest
/// version; a page whose newest version is a deletion is left out. Only the pages of the slice
/// are hashed.
pub fn slice(pages: &[PageVersion], origins: &[String], after: &str, limit: usize) -> Slice {
    let mut newest: BTreeMap<&str, &PageVersion> = BTreeMap::new();
    for page in pages.iter().filter(|p| p.source_id.as_str() > after) {
        let held = newest.entry(page.source_id.as_str()).or_insert(page);
        if page.version > held.version {
            *held = page;
        }
    }
    let mut listed = newest
        .into_values()
        .filter(|p| !p.deleted && (origins.is_empty() || origins.contains(&p.origin)));
    let pages: Vec<Listed> = listed
        .by_ref()
        .take(limit)
        .map(|p| Listed {
            page_id: p.source_id.clone(),
            origin: p.origin.clone(),
            version: p.version,
            content_hash: ontoloop_store::content_hash(&p.body),
            title_hash: ontoloop_store::content_hash(&p.title),
        })
        .collect();
    let next_after = match listed.next() {
        Some(_) => pages.last().map(|p| p.page_id.clone()),
        None => None,
    };
    Slice { pages, next_after }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn page(id: &str, version: u64, origin: &str, deleted: bool) -> PageVersion {
        PageVersion {
            source_id: id.to_owned(),
            version,
            title: format!("{id} title"),
            origin: origin.to_owned(),
            body: format!("{id} v{version}"),
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
            acl: Vec::new(),
            confidence: 1.0,
            deleted,
            effective_from: None,
        }
    }

    fn ids(slice: &Slice) -> Vec<(&str, u64)> {
        slice
            .pages
            .iter()
            .map(|p| (p.page_id.as_str(), p.version))
            .collect()
    }

    #[test]
    fn pages_come_by_their_newest_version_in_id_order_without_deletions() {
        let pages = vec![
            page("c", 1, "wiki", false),
            page("a", 1, "wiki", false),
            page("a", 2, "wiki", false),
            page("b", 1, "wiki", false),
            page("b", 2, "wiki", true),
            page("d", 3, "tickets", false),
        ];
        let all = slice(&pages, &[], "", MAX_LISTED);
        assert_eq!(ids(&all), [("a", 2), ("c", 1), ("d", 3)]);
        assert_eq!(all.next_after, None);
        let a = &all.pages[0];
        assert_eq!(a.content_hash, ontoloop_store::content_hash("a v2"));
        assert_eq!(a.title_hash, ontoloop_store::content_hash("a title"));
        let wiki = slice(&pages, &["wiki".to_owned()], "", MAX_LISTED);
        assert_eq!(ids(&wiki), [("a", 2), ("c", 1)]);
    }

    #[test]
    fn slices_follow_one_another_until_the_last() {
        let pages: Vec<PageVersion> = (0..5)
            .map(|i| page(&format!("p{i}"), 1, "wiki", false))
            .collect();
        let first = slice(&pages, &[], "", 2);
        assert_eq!(ids(&first), [("p0", 1), ("p1", 1)]);
        let second = slice(&pages, &[], first.next_after.as_deref().unwrap_or(""), 2);
        assert_eq!(ids(&second), [("p2", 1), ("p3", 1)]);
        let last = slice(&pages, &[], second.next_after.as_deref().unwrap_or(""), 2);
        assert_eq!(ids(&last), [("p4", 1)]);
        assert_eq!(last.next_after, None);
        // A slice that ends exactly at the last page says so.
        let exact = slice(&pages, &[], "p2", 2);
        assert_eq!((ids(&exact).len(), exact.next_after), (2, None));
    }
}
