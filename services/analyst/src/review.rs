//! Proposed graph updates from submission to the graph: the supervisor routes each new proposal
//! to the review queue or applies it automatically (logged); reviewers' decisions are recorded
//! durably and an approved update is applied exactly once, however often the decision is sent.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::grow::Proposal as OntologyProposal;
use ontoloop_core::supervisor::Verdict;
use ontoloop_core::{During, ErrorCode, ServiceError};
use ontoloop_store::{
    DecideOutcome, DecisionRecord, PatternStatus, Store, StoreError, UpdateRecord, update_status,
};

use crate::grow;
use crate::knowledge::KnowledgeWriter;
use crate::refusal::Refusal;
use crate::routing::{category, route_and_store};
use crate::supervise::Supervision;

/// A reviewer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Apply as proposed.
    Approve,
    /// Never apply.
    Reject,
    /// Apply a reviewer's value instead.
    Modify,
    /// Back of the queue.
    Defer,
}

impl Decision {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
            Decision::Modify => "modify",
            Decision::Defer => "defer",
        }
    }

    /// From a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "approve" => Some(Decision::Approve),
            "reject" => Some(Decision::Reject),
            "modify" => Some(Decision::Modify),
            "defer" => Some(Decision::Defer),
            _ => None,
        }
    }
}

/// Why a decision could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No such update for the tenant.
    #[error("no update {0} in this tenant")]
    NotFound(String),
    /// The request is wrong.
    #[error("{field}: {reason}")]
    Invalid {
        /// Field at fault.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The store could not be read or written; try again.
    #[error(transparent)]
    Store(#[from] During<StoreError>),
    /// The graph could not be read or the update applied to it. An approval stays recorded and
    /// its apply is tried again, so this is a passing failure too, whatever the refusal.
    #[error(transparent)]
    Graph(During<Refusal>),
}

impl ServiceError for ReviewError {
    fn error_code(&self) -> ErrorCode {
        match self {
            ReviewError::NotFound(_) => ErrorCode::NotFound,
            ReviewError::Invalid { .. } => ErrorCode::InvalidArgument,
            ReviewError::Store(err) => err.error_code(),
            ReviewError::Graph(_) => ErrorCode::Unavailable,
        }
    }
}

/// What a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// This call applied the update to the graph.
    pub applied: bool,
    /// The update had been decided before; nothing changed.
    pub already_decided: bool,
}

/// The review side of the loop.
#[derive(Clone)]
pub struct Reviews {
    store: Store,
    writer: KnowledgeWriter,
    supervision: Arc<Supervision>,
}

impl Reviews {
    /// Reviews over `store`, applying through `writer`.
    pub fn new(store: Store, writer: KnowledgeWriter, supervision: Arc<Supervision>) -> Self {
        Self {
            store,
            writer,
            supervision,
        }
    }

    /// Routes a new proposal: stores it pending review, or approves and applies it at once.
    /// A proposal whose id exists already is left alone. Returns whether it was new.
    pub async fn submit(&self, update: UpdateRecord) -> Result<bool, ReviewError> {
        let (fresh, update) = route_and_store(&self.store, &self.supervision, update).await?;
        if fresh && update.status == update_status::APPROVED {
            tracing::info!(update = %update.id, entity = %update.entity, predicate = %update.predicate, value = %update.after, "applying an update without review (not sampled)");
            self.apply(&update).await?;
        }
        Ok(fresh)
    }

    /// Records a reviewer's decision. Approve and modify apply the update; a decision on an
    /// update already decided changes nothing and says so.
    pub async fn decide(
        &self,
        tenant: &str,
        reviewer: &str,
        update_id: &str,
        decision: Decision,
        new_value: &str,
        note: &str,
    ) -> Result<Decided, ReviewError> {
        if update_id.trim().is_empty() {
            return Err(ReviewError::Invalid {
                field: "update_id",
                reason: "is required".to_owned(),
            });
        }
        if decision == Decision::Modify && new_value.trim().is_empty() {
            return Err(ReviewError::Invalid {
                field: "new_value",
                reason: "is required to modify an update".to_owned(),
            });
        }
        if matches!(decision, Decision::Approve | Decision::Modify)
            && let Some(update) = self
                .store
                .update(tenant, update_id.trim())
                .await
                .map_err(|err| During::new("read the update", err))?
            && grow::is_ontology(&update)
            && update.status == update_status::PENDING
        {
            // An ontology that would not load is refused now, with its reason, rather than
            // approved and then failing at every apply.
            let value = if decision == Decision::Modify {
                new_value.trim()
            } else {
                ""
            };
            self.ontology_after(&update, value).await?;
        }
        let record = DecisionRecord {
            update_id: update_id.trim().to_owned(),
            decision: decision.name().to_owned(),
            reviewer: reviewer.to_owned(),
            new_value: new_value.trim().to_owned(),
            note: note.to_owned(),
            decided_at: Utc::now(),
        };
        let outcome = self
            .store
            .decide(tenant, update_id.trim(), &record)
            .await
            .map_err(|err| During::new("record the decision", err))?;
        let update = match outcome {
            DecideOutcome::NotFound => return Err(ReviewError::NotFound(update_id.to_owned())),
            DecideOutcome::AlreadyDecided(status) => {
                // An approval whose apply was interrupted is finished by whoever asks again.
                if status == update_status::APPROVED
                    && let Ok(Some(update)) = self.store.update(tenant, update_id.trim()).await
                {
                    let applied = self.apply(&update).await?;
                    return Ok(Decided {
                        applied,
                        already_decided: true,
                    });
                }
                return Ok(Decided {
                    applied: false,
                    already_decided: true,
                });
            }
            DecideOutcome::Recorded(update) => update,
        };
        ontoloop_observability::metrics::global().add(
            "ontoloop_analyst_review_decisions_total",
            "Reviewer decisions by kind.",
            &[("decision", decision.name())],
            1.0,
        );
        let verdict = match decision {
            Decision::Approve => Some(Verdict::Approved),
            Decision::Reject | Decision::Modify => Some(Verdict::Rejected),
            Decision::Defer => None,
        };
        if let Some(verdict) = verdict
            && let Err(err) = self
                .supervision
                .learn(tenant, &category(&update), verdict)
                .await
        {
            tracing::warn!(error = %err, "cannot persist a learned sampling rate");
        }
        let applied = if update.status == update_status::APPROVED {
            self.apply(&update).await?
        } else {
            false
        };
        Ok(Decided {
            applied,
            already_decided: false,
        })
    }

