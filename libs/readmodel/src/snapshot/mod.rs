//! Per-tenant read models, brought forward from the store when the tenant's knowledge version
//! moves, kept under a [`CacheBudget`](ontoloop_core::CacheBudget) (least recently used out
//! first, built again on next use).
//!
//! A model that moves is patched with what the commits since its version wrote
//! (`Store::knowledge_changes_since`): the changed pages, their index documents, facts,
//! entities and names; every version of it is the one a build from the store would give. Each
//! tenant's model sits behind a read-write lock: readers hold it while they answer and a patch
//! waits for them, so no reader sees an event half-applied. One caller at a time brings a model
//! forward: it reads the changes and writes the changed pages into the BM25 indexes beside the
//! readers (committed, not yet seen), and takes the write lock only to make them seen and patch
//! the maps. Callers that need the latest model ([`Snapshots::get`]) wait for that one instead of
//! queueing as writers behind each other's readers; callers that do not
//! ([`Snapshots::recent`]) answer from the model as it stands meanwhile. A follower task
//! ([`Snapshots::follow`]) brings kept models forward after each commit, so callers seldom meet
//! one behind. An ontology change (or a range the store cannot replay) builds the model whole
//! beside the live one, which keeps answering until the new one swaps in.
//!
//! The cache and its follower are [`cache`]; bringing one model forward (staging pages beside
//! readers, then patching) is [`patch`].

mod cache;
mod patch;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ontoloop_core::knowledge::passage::{PageHistory, chunk_page};
use ontoloop_core::knowledge::{
    Access, Graph, Ontology, OntologyError, PageVersion, versions_announced, versions_in_effect,
};
use ontoloop_store::StoreError;

use crate::claims::ClaimMemo;
use crate::dense::{DenseIndex, LazyDense};
use crate::overview::{Overview, OverviewMemo};
use crate::search::{PageIndex, PassageIndex};

pub use cache::{SnapshotGuard, Snapshots};

/// What retrieval answers from, for one tenant at one knowledge version.
pub struct Snapshot {
    /// Knowledge version it was built from.
    pub version: i64,
    /// Whether a catch-up that failed left pages staged (committed, never published) in its
    /// search indexes: it answers as of `version` (its readers were never reloaded), and the
    /// next catch-up builds the model whole instead of publishing on top of them.
    pub(super) rebuild_next: bool,
    /// The tenant's ontology.
    pub ontology: Arc<Ontology>,
    /// The whole graph: what a caller may see of it is [`Snapshot::graph_for`].
    pub graph: Arc<Graph>,
    /// Current version of every page. Shared like the graph: a reader that must wait on
    /// something else (the firewall's model call) keeps these and lets the lock go.
    pub current: Arc<BTreeMap<String, PageVersion>>,
    /// Extraction log.
    pub log: BTreeMap<String, u64>,
    /// BM25 over the current pages.
    pub index: PageIndex,
    /// BM25 over the passages of the current pages, built when first asked for
    /// ([`Snapshot::passages`]) and patched like `index` from then on; `None` inside when the
    /// build failed.
    passages: std::sync::OnceLock<Option<PassageIndex>>,
    /// The passages' vectors by the process's sentence encoder, built when first asked for
    /// ([`Snapshot::with_dense`]) and patched like `passages`.
    dense: LazyDense,
    /// Chunk hash → the versions (positions in `versions`) holding a chunk with it, built when a
    /// citation is first followed off its page ([`ReadableHistory`]) and extended with every
    /// version patched in from then on.
    chunk_index: std::sync::OnceLock<ChunkIndex>,
    /// Every version of every page.
    pub versions: Vec<PageVersion>,
    /// Text bytes of `versions` and of `current` ([`text_bytes`]), kept as they change so the
    /// cache weighs a model without reading every page again after each patch.
    version_bytes: usize,
    current_bytes: usize,
    /// When the newest version in effect took effect.
    pub latest_change: chrono::DateTime<chrono::Utc>,
    /// Versions announced to take effect later than the model's last look, soonest first: each
    /// becomes its page's current version (text, passages, search) when its time has come and
    /// the model is next read ([`Snapshots::get`]).
    scheduled: Vec<PageVersion>,
    /// The graphs callers who may not read every fact were shown, by the ids of the facts
    /// hidden from them (a few ACLs make a few views; bounded, oldest out first).
    views: std::sync::Mutex<Vec<(Vec<u64>, Arc<Graph>)>>,
    /// Whether any fact or page has an ACL: without one every caller sees the whole graph.
    restricted: bool,
    /// The claims of the pages questions read, kept ([`ClaimMemo`]).
    claims: ClaimMemo,
    /// The entity graph and communities of each graph shown, kept until the graph changes
    /// ([`OverviewMemo`]).
    overviews: OverviewMemo,
}

