//! Per-tenant read models, brought forward from the store when the tenant's knowledge version
//! moves, kept under a [`CacheBudget`] (least recently used out first, built again on next use).
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use ontoloop_core::knowledge::passage::{PageHistory, chunk_page};
use ontoloop_core::knowledge::{
    Access, ExtractionSetup, Graph, Ontology, OntologyError, PageVersion, versions_announced,
    versions_in_effect,
};
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_store::{KnowledgeChanges, Store, StoreError};
use tokio::sync::{Mutex, OwnedRwLockReadGuard, RwLock};

use crate::claims::ClaimMemo;
use crate::dense::{DenseIndex, LazyDense};
use crate::search::{PageIndex, PassageIndex, Staged};

/// What retrieval answers from, for one tenant at one knowledge version.
pub struct Snapshot {
    /// Knowledge version it was built from.
    pub version: i64,
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
        self.version >= version && !self.due(chrono::Utc::now())
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
    /// The tenant never set an ontology.
    #[error("tenant {0} has no ontology yet: push an ontology.set event first")]
    NoOntology(String),
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
            SnapshotError::NoOntology(_) => ErrorCode::FailedPrecondition,
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

/// Budget of a cache built with [`Snapshots::new`]: the `[cache.read_models]` defaults.
pub const DEFAULT_BUDGET: CacheBudget = CacheBudget {
    max_entries: 1000,
    max_bytes: 1 << 30,
};

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

/// One tenant's model in the cache, and the turn to bring it forward (held by one caller at a
/// time: the others wait on it, not on the model's lock).
#[derive(Clone)]
struct Held {
    model: Arc<RwLock<Snapshot>>,
    forward: Arc<Mutex<()>>,
    /// Whether a caller asked for the model since the follower last brought it forward: a model
    /// nobody reads (a tenant loading its pages, or gone quiet) is left for its next reader to
    /// bring forward in one catch-up, not followed commit by commit.
    read: Arc<std::sync::atomic::AtomicBool>,
}

impl Held {
    /// Makes the next reader build the model whole: a version below every real one, from which
    /// no commit range is complete. For a model its indexes may hold unpublished pages of.
    async fn build_whole_next(&self) {
        Arc::clone(&self.model).write_owned().await.version = -1;
    }

    fn new(snapshot: Snapshot) -> Self {
        Self {
            model: Arc::new(RwLock::new(snapshot)),
            forward: Arc::new(Mutex::new(())),
            read: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        }
    }
}

/// The cache of snapshots, one per tenant, within a [`CacheBudget`].
pub struct Snapshots {
    store: Store,
    extraction: ExtractionSetup,
    name: &'static str,
    cache: Mutex<Lru<Held>>,
    /// The turn to build a tenant's first model, one per tenant being built: callers that
    /// find no model wait on it instead of each building one of their own.
    building: std::sync::Mutex<std::collections::HashMap<String, Arc<Mutex<()>>>>,
    /// Models built whole, and catch-ups patched in, since this cache was made.
    built: AtomicU64,
    patched: AtomicU64,
    /// The task following the store's commits ([`Snapshots::follow`]), stopped with the cache.
    follower: std::sync::OnceLock<tokio::task::AbortHandle>,
    /// Word of the store's commits (`Store::commits`): it moves after each.
    commits: tokio::sync::watch::Receiver<u64>,
    /// Each tenant's knowledge version as [`Snapshots::recent`] last read it.
    known: std::sync::Mutex<HashMap<String, KnownVersion>>,
}

/// How long a tenant's knowledge version is used again by [`Snapshots::recent`] (without the
/// follower, only while no word of a commit came since): the longest a commit without word
/// (another process's, on one SQLite file), or one the follower has not read yet, goes unseen by
/// it, as long as the store's own waiters take to read it.
pub const KNOWN_VERSION_TTL: std::time::Duration = std::time::Duration::from_millis(50);

/// Tenants whose knowledge version is kept at most; past it, only versions read within
/// [`KNOWN_VERSION_TTL`] stay and a new tenant's is not kept.
const MAX_KNOWN_VERSIONS: usize = 4096;

/// A tenant's knowledge version, the word of commits it was read under and when.
struct KnownVersion {
    version: i64,
    word: u64,
    read_at: std::time::Instant,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        if let Some(follower) = self.follower.get() {
            follower.abort();
        }
    }
}