    /// Applies an approved update as a system-of-record value resting on its first source (a
    /// modified value rests on the review), then marks it applied. Returns `false` when another
    /// call applied it first. Applying a value the slot already holds from the same source writes
    /// nothing, so an apply repeated after a crash has no second effect.
    pub async fn apply(&self, update: &UpdateRecord) -> Result<bool, ReviewError> {
        if grow::is_ontology(update) {
            return self.apply_ontology(update).await;
        }
        let started = Instant::now();
        let source = if update.applied_value == update.after {
            match update.sources.first() {
                // Record sources name their system before the colon (which decides authority).
                Some(first) if first.source_id.contains(':') => first.source_id.clone(),
                Some(first) => format!("{}:{}", update.source, first.source_id),
                None => format!("{}:{}", update.source, update.id),
            }
        } else {
            format!("review:{}", update.id)
        };
        let value = update.applied_value.clone();
        let already = self
            .writer
            .read(&update.tenant, |_, graph, _| {
                graph.resolve(&update.entity).is_some_and(|entity| {
                    graph
                        .slot_at(&entity.id, &update.predicate, Utc::now())
                        .any(|f| f.source.source_id == source && f.object == value)
                })
            })
            .await
            .map_err(|err| ReviewError::Graph(During::new("read the graph", err)))?
            .unwrap_or(false);
        if !already {
            let envelope = EventEnvelope {
                tenant: update.tenant.clone(),
                seq: None,
                at: Utc::now(),
                accepted: None,
                event: Event::RecordSet {
                    source,
                    entity: update.entity.clone(),
                    predicate: update.predicate.clone(),
                    value,
                    effective_from: None,
                    scope: ontoloop_core::knowledge::Scope::everywhere(),
                },
            };
            self.writer
                .apply_own(&envelope)
                .await
                .map_err(|err| ReviewError::Graph(During::new("apply the update", err)))?;
        }
        let marked = self
            .store
            .mark_applied(&update.id, Utc::now())
            .await
            .map_err(|err| During::new("mark the update applied", err))?;
        if marked {
            ontoloop_observability::metrics::global().add(
                "ontoloop_analyst_updates_applied_total",
                "Graph updates applied, by who decided.",
                &[(
                    "by",
                    if update.reason == "auto" {
                        "supervisor"
                    } else {
                        "reviewer"
                    },
                )],
                1.0,
            );
            tracing::info!(update = %update.id, elapsed_ms = started.elapsed().as_millis() as u64, "applied an update");
        }
        Ok(marked)
    }

    /// The ontology document an ontology proposal makes of the one in force, with `value` (a
    /// reviewer's edit; empty: as proposed) applied, checked to load. Also the proposal so
    /// edited.
    async fn ontology_after(
        &self,
        update: &UpdateRecord,
        value: &str,
    ) -> Result<(OntologyProposal, serde_json::Value), ReviewError> {
        let invalid = |reason: String| ReviewError::Invalid {
            field: "new_value",
            reason,
        };
        let proposal = grow::proposal_of(update, value).map_err(invalid)?;
        let current = self
            .writer
            .ontology_document(&update.tenant)
            .await
            .map_err(|err| ReviewError::Graph(During::new("read the ontology in force", err)))?;
        let document = proposal.extend(current.as_ref()).map_err(invalid)?;
        ontoloop_core::knowledge::Ontology::from_value(document.clone())
            .map_err(|err| invalid(format!("the ontology it makes does not load: {err}")))?;
        Ok((proposal, document))
    }