/// Chunk hash → positions of the page versions holding a chunk with it.
type ChunkIndex = std::collections::HashMap<String, Vec<usize>>;

/// Adds the chunks of `versions[from..]` to `index`.
fn index_chunks(index: &mut ChunkIndex, versions: &[PageVersion], from: usize) {
    for (at, version) in versions.iter().enumerate().skip(from) {
        if version.deleted {
            continue;
        }
        for chunk in chunk_page(&version.source_id, version.version, &version.body) {
            let holders = index.entry(chunk.anchor.hash).or_default();
            if holders.last() != Some(&at) {
                holders.push(at);
            }
        }
    }
}

/// The page versions of one snapshot that one caller may read (each version under its own ACL
/// and its page's newest one, as [`Access::page`] decides), and that have taken effect: a
/// version announced for later is no citation's new place until then.
pub struct ReadableHistory<'a> {
    snapshot: &'a Snapshot,
    access: Access<'a>,
}

impl ReadableHistory<'_> {
    fn holds(&self, v: &PageVersion) -> bool {
        self.access.page(v)
            && !self
                .snapshot
                .scheduled
                .iter()
                .any(|s| s.source_id == v.source_id && s.version == v.version)
    }
}

impl PageHistory for ReadableHistory<'_> {
    fn versions(&self, doc_id: &str) -> Vec<PageVersion> {
        let mut found: Vec<PageVersion> = self
            .snapshot
            .versions
            .iter()
            .filter(|v| v.source_id == doc_id && self.holds(v))
            .cloned()
            .collect();
        found.sort_by_key(|v| v.version);
        found.dedup_by_key(|v| v.version);
        found
    }

    fn pages_with_chunk(
        &self,
        hash: &str,
        since: chrono::DateTime<chrono::Utc>,
        except: &str,
    ) -> Vec<String> {
        let versions = &self.snapshot.versions;
        let pages: BTreeSet<&str> = self
            .snapshot
            .chunk_index()
            .get(hash)
            .into_iter()
            .flatten()
            .filter_map(|&at| versions.get(at))
            .filter(|v| {
                v.updated_at >= since && v.source_id != except && !v.deleted && self.holds(v)
            })
            .map(|v| v.source_id.as_str())
            .collect();
        pages.into_iter().map(str::to_owned).collect()
    }
}

/// Caller views of one snapshot's graph kept at most.
const MAX_VIEWS: usize = 16;