/// Whether a caller that finds its tenant's model behind waits for it to be brought forward.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Always: the answer holds every commit made before the call.
    ForLatest,
    /// Only when no other caller is bringing it forward already.
    UnlessUnderWay,
}

impl Snapshots {
    /// An empty cache over `store` under [`DEFAULT_BUDGET`], reported as `read_models`; every
    /// ontology it loads reads text with `extraction`.
    pub fn new(store: Store, extraction: ExtractionSetup) -> Self {
        Self::with_budget(store, extraction, "read_models", DEFAULT_BUDGET)
    }

    /// An empty cache over `store` that keeps what `budget` allows, reported as
    /// `ontoloop_cache_entries{cache="<name>"}`.
    pub fn with_budget(
        store: Store,
        extraction: ExtractionSetup,
        name: &'static str,
        budget: CacheBudget,
    ) -> Self {
        Self {
            commits: store.commits(),
            store,
            extraction,
            name,
            cache: Mutex::new(Lru::new(budget)),
            building: std::sync::Mutex::default(),
            built: AtomicU64::new(0),
            patched: AtomicU64::new(0),
            follower: std::sync::OnceLock::new(),
            known: std::sync::Mutex::default(),
        }
    }

    /// Tenants whose snapshot is kept.
    pub async fn len(&self) -> usize {
        self.cache.lock().await.len()
    }

    /// Whether no snapshot is kept.
    pub async fn is_empty(&self) -> bool {
        self.cache.lock().await.is_empty()
    }

    /// The tenant's read model at its current knowledge version (or later), held for reading:
    /// while the guard lives the model does not move. Never ask for a second guard of the same
    /// tenant while holding one.
    pub async fn get(&self, tenant: &str) -> Result<SnapshotGuard, SnapshotError> {
        let version = self.store.knowledge_version(tenant).await?;
        self.held(tenant, version, Wait::ForLatest).await
    }

    /// The tenant's read model as [`Snapshots::get`] gives it, except while another caller (or
    /// the [follower](Snapshots::follow)) brings it forward: then the model as it stands, without
    /// waiting, at most that one catch-up behind. For a caller that named no write of its own to
    /// read: an answer that must hold a given event waits for it first and then calls `get`.
    /// The tenant's knowledge version it reads is one read at most [`KNOWN_VERSION_TTL`] ago
    /// and, unless the [follower](Snapshots::follow) runs, since the store's last word of a
    /// commit; else it is read again. With the follower, a commit's word is its to act on: it
    /// reads the versions and brings forward the models read, so until it has (milliseconds) the
    /// caller answers from the model as it stands, as it does while that catch-up is under way,
    /// instead of every caller who comes first after a commit reading the store itself (under
    /// 50 events/s, about one Validate in a hundred did, and those made its p99).
    pub async fn recent(&self, tenant: &str) -> Result<SnapshotGuard, SnapshotError> {
        let version = self.known_version(tenant).await?;
        self.held(tenant, version, Wait::UnlessUnderWay).await
    }

    /// The tenant's knowledge version as [`Snapshots::recent`] reads it.
    async fn known_version(&self, tenant: &str) -> Result<i64, SnapshotError> {
        // The word is read before the version: a commit while it is read moves the word, and the
        // next call reads again.
        let word = *self.commits.borrow();
        let now = std::time::Instant::now();
        {
            let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = known.get(tenant)
                && (held.word == word || self.follower.get().is_some())
                && now.duration_since(held.read_at) < KNOWN_VERSION_TTL
            {
                return Ok(held.version);
            }
        }
        let version = self.store.knowledge_version(tenant).await?;
        self.know(tenant, version, word, now);
        Ok(version)
    }

