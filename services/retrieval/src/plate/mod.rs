//! Retrieval's ephemeral graphs of each tenant's organisation: the org graph (people, teams,
//! roles, reporting lines), the product graph (services, owners, dependencies) and the work-item
//! index, held together as one [`TenantView`] that readers load whole.
//!
//! They are rebuilt aside and swapped in atomically ([`Swap`]), so a reader never sees a
//! half-built graph. A watcher reads the store's org versions at each word of an analyst commit
//! (`Store::commits`) and at least every `org.watch_interval_ms`, and brings a tenant up to date
//! as soon as its version moves: a change log of one-person HR events
//! is patched into a copy of the org graph (the same graph a rebuild gives, tested in the org
//! crate), a docs change rebuilds the product graph from the stored facts and checks its
//! documentation coverage, an item change rebuilds the item index; anything else (a bulk load, a
//! restructure too large to patch, a gap in the log) and the safety TTL rebuild everything from
//! the store. The plate and the org answers themselves are computed by `ontoloop_org`.

pub mod context;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ontoloop_core::{Lru, SignalType};
use ontoloop_org::hr::{self, HrEvent, OrgRecords};
use ontoloop_org::items::{ItemIndex, WorkItem};
use ontoloop_org::org::OrgGraph;
use ontoloop_org::product::{Fact, ProductGraph};
use ontoloop_org::swap::Swap;
use ontoloop_runtime::Context;
use ontoloop_runtime::signals::{SignalReport, report_signal};
use ontoloop_settings::OrgSettings;
use ontoloop_store::{OrgChange, Store, StoreError, change_kind};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Sets `ontoloop_cache_entries{cache}`, the gauge every bounded per-tenant cache reports.
pub(crate) fn cache_entries(cache: &str, entries: usize) {
    ontoloop_observability::metrics::global().set(
        ontoloop_readmodel::CACHE_ENTRIES_METRIC,
        "Entries (tenants) a bounded per-tenant cache keeps.",
        &[("cache", cache)],
        entries as f64,
    );
}

/// Why a tenant's graphs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The store could not be read.
    #[error("read the organisation from the store: {0}")]
    Store(#[from] StoreError),
    /// The stored records break an invariant (for example a reporting loop).
    #[error("stored organisation of tenant {tenant} is inconsistent: {reason}")]
    Inconsistent {
        /// The tenant.
        tenant: String,
        /// What is wrong.
        reason: String,
    },
}

impl ontoloop_core::ServiceError for ViewError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            ViewError::Store(_) => ontoloop_core::ErrorCode::Unavailable,
            ViewError::Inconsistent { .. } => ontoloop_core::ErrorCode::Internal,
        }
    }
}

/// One tenant's graphs at one org version; immutable once published.
#[derive(Debug, Clone)]
pub struct TenantView {
    /// The org version the graphs reflect (0: the tenant has no organisation data).
    pub version: i64,
    /// People, teams, roles and reporting lines.
    pub org: Arc<OrgGraph>,
    /// Products, services, owners and dependencies.
    pub product: Arc<ProductGraph>,
    /// The tenant's work items.
    pub items: Arc<ItemIndex>,
    /// When the graphs were last rebuilt from the store as a whole (for the safety TTL).
    pub rebuilt_at: Instant,
}

impl TenantView {
    fn empty() -> Self {
        TenantView {
            version: 0,
            org: Arc::default(),
            product: Arc::default(),
            items: Arc::default(),
            rebuilt_at: Instant::now(),
        }
    }
}

/// What the refresher of one tenant holds besides the published view: the HR records the
/// published org graph was built from, so an HR event can be applied and patched in.
#[derive(Debug, Default)]
struct Sources {
    records: OrgRecords,
    /// Whether a rebuild has published the tenant's graphs.
    loaded: bool,
    /// Whether `records` may no longer match the published org graph (a patch stopped half
    /// way); the next refresh then rebuilds.
    dirty: bool,
}

#[derive(Debug)]
struct Slot {
    view: Swap<TenantView>,
    /// Serialises loads and refreshes of the tenant.
    sources: tokio::sync::Mutex<Sources>,
}

/// How a refresh brought a tenant up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refreshed {
    /// Already current.
    Current,
    /// Patched in from the change log.
    Patched {
        /// Changes applied.
        changes: usize,
    },
    /// Rebuilt from the store.
    Rebuilt,
}

/// Every tenant's graphs, loaded on first use and kept current by [`OrgViews::watch`]. At most
/// `[cache.org_views]` tenants are held: the graphs are built from the store, so an evicted
/// tenant is rebuilt on its next question.
pub struct OrgViews {
    ctx: Context,
    store: Store,
    settings: OrgSettings,
    tenants: Mutex<Lru<Arc<Slot>>>,
}

