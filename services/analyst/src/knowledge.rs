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
use ontoloop_readmodel::Snapshot;
use ontoloop_readmodel::asking::Answering;
use ontoloop_runtime::Handled;
use ontoloop_store::{GateMove, GateRecord, GateWrite, KnowledgeCommit, RunRecord, Store};
use tokio::sync::Mutex;
use tracing::Instrument as _;

use crate::gate::{self, Previous};
use crate::org::OrgWriter;
use crate::refusal::{Refusal, already_settled, settle};

/// A message of a batch by its place, its place in its tenant's intake order, and its event
/// when it may join a run (see [`groupable`]).
type Delivered = (usize, i64, Option<EventEnvelope>);

/// Events of one tenant applied in one commit at most (see [`KnowledgeWriter::handle_batch`]).
const GROUP_MAX: usize = 64;

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
#[derive(Clone)]
struct TenantKnowledge {
    version: i64,
    ontology: Option<Arc<Ontology>>,
    /// The ontology as it was set (what the store keeps and a rollback restores).
    ontology_text: Option<String>,
    graph: Graph,
    pages: Vec<PageVersion>,
    /// Each page's newest version, as its place in `pages`: an event finds its page's latest
    /// version without reading every version of every page.
    latest: HashMap<String, usize>,
    log: BTreeMap<String, u64>,
    /// Text bytes of `pages` ([`page_bytes`]), kept as pages are added: weighing the knowledge
    /// after each commit must not read every page (3.5% of the process's CPU at 100,000 pages
    /// under 50 events/s).
    text_bytes: usize,
}