    /// Keeps `version` as the tenant's, read under `word` at `read_at`.
    fn know(&self, tenant: &str, version: i64, word: u64, read_at: std::time::Instant) {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if known.len() >= MAX_KNOWN_VERSIONS && !known.contains_key(tenant) {
            known.retain(|_, held| read_at.duration_since(held.read_at) < KNOWN_VERSION_TTL);
            if known.len() >= MAX_KNOWN_VERSIONS {
                return;
            }
        }
        known.insert(
            tenant.to_owned(),
            KnownVersion {
                version,
                word,
                read_at,
            },
        );
    }

    async fn held(
        &self,
        tenant: &str,
        version: i64,
        wait: Wait,
    ) -> Result<SnapshotGuard, SnapshotError> {
        let held = match self.cached(tenant).await {
            Some(held) => held,
            None => self.first(tenant).await?,
        };
        held.read.store(true, Ordering::Relaxed);
        let guard = Arc::clone(&held.model).read_owned().await;
        if guard.holds(version) {
            return Ok(guard);
        }
        // One caller brings the model forward; the others wait for it here, not in the model's
        // lock, so a line of callers never queues readers behind one writer after another.
        // The guard is not held across the catch-up, which takes the model's write lock.
        let turn = match Arc::clone(&held.forward).try_lock_owned() {
            Ok(turn) => {
                drop(guard);
                turn
            }
            Err(_) if wait == Wait::UnlessUnderWay => return Ok(guard),
            Err(_) => {
                drop(guard);
                Arc::clone(&held.forward).lock_owned().await
            }
        };
        self.forward(tenant, &held, version, turn).await
    }

    /// Brings `held` to `version` (or later) while this caller holds its `turn`, and returns it
    /// held for reading.
    async fn forward(
        &self,
        tenant: &str,
        held: &Held,
        version: i64,
        turn: tokio::sync::OwnedMutexGuard<()>,
    ) -> Result<SnapshotGuard, SnapshotError> {
        let guard = Arc::clone(&held.model).read_owned().await;
        // Another caller may have brought it forward while this one waited.
        if guard.holds(version) {
            return Ok(guard);
        }
        let from = guard.version;
        drop(guard);
        // What the commits since wrote is read, and its pages indexed, while readers go on
        // answering from the model as it is; only this caller changes it (it holds the turn).
        // The pages are indexed on the blocking pool while the store reads the rest of the
        // changes. The write lock is taken only to make them seen.
        let changes = if from < version {
            let reading = Arc::clone(&held.model).read_owned().await;
            let began = std::sync::atomic::AtomicBool::new(false);
            let read = self
                .store
                .knowledge_changes_since_with(tenant, from, |pages| {
                    began.store(true, Ordering::Relaxed);
                    stage_read(reading, pages)
                })
                .await;
            match read {
                Ok(changes) => Some(changes),
                Err(err) => {
                    if began.load(Ordering::Relaxed) {
                        // The index may hold what was staged.
                        held.build_whole_next().await;
                    }
                    return Err(err.into());
                }
            }
        } else {
            None
        };
        let (mut model, now) = match changes {
            Some(Some((changes, staging))) => {
                let (now, staged) = match staging {
                    Ok(staged) => staged,
                    Err(err) => {
                        // The index may hold part of what was staged.
                        held.build_whole_next().await;
                        return Err(SnapshotError::Staging(err.to_string()));
                    }
                };
                let mut model = Arc::clone(&held.model).write_owned().await;
                if let Err(err) = model.apply(changes, now, Some(staged)) {
                    // Half applied: never answer from it. A version below every real one
                    // makes the next reader build the model whole (no commit range from it is
                    // complete).
                    model.version = -1;
                    return Err(err);
                }
                self.count(&self.patched, "patch");
                (model, now)
            }
            Some(None) => {
                // Built beside the live model, which readers keep using meanwhile.
                let fresh = self.build(tenant).await?;
                let mut model = Arc::clone(&held.model).write_owned().await;
                if fresh.version > model.version {
                    *model = fresh;
                }
                (model, chrono::Utc::now())
            }
            None => (
                Arc::clone(&held.model).write_owned().await,
                chrono::Utc::now(),
            ),
        };
        if model.due(now) {
            if let Err(err) = model.advance(now) {
                model.version = -1;
                return Err(err);
            }
            self.count(&self.patched, "patch");
        }
        let bytes = model.approx_bytes();
        let guard = model.downgrade();
        drop(turn);
        self.keep(tenant, held.clone(), bytes).await;
        Ok(guard)
    }

