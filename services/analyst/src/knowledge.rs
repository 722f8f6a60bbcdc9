//! Applying events to a tenant's knowledge: page versions, extraction, deletions (tombstones, and
//! a source's listing reconciled against its pages), system-of-record patches, renames and
//! maintenance runs (each with its reading cost and what the `model` stage did in it). The
//! analyst is the one writer: each event becomes one atomic commit, guarded by the tenant's
//! knowledge version.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{
    Changes, ExtractionSetup, Graph, MaintenanceMode, MaintenanceReport, Ontology, PageVersion,
    RecordValue, estimate_tokens, pages_to_read,
};
use ontoloop_core::topics;
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::{KnowledgeCommit, RunRecord, Store};
use tokio::sync::Mutex;

use crate::org::OrgWriter;
use crate::refusal::{Refusal, already_settled, settle};

/// Earlier pending events of a tenant read from the intake log at a time (see
/// [`KnowledgeWriter::apply_earlier`]).
const EARLIER_BATCH: u64 = 256;

/// The `[cache.knowledge]` defaults, for a writer built without settings.
const DEFAULT_BUDGET: CacheBudget = CacheBudget {
    max_entries: 1000,
    max_bytes: 1 << 30,
};

/// Estimated bytes a fact takes in the graph, beyond its text.
const FACT_BYTES: usize = 256;

/// A tenant's knowledge as the analyst holds it between events.
struct TenantKnowledge {
    version: i64,
    ontology: Option<Arc<Ontology>>,
    graph: Graph,
    pages: Vec<PageVersion>,
    /// Each page's newest version, as its place in `pages`: an event finds its page's latest
    /// version without reading every version of every page.
    latest: HashMap<String, usize>,
    log: BTreeMap<String, u64>,
}

impl TenantKnowledge {
    /// The newest version of every page, by its place in `pages`.
    fn latest_of(pages: &[PageVersion]) -> HashMap<String, usize> {
        let mut latest: HashMap<String, usize> = HashMap::new();
        for (at, page) in pages.iter().enumerate() {
            let newer = latest
                .get(&page.source_id)
                .is_none_or(|&held| pages[held].version < page.version);
            if newer {
                latest.insert(page.source_id.clone(), at);
            }
        }
        latest
    }

    fn current_pages(&self) -> Vec<PageVersion> {
        ontoloop_core::knowledge::current_versions(&self.pages)
    }

    /// Approximate memory: every page version's text, and a fixed share per fact.
    fn approx_bytes(&self) -> usize {
        let text: usize = self
            .pages
            .iter()
            .map(|p| p.body.len() + p.title.len() + p.source_id.len())
            .sum();
        text + self.graph.facts().len() * FACT_BYTES
    }
}

/// The analyst's writer of knowledge; organisation events it hands to its [`OrgWriter`].
#[derive(Clone)]
pub struct KnowledgeWriter {
    store: Store,
    extraction: ExtractionSetup,
    /// Each tenant's knowledge between events, under `[cache.knowledge]`: all of it is in the
    /// store, so an evicted tenant is loaded again on its next event or read.
    tenants: Arc<Mutex<Lru<TenantKnowledge>>>,
    org: OrgWriter,
}

impl KnowledgeWriter {
    /// A writer over `store`; every ontology it parses reads text with `extraction`, counting
    /// what the `model` stage does on counters of its own (they add to the process's too), so
    /// each maintenance run records its own share.
    pub fn new(store: Store, extraction: ExtractionSetup) -> Self {
        Self {
            extraction: extraction.tallied(),
            org: OrgWriter::new(store.clone()),
            store,
            tenants: Arc::new(Mutex::new(Lru::new(DEFAULT_BUDGET))),
        }
    }

    /// This writer with the tenants' knowledge kept under `knowledge` and their HR records
    /// under `records` (the `[cache]` settings), instead of the defaults.
    pub fn with_budgets(mut self, knowledge: CacheBudget, records: CacheBudget) -> Self {
        self.tenants = Arc::new(Mutex::new(Lru::new(knowledge)));
        self.org = OrgWriter::new(self.store.clone()).with_budget(records);
        self
    }

    /// Keeps a tenant's knowledge under the budget and reports the cache's size.
    fn keep(tenants: &mut Lru<TenantKnowledge>, tenant: &str, knowledge: TenantKnowledge) {
        let bytes = knowledge.approx_bytes();
        tenants.insert(tenant, knowledge, bytes);
        crate::metrics::cache_entries("analyst_knowledge", tenants.len());
    }

