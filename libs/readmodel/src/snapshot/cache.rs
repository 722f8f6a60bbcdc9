//! The cache of read models, one per tenant within a [`CacheBudget`], the turn to bring each
//! forward, and the follower that brings kept models forward after each commit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use ontoloop_core::knowledge::{ExtractionSetup, Graph, Ontology};
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_store::Store;
use tokio::sync::{Mutex, OwnedRwLockReadGuard, RwLock};

use super::patch::stage_read;
use super::{CACHE_ENTRIES_METRIC, Snapshot, SnapshotError, UPDATES_METRIC};

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
    /// Makes the next catch-up build the model whole. For a model its indexes may hold
    /// unpublished pages of; until then it answers as it stands (see [`Snapshots::standing`]).
    async fn build_whole_next(&self) {
        Arc::clone(&self.model).write_owned().await.rebuild_next = true;
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

/// What a read of the tenant's knowledge version does while the store cannot be read.
#[derive(Debug, Clone, Copy)]
enum Outage {
    /// Fails: the caller must not answer from a model it cannot check (the firewall).
    Fails,
    /// The version last read stands.
    Stands,
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
    /// An empty cache over `store` that keeps what `budget` (`[cache.read_models]`) allows,
    /// reported as `ontoloop_cache_entries{cache="read_models"}`; every ontology it loads reads
    /// text with `extraction`.
    pub fn new(store: Store, extraction: ExtractionSetup, budget: CacheBudget) -> Self {
        Self {
            commits: store.commits(),
            store,
            extraction,
            name: "read_models",
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
    /// commit; else it is read again (a store that cannot be read is an error: see
    /// [`Snapshots::recent_or_standing`]). With the follower, a commit's word is its to act on: it
    /// reads the versions and brings forward the models read, so until it has (milliseconds) the
    /// caller answers from the model as it stands, as it does while that catch-up is under way,
    /// instead of every caller who comes first after a commit reading the store itself (under
    /// 50 events/s, about one Validate in a hundred did, and those made its p99).
    pub async fn recent(&self, tenant: &str) -> Result<SnapshotGuard, SnapshotError> {
        let version = self.known_version(tenant, Outage::Fails).await?;
        self.held(tenant, version, Wait::UnlessUnderWay).await
    }

    /// As [`Snapshots::recent`], and while the store cannot be read, the model as it stands at
    /// the version last read (a tenant never read has none): reads go on answering through a
    /// store outage. For answers that may be that stale (Ask), never for a check that must
    /// fail closed (Validate).
    /// A model behind the version last read, which the store's going away left unable to be
    /// brought forward, answers as it stands too.
    pub async fn recent_or_standing(&self, tenant: &str) -> Result<SnapshotGuard, SnapshotError> {
        let version = self.known_version(tenant, Outage::Stands).await?;
        match self.held(tenant, version, Wait::UnlessUnderWay).await {
            Err(SnapshotError::Store(err)) if err.is_unreachable() => {
                match self.standing(tenant).await {
                    Some(model) => {
                        tracing::debug!(tenant, error = %err, "catch-up unread; answering from the model held");
                        Ok(model)
                    }
                    None => Err(SnapshotError::Store(err)),
                }
            }
            held => held,
        }
    }

    /// The tenant's model as it stands, if one is kept and whole: not one half patched (a
    /// version below every real one). One whose catch-up failed after staging pages answers as
    /// of its version: its search readers never saw the staged pages.
    async fn standing(&self, tenant: &str) -> Option<SnapshotGuard> {
        let held = self.cached(tenant).await?;
        let model = Arc::clone(&held.model).read_owned().await;
        (model.version >= 0).then_some(model)
    }

    /// The tenant's knowledge version as [`Snapshots::recent`] reads it; with
    /// [`Outage::Stands`], the one last read while the store cannot be read.
    async fn known_version(&self, tenant: &str, outage: Outage) -> Result<i64, SnapshotError> {
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
        let version = match self.store.knowledge_version(tenant).await {
            Ok(version) => version,
            Err(err) => {
                // The store is away: the version last known answers, so the caller reads the
                // model as it stands until the store is back (a tenant never read has none).
                let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
                let (Outage::Stands, Some(held)) = (outage, known.get(tenant)) else {
                    return Err(err.into());
                };
                tracing::debug!(tenant, error = %err, "knowledge version unread; answering from the model held");
                return Ok(held.version);
            }
        };
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
        // A model to be built whole is read from before every real version: no commit range
        // from there is complete.
        let from = if guard.rebuild_next {
            -1
        } else {
            guard.version
        };
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
                if fresh.version > model.version || model.rebuild_next {
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
        // A tenant that has set no ontology (or pushed nothing yet) is read under the empty one:
        // its pages answer as passages, its names as entities.
        let parsed = match &rows.ontology {
            Some(text) => Ontology::from_json(text)?,
            None => Ontology::empty(),
        };
        let ontology = self.extraction.compile_for(tenant, parsed);
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

/// A tenant's read model held for reading (see [`Snapshots::get`]).
pub type SnapshotGuard = OwnedRwLockReadGuard<Snapshot>;