    /// Follows the store's commits (`Store::commits`): after each, every kept model behind its
    /// tenant's knowledge version and read since its last catch-up by the follower is brought
    /// forward, so callers of [`Snapshots::recent`] seldom meet one behind and never wait for
    /// it. A model nobody reads meanwhile is left for its next caller. Runs until the cache is
    /// dropped; a failure is logged and the next caller tries again.
    pub fn follow(self: &Arc<Self>) {
        let cache = Arc::downgrade(self);
        let mut commits = self.store.commits();
        let follower = tokio::spawn(async move {
            while commits.changed().await.is_ok() {
                let Some(cache) = cache.upgrade() else {
                    return;
                };
                cache.catch_up().await;
            }
        });
        if let Err(follower) = self.follower.set(follower.abort_handle()) {
            // Already followed: one follower is enough.
            follower.abort();
        }
    }

    /// Brings every kept model behind its tenant's knowledge version forward.
    async fn catch_up(&self) {
        let kept: Vec<(String, Held)> = {
            let cache = self.cache.lock().await;
            cache
                .iter()
                .map(|(tenant, held)| (tenant.to_owned(), held.clone()))
                .collect()
        };
        // Each model's turn is taken before its version is read: a caller of `recent` meanwhile
        // finds the catch-up under way and answers at once, instead of finding the model behind
        // with its turn free and catching it up itself. A model whose turn a caller holds is
        // being brought forward already.
        let turns: Vec<(String, Held, tokio::sync::OwnedMutexGuard<()>)> = kept
            .into_iter()
            .filter_map(|(tenant, held)| {
                let turn = Arc::clone(&held.forward).try_lock_owned().ok()?;
                Some((tenant, held, turn))
            })
            .collect();
        if turns.is_empty() {
            return;
        }
        let tenants: Vec<String> = turns.iter().map(|(tenant, ..)| tenant.clone()).collect();
        let word = *self.commits.borrow();
        let read_at = std::time::Instant::now();
        let versions = match self.store.knowledge_versions(&tenants).await {
            Ok(versions) => versions,
            Err(err) => {
                tracing::debug!(error = %err, "read models: cannot read knowledge versions");
                return;
            }
        };
        for (tenant, held, turn) in turns {
            let version = versions.get(&tenant).copied().unwrap_or_default();
            self.know(&tenant, version, word, read_at);
            if held.model.read().await.holds(version) || !held.read.swap(false, Ordering::Relaxed) {
                continue;
            }
            if let Err(err) = self.forward(&tenant, &held, version, turn).await {
                tracing::warn!(tenant = %tenant, error = %err, "read models: cannot follow a commit");
            }
        }
    }

    async fn cached(&self, tenant: &str) -> Option<Held> {
        self.cache.lock().await.get(tenant).cloned()
    }

    /// The tenant's first model, built by one caller at a time: the one this caller built, or
    /// the one another caller built while this one waited (brought forward like any other if it
    /// is behind the version this caller read).
    async fn first(&self, tenant: &str) -> Result<Held, SnapshotError> {
        let turn = {
            let mut building = self
                .building
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(building.entry(tenant.to_owned()).or_default())
        };
        let _turn = turn.lock().await;
        if let Some(held) = self.cached(tenant).await {
            return Ok(held);
        }
        let built = match self.build(tenant).await {
            Ok(snapshot) => {
                let bytes = snapshot.approx_bytes();
                let held = Held::new(snapshot);
                self.keep(tenant, held.clone(), bytes).await;
                Ok(held)
            }
            Err(err) => Err(err),
        };
        // Kept (or failed) before the turn goes: a caller from now on finds the model.
        self.building
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(tenant);
        built
    }

    /// Keeps a tenant's model under the budget (again, with its size now) and reports the
    /// cache's size.
    async fn keep(&self, tenant: &str, held: Held, bytes: usize) {
        let mut cache = self.cache.lock().await;
        cache.insert(tenant, held, bytes);
        ontoloop_observability::metrics::global().set(
            CACHE_ENTRIES_METRIC,
            "Entries (tenants) a bounded per-tenant cache keeps.",
            &[("cache", self.name)],
            cache.len() as f64,
        );
    }