impl OrgViews {
    /// No tenant loaded yet; reads the store, and reports signals, through `ctx`.
    pub fn new(ctx: Context) -> Self {
        OrgViews {
            store: ctx.store.clone(),
            settings: ctx.settings.org.clone(),
            tenants: Mutex::new(Lru::new(ctx.settings.cache.org_views)),
            ctx,
        }
    }

    /// The tenant's current graphs, loading them from the store on first use. A tenant without
    /// organisation data gets empty graphs, held like any other: its next question needs no
    /// store (which may be away) and the watcher loads its data when its version moves.
    pub async fn get(&self, tenant: &str) -> Result<Arc<TenantView>, ViewError> {
        let slot = match self.slot(tenant) {
            Some(slot) => slot,
            None => self.insert_slot(tenant),
        };
        {
            let mut sources = slot.sources.lock().await;
            if !sources.loaded {
                self.rebuild(tenant, &slot, &mut sources).await?;
            }
        }
        Ok(slot.view.load())
    }

    /// Brings the tenant up to date with the store now (read-your-writes for a caller that knows
    /// a change was applied) and returns its graphs.
    pub async fn current(&self, tenant: &str) -> Result<Arc<TenantView>, ViewError> {
        let view = self.get(tenant).await?;
        let stored = self.store.org_version(tenant).await?;
        if stored == view.version {
            return Ok(view);
        }
        match self.slot(tenant) {
            Some(slot) => {
                self.refresh(tenant, &slot, stored).await?;
                Ok(slot.view.load())
            }
            // The tenant had no data a moment ago; `get` loads it now.
            None => self.get(tenant).await,
        }
    }