impl Snapshot {
    /// BM25 over the passages of the current pages: built at the first call (a tenant whose
    /// questions all map to the ontology never pays for it), then kept up to date with the
    /// pages. `None` when it could not be built (logged; no passages are offered).
    pub fn passages(&self) -> Option<&PassageIndex> {
        self.passages
            .get_or_init(|| match PassageIndex::build(self.current.values()) {
                Ok(index) => Some(index),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot build the passage index");
                    None
                }
            })
            .as_ref()
    }

    /// Runs `f` with the passages' vectors when they are ready ([`LazyDense::with`]: the first
    /// call builds them, inline for a small tenant, else in the background while BM25 alone
    /// ranks), else with `None`: no sentence encoder in the process, a tenant above
    /// [`MAX_DENSE_PASSAGES`](crate::MAX_DENSE_PASSAGES) passages, a build under way or failed.
    pub fn with_dense<R>(&self, f: impl FnOnce(Option<&DenseIndex>) -> R) -> R {
        self.dense.with(&self.current, f)
    }

    /// How much of the current pages' passages the dense index covers (it is built as pages
    /// arrive, in the background).
    pub fn dense_coverage(&self) -> crate::DenseCoverage {
        self.dense.coverage()
    }

    /// Every version of the pages `access` lets its caller read, as a citation's resolution
    /// reads them ([`ontoloop_core::knowledge::passage::resolve`]).
    pub fn history<'a>(&'a self, access: Access<'a>) -> ReadableHistory<'a> {
        ReadableHistory {
            snapshot: self,
            access,
        }
    }

    /// Which versions hold each chunk hash: built at the first call, so a citation that left
    /// its page is looked for without re-reading every version of the tenant.
    fn chunk_index(&self) -> &ChunkIndex {
        self.chunk_index.get_or_init(|| {
            let mut index = ChunkIndex::new();
            index_chunks(&mut index, &self.versions, 0);
            index
        })
    }

    /// What `access` lets its caller see of the graph: the whole graph when it admits every
    /// fact, else only the admitted facts and the entities they name (see
    /// [`Graph::visible_to`]). Every question is linked and answered, and every claim checked,
    /// on this view, so an entity only a hidden page names is as unknown as one never named.
    pub fn graph_for(&self, access: &Access<'_>) -> Arc<Graph> {
        if !self.restricted {
            return Arc::clone(&self.graph);
        }
        let hidden: Vec<u64> = self
            .graph
            .facts()
            .iter()
            .filter(|f| !access.fact(f))
            .map(|f| f.id)
            .collect();
        if hidden.is_empty() {
            return Arc::clone(&self.graph);
        }
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, graph)) = views.iter().find(|(ids, _)| *ids == hidden) {
            return Arc::clone(graph);
        }
        let graph = Arc::new(
            self.graph
                .visible_to(access)
                .unwrap_or_else(|| (*self.graph).clone()),
        );
        if views.len() >= MAX_VIEWS {
            views.remove(0);
        }
        views.push((hidden, Arc::clone(&graph)));
        graph
    }

    /// The claims of pages as a caller who sees `graph` (from [`Snapshot::graph_for`]) reads
    /// them: kept ones, those read with the graph's names only when it is the whole graph.
    pub(crate) fn claims_for(&self, graph: &Graph) -> crate::claims::Memo<'_> {
        self.claims.for_caller(std::ptr::eq(graph, &*self.graph))
    }

    /// The entity graph and communities of `graph` (from [`Snapshot::graph_for`]), kept until
    /// the graph changes: built by the first question that needs them, not by each.
    pub fn overview_of(&self, graph: &Arc<Graph>) -> Arc<Overview> {
        self.overviews.of(graph)
    }

    /// The version of every page in effect at `at` (pages that did not exist yet are absent).
    pub fn current_at(&self, at: chrono::DateTime<chrono::Utc>) -> BTreeMap<String, PageVersion> {
        versions_in_effect(&self.versions, at)
            .into_iter()
            .map(|p| (p.source_id.clone(), p))
            .collect()
    }

    /// Whether the current pages are the pages in effect at `at`: no page changed since, and
    /// no announced version takes effect by then.
    pub fn current_holds_at(&self, at: chrono::DateTime<chrono::Utc>) -> bool {
        at >= self.latest_change && self.scheduled.first().is_none_or(|p| at < p.effective_at())
    }

    /// Whether the model answers for knowledge `version`: at it or later, and no announced
    /// version has taken effect since it last looked.
    fn holds(&self, version: i64) -> bool {
        !self.rebuild_next && self.version >= version && !self.due(chrono::Utc::now())
    }

    /// Whether an announced version has taken effect since the model last looked.
    fn due(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.scheduled
            .first()
            .is_some_and(|p| p.effective_at() <= now)
    }
}

