//! Page versions: one immutable version of a page, and which versions of a tenant's pages are
//! current, in effect or announced at an instant.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// One immutable version of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageVersion {
    /// Page id.
    pub source_id: String,
    /// Version number, from 1.
    pub version: u64,
    /// Title.
    pub title: String,
    /// Origin.
    pub origin: String,
    /// Body.
    pub body: String,
    /// When this version was captured (its event's time).
    pub updated_at: DateTime<Utc>,
    /// Principals or groups who may read it; empty means the whole tenant. Only the newest
    /// version's ACL decides who may read the page (see [`Access`]).
    pub acl: Vec<String>,
    /// Confidence in the text in (0, 1]; facts extracted from it inherit it.
    pub confidence: f64,
    /// A tombstone: the page was deleted at `updated_at`. It has no body, so reading it ends
    /// every fact of the page; it keeps the ACL of the version before (permission over the
    /// page's history stays as it was), and it is never indexed, cited or quoted.
    pub deleted: bool,
    /// When this version takes effect, if later than `updated_at`: a page published today for
    /// next month. Until then the version before it stays the page's current text, its facts
    /// hold, and answers note the change to come ([`PageVersion::effective_at`]).
    pub effective_from: Option<DateTime<Utc>>,
}

impl PageVersion {
    /// When this version takes effect: `effective_from` when later than the capture, else the
    /// capture (a version is never made retroactive). The facts read from it hold from here,
    /// the facts it drops end here, and `as_of` finds it from here.
    pub fn effective_at(&self) -> DateTime<Utc> {
        self.effective_from
            .map_or(self.updated_at, |e| e.max(self.updated_at))
    }

    /// The tombstone that deletes `latest` at `at` (the next version, no body).
    pub fn tombstone(latest: &PageVersion, at: DateTime<Utc>) -> PageVersion {
        PageVersion {
            source_id: latest.source_id.clone(),
            version: latest.version + 1,
            title: latest.title.clone(),
            origin: latest.origin.clone(),
            body: String::new(),
            updated_at: at,
            acl: latest.acl.clone(),
            confidence: latest.confidence,
            deleted: true,
            effective_from: None,
        }
    }
}

/// The newest version of every page among `pages`, scheduled or not, ordered by page id.
pub fn current_versions<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> Vec<PageVersion> {
    let mut latest: BTreeMap<&str, &PageVersion> = BTreeMap::new();
    for page in pages {
        let slot = latest.entry(page.source_id.as_str()).or_insert(page);
        if page.version > slot.version {
            *slot = page;
        }
    }
    latest.into_values().cloned().collect()
}

/// The version of every page in effect at `at`: the newest among those in effect by then
/// ([`PageVersion::effective_at`]), ordered by page id. A page none of whose versions is in
/// effect yet is absent.
pub fn versions_in_effect<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion>,
    at: DateTime<Utc>,
) -> Vec<PageVersion> {
    current_versions(pages.into_iter().filter(|p| p.effective_at() <= at))
}

/// What a full read of `pages` reads at `at`, in order: the version of every page in effect,
/// then every later version announced to take effect after `at`, oldest first (so their facts
/// are scheduled behind the current ones, as when their events were applied).
pub fn versions_to_read<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion> + Clone,
    at: DateTime<Utc>,
) -> Vec<PageVersion> {
    let mut read = versions_in_effect(pages.clone(), at);
    let in_effect: BTreeMap<&str, u64> = read
        .iter()
        .map(|p| (p.source_id.as_str(), p.version))
        .collect();
    let announced = versions_announced(pages, at, |id| in_effect.get(id).copied());
    read.extend(announced);
    read
}

/// The versions of `pages` announced to take effect after `at` and newer than their page's
/// version in effect then (`in_effect`, by page id), soonest first.
pub fn versions_announced<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion>,
    at: DateTime<Utc>,
    in_effect: impl Fn(&str) -> Option<u64>,
) -> Vec<PageVersion> {
    let mut announced: Vec<PageVersion> = pages
        .into_iter()
        .filter(|p| p.effective_at() > at && in_effect(&p.source_id).is_none_or(|v| p.version > v))
        .cloned()
        .collect();
    announced.sort_by_key(|p| (p.effective_at(), p.version));
    announced
}
