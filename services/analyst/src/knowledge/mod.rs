//! Applying events to a tenant's knowledge: page versions, extraction, deletions (tombstones, and
//! a source's listing reconciled against its pages), system-of-record patches, renames and
//! maintenance runs (each with its reading cost and what the `model` stage did in it). The
//! analyst is the one writer: each event becomes one atomic commit, guarded by the tenant's
//! knowledge version.
//!
//! The gate's path (a change judged by replaying recent questions, held, approved, rolled
//! back) is [`gated`]; the step that applies one event to a tenant's knowledge is [`step`].

mod gated;
mod propose;
mod step;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ontoloop_core::Lru;
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{ExtractionSetup, Graph, Ontology, PageVersion};
use ontoloop_core::topics;
use ontoloop_queue::Message;
use ontoloop_readmodel::Snapshot;
use ontoloop_readmodel::asking::Answering;
use ontoloop_runtime::Handled;
use ontoloop_settings::Settings;
use ontoloop_store::{KnowledgeCommit, Store};
use tokio::sync::Mutex;
use tracing::Instrument as _;

use crate::gate;
use crate::inbox::{inbox_id, inbox_record};
use crate::org::OrgWriter;
use crate::refusal::{Refusal, already_applied, settle};
use crate::supervise::Supervision;

pub(crate) use gated::Approval;
use gated::{gate_kind, is_rollback};
use step::step;

/// A message of a batch by its place, its place in its tenant's intake order, and its event
/// when it may join a run (see [`groupable`]).
type Delivered = (usize, i64, Option<EventEnvelope>);

/// Events of one tenant applied in one commit at most (see [`KnowledgeWriter::handle_batch`]).
const GROUP_MAX: usize = 64;

/// Earlier pending events of a tenant read from the intake log at a time (see
/// [`KnowledgeWriter::apply_earlier`]).
const EARLIER_BATCH: u64 = 256;

/// Estimated bytes a fact takes in the graph, beyond its text.
const FACT_BYTES: usize = 256;

/// A tenant's knowledge as the analyst holds it between events.
#[derive(Clone)]
struct TenantKnowledge {
    version: i64,
    /// The ontology set, else the empty one ([`Ontology::empty`]): a tenant that has only
    /// pushed pages has them stored, indexed and read, and answers passages.
    ontology: Arc<Ontology>,
    /// The ontology as it was set (what the store keeps and a rollback restores); `None` while
    /// none is.
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
        Snapshot::from_parts(
            self.version,
            Arc::clone(&self.ontology),
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
    /// Routes the ontology proposals it drafts (`graph.maintain` mode `propose-ontology`);
    /// `None`: it drafts none ([`Self::proposing`]).
    supervision: Option<Arc<Supervision>>,
    /// How far back failed questions are read for a proposal (`signals.window_secs`).
    signal_window: chrono::Duration,
}

impl KnowledgeWriter {
    /// A writer over `store`; every ontology it parses reads text with `extraction`, counting
    /// what the `model` stage does on counters of its own (they add to the process's too), so
    /// each maintenance run records its own share. It keeps the tenants' knowledge and their HR
    /// records under `settings`' `[cache.knowledge]` and `[cache.hr_records]`, and the gate's
    /// replay answers as retrieval does with its `[retrieval]`.
    pub fn new(store: Store, extraction: ExtractionSetup, settings: &Settings) -> Self {
        Self {
            extraction: extraction.tallied(),
            org: OrgWriter::new(store.clone(), settings.cache.hr_records),
            store,
            tenants: Arc::new(Mutex::new(Lru::new(settings.cache.knowledge))),
            answering: Answering::from(&settings.retrieval),
            supervision: None,
            signal_window: settings.signals.window(),
        }
    }

    /// The writer, drafting ontology proposals on request and routing them through
    /// `supervision` to the review queue.
    pub fn proposing(mut self, supervision: Arc<Supervision>) -> Self {
        self.supervision = Some(supervision);
        self
    }