    /// Loads ahead the HR records of tenants whose organisation changed without this writer
    /// (see [`OrgWriter::warm`]).
    pub async fn warm_org(&self) {
        self.org.warm().await;
    }

    /// Applies an event the analyst itself decided on (a healing action), as one commit.
    pub async fn apply_own(&self, envelope: &EventEnvelope) -> Result<(), Refusal> {
        envelope
            .event
            .validate()
            .map_err(|err| Refusal::Invalid(err.to_string()))?;
        self.apply(envelope, None).await
    }

    /// Tenants whose knowledge this writer holds.
    pub async fn tenants(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tenants
            .lock()
            .await
            .iter()
            .map(|(name, _)| name.to_owned())
            .collect();
        names.sort();
        names
    }

    /// Runs `read` over the tenant's knowledge as this writer holds it now, if it holds it:
    /// never loads, reloads or marks it used (for gauges, so a scrape neither evicts a tenant nor
    /// reads the store). `None` when not held or without an ontology.
    pub async fn peek<T>(
        &self,
        tenant: &str,
        read: impl FnOnce(&Graph, &[PageVersion]) -> T,
    ) -> Option<T> {
        let tenants = self.tenants.lock().await;
        let knowledge = tenants.peek(tenant)?;
        knowledge.ontology.as_ref()?;
        Some(read(&knowledge.graph, &knowledge.pages))
    }

    /// Runs `read` over the tenant's current knowledge (loaded if not cached or out of date);
    /// `None` when the tenant has no ontology yet. Fails when the store or the stored knowledge
    /// cannot be read.
    pub async fn read<T>(
        &self,
        tenant: &str,
        read: impl FnOnce(&Ontology, &Graph, &[PageVersion]) -> T,
    ) -> Result<Option<T>, Refusal> {
        let mut tenants = self.tenants.lock().await;
        let stored_version = self.store.knowledge_version(tenant).await?;
        if stored_version == 0 {
            // Nothing stored: no ontology, and nothing to keep (a reader naming a tenant that
            // does not exist must not grow the cache).
            return Ok(None);
        }
        let cached = tenants
            .get(tenant)
            .is_some_and(|k| k.version == stored_version);
        if !cached {
            let loaded = self.load(tenant).await?;
            Self::keep(&mut tenants, tenant, loaded);
        }
        let Some(knowledge) = tenants.get(tenant) else {
            return Ok(None);
        };
        Ok(knowledge
            .ontology
            .as_ref()
            .map(|ontology| read(ontology, &knowledge.graph, &knowledge.pages)))
    }

    /// Handles one message of the events queue.
    pub async fn handle(&self, message: &Message) -> Handled {
        let envelope = match EventEnvelope::parse(&message.body) {
            Ok(envelope) => envelope,
            Err(reason) => {
                let refused = Refusal::Invalid(format!("invalid event: {reason}"));
                // Its own tenant's intake entry, if the body names both, is marked failed.
                let (tenant, seq) = match owner_of(&message.body) {
                    Some((tenant, seq)) => (tenant, Some(seq)),
                    None => (String::new(), None),
                };
                return settle(&self.store, &tenant, seq, Err(refused)).await;
            }
        };
        if let Some(seq) = envelope.seq
            && let Some(wait) = self.apply_earlier(&envelope.tenant, seq).await
        {
            return wait;
        }
        self.handle_envelope(&envelope, Some(message)).await
    }

