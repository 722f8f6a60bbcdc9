//! Conversions between the analyst's records and the wire: a proposed update, a reviewer's
//! decision, a maintenance run, a pattern with its recorded status and a tenant's summary.

use ontoloop_core::DomainError;
use ontoloop_core::patterns::Pattern;
use ontoloop_proto::convert::timestamp;
use ontoloop_proto::status_from;
use ontoloop_proto::v1;
use ontoloop_store::{PatternStatus, StoredRun, UpdateRecord};
use tonic::Status;

use crate::review::Decision;
use crate::summary::Summary;

/// A proposed update as a reviewer sees it; its sources cite the update's source as origin.
pub fn update(update: UpdateRecord) -> v1::ProposedUpdate {
    v1::ProposedUpdate {
        id: update.id,
        pattern_id: update.pattern_id,
        entity: update.entity,
        predicate: update.predicate,
        before: update.before,
        after: update.after,
        confidence: update.confidence,
        confidence_variance: update.confidence_variance,
        impact_radius: update.impact_radius,
        domain: update.domain,
        sources: update
            .sources
            .into_iter()
            .map(|s| v1::Evidence {
                source_id: s.source_id,
                source_version: s.version,
                excerpt: s.title,
                origin: update.source.clone(),
                ..Default::default()
            })
            .collect(),
        priority: update.priority,
        created_at: Some(timestamp(update.created_at)),
        affected_queries: update.affected_queries,
        reason: update.reason,
        status: update.status,
    }
}

/// A reviewer's decision; unspecified or unknown is refused.
pub fn decision(value: i32) -> Result<Decision, Status> {
    match v1::Decision::try_from(value) {
        Ok(v1::Decision::Approve) => Ok(Decision::Approve),
        Ok(v1::Decision::Reject) => Ok(Decision::Reject),
        Ok(v1::Decision::Modify) => Ok(Decision::Modify),
        Ok(v1::Decision::Defer) => Ok(Decision::Defer),
        Ok(v1::Decision::Unspecified) | Err(_) => Err(status_from(DomainError::invalid(
            "decision",
            "must be approve, reject, modify or defer",
        ))),
    }
}

/// A maintenance run with its reading cost and what the `model` stage did in it.
pub fn maintenance_run(run: StoredRun) -> v1::MaintenanceRun {
    let model = run.report.model;
    v1::MaintenanceRun {
        sequence: u64::try_from(run.seq).unwrap_or_default(),
        mode: run.mode,
        pages_read: run.report.pages_read,
        pages_total: run.report.pages_total,
        est_tokens: run.report.est_tokens,
        graph_writes: run.report.graph_writes,
        model_requests: model.cost.requests,
        model_sentences: model.cost.sentences_sent,
        model_cache_hits: model.cost.cache_hits,
        model_prompt_tokens: model.cost.prompt_tokens,
        model_completion_tokens: model.cost.completion_tokens,
        model_tokens: model.cost.tokens,
        model_dropped: model.dropped,
        model_errors: model.errors,
    }
}

/// A pattern of the window with the status the healer recorded for it.
pub fn pattern((pattern, status): (Pattern, PatternStatus)) -> v1::Pattern {
    v1::Pattern {
        id: format!("{}:{}", pattern.kind.name(), pattern.key),
        kind: pattern.kind.name().to_owned(),
        key: pattern.key,
        signal_count: pattern.signals,
        agent_count: pattern.agents,
        severity: v1::Severity::from(pattern.severity) as i32,
        status: status.status,
        first_seen: Some(timestamp(pattern.first_seen)),
        last_seen: Some(timestamp(pattern.last_seen)),
        action: status.action,
        signal_to_heal_ms: status.signal_to_heal_ms.unwrap_or_default(),
    }
}

/// A tenant's summary.
pub fn summary(summary: Summary) -> v1::TenantSummaryResponse {
    let Summary {
        held,
        knowledge_version,
        intake,
    } = summary;
    v1::TenantSummaryResponse {
        pages: held.pages,
        page_versions: held.page_versions,
        facts: held.facts,
        entities: held.entities,
        predicates: held.predicates,
        last_ingest: intake.last_page_applied.map(timestamp),
        backlog: intake.pending,
        failed_events: intake.failed,
        knowledge_version,
    }
}

/// A slice of a tenant's pages.
pub fn listing(slice: crate::listing::Slice) -> v1::ListPagesResponse {
    v1::ListPagesResponse {
        pages: slice
            .pages
            .into_iter()
            .map(|p| v1::ListedPage {
                page_id: p.page_id,
                origin: p.origin,
                version: p.version,
                content_hash: p.content_hash,
                title_hash: p.title_hash,
            })
            .collect(),
        next_after: slice.next_after.unwrap_or_default(),
    }
}