    /// Applies an approved ontology proposal: the ontology in force with its predicates added
    /// (as the reviewer edited them) is set through the gate, every page read again under it in
    /// a shadow and the recent questions replayed; the failed questions its preview said it
    /// answers may change from passages to answers, anything else changing holds it for a
    /// reviewer ([`gate`](crate::gate)). Marks it applied; when it went live, its pattern is
    /// healed, timed from the first signal of a question it answers.
    async fn apply_ontology(&self, update: &UpdateRecord) -> Result<bool, ReviewError> {
        let (proposal, document) = self.ontology_after(update, &update.applied_value).await?;
        let tenant = update.tenant.as_str();
        let graph =
            |what: &'static str| move |err: Refusal| ReviewError::Graph(During::new(what, err));
        let current = self
            .writer
            .ontology_document(tenant)
            .await
            .map_err(graph("read the ontology in force"))?;
        if current.as_ref() != Some(&document) {
            let envelope = EventEnvelope {
                tenant: tenant.to_owned(),
                seq: None,
                at: Utc::now(),
                accepted: None,
                event: Event::OntologySet {
                    ontology: document.clone(),
                },
            };
            let previewed: Vec<String> =
                proposal.answered().into_iter().map(str::to_owned).collect();
            self.writer
                .apply_proposal(&envelope, &previewed)
                .await
                .map_err(graph("set the proposed ontology"))?;
        }
        let marked = self
            .store
            .mark_applied(&update.id, Utc::now())
            .await
            .map_err(|err| During::new("mark the update applied", err))?;
        let live = self
            .writer
            .ontology_document(tenant)
            .await
            .map_err(graph("read the ontology in force"))?
            .is_some_and(|now| now == document);
        if live {
            self.heal(update, &proposal).await;
        } else {
            tracing::info!(tenant, update = %update.id, "an approved ontology proposal is held at the gate");
        }
        Ok(marked)
    }

    /// Marks healed the pattern of every applied ontology proposal of the tenant whose
    /// predicates are all in the ontology in force now (after a held change was approved at the
    /// gate). Failures are logged.
    pub async fn heal_live_proposals(&self, tenant: &str) {
        let updates = match self.store.updates(tenant, 200).await {
            Ok(updates) => updates,
            Err(err) => {
                tracing::warn!(tenant, error = %err, "cannot read the proposals to heal their patterns");
                return;
            }
        };
        let current = match self.writer.ontology_document(tenant).await {
            Ok(Some(current)) => current,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(tenant, error = %err, "cannot read the ontology in force");
                return;
            }
        };
        let names: Vec<&str> = current["predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        for update in updates.iter().filter(|u| {
            grow::is_ontology(u) && u.status == update_status::APPLIED && !u.pattern_id.is_empty()
        }) {
            let Ok(proposal) = grow::proposal_of(update, &update.applied_value) else {
                continue;
            };
            if proposal
                .predicates
                .iter()
                .all(|p| names.contains(&p.name.as_str()))
            {
                self.heal(update, &proposal).await;
            }
        }
    }

    /// Records the proposal's pattern healed, timed from the first signal of a question it
    /// answers, unless it is healed already. Failures are logged.
    async fn heal(&self, update: &UpdateRecord, proposal: &OntologyProposal) {
        let Some((kind, key)) = update.pattern_id.split_once(':') else {
            return;
        };
        let tenant = update.tenant.as_str();
        let statuses = self
            .store
            .pattern_statuses(tenant)
            .await
            .unwrap_or_default();
        if statuses
            .iter()
            .any(|s| s.kind == kind && s.key == key && s.status == "healed")
        {
            return;
        }
        let now = Utc::now();
        let questions: Vec<String> = proposal.answered().into_iter().map(str::to_owned).collect();
        let first = self
            .writer
            .first_failed(tenant, &questions)
            .await
            .unwrap_or(update.created_at);
        let latency_ms = (now - first).num_milliseconds().max(0);
        crate::routing::record_heal(kind, latency_ms);
        let names: Vec<&str> = proposal
            .predicates
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let status = PatternStatus {
            kind: kind.to_owned(),
            key: key.to_owned(),
            status: "healed".to_owned(),
            action: format!(
                "ontology change live ({}): answers {} failed question(s)",
                names.join(", "),
                questions.len()
            ),
            signal_to_heal_ms: Some(latency_ms),
        };
        match self.store.set_pattern_status(tenant, &status, now).await {
            Ok(()) => {
                tracing::info!(tenant, pattern = %update.pattern_id, signal_to_heal_ms = latency_ms, "healed a missing relationship type with an ontology change")
            }
            Err(err) => tracing::warn!(tenant, error = %err, "cannot record a pattern's status"),
        }
    }

    /// Applies what was approved but not applied (a crash between decision and apply). Fails
    /// only when the store cannot be read for them; one that cannot apply yet is logged.
    pub async fn recover(&self) -> Result<(), ontoloop_store::StoreError> {
        for update in self.store.approved_unapplied(1_000).await? {
            if let Err(err) = self.apply(&update).await {
                tracing::warn!(update = %update.id, error = %err, "cannot apply an approved update yet");
            }
        }
        Ok(())
    }
}