    /// How many models this cache built whole and how many catch-ups it patched in.
    pub fn updates(&self) -> (u64, u64) {
        (
            self.built.load(Ordering::Relaxed),
            self.patched.load(Ordering::Relaxed),
        )
    }

    fn count(&self, counter: &AtomicU64, kind: &str) {
        counter.fetch_add(1, Ordering::Relaxed);
        ontoloop_observability::metrics::global().add(
            UPDATES_METRIC,
            "Read models brought forward: built whole (first use, ontology change) or patched \
             with what the commits since wrote.",
            &[("cache", self.name), ("kind", kind)],
            1.0,
        );
    }

    /// A tenant's read model built whole from the store.
    pub async fn build(&self, tenant: &str) -> Result<Snapshot, SnapshotError> {
        self.count(&self.built, "build");
        let rows = self.store.load_knowledge(tenant).await?;
        let text = rows
            .ontology
            .clone()
            .ok_or_else(|| SnapshotError::NoOntology(tenant.to_owned()))?;
        let ontology = self
            .extraction
            .compile_for(tenant, Ontology::from_json(&text)?);
        let graph = Graph::from_parts(&ontology, rows.entities, rows.facts);
        Snapshot::from_parts(
            rows.version,
            Arc::new(ontology),
            graph,
            rows.pages,
            rows.extraction_log,
            self.extraction.encoder().cloned(),
        )
    }
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
        })
    }
}

/// A tenant's read model held for reading (see [`Snapshots::get`]).
pub type SnapshotGuard = OwnedRwLockReadGuard<Snapshot>;

impl Snapshot {
    /// Indexes, beside readers, the pages among `pages` (read from the store's changes) current
    /// at `now` ([`PageIndex::stage`]): the costly part of [`Snapshot::apply`], done under a
    /// read guard so readers go on answering while it runs. Apply the changes with the same
    /// `now` next.
    fn stage(&self, pages: &[PageVersion], now: chrono::DateTime<chrono::Utc>) -> StagedPages {
        let due: Vec<&PageVersion> = pages
            .iter()
            .filter(|page| page.effective_at() <= now)
            .collect();
        self.stage_moves(due)
    }