/// Why a snapshot could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The store failed.
    #[error("read the knowledge store: {0}")]
    Store(#[from] StoreError),
    /// The stored ontology does not parse.
    #[error("stored ontology is unreadable: {0}")]
    Ontology(#[from] OntologyError),
    /// The page index could not be built.
    #[error("build the page index: {0}")]
    Index(#[from] tantivy::TantivyError),
    /// The task indexing a catch-up's pages failed.
    #[error("index the pages of a catch-up: {0}")]
    Staging(String),
}

impl ontoloop_core::ServiceError for SnapshotError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        use ontoloop_core::ErrorCode;
        match self {
            SnapshotError::Store(_) => ErrorCode::Unavailable,
            SnapshotError::Ontology(_) | SnapshotError::Index(_) | SnapshotError::Staging(_) => {
                ErrorCode::Internal
            }
        }
    }
}

/// Name of the counter of read-model updates, labelled `cache` and `kind` (`build`, `patch`).
pub const UPDATES_METRIC: &str = "ontoloop_read_model_updates_total";

/// Name of the gauge of entries every bounded cache reports, labelled `cache`.
pub const CACHE_ENTRIES_METRIC: &str = "ontoloop_cache_entries";

/// Estimated bytes a fact takes in a snapshot (graph, indexes), beyond its text.
const FACT_BYTES: usize = 256;

impl Snapshot {
    /// Approximate memory of this snapshot: its pages' text (every version, and once more for
    /// each BM25 index of the current ones: pages and passages), its facts and, once built, the
    /// passages' vectors. The passage index is counted whether it was built yet or not: it is
    /// built under a reader, after the cache took the model's size, so the size is an upper
    /// bound rather than one that grows unseen; the vectors are counted from the next time the
    /// cache weighs the model (a patch or a rebuild).
    /// The chunk-hash index a citation may build (a few dozen bytes a chunk) is not counted.
    pub fn approx_bytes(&self) -> usize {
        let dense = self.dense.approx_bytes();
        self.version_bytes + 2 * self.current_bytes + self.graph.facts().len() * FACT_BYTES + dense
    }
}

/// The text a page version holds, as [`Snapshot::approx_bytes`] counts it.
fn text_bytes(page: &PageVersion) -> usize {
    page.body.len() + page.title.len() + page.source_id.len()
}

impl Snapshot {
    /// A read model of knowledge at `version`: the ontology compiled for reading, the graph,
    /// every version of every page and the extraction log. `encoder` embeds passages for the
    /// dense half of passage search; without one BM25 ranks alone. Retrieval builds its models
    /// from the store through [`Snapshots`]; the analyst's gate builds one of the live graph
    /// and one of its shadow from what it holds.
    pub fn from_parts(
        version: i64,
        ontology: Arc<Ontology>,
        graph: Graph,
        pages: Vec<PageVersion>,
        log: BTreeMap<String, u64>,
        encoder: Option<Arc<dyn ontoloop_core::knowledge::encoder::SentenceEncoder>>,
    ) -> Result<Snapshot, SnapshotError> {
        let now = chrono::Utc::now();
        let current: BTreeMap<String, PageVersion> = versions_in_effect(&pages, now)
            .into_iter()
            .map(|p| (p.source_id.clone(), p))
            .collect();
        let index = PageIndex::build(current.values())?;
        let latest_change = pages
            .iter()
            .map(PageVersion::effective_at)
            .filter(|at| *at <= now)
            .max()
            .unwrap_or_default();
        let scheduled =
            versions_announced(&pages, now, |id| current.get(id).map(|held| held.version));
        let restricted = graph.facts().iter().any(|f| !f.acl.is_empty())
            || current.values().any(|p| !p.acl.is_empty());
        let version_bytes = pages.iter().map(text_bytes).sum();
        let current_bytes = current.values().map(text_bytes).sum();
        Ok(Snapshot {
            version_bytes,
            current_bytes,
            latest_change,
            scheduled,
            versions: pages,
            version,
            rebuild_next: false,
            ontology,
            graph: Arc::new(graph),
            current: Arc::new(current),
            log,
            index,
            passages: std::sync::OnceLock::new(),
            dense: LazyDense::new(encoder),
            chunk_index: std::sync::OnceLock::new(),
            views: std::sync::Mutex::new(Vec::new()),
            restricted,
            claims: ClaimMemo::default(),
            overviews: OverviewMemo::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, Utc};
    use ontoloop_core::Caller;

    const ONTOLOGY: &str = r#"{"predicates": [
        {"name": "price", "subject_type": "plan", "object_type": "number",
         "patterns": ["The {s} plan costs €{o:number} per month."]}],
        "authority": {"default": 2}}"#;

