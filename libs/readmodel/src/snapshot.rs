//! Per-tenant read models, rebuilt from the store when the tenant's knowledge version moves,
//! kept under a [`CacheBudget`] (least recently used out first, rebuilt on next use).

use std::collections::BTreeMap;
use std::sync::Arc;

use ontoloop_core::knowledge::{
    Access, ExtractionSetup, Graph, Ontology, OntologyError, PageVersion, current_versions,
};
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_store::{Store, StoreError};
use tokio::sync::Mutex;

use crate::search::PageIndex;

/// What retrieval answers from, for one tenant at one knowledge version.
pub struct Snapshot {
    /// Knowledge version it was built from.
    pub version: i64,
    /// The tenant's ontology.
    pub ontology: Ontology,
    /// The whole graph: what a caller may see of it is [`Snapshot::graph_for`].
    pub graph: Arc<Graph>,
    /// Current version of every page.
    pub current: BTreeMap<String, PageVersion>,
    /// Extraction log.
    pub log: BTreeMap<String, u64>,
    /// BM25 over the current pages.
    pub index: PageIndex,
    /// Every version of every page.
    pub versions: Vec<PageVersion>,
    /// The newest page version's time.
    pub latest_change: chrono::DateTime<chrono::Utc>,
    /// The graphs callers who may not read every fact were shown, by the ids of the facts
    /// hidden from them (a few ACLs make a few views; bounded, oldest out first).
    views: std::sync::Mutex<Vec<(Vec<u64>, Arc<Graph>)>>,
    /// Whether any fact or page has an ACL: without one every caller sees the whole graph.
    restricted: bool,
}

/// Caller views of one snapshot's graph kept at most.
const MAX_VIEWS: usize = 16;

impl Snapshot {
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

    /// The version of every page that was current at `at` (pages that did not exist yet are
    /// absent).
    pub fn current_at(&self, at: chrono::DateTime<chrono::Utc>) -> BTreeMap<String, PageVersion> {
        current_versions(self.versions.iter().filter(|p| p.updated_at <= at))
            .into_iter()
            .map(|p| (p.source_id.clone(), p))
            .collect()
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
}

impl ontoloop_core::ServiceError for SnapshotError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        use ontoloop_core::ErrorCode;
        match self {
            SnapshotError::NoOntology(_) => ErrorCode::FailedPrecondition,
            SnapshotError::Store(_) => ErrorCode::Unavailable,
            SnapshotError::Ontology(_) | SnapshotError::Index(_) => ErrorCode::Internal,
        }
    }
}

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
    /// the BM25 index of the current ones) and its facts.
    pub fn approx_bytes(&self) -> usize {
        let text = |p: &PageVersion| p.body.len() + p.title.len() + p.source_id.len();
        let versions: usize = self.versions.iter().map(text).sum();
        let indexed: usize = self.current.values().map(text).sum();
        versions + indexed + self.graph.facts().len() * FACT_BYTES
    }
}

/// The cache of snapshots, one per tenant, within a [`CacheBudget`].
pub struct Snapshots {
    store: Store,
    extraction: ExtractionSetup,
    name: &'static str,
    cache: Mutex<Lru<Arc<Snapshot>>>,
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
            store,
            extraction,
            name,
            cache: Mutex::new(Lru::new(budget)),
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

    /// The tenant's snapshot at its current knowledge version.
    pub async fn get(&self, tenant: &str) -> Result<Arc<Snapshot>, SnapshotError> {
        let version = self.store.knowledge_version(tenant).await?;
        if let Some(snapshot) = self
            .cache
            .lock()
            .await
            .get(tenant)
            .filter(|s| s.version == version)
        {
            return Ok(Arc::clone(snapshot));
        }
        let rows = self.store.load_knowledge(tenant).await?;
        let text = rows
            .ontology
            .clone()
            .ok_or_else(|| SnapshotError::NoOntology(tenant.to_owned()))?;
        let ontology = self
            .extraction
            .compile_for(tenant, Ontology::from_json(&text)?);
        let current: BTreeMap<String, PageVersion> = rows
            .current_pages()
            .into_iter()
            .map(|p| (p.source_id.clone(), p))
            .collect();
        let index = PageIndex::build(current.values())?;
        let graph = Graph::from_parts(&ontology, rows.entities, rows.facts);
        let latest_change = rows
            .pages
            .iter()
            .map(|p| p.updated_at)
            .max()
            .unwrap_or_default();
        let restricted = graph.facts().iter().any(|f| !f.acl.is_empty())
            || current.values().any(|p| !p.acl.is_empty());
        let snapshot = Arc::new(Snapshot {
            latest_change,
            versions: rows.pages.clone(),
            version: rows.version,
            ontology,
            graph: Arc::new(graph),
            current,
            log: rows.extraction_log,
            index,
            views: std::sync::Mutex::new(Vec::new()),
            restricted,
        });
        let bytes = snapshot.approx_bytes();
        let mut cache = self.cache.lock().await;
        cache.insert(tenant, Arc::clone(&snapshot), bytes);
        ontoloop_observability::metrics::global().set(
            CACHE_ENTRIES_METRIC,
            "Entries (tenants) a bounded per-tenant cache keeps.",
            &[("cache", self.name)],
            cache.len() as f64,
        );
        Ok(snapshot)
    }
}