    /// Commits what a step wrote on `knowledge` (guarded by its version), then keeps it at its
    /// new version; a failed commit leaves it out of the cache, to be loaded again.
    async fn commit(
        &self,
        tenants: &mut Lru<TenantKnowledge>,
        tenant: &str,
        mut knowledge: TenantKnowledge,
        commit: KnowledgeCommit,
    ) -> Result<(), Refusal> {
        knowledge.version = self
            .store
            .commit_knowledge(tenant, knowledge.version, commit)
            .await?;
        Self::keep(tenants, tenant, knowledge);
        Ok(())
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
    /// reads the store). `None` when not held.
    pub async fn peek<T>(
        &self,
        tenant: &str,
        read: impl FnOnce(&Graph, &[PageVersion]) -> T,
    ) -> Option<T> {
        let tenants = self.tenants.lock().await;
        let knowledge = tenants.peek(tenant)?;
        Some(read(&knowledge.graph, &knowledge.pages))
    }

    /// Runs `read` over the tenant's current knowledge (loaded if not cached or out of date),
    /// under the empty ontology while it has set none; `None` when nothing of the tenant is
    /// stored. Fails when the store or the stored knowledge cannot be read.
    pub async fn read<T>(
        &self,
        tenant: &str,
        read: impl FnOnce(&Ontology, &Graph, &[PageVersion]) -> T,
    ) -> Result<Option<T>, Refusal> {
        self.read_held(tenant, |k| read(&k.ontology, &k.graph, &k.pages))
            .await
    }

    /// [`Self::read`] over the whole of what this writer holds of the tenant.
    async fn read_held<T>(
        &self,
        tenant: &str,
        read: impl FnOnce(&TenantKnowledge) -> T,
    ) -> Result<Option<T>, Refusal> {
        let mut tenants = self.tenants.lock().await;
        let stored_version = self.store.knowledge_version(tenant).await?;
        if stored_version == 0 {
            // Nothing stored, and nothing to keep (a reader naming a tenant that does not exist
            // must not grow the cache).
            return Ok(None);
        }
        let cached = tenants
            .get(tenant)
            .is_some_and(|k| k.version == stored_version);
        if !cached {
            let loaded = self.load(tenant).await?;
            Self::keep(&mut tenants, tenant, loaded);
        }
        Ok(tenants.get(tenant).map(read))
    }

    /// The ontology document the tenant set (the `ontology.set` body in force); `None` while it
    /// has set none. Fails when the store cannot be read or the stored text is not JSON.
    pub async fn ontology_document(
        &self,
        tenant: &str,
    ) -> Result<Option<serde_json::Value>, Refusal> {
        let text = self
            .read_held(tenant, |k| k.ontology_text.clone())
            .await?
            .flatten();
        text.map(|text| {
            serde_json::from_str(&text).map_err(|err| {
                Refusal::Passing(format!(
                    "the stored ontology of {tenant} is unreadable: {err}"
                ))
            })
        })
        .transpose()
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
        self.commit(&mut tenants, tenant, knowledge, commit).await
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
        if propose::is_proposal(&envelope.event) {
            return self.propose_on_request(envelope, message).await;
        }
        self.apply_judged(envelope, message, None, None).await
    }

    /// Applies one event; a change the gate judges is let through without a replay when
    /// `approved` names its held record (moved to approved in the same commit). With
    /// `previewed` (an approved ontology proposal's failed questions) the event always passes
    /// the gate, and those questions may change from no answer to an answer.
    async fn apply_judged(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
        approved: Option<&Approval>,
        previewed: Option<&[String]>,
    ) -> Result<(), Refusal> {
        // One writer per tenant inside this process; the store's version check covers others.
        let mut tenants = self.tenants.lock().await;
        let tenant = envelope.tenant.as_str();
        if already_applied(&self.store, tenant, envelope.seq, message).await? {
            // A redelivery of an event already applied has no second effect.
            return Ok(());
        }
        let mut knowledge = self.take_out(&mut tenants, tenant).await?;
        let mut commit = KnowledgeCommit::default();
        // Every extraction of this writer runs under the tenants' lock, so the counters' change
        // across the step is this step's own.
        let before = self.extraction.model_usage();
        if is_rollback(&envelope.event) {
            self.rollback(&mut knowledge, envelope, &mut commit).await?;
        } else if let Some(kind) = gate_kind(&knowledge, &envelope.event)
            .or_else(|| {
                // An approved change applies through the gate's path whatever changed meanwhile,
                // so its record moves to approved in the same commit.
                approved.map(|_| gate::Kind::Rebuild)
            })
            .or_else(|| previewed.map(|_| gate::Kind::Ontology))
        {
            knowledge = self
                .gate(
                    knowledge,
                    kind,
                    envelope,
                    approved,
                    previewed.unwrap_or_default(),
                    &mut commit,
                )
                .await?;
        } else {
            step(&mut knowledge, envelope, &mut commit, &self.extraction)?;
        }
        let model = self.extraction.model_usage().since(&before);
        for run in &mut commit.runs {
            run.report.model = model;
        }
        settled_in(&mut commit, envelope, message);
        // A concurrent writer's commit is a passing refusal: the event is tried again.
        self.commit(&mut tenants, tenant, knowledge, commit).await
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

    async fn load(&self, tenant: &str) -> Result<TenantKnowledge, Refusal> {
        let rows = self.store.load_knowledge(tenant).await?;
        let parsed = match &rows.ontology {
            Some(text) => Ontology::from_json(text).map_err(|err| {
                Refusal::Passing(format!("stored ontology of {tenant} is unreadable: {err}"))
            })?,
            None => Ontology::empty(),
        };
        let ontology = Arc::new(self.extraction.compile_for(tenant, parsed));
        let graph = Graph::from_parts(&ontology, rows.entities, rows.facts);
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

/// The intake sequence number of a body that did not parse as a whole, if it has one.
/// The tenant and sequence number a body that is not a valid event still names, if both.
fn owner_of(body: &[u8]) -> Option<(String, i64)> {
    let value = serde_json::from_slice::<serde_json::Value>(body).ok()?;
    let tenant = value.get("tenant")?.as_str()?.to_owned();
    Some((tenant, value.get("seq")?.as_i64()?))
}

/// Records in `commit` that `envelope` is settled: its intake entry, and the message that
/// carried it (for one without a sequence number), so that a redelivery is known as applied.
fn settled_in(commit: &mut KnowledgeCommit, envelope: &EventEnvelope, message: Option<&Message>) {
    if let Some(seq) = envelope.seq {
        commit.settled.push((seq, None));
    }
    commit.messages = message
        .map(|message| inbox_record(&envelope.tenant, message))
        .into_iter()
        .collect();
}