    /// Reads the store's org versions at each word of an analyst commit (the store's feed: this
    /// process's commits, and on PostgreSQL every process's) and at least every
    /// `org.watch_interval_ms`, until `cancel` fires; refreshes every held tenant whose version
    /// moved or whose graphs outlived the safety TTL.
    pub async fn watch(&self, cancel: CancellationToken) {
        let every = Duration::from_millis(self.settings.watch_interval_ms);
        let ttl = Duration::from_secs(self.settings.safety_ttl_secs);
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commits = self.store.commits();
        let mut failing = false;
        let mut failing_tenants: std::collections::HashSet<String> = Default::default();
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                _ = ticks.tick() => {}
                moved = commits.changed() => {
                    if moved.is_err() {
                        ticks.tick().await;
                    }
                }
            }
            let held: Vec<(String, Arc<Slot>)> = {
                let tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
                tenants
                    .iter()
                    .map(|(tenant, slot)| (tenant.to_owned(), Arc::clone(slot)))
                    .collect()
            };
            if held.is_empty() {
                continue;
            }
            let versions: HashMap<String, i64> = match self.store.org_versions().await {
                Ok(versions) => {
                    failing = false;
                    versions.into_iter().collect()
                }
                Err(err) => {
                    // Logged once per outage, not on every tick.
                    if !failing {
                        tracing::warn!(error = %err, "cannot poll org versions; graphs may lag");
                    }
                    failing = true;
                    continue;
                }
            };
            for (tenant, slot) in held {
                let view = slot.view.load();
                let stored = versions.get(&tenant).copied().unwrap_or(0);
                let outcome = if view.rebuilt_at.elapsed() >= ttl {
                    let mut sources = slot.sources.lock().await;
                    self.rebuild(&tenant, &slot, &mut sources)
                        .await
                        .map(|()| Refreshed::Rebuilt)
                } else if stored != view.version {
                    self.refresh(&tenant, &slot, stored).await
                } else {
                    continue;
                };
                // A failure is logged once per streak, not on every tick; readers keep the last
                // published graphs meanwhile.
                match outcome {
                    Ok(how) => {
                        failing_tenants.remove(&tenant);
                        tracing::debug!(tenant, ?how, "org graphs refreshed");
                    }
                    Err(err) => {
                        if failing_tenants.insert(tenant.clone()) {
                            tracing::warn!(tenant, error = %err, "cannot refresh org graphs");
                        }
                    }
                }
            }
        }
    }

    fn slot(&self, tenant: &str) -> Option<Arc<Slot>> {
        self.tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tenant)
            .cloned()
    }

    fn insert_slot(&self, tenant: &str) -> Arc<Slot> {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = Arc::clone(tenants.get_or_insert_with(tenant, || {
            let slot = Slot {
                view: Swap::new(TenantView::empty()),
                sources: tokio::sync::Mutex::new(Sources::default()),
            };
            // Counted by entries: a tenant's graphs are sized by its organisation.
            (Arc::new(slot), 0)
        }));
        cache_entries("retrieval_org_views", tenants.len());
        slot
    }

    /// Brings a held tenant to `stored` (or later): patched from the change log when it can be,
    /// else rebuilt.
    async fn refresh(
        &self,
        tenant: &str,
        slot: &Slot,
        stored: i64,
    ) -> Result<Refreshed, ViewError> {
        let mut sources = slot.sources.lock().await;
        if !sources.loaded {
            self.rebuild(tenant, slot, &mut sources).await?;
            return Ok(Refreshed::Rebuilt);
        }
        let view = slot.view.load();
        if sources.dirty {
            self.rebuild(tenant, slot, &mut sources).await?;
            return Ok(Refreshed::Rebuilt);
        }
        if view.version >= stored {
            return Ok(Refreshed::Current);
        }
        let limit = self.settings.max_patch_changes;
        let changes = self
            .store
            .org_changes(tenant, view.version, limit + 1)
            .await?;
        let contiguous = changes
            .iter()
            .zip(view.version + 1..)
            .all(|(change, expected)| change.version == expected);
        let patchable = !changes.is_empty()
            && changes.len() as u64 <= limit
            && contiguous
            && changes.iter().all(|c| {
                [change_kind::HR, change_kind::DOCS, change_kind::ITEM].contains(&c.kind.as_str())
            });
        if !patchable {
            self.rebuild(tenant, slot, &mut sources).await?;
            return Ok(Refreshed::Rebuilt);
        }
        match self.patch(tenant, &view, &mut sources, &changes).await? {
            Some(next) => {
                let count = changes.len();
                slot.view.replace(next);
                Ok(Refreshed::Patched { changes: count })
            }
            None => {
                self.rebuild(tenant, slot, &mut sources).await?;
                Ok(Refreshed::Rebuilt)
            }
        }
    }

    /// The next view from the change log, or `None` when a change cannot be patched in (the
    /// caller rebuilds). Builds aside: nothing is published here.
    async fn patch(
        &self,
        tenant: &str,
        view: &TenantView,
        sources: &mut Sources,
        changes: &[OrgChange],
    ) -> Result<Option<TenantView>, ViewError> {
        // Applied in place, marked dirty until the patched view is complete: a change that does
        // not apply, or an error on the way, makes the next refresh rebuild from the store.
        sources.dirty = true;
        let records = &mut sources.records;
        let mut org: Option<OrgGraph> = None;
        let mut items: Vec<WorkItem> = Vec::new();
        let mut docs = false;
        for change in changes {
            match change.kind.as_str() {
                change_kind::HR => {
                    let Ok(event) = serde_json::from_str::<HrEvent>(&change.body) else {
                        return Ok(None);
                    };
                    if hr::apply(records, &event).is_err() {
                        return Ok(None);
                    }
                    org.get_or_insert_with(|| (*view.org).clone())
                        .patch(records, &event);
                }
                change_kind::ITEM => match serde_json::from_str::<WorkItem>(&change.body) {
                    Ok(item) if item.tenant == tenant => items.push(item),
                    _ => return Ok(None),
                },
                change_kind::DOCS => docs = true,
                _ => return Ok(None),
            }
        }
        let last = changes.last().map_or(view.version, |c| c.version);
        let product = if docs {
            let facts = self.store.load_product_facts(tenant).await?;
            Arc::new(self.product_graph(tenant, last, &facts))
        } else {
            Arc::clone(&view.product)
        };
        let items = if items.is_empty() {
            Arc::clone(&view.items)
        } else {
            let current = Arc::clone(&view.items);
            let owner = tenant.to_owned();
            let built = tokio::task::spawn_blocking(move || upsert_items(&current, &owner, items))
                .await
                .map_err(|err| ViewError::Inconsistent {
                    tenant: tenant.to_owned(),
                    reason: format!("item index build failed: {err}"),
                })?;
            match built {
                Some(index) => Arc::new(index),
                None => return Ok(None),
            }
        };
        sources.dirty = false;
        Ok(Some(TenantView {
            version: last,
            org: org.map_or_else(|| Arc::clone(&view.org), Arc::new),
            product,
            items,
            rebuilt_at: view.rebuilt_at,
        }))
    }

    /// Rebuilds every graph of the tenant from the store and publishes them.
    async fn rebuild(
        &self,
        tenant: &str,
        slot: &Slot,
        sources: &mut Sources,
    ) -> Result<(), ViewError> {
        let started = Instant::now();
        let snapshot = self.store.load_org_snapshot(tenant).await?;
        let version = snapshot.org.version;
        let owned = tenant.to_owned();
        let facts = snapshot.facts;
        let built = tokio::task::spawn_blocking(move || {
            let records = OrgRecords::new(snapshot.org.people, snapshot.org.teams)
                .map_err(|err| err.to_string())?;
            let org = OrgGraph::build(&records);
            let index = ItemIndex::build(snapshot.items).map_err(|err| err.to_string())?;
            Ok::<_, String>((records, org, index))
        })
        .await
        .map_err(|err| ViewError::Inconsistent {
            tenant: owned.clone(),
            reason: format!("graph build failed: {err}"),
        })?;
        let (records, org, index) = built.map_err(|reason| ViewError::Inconsistent {
            tenant: owned.clone(),
            reason,
        })?;
        let product = self.product_graph(tenant, version, &facts);
        sources.records = records;
        sources.loaded = true;
        sources.dirty = false;
        slot.view.replace(TenantView {
            version,
            org: Arc::new(org),
            product: Arc::new(product),
            items: Arc::new(index),
            rebuilt_at: Instant::now(),
        });
        tracing::info!(
            tenant,
            version,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "org graphs rebuilt from the store"
        );
        Ok(())
    }

    /// Builds the product graph, logs the facts it left out, and signals low documentation
    /// coverage.
    fn product_graph(&self, tenant: &str, version: i64, facts: &[Fact]) -> ProductGraph {
        let (product, rejected) = ProductGraph::build(facts);
        if !rejected.is_empty() {
            tracing::warn!(
                tenant,
                rejected = rejected.len(),
                first = %rejected[0].reason,
                "product facts left out of the graph"
            );
        }
        let coverage = product.coverage();
        if coverage.products > 0 && coverage.ratio() < self.settings.coverage_threshold {
            self.signal_coverage(tenant, version, &product);
        }
        product
    }

    /// Reports a `temporal_stale` signal about the tenant's product documentation through the
    /// signal intake. Its idempotency key follows the org version, so every replica that rebuilds
    /// the same graph reports the same signal and it is taken in once.
    fn signal_coverage(&self, tenant: &str, version: i64, product: &ProductGraph) {
        use ontoloop_org::product::EntityKind;
        let coverage = product.coverage();
        let uncovered: Vec<&str> = product
            .entities(EntityKind::Product)
            .into_iter()
            .filter(|id| {
                product.owner_of(id).is_none()
                    || product.description(id).is_none_or(|d| d.trim().is_empty())
            })
            .take(10)
            .collect();
        let detail = format!(
            "documentation coverage {:.2} is below {:.2}: {} of {} products have an owner and a \
             description; lacking: {}",
            coverage.ratio(),
            self.settings.coverage_threshold,
            coverage.covered,
            coverage.products,
            uncovered.join(", ")
        );
        tracing::info!(
            tenant,
            version,
            detail,
            "documentation coverage below threshold"
        );
        let report = SignalReport {
            tenant: tenant.to_owned(),
            reporter: "retrieval".to_owned(),
            kind: SignalType::TemporalStale,
            query: "documentation coverage of the product graph".to_owned(),
            entity: String::new(),
            relationship: String::new(),
            sector: "product-docs".to_owned(),
            agent_id: "retrieval:product-graph".to_owned(),
            idempotency_key: format!("product-docs-coverage-v{version}"),
            detail,
            at: chrono::Utc::now(),
        };
        let ctx = self.ctx.clone();
        // Reporting must not hold up the rebuild; a lost report is made again by the next one.
        tokio::spawn(async move {
            if let Err(err) = report_signal(&ctx, &report).await {
                tracing::warn!(error = %err, "cannot report the coverage signal");
            }
        });
    }
}

/// The tenant's items with `upserts` replacing items of the same id; `None` if they cannot be
/// indexed.
fn upsert_items(current: &ItemIndex, tenant: &str, upserts: Vec<WorkItem>) -> Option<ItemIndex> {
    let mut by_id: HashMap<String, WorkItem> = HashMap::new();
    for item in upserts {
        by_id.insert(item.id.clone(), item);
    }
    let mut items: Vec<WorkItem> = Vec::new();
    if let Some(partition) = current.tenant(tenant) {
        items.reserve(partition.len() + by_id.len());
        for position in 0..partition.len() {
            let Some(item) = u32::try_from(position).ok().and_then(|p| partition.at(p)) else {
                continue;
            };
            match by_id.remove(&item.id) {
                Some(replacement) => items.push(replacement),
                None => items.push(item.clone()),
            }
        }
    }
    let mut added: Vec<WorkItem> = by_id.into_values().collect();
    added.sort_by(|a, b| a.id.cmp(&b.id));
    items.extend(added);
    ItemIndex::build(items).ok()
}