    /// Applies one event (org or knowledge) and settles its intake entry.
    #[tracing::instrument(
        name = "apply_event",
        skip_all,
        fields(service = "analyst", tenant = %envelope.tenant, seq = ?envelope.seq, kind = envelope.event.kind())
    )]
    async fn handle_envelope(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Handled {
        if let Some(handled) = self.org.handle(envelope, message).await {
            return handled;
        }
        let started = std::time::Instant::now();
        let applied = self.apply(envelope, message).await;
        crate::metrics::event_applied("knowledge", envelope, started.elapsed(), applied.is_ok());
        settle(&self.store, &envelope.tenant, envelope.seq, applied).await
    }

    /// Applies the tenant's events still pending with a number below `seq`, lowest first, read
    /// from the intake log: events apply in intake order whichever replica or delivery brings
    /// them, so page versions and record values follow the order of intake. An earlier event a
    /// replica is applying at the same moment is settled once (the knowledge or org version
    /// guard makes the second commit a redelivery). `None` when nothing earlier is left pending;
    /// otherwise what to do with the event at hand: it waits (retried) while an earlier one
    /// cannot apply yet. An earlier event that can never apply is settled failed with its reason
    /// and does not hold the later ones back.
    async fn apply_earlier(&self, tenant: &str, seq: i64) -> Option<Handled> {
        // Numbers at or below `done` were handled here already: one that stays pending anyway is
        // not taken again, so the loop always ends.
        let mut done = 0;
        loop {
            let pending = match self
                .store
                .intake_pending_before(tenant, seq, EARLIER_BATCH)
                .await
            {
                Ok(pending) => pending,
                Err(err) => {
                    return Some(Handled::Retry(format!(
                        "read the earlier pending events of {tenant}: {err}"
                    )));
                }
            };
            let pending: Vec<_> = pending.into_iter().filter(|(n, _)| *n > done).collect();
            if pending.is_empty() {
                return None;
            }
            for (earlier, body) in pending {
                done = earlier;
                let message = ontoloop_runtime::outbox::event_message(tenant, earlier, &body);
                let handled = match EventEnvelope::parse(&message.body) {
                    Ok(envelope) => self.handle_envelope(&envelope, Some(&message)).await,
                    Err(reason) => {
                        let refused = Refusal::Invalid(format!("invalid event: {reason}"));
                        settle(&self.store, tenant, Some(earlier), Err(refused)).await
                    }
                };
                match handled {
                    Handled::Done => {}
                    Handled::Reject(reason) => tracing::warn!(
                        tenant,
                        seq = earlier,
                        reason,
                        "earlier event refused while applying events in order"
                    ),
                    wait => {
                        tracing::debug!(
                            tenant,
                            seq,
                            earlier,
                            "event waits for an earlier one of its tenant"
                        );
                        return Some(wait);
                    }
                }
            }
        }
    }

    async fn apply(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Result<(), Refusal> {
        // One writer per tenant inside this process; the store's version check covers others.
        let mut tenants = self.tenants.lock().await;
        let tenant = envelope.tenant.as_str();
        if already_settled(&self.store, tenant, envelope.seq).await? {
            // A redelivery of an event already settled has no second effect.
            return Ok(());
        }
        if let Some(message) = message
            && self
                .store
                .inbox_contains(topics::EVENTS, &inbox_id(tenant, message))
                .await?
        {
            // The same for a message that came straight from an integration, without a sequence
            // number: its id was recorded in the commit that applied it.
            return Ok(());
        }
        // The cached knowledge is taken out, not copied: it goes back only after a successful
        // commit, so a failed step or commit can never leave a half-applied graph behind.
        let stored_version = self.store.knowledge_version(tenant).await?;
        let mut knowledge = match tenants
            .remove(tenant)
            .filter(|k| k.version == stored_version)
        {
            Some(knowledge) => knowledge,
            None => self.load(tenant).await?,
        };
        let mut commit = KnowledgeCommit::default();
        // Every extraction of this writer runs under the tenants' lock, so the counters' change
        // across the step is this step's own.
        let before = self.extraction.model_usage();
        step(&mut knowledge, envelope, &mut commit, &self.extraction)?;
        let model = self.extraction.model_usage().since(&before);
        for run in &mut commit.runs {
            run.report.model = model;
        }
        if let Some(seq) = envelope.seq {
            commit.settled.push((seq, None));
        }
        commit.message = message.map(|message| inbox_record(tenant, message));
        // A concurrent writer's commit is a passing refusal: the event is tried again.
        knowledge.version = self
            .store
            .commit_knowledge(tenant, knowledge.version, commit)
            .await?;
        Self::keep(&mut tenants, tenant, knowledge);
        Ok(())
    }

    async fn load(&self, tenant: &str) -> Result<TenantKnowledge, Refusal> {
        let rows = self.store.load_knowledge(tenant).await?;
        let ontology = match &rows.ontology {
            Some(text) => {
                let parsed = Ontology::from_json(text).map_err(|err| {
                    Refusal::Passing(format!("stored ontology of {tenant} is unreadable: {err}"))
                })?;
                Some(Arc::new(self.extraction.compile_for(tenant, parsed)))
            }
            None => None,
        };
        let graph = match &ontology {
            Some(ontology) => Graph::from_parts(ontology, rows.entities, rows.facts),
            None => Graph::default(),
        };
        Ok(TenantKnowledge {
            version: rows.version,
            ontology,
            graph,
            latest: TenantKnowledge::latest_of(&rows.pages),
            pages: rows.pages,
            log: rows.extraction_log,
        })
    }
}

/// An events-queue message of `tenant` as the commit that applies it records it (topic, id,
/// body), so a redelivery has no second effect. Shared with the org writer.
pub(crate) fn inbox_record(tenant: &str, message: &Message) -> (String, String, String) {
    (
        topics::EVENTS.to_owned(),
        inbox_id(tenant, message),
        String::from_utf8_lossy(&message.body).into_owned(),
    )
}

/// The id an events-queue message is recorded under in the inbox: its tenant and its id together
/// ([`ontoloop_queue::scoped_id`]), so two tenants' integrations that happen to choose the same
/// message id never make one of them look like a redelivery of the other.
pub(crate) fn inbox_id(tenant: &str, message: &Message) -> String {
    ontoloop_queue::scoped_id("evt", tenant, &message.id)
}

/// Applies one event to `knowledge`, describing the writes in `commit`.
fn step(
    knowledge: &mut TenantKnowledge,
    envelope: &EventEnvelope,
    commit: &mut KnowledgeCommit,
    extraction: &ExtractionSetup,
) -> Result<(), Refusal> {
    let at = envelope.at;
    let seq = envelope.seq.unwrap_or_default();
    if let Event::OntologySet { ontology } = &envelope.event {
        let parsed = Ontology::from_value(ontology.clone())
            .map_err(|err| Refusal::Invalid(err.to_string()))?;
        let parsed = extraction.compile_for(&envelope.tenant, parsed);
        let text =
            serde_json::to_string(ontology).map_err(|err| Refusal::Invalid(err.to_string()))?;
        if knowledge.ontology.is_none() || knowledge.graph.facts().is_empty() {
            knowledge.graph = Graph::new(&parsed);
        }
        knowledge.ontology = Some(Arc::new(parsed));
        commit.ontology = Some(text);
        return Ok(());
    }
    let ontology = knowledge.ontology.clone().ok_or_else(|| {
        Refusal::Invalid(format!(
            "tenant {} has no ontology yet: send an ontology.set event first",
            envelope.tenant
        ))
    })?;
    let mut changes = Changes::default();
    let (mode, report) = match &envelope.event {
        Event::DocUpsert {
            doc_id,
            title,
            origin,
            body,
            acl,
            hold,
            confidence,
        } => {
            let confidence = confidence.unwrap_or(1.0);
            let latest = knowledge
                .latest
                .get(doc_id)
                .and_then(|&at| knowledge.pages.get(at))
                .cloned();
            if let Some(latest) = &latest
                && !latest.deleted
                && latest.body == *body
                && latest.title == *title
                && latest.origin == *origin
                && latest.acl == *acl
                && latest.confidence == confidence
            {
                // An unchanged body is not a new version.
                return Ok(());
            }
            let page = PageVersion {
                source_id: doc_id.clone(),
                version: latest.map_or(1, |p| p.version + 1),
                title: title.clone(),
                origin: origin.clone(),
                body: body.clone(),
                updated_at: at,
                acl: acl.clone(),
                confidence,
                deleted: false,
            };
            knowledge.pages.push(page.clone());
            knowledge
                .latest
                .insert(doc_id.clone(), knowledge.pages.len() - 1);
            commit.pages.push(page.clone());
            if *hold {
                return Ok(());
            }
            let report = read_pages(knowledge, &ontology, &[page], at, commit, &mut changes);
            (MaintenanceMode::Patch, report)
        }
        Event::DocDelete { doc_id } => {
            let gone = [doc_id.clone()];
            delete_pages(knowledge, &ontology, &gone, at, commit, &mut changes);
            (MaintenanceMode::Patch, MaintenanceReport::default())
        }
        Event::SourceListing { origin, doc_ids } => {
            let listed: std::collections::HashSet<&str> =
                doc_ids.iter().map(String::as_str).collect();
            let mut gone: Vec<String> = knowledge
                .latest
                .values()
                .filter_map(|&at| knowledge.pages.get(at))
                .filter(|page| {
                    !page.deleted
                        && page.origin == *origin
                        && !listed.contains(page.source_id.as_str())
                })
                .map(|page| page.source_id.clone())
                .collect();
            gone.sort();
            delete_pages(knowledge, &ontology, &gone, at, commit, &mut changes);
            (MaintenanceMode::Patch, MaintenanceReport::default())
        }
        Event::RecordSet {
            source,
            entity,
            predicate,
            value,
            effective_from,
            scope,
        } => {
            if ontology.predicate(predicate).is_none() {
                return Err(Refusal::Invalid(format!(
                    "predicate: {predicate:?} is not in the ontology"
                )));
            }
            changes.absorb(knowledge.graph.apply_record(
                &ontology,
                &RecordValue {
                    source,
                    sequence: u64::try_from(seq).unwrap_or_default(),
                    entity,
                    predicate,
                    value,
                    at,
                    effective_from: *effective_from,
                    scope,
                },
            ));
            (MaintenanceMode::RecordPatch, MaintenanceReport::default())
        }
        Event::RecordRename { old, new, .. } => {
            knowledge.graph.rename(old, new, &mut changes);
            (MaintenanceMode::RecordPatch, MaintenanceReport::default())
        }
        Event::GraphMaintain { mode } => {
            let mode = MaintenanceMode::from_name(mode)
                .ok_or_else(|| Refusal::Invalid(format!("mode: {mode:?} is unknown")))?;
            let current = knowledge.current_pages();
            if mode == MaintenanceMode::Rebuild {
                changes.absorb(knowledge.graph.retire_page_facts(at));
            }
            let to_read: Vec<PageVersion> = pages_to_read(mode, &current, &knowledge.log)
                .into_iter()
                .cloned()
                .collect();
            let report = read_pages(knowledge, &ontology, &to_read, at, commit, &mut changes);
            (mode, report)
        }
        Event::OntologySet { .. } => return Ok(()),
        org => {
            return Err(Refusal::Invalid(format!(
                "{} is applied by the org writer",
                org.kind()
            )));
        }
    };
    let report = MaintenanceReport {
        graph_writes: changes.writes,
        // Counted from the index of latest versions, not by reading every page per event.
        pages_total: knowledge.latest.len() as u64,
        ..report
    };
    commit.runs.push(RunRecord {
        seq,
        mode: mode.name().to_owned(),
        report,
        at,
    });
    for id in &changes.entities {
        if let Some(entity) = knowledge.graph.entity(id) {
            commit.entities.push(entity.clone());
        }
    }
    commit
        .removed_entities
        .extend(changes.merged.iter().map(|(gone, _)| gone.clone()));
    for id in &changes.facts {
        if let Some(fact) = knowledge.graph.fact(*id) {
            commit.facts.push(fact.clone());
        }
    }
    Ok(())
}

/// Deletes those of the pages `doc_ids` that are live: a tombstone version of each is stored and
/// read, which ends every fact read from the page at `at`. Nothing is read by a model, so nothing
/// is counted.
fn delete_pages(
    knowledge: &mut TenantKnowledge,
    ontology: &Ontology,
    doc_ids: &[String],
    at: DateTime<Utc>,
    commit: &mut KnowledgeCommit,
    changes: &mut Changes,
) {
    for doc_id in doc_ids {
        let Some(latest) = knowledge
            .latest
            .get(doc_id)
            .and_then(|&at| knowledge.pages.get(at))
            .filter(|page| !page.deleted)
        else {
            continue;
        };
        let tombstone = PageVersion::tombstone(latest, at);
        changes.absorb(knowledge.graph.apply_page(ontology, &tombstone, at));
        knowledge
            .log
            .insert(tombstone.source_id.clone(), tombstone.version);
        commit
            .extraction_log
            .push((tombstone.source_id.clone(), tombstone.version, at));
        commit.pages.push(tombstone.clone());
        knowledge.pages.push(tombstone);
        knowledge
            .latest
            .insert(doc_id.clone(), knowledge.pages.len() - 1);
    }
}

/// Extracts `pages` into the graph and the extraction log; returns the reading cost.
fn read_pages(
    knowledge: &mut TenantKnowledge,
    ontology: &Ontology,
    pages: &[PageVersion],
    at: DateTime<Utc>,
    commit: &mut KnowledgeCommit,
    changes: &mut Changes,
) -> MaintenanceReport {
    let mut report = MaintenanceReport::default();
    for page in pages {
        changes.absorb(knowledge.graph.apply_page(ontology, page, at));
        knowledge.log.insert(page.source_id.clone(), page.version);
        commit
            .extraction_log
            .push((page.source_id.clone(), page.version, at));
        report.pages_read += 1;
        report.est_tokens += estimate_tokens(&page.title) + estimate_tokens(&page.body);
    }
    report
}

/// The intake sequence number of a body that did not parse as a whole, if it has one.
/// The tenant and sequence number a body that is not a valid event still names, if both.
fn owner_of(body: &[u8]) -> Option<(String, i64)> {
    let value = serde_json::from_slice::<serde_json::Value>(body).ok()?;
    let tenant = value.get("tenant")?.as_str()?.to_owned();
    Some((tenant, value.get("seq")?.as_i64()?))
}
