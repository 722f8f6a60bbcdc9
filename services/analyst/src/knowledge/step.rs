//! The knowledge step: one event applied to a tenant's knowledge as the analyst holds it (page
//! versions read by the extraction pipeline, deletions, a source's listing, record values,
//! renames, maintenance runs), its writes described in the commit. No IO.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{
    Changes, ExtractionSetup, Graph, MaintenanceMode, MaintenanceReport, Ontology, PageVersion,
    RecordValue, estimate_tokens, pages_to_read,
};
use ontoloop_store::{KnowledgeCommit, RunRecord};

use crate::refusal::Refusal;

use super::TenantKnowledge;

/// Applies one event to `knowledge`, describing the writes in `commit`.
pub(super) fn step(
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
        if knowledge.graph.facts().is_empty() {
            // Nothing read under the ontology before to keep or end (the empty one of a tenant
            // that only pushed pages reads names, never facts): the graph starts again under
            // this one, keeping its entities, their names now normalised with its type nouns.
            let entities = knowledge.graph.entities().cloned().collect();
            knowledge.graph = Graph::from_parts(&parsed, entities, Vec::new());
        }
        let parsed = Arc::new(parsed);
        knowledge.ontology = Arc::clone(&parsed);
        knowledge.ontology_text = Some(text.clone());
        commit.ontology = Some(text);
        if knowledge.latest.is_empty() {
            return Ok(());
        }
        // A new ontology for pages read under another (the empty one included): every current
        // page is read again under it (behind the gate when the graph held facts, see
        // `gate_kind`).
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
    let ontology = Arc::clone(&knowledge.ontology);
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
            if matches!(
                mode,
                MaintenanceMode::Rollback | MaintenanceMode::ProposeOntology
            ) {
                // Restored from the gate's record by the writer (`KnowledgeWriter::rollback`), or
                // drafted for review by it (`KnowledgeWriter::propose_on_request`).
                return Err(Refusal::Invalid(format!(
                    "mode: {} is not a step of the graph",
                    mode.name()
                )));
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
        ..report
    };
    push_run(knowledge, commit, mode, report, seq, at);
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

/// Records in `commit` a run of `mode` for the intake event `seq` at `at` that cost `report`,
/// over the tenant's pages as they stand.
pub(super) fn push_run(
    knowledge: &TenantKnowledge,
    commit: &mut KnowledgeCommit,
    mode: MaintenanceMode,
    report: MaintenanceReport,
    seq: i64,
    at: DateTime<Utc>,
) {
    let report = MaintenanceReport {
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