    /// Stages in the page and passage indexes what making each of `pages` current would move.
    fn stage_moves<'a>(&self, pages: impl IntoIterator<Item = &'a PageVersion>) -> StagedPages {
        // Each moved page's version before the changes (none for a new page) and its newest, as
        // `bring_in` will move them.
        let mut moves: BTreeMap<&str, (Option<&PageVersion>, &PageVersion)> = BTreeMap::new();
        for page in pages {
            let held = moves
                .get(page.source_id.as_str())
                .map(|(_, newest)| *newest)
                .or_else(|| self.current.get(&page.source_id));
            if held.is_none_or(|held| page.version > held.version) {
                let before = self.current.get(&page.source_id);
                moves
                    .entry(&page.source_id)
                    .and_modify(|(_, newest)| *newest = page)
                    .or_insert((before, page));
            }
        }
        let pairs = || moves.values().copied();
        let index = self.index.stage(pairs());
        let passages = match self.passages.get() {
            Some(Some(passages)) => Some(passages.stage(pairs())),
            _ => None,
        };
        StagedPages { index, passages }
    }

    /// Brings this model to `changes.version` with what the commits since its version wrote,
    /// its pages indexed already by `staged` ([`Snapshot::stage`] with the same `now`) or here.
    fn apply(
        &mut self,
        changes: KnowledgeChanges,
        now: chrono::DateTime<chrono::Utc>,
        staged: Option<StagedPages>,
    ) -> Result<(), SnapshotError> {
        let held = self.versions.len();
        let mut due = Vec::new();
        for page in changes.pages {
            self.restricted |= !page.acl.is_empty();
            if page.effective_at() > now {
                self.scheduled.push(page.clone());
            } else {
                due.push(page.clone());
            }
            self.version_bytes += text_bytes(&page);
            self.versions.push(page);
        }
        self.scheduled
            .sort_by_key(|p| (p.effective_at(), p.version));
        self.bring_in(due, staged)?;
        if let Some(index) = self.chunk_index.get_mut() {
            index_chunks(index, &self.versions, held);
        }
        self.log.extend(changes.extraction_log);
        self.restricted |= changes.facts.iter().any(|f| !f.acl.is_empty());
        // Readers hold the lock, not the graph or the pages: they are shared only while a reader
        // answers, so this changes them in place (a copy only if a reader kept them past its
        // guard, as the firewall does across a model call).
        Arc::make_mut(&mut self.graph).patch(
            &changes.removed_entities,
            changes.entities,
            changes.facts,
        );
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.claims.graph_changed();
        self.version = changes.version;
        Ok(())
    }

    /// Makes every announced version whose time has come by `now` its page's current one.
    fn advance(&mut self, now: chrono::DateTime<chrono::Utc>) -> Result<(), SnapshotError> {
        let due_count = self.scheduled.partition_point(|p| p.effective_at() <= now);
        let due: Vec<PageVersion> = self.scheduled.drain(..due_count).collect();
        self.bring_in(due, None)?;
        // Who may read a page is decided by its version in effect.
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        Ok(())
    }

    /// Makes each of `pages` (versions in effect) its page's current version where newer than
    /// the one held, and patches the page, passage and dense indexes with the moves: publishes
    /// `staged` (the same pages staged against this model as it is), or stages them here.
    fn bring_in(
        &mut self,
        pages: Vec<PageVersion>,
        staged: Option<StagedPages>,
    ) -> Result<(), SnapshotError> {
        let staged = match staged {
            Some(staged) => staged,
            None => self.stage_moves(&pages),
        };
        // Each moved page's version before the changes (none for a new page), by page id.
        let mut moved: BTreeMap<String, Option<PageVersion>> = BTreeMap::new();
        let current = Arc::make_mut(&mut self.current);
        for page in pages {
            self.latest_change = self.latest_change.max(page.effective_at());
            let newer = current
                .get(&page.source_id)
                .is_none_or(|held| page.version > held.version);
            if newer {
                let id = page.source_id.clone();
                self.current_bytes += text_bytes(&page);
                let before = current.insert(id.clone(), page);
                self.current_bytes -= before.as_ref().map_or(0, text_bytes);
                moved.entry(id).or_insert(before);
            }
        }
        let pairs = || {
            moved
                .iter()
                .filter_map(|(id, before)| Some((before.as_ref(), current.get(id)?)))
        };
        self.index.publish(staged.index?)?;
        if let Some(Some(passages)) = self.passages.get_mut() {
            match staged.passages {
                Some(passage_update) => passages.publish(passage_update?)?,
                // Built by a reader after the pages were staged, from the pages before them.
                None => passages.update(pairs())?,
            }
        }
        self.dense.update(pairs().map(|(_, page)| page));
        Ok(())
    }
}

/// Stages `pages`, just read from the store, against the model `reading` on the blocking pool
/// ([`Snapshot::stage`]), at the "now" read once they were read: every page a commit made by
/// then is in effect by it. Gives the pages back with the staged update, or none when the task
/// failed.
async fn stage_read(
    reading: OwnedRwLockReadGuard<Snapshot>,
    pages: Vec<PageVersion>,
) -> (
    Vec<PageVersion>,
    Result<(chrono::DateTime<chrono::Utc>, StagedPages), tokio::task::JoinError>,
) {
    let now = chrono::Utc::now();
    let staging = tokio::task::spawn_blocking(move || {
        let staged = reading.stage(&pages, now);
        (pages, staged)
    });
    match staging.await {
        Ok((pages, staged)) => (pages, Ok((now, staged))),
        Err(err) => (Vec::new(), Err(err)),
    }
}

/// What [`Snapshot::stage_moves`] wrote: the page index's update and the passage index's when
/// it was built, each to publish or, failed, to report.
struct StagedPages {
    index: tantivy::Result<Staged>,
    passages: Option<tantivy::Result<Staged>>,
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
