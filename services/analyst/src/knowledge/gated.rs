//! The gate's path: a rebuild, a large repair or a new ontology is built in a shadow of the live
//! knowledge and judged by replaying the tenant's recent questions against both; it goes live,
//! or is held for a reviewer to approve or discard; the last change that went live this way can
//! be rolled back.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{MaintenanceMode, MaintenanceReport, Ontology};
use ontoloop_store::{GateMove, GateRecord, GateWrite, KnowledgeCommit};

use crate::gate::{self, Previous};
use crate::refusal::Refusal;

use super::step::{push_run, step};
use super::{KnowledgeWriter, TenantKnowledge};

impl KnowledgeWriter {
    /// Builds `kind` of change asked for by `envelope` in a shadow of `live` (its writes in
    /// `commit`) and judges it: replays the tenant's recent questions against both and lets it go
    /// live (returns the shadow, the record and what the graph held before in `commit`) when no
    /// answer changed without a page change explaining it, or when `approved`; else holds it
    /// (returns `live`, `commit` holding only the record with the answers that differ).
    pub(super) async fn gate(
        &self,
        live: TenantKnowledge,
        kind: gate::Kind,
        envelope: &EventEnvelope,
        approved: Option<&Approval>,
        previewed: &[String],
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
        let replay = self.replay(tenant, &live, &shadow, now, previewed).await?;
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
    /// async workers (the `previewed` questions may go from no answer to an answer); nothing to
    /// replay is a pass.
    async fn replay(
        &self,
        tenant: &str,
        live: &TenantKnowledge,
        shadow: &TenantKnowledge,
        at: DateTime<Utc>,
        previewed: &[String],
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
        let previewed = previewed.to_vec();
        tokio::task::spawn_blocking(move || {
            gate::replay_previewed(&live, &shadow, &questions, answering, at, &previewed)
        })
        .await
        .map_err(|err| Refusal::Passing(format!("the gate's replay failed: {err}")))
    }

    /// Restores what the graph held before the tenant's last change that went live through the
    /// gate (its record moves to rolled back in the same commit): the facts it altered as they
    /// were, the facts it created ended, the entities as they were, the ontology before.
    pub(super) async fn rollback(
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
            knowledge.ontology = Arc::new(self.extraction.compile_for(tenant, parsed));
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
        let report = MaintenanceReport {
            graph_writes: writes,
            ..MaintenanceReport::default()
        };
        let seq = envelope.seq.unwrap_or_default();
        push_run(
            knowledge,
            commit,
            MaintenanceMode::Rollback,
            report,
            seq,
            at,
        );
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
        self.apply_judged(&envelope, None, Some(&approval), None)
            .await
    }
}

/// A held change a reviewer approved.
pub(crate) struct Approval {
    /// Its record.
    id: i64,
    /// Who approved it.
    reviewer: String,
}

/// Whether `event` asks for the graph before the last gated change back.
pub(super) fn is_rollback(event: &Event) -> bool {
    matches!(event, Event::GraphMaintain { mode }
        if MaintenanceMode::from_name(mode) == Some(MaintenanceMode::Rollback))
}

/// The kind of change `event` makes of `knowledge` when it must pass the gate: a rebuild, a
/// repair re-reading at least [`gate::LARGE_REPAIR_SHARE`] of the pages, or a new ontology
/// for a graph that holds facts. `None` for everything else (patches go live at once).
pub(super) fn gate_kind(knowledge: &TenantKnowledge, event: &Event) -> Option<gate::Kind> {
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