/// Text bytes of one page version, as [`TenantKnowledge::approx_bytes`] counts them.
fn page_bytes(page: &PageVersion) -> usize {
    page.body.len() + page.title.len() + page.source_id.len()
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

    /// What a full read at `at` reads: every page's version in effect, then the versions
    /// announced for later (see [`ontoloop_core::knowledge::versions_to_read`]).
    fn versions_to_read(&self, at: DateTime<Utc>) -> Vec<PageVersion> {
        ontoloop_core::knowledge::versions_to_read(&self.pages, at)
    }

    /// A read model of this knowledge for the gate's replay (BM25 alone ranks passages).
    fn snapshot(&self) -> Result<Snapshot, Refusal> {
        let ontology = self
            .ontology
            .clone()
            .ok_or_else(|| Refusal::Invalid("no ontology to answer with".to_owned()))?;
        Snapshot::from_parts(
            self.version,
            ontology,
            self.graph.clone(),
            self.pages.clone(),
            self.log.clone(),
            None,
        )
        .map_err(|err| Refusal::Passing(format!("build a read model to replay on: {err}")))
    }

    /// Approximate memory: every page version's text, and a fixed share per fact.
    fn approx_bytes(&self) -> usize {
        self.text_bytes + self.graph.facts().len() * FACT_BYTES
    }

    /// Adds `page` as its page's newest version.
    fn add_page(&mut self, page: PageVersion) {
        self.text_bytes += page_bytes(&page);
        self.latest.insert(page.source_id.clone(), self.pages.len());
        self.pages.push(page);
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
    /// How the gate's replay answers (retrieval's settings).
    answering: Answering,
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
            answering: Answering::DEFAULT,
        }
    }

    /// This writer with the gate's replay answering as retrieval answers with `settings`.
    pub fn with_answering(mut self, settings: &ontoloop_settings::RetrievalSettings) -> Self {
        self.answering = Answering::from(settings);
        self
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

    /// Handles a batch of the events queue: one outcome per message, in order. Each tenant's
    /// events are taken in intake order (the intake publishes pushes in flight in whatever order
    /// their writes finish), those without an intake number after them in the order they came;
    /// deliveries of events already applied are done at once, and the tenant's events still
    /// pending below the batch's highest number join it from the intake log
    /// ([`Self::settled_and_earlier`]).
    /// Runs of a tenant's plain changes (see [`groupable`]) apply as one commit, so a busy tenant
    /// pays one transaction, one knowledge version and one read-model catch-up per run instead
    /// of per event. Anything else is handled alone, as [`Self::handle`] handles it, and so is
    /// every event of a run that cannot commit whole (one refused, a redelivery, a concurrent
    /// writer, an earlier event another replica holds): grouping changes the cost, never the
    /// outcome.
    pub async fn handle_batch(&self, messages: &[Message]) -> Vec<Handled> {
        // The batch, then the earlier events it brings along from the intake log.
        let mut all: Vec<Message> = messages.to_vec();
        let mut outcomes: Vec<Option<Handled>> = vec![None; messages.len()];
        // Each tenant's messages; no event for one handled alone.
        let mut tenants: Vec<(String, Vec<Delivered>)> = Vec::new();
        for (at, message) in messages.iter().enumerate() {
            let (tenant, seq, envelope) = match EventEnvelope::parse(&message.body) {
                Ok(envelope) => {
                    let seq = envelope.seq;
                    let tenant = envelope.tenant.clone();
                    (tenant, seq, groupable(&envelope.event).then_some(envelope))
                }
                Err(_) => match owner_of(&message.body) {
                    Some((tenant, seq)) => (tenant, Some(seq), None),
                    None => (String::new(), None, None),
                },
            };
            let order = seq.unwrap_or(i64::MAX);
            match tenants.iter_mut().find(|(name, _)| *name == tenant) {
                Some((_, events)) => events.push((at, order, envelope)),
                None => tenants.push((tenant, vec![(at, order, envelope)])),
            }
        }
        for (tenant, mut events) in tenants {
            self.settled_and_earlier(&tenant, &mut events, &mut all, &mut outcomes)
                .await;
            events.sort_by_key(|(_, order, _)| *order);
            let mut run: Vec<(usize, EventEnvelope)> = Vec::new();
            for (at, _, envelope) in events {
                match envelope {
                    Some(envelope) if run.len() < GROUP_MAX => run.push((at, envelope)),
                    Some(envelope) => {
                        self.handle_run(&tenant, &run, &all, &mut outcomes).await;
                        run = vec![(at, envelope)];
                    }
                    None => {
                        self.handle_run(&tenant, &run, &all, &mut outcomes).await;
                        run.clear();
                        outcomes[at] = Some(self.handle_alone(&all[at]).await);
                    }
                }
            }
            self.handle_run(&tenant, &run, &all, &mut outcomes).await;
        }
        // The events brought along are the intake's, not the batch's: what became of them is
        // logged, and they are taken again when their own delivery comes.
        for (message, outcome) in all.iter().zip(&outcomes).skip(messages.len()) {
            if let Some(handled @ (Handled::Retry(_) | Handled::Reject(_))) = outcome {
                tracing::debug!(id = %message.id, ?handled, "an earlier event brought along did not apply");
            }
        }
        outcomes.truncate(messages.len());
        outcomes
            .into_iter()
            .map(|outcome| {
                outcome.unwrap_or_else(|| Handled::Retry("the event was not handled".to_owned()))
            })
            .collect()
    }

    /// Prepares one tenant's part of a batch in one read of its intake states and one of its
    /// pending events. A delivery of an event already applied is done at once (a redelivery has no
    /// second effect) and leaves `events`. The tenant's events still pending below the batch's
    /// highest number and not in it (published later than the batch's, or lost to a broker)
    /// join `events` from the intake log, added to `all`: runs then commit whole instead of
    /// breaking at every gap. A read that fails leaves everything as it was.
    async fn settled_and_earlier(
        &self,
        tenant: &str,
        events: &mut Vec<Delivered>,
        all: &mut Vec<Message>,
        outcomes: &mut Vec<Option<Handled>>,
    ) {
        let seqs: Vec<i64> = events
            .iter()
            .filter(|(.., envelope)| envelope.is_some())
            .map(|(_, order, _)| *order)
            .filter(|seq| *seq != i64::MAX)
            .collect();
        let Some(&highest) = seqs.iter().max() else {
            return;
        };
        if let Ok(states) = self.store.intake_states(tenant, &seqs).await {
            events.retain(|(at, order, envelope)| {
                let applied = envelope.is_some()
                    && states
                        .get(order)
                        .is_some_and(|state| state == ontoloop_store::intake_state::APPLIED);
                if applied {
                    outcomes[*at] = Some(Handled::Done);
                }
                !applied
            });
        }
        let Ok(pending) = self
            .store
            .intake_pending_before(tenant, highest, EARLIER_BATCH)
            .await
        else {
            return;
        };
        let present: std::collections::HashSet<i64> =
            events.iter().map(|(_, order, _)| *order).collect();
        for (seq, body) in pending {
            if present.contains(&seq) {
                continue;
            }
            let message = ontoloop_runtime::outbox::event_message(tenant, seq, &body);
            let envelope = EventEnvelope::parse(&message.body)
                .ok()
                .filter(|envelope| groupable(&envelope.event));
            events.push((all.len(), seq, envelope));
            all.push(message);
            outcomes.push(None);
        }
    }

    /// Handles a run of one tenant's plain changes: in one commit when it can, else one by one.
    async fn handle_run(
        &self,
        tenant: &str,
        run: &[(usize, EventEnvelope)],
        messages: &[Message],
        outcomes: &mut [Option<Handled>],
    ) {
        let in_order = run
            .iter()
            .filter_map(|(_, envelope)| envelope.seq)
            .collect::<Vec<_>>()
            .windows(2)
            .all(|pair| pair[0] < pair[1]);
        if run.len() > 1 && in_order {
            let first = run.iter().find_map(|(_, envelope)| envelope.seq);
            let waits = match first {
                Some(seq) => self.apply_earlier(tenant, seq).await,
                None => None,
            };
            if let Some(wait) = waits {
                for (at, _) in run {
                    outcomes[*at] = Some(wait.clone());
                }
                return;
            }
            if self.gap_in(tenant, run).await {
                for (at, _) in run {
                    outcomes[*at] = Some(self.handle_alone(&messages[*at]).await);
                }
                return;
            }
            let started = std::time::Instant::now();
            let span = tracing::info_span!(
                "apply_events",
                service = "analyst",
                tenant,
                events = run.len(),
                trace_id = tracing::field::Empty,
            );
            ontoloop_observability::trace::follow_many(
                &span,
                run.iter().map(|(at, _)| &messages[*at].headers),
            );
            let applied = self
                .apply_group(tenant, run, messages)
                .instrument(span)
                .await;
            match applied {
                Ok(()) => {
                    let share = started.elapsed() / u32::try_from(run.len()).unwrap_or(1);
                    for (at, envelope) in run {
                        crate::metrics::event_applied("knowledge", envelope, share, true);
                        outcomes[*at] = Some(Handled::Done);
                    }
                    return;
                }
                Err(reason) => tracing::debug!(
                    tenant,
                    events = run.len(),
                    %reason,
                    "a run of events cannot commit as one; each is applied alone"
                ),
            }
        }
        for (at, _) in run {
            outcomes[*at] = Some(self.handle_alone(&messages[*at]).await);
        }
    }

    /// Whether an event of the tenant not in `run` is pending between the run's numbers (another
    /// replica holds it): the run then cannot commit at once without passing it, so its events
    /// apply one by one, each after the earlier ones. Also true when the intake log cannot be
    /// read.
    async fn gap_in(&self, tenant: &str, run: &[(usize, EventEnvelope)]) -> bool {
        let numbered: Vec<i64> = run
            .iter()
            .filter_map(|(_, envelope)| envelope.seq)
            .collect();
        let Some(&last) = numbered.last() else {
            return false;
        };
        let within = u64::try_from(numbered.len() + 1).unwrap_or(u64::MAX);
        match self
            .store
            .intake_pending_numbers_before(tenant, last + 1, within)
            .await
        {
            Ok(pending) => pending != numbered,
            Err(_) => true,
        }
    }

    /// [`Self::handle`] in a span of the message's own trace.
    async fn handle_alone(&self, message: &Message) -> Handled {
        let span = ontoloop_runtime::consume_span(topics::EVENTS, message);
        self.handle(message).instrument(span).await
    }

    /// Applies a run of one tenant's plain changes (in intake order, nothing earlier pending) as
    /// one commit that settles every one of them. Fails, leaving nothing applied, when any of
    /// them is already settled (or delivered twice in the run) or refused, or the commit does not
    /// go through: the caller then applies them one by one, which settles each as it should.
    async fn apply_group(
        &self,
        tenant: &str,
        run: &[(usize, EventEnvelope)],
        messages: &[Message],
    ) -> Result<(), Refusal> {
        let mut tenants = self.tenants.lock().await;
        // A redelivery in the run (twice in it, already settled or already recorded) makes
        // the run go one event at a time; the intake and the inbox are read once for the run.
        let ids: Vec<String> = run
            .iter()
            .map(|(at, _)| inbox_id(tenant, &messages[*at]))
            .collect();
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        let seqs: Vec<i64> = run.iter().filter_map(|(_, e)| e.seq).collect();
        let states = self.store.intake_states(tenant, &seqs).await?;
        for seq in &seqs {
            match states.get(seq) {
                None => {
                    return Err(Refusal::Invalid(format!(
                        "sequence number {seq} is not an intake event of tenant {tenant}"
                    )));
                }
                Some(state) if state != ontoloop_store::intake_state::PENDING => {
                    return Err(Refusal::Passing("a redelivery in the run".to_owned()));
                }
                Some(_) => {}
            }
        }
        if distinct.len() < ids.len() || self.store.inbox_contains_any(topics::EVENTS, &ids).await?
        {
            return Err(Refusal::Passing("a redelivery in the run".to_owned()));
        }
        let mut knowledge = self.take_out(&mut tenants, tenant).await?;
        let mut commit = KnowledgeCommit::default();
        for (at, envelope) in run {
            let runs = commit.runs.len();
            let before = self.extraction.model_usage();
            step(&mut knowledge, envelope, &mut commit, &self.extraction)?;
            let model = self.extraction.model_usage().since(&before);
            for run in &mut commit.runs[runs..] {
                run.report.model = model;
            }
            if let Some(seq) = envelope.seq {
                commit.settled.push((seq, None));
            }
            commit.messages.push(inbox_record(tenant, &messages[*at]));
        }
        knowledge.version = self
            .store
            .commit_knowledge(tenant, knowledge.version, commit)
            .await?;
        Self::keep(&mut tenants, tenant, knowledge);
        Ok(())
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
    ///
    /// Boxed with its `Send` bound stated: the batch it hands on may come back here.
    fn apply_earlier<'a>(
        &'a self,
        tenant: &'a str,
        seq: i64,
    ) -> std::pin::Pin<Box<dyn Future<Output = Option<Handled>> + Send + 'a>> {
        Box::pin(async move {
            // Numbers at or below `done` were handled here already: one that stays pending
            // anyway is not taken again, so the loop always ends.
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
                let messages: Vec<Message> = pending
                    .iter()
                    .map(|(earlier, body)| {
                        ontoloop_runtime::outbox::event_message(tenant, *earlier, body)
                    })
                    .collect();
                // As a batch from the queue: runs of plain changes commit together.
                let outcomes = self.handle_batch(&messages).await;
                for ((earlier, _), handled) in pending.into_iter().zip(outcomes) {
                    done = earlier;
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
        })
    }

    async fn apply(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Result<(), Refusal> {
        self.apply_judged(envelope, message, None).await
    }

    /// Applies one event; a change the gate judges is let through without a replay when
    /// `approved` names its held record (moved to approved in the same commit).
    async fn apply_judged(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
        approved: Option<&Approval>,
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
        let mut knowledge = self.take_out(&mut tenants, tenant).await?;
        let mut commit = KnowledgeCommit::default();
        // Every extraction of this writer runs under the tenants' lock, so the counters' change
        // across the step is this step's own.
        let before = self.extraction.model_usage();
        if is_rollback(&envelope.event) {
            self.rollback(&mut knowledge, envelope, &mut commit).await?;
        } else if let Some(kind) = gate_kind(&knowledge, &envelope.event).or_else(|| {
            // An approved change applies through the gate's path whatever changed meanwhile, so
            // its record moves to approved in the same commit.
            approved.map(|_| gate::Kind::Rebuild)
        }) {
            knowledge = self
                .gate(knowledge, kind, envelope, approved, &mut commit)
                .await?;
        } else {
            step(&mut knowledge, envelope, &mut commit, &self.extraction)?;
        }
        let model = self.extraction.model_usage().since(&before);
        for run in &mut commit.runs {
            run.report.model = model;
        }
        if let Some(seq) = envelope.seq {
            commit.settled.push((seq, None));
        }
        commit.messages = message
            .map(|message| inbox_record(tenant, message))
            .into_iter()
            .collect();
        // A concurrent writer's commit is a passing refusal: the event is tried again.
        knowledge.version = self
            .store
            .commit_knowledge(tenant, knowledge.version, commit)
            .await?;
        Self::keep(&mut tenants, tenant, knowledge);
        Ok(())
    }

    /// The tenant's knowledge at its stored version, taken out of the cache (or loaded), not
    /// copied: it goes back only after a successful commit, so a failed step or commit can never
    /// leave a half-applied graph behind.
    async fn take_out(
        &self,
        tenants: &mut Lru<TenantKnowledge>,
        tenant: &str,
    ) -> Result<TenantKnowledge, Refusal> {
        let stored_version = self.store.knowledge_version(tenant).await?;
        match tenants
            .remove(tenant)
            .filter(|k| k.version == stored_version)
        {
            Some(knowledge) => Ok(knowledge),
            None => self.load(tenant).await,
        }
    }

    /// Builds `kind` of change asked for by `envelope` in a shadow of `live` (its writes in
    /// `commit`) and judges it: replays the tenant's recent questions against both and lets it go
    /// live (returns the shadow, the record and what the graph held before in `commit`) when no
    /// answer changed without a page change explaining it, or when `approved`; else holds it
    /// (returns `live`, `commit` holding only the record with the answers that differ).
    async fn gate(
        &self,
        live: TenantKnowledge,
        kind: gate::Kind,
        envelope: &EventEnvelope,
        approved: Option<&Approval>,
        commit: &mut KnowledgeCommit,
    ) -> Result<TenantKnowledge, Refusal> {
        let tenant = envelope.tenant.as_str();
        let mut shadow = live.clone();
        step(&mut shadow, envelope, commit, &self.extraction)?;
        let previous = serde_json::to_string(&previous_of(&live, commit))
            .map_err(|err| Refusal::Passing(format!("record what the graph held: {err}")))?;
        let now = Utc::now();
        if let Some(approval) = approved {
            commit.gate = Some(GateWrite::Move(GateMove {
                id: approval.id,
                from: gate::status::HELD.to_owned(),
                to: gate::status::APPROVED.to_owned(),
                by: approval.reviewer.clone(),
                at: now,
                previous: Some(previous),
            }));
            return Ok(shadow);
        }
        let started = std::time::Instant::now();
        let replay = self.replay(tenant, &live, &shadow, now).await?;
        tracing::info!(
            tenant,
            kind = kind.name(),
            replayed = replay.replayed,
            unexplained = replay.unexplained,
            explained = replay.explained,
            ms = started.elapsed().as_millis() as u64,
            "gate replayed the recent questions against the live graph and the shadow"
        );
        // Applied again from this when approved: as a new event, its intake entry settled now.
        let event = serde_json::to_string(&EventEnvelope {
            seq: None,
            accepted: None,
            ..envelope.clone()
        })
        .map_err(|err| Refusal::Passing(format!("record the held event: {err}")))?;
        let differences = serde_json::to_string(&replay.differences)
            .map_err(|err| Refusal::Passing(format!("record the differing answers: {err}")))?;
        let mut record = GateRecord {
            id: 0,
            tenant: tenant.to_owned(),
            kind: kind.name().to_owned(),
            status: gate::status::LIVE.to_owned(),
            event,
            replayed: i32::try_from(replay.replayed).unwrap_or(i32::MAX),
            differences,
            previous: Some(previous),
            created_at: now,
            decided_at: None,
            decided_by: String::new(),
        };
        if replay.passes() {
            commit.gate = Some(GateWrite::Record(record));
            return Ok(shadow);
        }
        tracing::warn!(
            tenant,
            kind = kind.name(),
            unexplained = replay.unexplained,
            "change held at the gate: answers changed that no page change explains"
        );
        record.status = gate::status::HELD.to_owned();
        record.previous = None;
        *commit = KnowledgeCommit {
            gate: Some(GateWrite::Record(record)),
            ..KnowledgeCommit::default()
        };
        Ok(live)
    }

    /// Replays the tenant's recent questions against `live` and `shadow` as of `at`, off the
    /// async workers; nothing to replay is a pass.
    async fn replay(
        &self,
        tenant: &str,
        live: &TenantKnowledge,
        shadow: &TenantKnowledge,
        at: DateTime<Utc>,
    ) -> Result<gate::Replay, Refusal> {
        let questions = self
            .store
            .recent_questions(tenant, ontoloop_readmodel::RECENT_QUESTIONS)
            .await?;
        if questions.is_empty() {
            return Ok(gate::Replay::default());
        }
        let live = live.snapshot()?;
        let shadow = shadow.snapshot()?;
        let answering = self.answering;
        tokio::task::spawn_blocking(move || gate::replay(&live, &shadow, &questions, answering, at))
            .await
            .map_err(|err| Refusal::Passing(format!("the gate's replay failed: {err}")))
    }

    /// Restores what the graph held before the tenant's last change that went live through the
    /// gate (its record moves to rolled back in the same commit): the facts it altered as they
    /// were, the facts it created ended, the entities as they were, the ontology before.
    async fn rollback(
        &self,
        knowledge: &mut TenantKnowledge,
        envelope: &EventEnvelope,
        commit: &mut KnowledgeCommit,
    ) -> Result<(), Refusal> {
        let tenant = envelope.tenant.as_str();
        let Some(record) = self.store.gate_last_live(tenant).await? else {
            return Err(Refusal::Invalid(format!(
                "nothing to roll back: no rebuild, large repair or ontology change of tenant \
                 {tenant} went live through the gate since the last rollback"
            )));
        };
        let previous: Previous = serde_json::from_str(record.previous.as_deref().unwrap_or("{}"))
            .map_err(|err| {
            Refusal::Passing(format!(
                "what the graph held before change {} is unreadable: {err}",
                record.id
            ))
        })?;
        let at = envelope.at;
        if let Some(text) = &previous.ontology {
            let parsed = Ontology::from_json(text).map_err(|err| {
                Refusal::Passing(format!("the ontology before change {}: {err}", record.id))
            })?;
            knowledge.ontology = Some(Arc::new(self.extraction.compile_for(tenant, parsed)));
            knowledge.ontology_text = Some(text.clone());
            commit.ontology = Some(text.clone());
        }
        let mut facts = previous.facts;
        for id in &previous.created_facts {
            if let Some(fact) = knowledge.graph.fact(*id) {
                let mut ended = fact.clone();
                if ended.valid_to.is_none_or(|to| to > at) {
                    ended.valid_to = Some(at);
                }
                facts.push(ended);
            }
        }
        for (page, version) in &previous.log {
            knowledge.log.insert(page.clone(), *version);
            commit.extraction_log.push((page.clone(), *version, at));
        }
        let writes = (facts.len() + previous.entities.len()) as u64;
        knowledge
            .graph
            .patch(&[], previous.entities.clone(), facts.clone());
        commit.entities = previous.entities;
        commit.facts = facts;
        commit.runs.push(RunRecord {
            seq: envelope.seq.unwrap_or_default(),
            mode: MaintenanceMode::Rollback.name().to_owned(),
            report: MaintenanceReport {
                graph_writes: writes,
                pages_total: knowledge.latest.len() as u64,
                ..MaintenanceReport::default()
            },
            at,
        });
        commit.gate = Some(GateWrite::Move(GateMove {
            id: record.id,
            from: record.status,
            to: gate::status::ROLLED_BACK.to_owned(),
            by: String::new(),
            at: Utc::now(),
            previous: None,
        }));
        Ok(())
    }

    /// The tenant's changes the gate judged, newest first, at most `limit`.
    pub async fn gate_changes(&self, tenant: &str, limit: u64) -> Result<Vec<GateRecord>, Refusal> {
        Ok(self.store.gate_changes(tenant, limit).await?)
    }

    /// A reviewer's decision on a held change: `approve` applies it as it was asked for (no
    /// replay; the record moves to approved in the same commit), `discard` throws it away.
    /// Refused when the change is not held (decided already, or another tenant's).
    pub async fn decide_held(
        &self,
        tenant: &str,
        id: i64,
        approve: bool,
        reviewer: &str,
    ) -> Result<(), Refusal> {
        let held = self
            .store
            .gate_change(tenant, id)
            .await?
            .filter(|record| record.status == gate::status::HELD)
            .ok_or_else(|| {
                Refusal::Invalid(format!("change {id} of tenant {tenant} is not held"))
            })?;
        if !approve {
            let moved = self
                .store
                .gate_decide(
                    tenant,
                    &GateMove {
                        id,
                        from: gate::status::HELD.to_owned(),
                        to: gate::status::DISCARDED.to_owned(),
                        by: reviewer.to_owned(),
                        at: Utc::now(),
                        previous: None,
                    },
                )
                .await?;
            return if moved {
                Ok(())
            } else {
                Err(Refusal::Invalid(format!(
                    "change {id} of tenant {tenant} is not held"
                )))
            };
        }
        let envelope: EventEnvelope = serde_json::from_str(&held.event).map_err(|err| {
            Refusal::Passing(format!(
                "the held event of change {id} is unreadable: {err}"
            ))
        })?;
        if envelope.tenant != tenant {
            return Err(Refusal::Invalid(format!(
                "change {id} is not of tenant {tenant}"
            )));
        }
        let approval = Approval {
            id,
            reviewer: reviewer.to_owned(),
        };
        self.apply_judged(&envelope, None, Some(&approval)).await
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
            ontology_text: rows.ontology.clone(),
            graph,
            latest: TenantKnowledge::latest_of(&rows.pages),
            text_bytes: rows.pages.iter().map(page_bytes).sum(),
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

/// A held change a reviewer approved.
pub(crate) struct Approval {
    /// Its record.
    id: i64,
    /// Who approved it.
    reviewer: String,
}

/// Whether `event` may share a commit with its tenant's neighbours (see
/// [`KnowledgeWriter::handle_batch`]): a page version, a deletion, a source's listing or a record
/// value. Never a change the gate may judge or a rollback, a rename (it merges entities, which a
/// commit removes before it writes) or an organisation event (the org writer's).
fn groupable(event: &Event) -> bool {
    matches!(
        event,
        Event::DocUpsert { .. }
            | Event::DocDelete { .. }
            | Event::SourceListing { .. }
            | Event::RecordSet { .. }
    )
}

/// Whether `event` asks for the graph before the last gated change back.
fn is_rollback(event: &Event) -> bool {
    matches!(event, Event::GraphMaintain { mode }
        if MaintenanceMode::from_name(mode) == Some(MaintenanceMode::Rollback))
}

/// The kind of change `event` makes of `knowledge` when it must pass the gate: a rebuild, a
/// repair re-reading at least [`gate::LARGE_REPAIR_SHARE`] of the pages, or a new ontology
/// for a graph that holds facts. `None` for everything else (patches go live at once).
fn gate_kind(knowledge: &TenantKnowledge, event: &Event) -> Option<gate::Kind> {
    knowledge.ontology.as_ref()?;
    match event {
        Event::OntologySet { ontology } => {
            let text = serde_json::to_string(ontology).ok()?;
            (knowledge.ontology_text.as_deref() != Some(text.as_str())
                && !knowledge.graph.facts().is_empty())
            .then_some(gate::Kind::Ontology)
        }
        Event::GraphMaintain { mode } => match MaintenanceMode::from_name(mode)? {
            MaintenanceMode::Rebuild => {
                (!knowledge.latest.is_empty()).then_some(gate::Kind::Rebuild)
            }
            MaintenanceMode::Repair => {
                let current = knowledge.versions_to_read(Utc::now());
                (gate::repair_share(&current, &knowledge.log) >= gate::LARGE_REPAIR_SHARE)
                    .then_some(gate::Kind::Repair)
            }
            _ => None,
        },
        _ => None,
    }
}

/// What `live` held of what `commit` writes: what a rollback of it restores.
fn previous_of(live: &TenantKnowledge, commit: &KnowledgeCommit) -> Previous {
    let mut previous = Previous::of(
        commit.ontology.as_ref().and(live.ontology_text.clone()),
        commit.facts.iter().map(|f| f.id),
        commit
            .entities
            .iter()
            .map(|e| e.id.as_str())
            .chain(commit.removed_entities.iter().map(String::as_str)),
        |id| live.graph.fact(id).cloned(),
        |id| live.graph.entity(id).cloned(),
    );
    // A page the live graph had not read is unread again after a rollback (version 0).
    previous.log = commit
        .extraction_log
        .iter()
        .map(|(page, _, _)| (page.clone(), live.log.get(page).copied().unwrap_or(0)))
        .collect();
    previous
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
        if knowledge.ontology_text.as_deref() == Some(text.as_str()) {
            // The ontology in force, set again: nothing changes.
            return Ok(());
        }
        let reread = knowledge.ontology.is_some() && !knowledge.graph.facts().is_empty();
        if !reread {
            knowledge.graph = Graph::new(&parsed);
        }
        let parsed = Arc::new(parsed);
        knowledge.ontology = Some(Arc::clone(&parsed));
        knowledge.ontology_text = Some(text.clone());
        commit.ontology = Some(text);
        if !reread {
            return Ok(());
        }
        // A new ontology for a graph read under another: every current page is read again
        // under it (behind the gate, see `gate_kind`).
        let mut changes = Changes::default();
        changes.absorb(knowledge.graph.retire_page_facts(at));
        let current = knowledge.versions_to_read(at);
        let report = read_pages(knowledge, &parsed, &current, at, commit, &mut changes);
        record_run(
            knowledge,
            commit,
            &changes,
            MaintenanceMode::Rebuild,
            report,
            seq,
            at,
        );
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
            effective_from,
        } => {
            let confidence = confidence.unwrap_or(1.0);
            // Stored only when later than the capture: a version is never made retroactive.
            let effective_from = effective_from.filter(|e| *e > at);
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
                && latest.effective_from == effective_from
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
                effective_from,
            };
            knowledge.add_page(page.clone());
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
            if mode == MaintenanceMode::Rollback {
                // Restored from the gate's record by the writer (`KnowledgeWriter::rollback`).
                return Err(Refusal::Invalid(
                    "mode: rollback is not a step of the graph".to_owned(),
                ));
            }
            let current = knowledge.versions_to_read(at);
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
    record_run(knowledge, commit, &changes, mode, report, seq, at);
    Ok(())
}

/// Records a run of `mode` that made `changes`, and the entities and facts it wrote, in
/// `commit`.
fn record_run(
    knowledge: &TenantKnowledge,
    commit: &mut KnowledgeCommit,
    changes: &Changes,
    mode: MaintenanceMode,
    report: MaintenanceReport,
    seq: i64,
    at: DateTime<Utc>,
) {
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
        knowledge.add_page(tombstone);
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
