//! The writer's side of ontology proposals ([`crate::grow`]): drafting one from the tenant's
//! knowledge and its failed questions and routing it to the review queue (on a `graph.maintain`
//! event of mode `propose-ontology`, which is settled with a maintenance run of that mode, or
//! for a missing relationship type pattern), and setting an approved one through the gate.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{MaintenanceMode, MaintenanceReport};
use ontoloop_queue::Message;
use ontoloop_store::{KnowledgeCommit, UpdateRecord};

use crate::grow::{self, Corpus, Trigger};
use crate::refusal::{Refusal, already_applied};
use crate::routing::route_and_store;

use super::KnowledgeWriter;

/// Distinct failed questions a proposal on request reads, at most (newest first).
const MAX_FAILED_QUESTIONS: usize = 1_000;

/// A proposal drafted and routed.
#[derive(Debug, Clone)]
pub(crate) struct Proposed {
    /// The update as stored (or as it was stored before, when it is not new).
    pub update: UpdateRecord,
    /// Whether it is new (the same predicates proposed again are the same update).
    pub fresh: bool,
}

/// Whether `event` asks for an ontology proposal.
pub(super) fn is_proposal(event: &Event) -> bool {
    matches!(event, Event::GraphMaintain { mode }
        if MaintenanceMode::from_name(mode) == Some(MaintenanceMode::ProposeOntology))
}

impl KnowledgeWriter {
    /// Drafts the tenant's ontology proposal from its current pages and `failed` questions and
    /// routes it to the review queue (an ontology change always goes to a human). `None` when
    /// the pages give nothing the ontology lacks (for a pattern: nothing that answers one of its
    /// questions) or nothing of the tenant is stored. The draft runs off the async workers,
    /// without the writer's lock held.
    pub(crate) async fn propose_ontology(
        &self,
        tenant: &str,
        trigger: Trigger,
        failed: Vec<String>,
    ) -> Result<Option<Proposed>, Refusal> {
        let Some(supervision) = self.supervision.clone() else {
            return Err(Refusal::Invalid(
                "this analyst does not draft ontology proposals".to_owned(),
            ));
        };
        let held = self
            .read(tenant, |ontology, _, pages| {
                let predicates: BTreeSet<String> = ontology
                    .predicates()
                    .iter()
                    .map(|p| p.name.clone())
                    .collect();
                (
                    predicates,
                    ontology.type_nouns(),
                    grow::current_pages(pages),
                )
            })
            .await?;
        let Some((predicates, types, pages)) = held else {
            return Ok(None);
        };
        let encoder = self.extraction.encoder().cloned();
        let owned = tenant.to_owned();
        let update = tokio::task::spawn_blocking(move || {
            let corpus = Corpus {
                predicates: &predicates,
                types: &types,
                pages: &pages,
            };
            grow::draft(
                &owned,
                &corpus,
                &failed,
                &trigger,
                encoder.as_deref(),
                Utc::now(),
            )
        })
        .await
        .map_err(|err| Refusal::Passing(format!("drafting the proposal failed: {err}")))?;
        let Some(update) = update else {
            return Ok(None);
        };
        let (fresh, update) = route_and_store(&self.store, &supervision, update)
            .await
            .map_err(|err| Refusal::Passing(err.to_string()))?;
        if fresh {
            tracing::info!(
                tenant,
                update = %update.id,
                predicates = %update.predicate,
                impact_radius = update.impact_radius,
                reason = %update.reason,
                "drafted an ontology proposal"
            );
        }
        Ok(Some(Proposed { update, fresh }))
    }

    /// A `graph.maintain` event of mode `propose-ontology`: a proposal from every current page
    /// and the failed questions of the signal window, queued for review; then the event is
    /// settled with a maintenance run of that mode (pages read: the pages the proposal read). A
    /// redelivery proposes nothing again. The proposal is stored before the event settles, so
    /// a crash between the two proposes again on redelivery (the same predicates are the same
    /// update).
    pub(super) async fn propose_on_request(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Result<(), Refusal> {
        let tenant = envelope.tenant.as_str();
        if already_applied(&self.store, tenant, envelope.seq, message).await? {
            return Ok(());
        }
        let failed = self.failed_questions(tenant).await?;
        let proposed = self
            .propose_ontology(tenant, Trigger::Request, failed)
            .await?;
        let mut tenants = self.tenants.lock().await;
        let knowledge = self.take_out(&mut tenants, tenant).await?;
        let read = grow::current_pages(&knowledge.pages).len() as u64;
        let mut commit = KnowledgeCommit::default();
        let report = MaintenanceReport {
            pages_read: read,
            ..MaintenanceReport::default()
        };
        let seq = envelope.seq.unwrap_or_default();
        let mode = MaintenanceMode::ProposeOntology;
        super::step::push_run(&knowledge, &mut commit, mode, report, seq, envelope.at);
        super::settled_in(&mut commit, envelope, message);
        match &proposed {
            Some(p) => {
                tracing::info!(tenant, update = %p.update.id, fresh = p.fresh, "ontology proposal asked for")
            }
            None => tracing::info!(
                tenant,
                "ontology proposal asked for: the pages give nothing the ontology lacks"
            ),
        }
        self.commit(&mut tenants, tenant, knowledge, commit).await
    }

    /// Sets an approved ontology proposal's ontology (an `ontology.set` event of the analyst's
    /// own) through the gate, always: `previewed` are the failed questions its preview said it
    /// answers. Held when any other answer changes; the record says which.
    pub async fn apply_proposal(
        &self,
        envelope: &EventEnvelope,
        previewed: &[String],
    ) -> Result<(), Refusal> {
        envelope
            .event
            .validate()
            .map_err(|err| Refusal::Invalid(err.to_string()))?;
        self.apply_judged(envelope, None, None, Some(previewed))
            .await
    }

    /// The distinct questions of the tenant's signals in the window, newest first, at most
    /// [`MAX_FAILED_QUESTIONS`].
    pub async fn failed_questions(&self, tenant: &str) -> Result<Vec<String>, Refusal> {
        let signals = self.window_signals(tenant).await?;
        let mut questions: Vec<String> = Vec::new();
        for (_, query) in signals.into_iter().rev() {
            if questions.len() >= MAX_FAILED_QUESTIONS {
                break;
            }
            if !questions.contains(&query) {
                questions.push(query);
            }
        }
        Ok(questions)
    }

    /// When the first signal in the window reporting one of `questions` failed arrived; `None`
    /// when none did (or the signals cannot be read).
    pub async fn first_failed(&self, tenant: &str, questions: &[String]) -> Option<DateTime<Utc>> {
        let signals = self.window_signals(tenant).await.ok()?;
        signals
            .into_iter()
            .filter(|(_, query)| questions.contains(query))
            .map(|(at, _)| at)
            .min()
    }

    /// The tenant's signals in the window that report a question, as (received, question),
    /// oldest first.
    async fn window_signals(&self, tenant: &str) -> Result<Vec<(DateTime<Utc>, String)>, Refusal> {
        let rows = self
            .store
            .signals_in_window(
                tenant,
                Utc::now() - self.signal_window,
                ontoloop_store::MAX_WINDOW_SIGNALS,
            )
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let body = row.body?;
                let (_, signal, _) = crate::patterns::parse_signal(body.as_bytes()).ok()?;
                let query = signal.query.trim();
                (!query.is_empty()).then(|| (row.received_at, query.to_owned()))
            })
            .collect())
    }
}