    fn version(number: u64, body: &str, updated_at: chrono::DateTime<Utc>) -> PageVersion {
        PageVersion {
            source_id: "pricing".into(),
            version: number,
            title: "Pricing".into(),
            origin: "wiki".into(),
            body: body.into(),
            updated_at,
            acl: Vec::new(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    /// A version announced for next week is stored but not current: search, the current pages
    /// and `as_of` see the version in effect until its time, when the model makes it current.
    #[test]
    fn a_version_announced_for_later_becomes_current_when_its_time_comes() {
        let ontology = Arc::new(Ontology::from_json(ONTOLOGY).expect("ontology"));
        let now = Utc::now();
        let v1 = version(
            1,
            "The Gold plan costs €80 per month. Seats are unlimited.",
            now - Duration::days(2),
        );
        let mut v2 = version(
            2,
            "The Gold plan costs €95 per month. Seats are counted.",
            now - Duration::days(1),
        );
        let next_week = now + Duration::days(7);
        v2.effective_from = Some(next_week);
        let graph = Graph::new(&ontology);
        let mut snapshot = Snapshot::from_parts(
            1,
            Arc::clone(&ontology),
            graph,
            vec![v1, v2],
            BTreeMap::new(),
            None,
        )
        .expect("snapshot");
        let caller = Caller::new("t", "alice").expect("caller");
        assert_eq!(snapshot.current["pricing"].version, 1);
        assert_eq!(
            snapshot.index.search("counted", 5, &caller),
            Vec::<String>::new()
        );
        assert_eq!(snapshot.index.search("unlimited", 5, &caller), ["pricing"]);
        assert!(snapshot.current_holds_at(now));
        assert!(
            !snapshot.current_holds_at(next_week),
            "the announced version is due then"
        );
        assert_eq!(snapshot.current_at(next_week)["pricing"].version, 2);
        assert!(!snapshot.due(now));
        // A citation's history holds only versions in effect.
        let access = Access::new(&caller, &snapshot.current);
        let history = snapshot.history(access);
        let held: Vec<u64> = history
            .versions("pricing")
            .iter()
            .map(|v| v.version)
            .collect();
        assert_eq!(held, [1]);
        // Its time comes.
        let later = next_week + Duration::hours(1);
        assert!(snapshot.due(later));
        snapshot.advance(later).expect("advance");
        assert_eq!(snapshot.current["pricing"].version, 2);
        assert_eq!(snapshot.index.search("counted", 5, &caller), ["pricing"]);
        assert_eq!(
            snapshot.index.search("unlimited", 5, &caller),
            Vec::<String>::new()
        );
        assert!(!snapshot.due(later));
        assert!(snapshot.scheduled.is_empty());
    }
}
