//! The reviewers' dashboard, served by the analyst over HTTP: one static page (no build step)
//! and the JSON API it calls. Every API call names its tenant and reviewer, as every gRPC call
//! carries its caller; decisions go through the same [`Reviews`] as the gRPC `Decide`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;
use ontoloop_core::{Caller, ErrorCode, ServiceError};
use ontoloop_runtime::Context;
use ontoloop_store::UpdateRecord;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::knowledge::KnowledgeWriter;
use crate::refusal::Refusal;
use crate::review::{Decision, Reviews};

const PAGE: &str = include_str!("../assets/dashboard.html");

#[derive(Clone)]
struct Dashboard {
    ctx: Context,
    reviews: Reviews,
    writer: KnowledgeWriter,
}

/// The dashboard's routes: `/` (the page), `/api/queue`, `/api/decide`, `/api/patterns`,
/// `/api/freshness` and `/api/decisions` (the runtime serves `/metrics` beside them).
pub fn router(ctx: Context, reviews: Reviews, writer: KnowledgeWriter) -> Router {
    let state = Arc::new(Dashboard {
        ctx,
        reviews,
        writer,
    });
    Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/api/queue", get(queue))
        .route("/api/decide", post(decide))
        .route("/api/patterns", get(patterns))
        .route("/api/freshness", get(freshness))
        .route("/api/decisions", get(decisions))
        .with_state(state)
}

#[derive(Deserialize)]
struct Who {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    reviewer: String,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// A failed API call: the error's message, with the HTTP status of its code.
fn failure(err: impl ServiceError) -> Response {
    let status = match err.error_code() {
        ErrorCode::InvalidArgument => StatusCode::BAD_REQUEST,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        ErrorCode::FailedPrecondition => StatusCode::CONFLICT,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, err.to_string())
}

fn unavailable(err: impl std::fmt::Display) -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, err.to_string())
}

/// The JSON form of an update on the dashboard's API.
fn update_json(update: &UpdateRecord) -> Value {
    json!({
        "id": update.id,
        "pattern_id": update.pattern_id,
        "entity": update.entity,
        "predicate": update.predicate,
        "before": update.before,
        "after": update.after,
        "confidence": update.confidence,
        "confidence_variance": update.confidence_variance,
        "impact_radius": update.impact_radius,
        "domain": update.domain,
        "sources": update.sources,
        "priority": update.priority,
        "created_at": update.created_at.to_rfc3339(),
        "affected_queries": update.affected_queries,
        "reason": update.reason,
        "status": update.status,
    })
}

async fn queue(State(state): State<Arc<Dashboard>>, Query(who): Query<Who>) -> Response {
    let caller = match Caller::new(&who.tenant, &who.reviewer) {
        Ok(caller) => caller,
        Err(err) => return failure(err),
    };
    match state.ctx.store.review_queue(caller.tenant(), 200).await {
        Ok(updates) => Json(json!({
            "updates": updates.iter().map(update_json).collect::<Vec<_>>()
        }))
        .into_response(),
        Err(err) => unavailable(err),
    }
}

#[derive(Deserialize)]
struct DecideBody {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    reviewer: String,
    #[serde(default)]
    update_id: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    new_value: String,
    #[serde(default)]
    note: String,
}

async fn decide(State(state): State<Arc<Dashboard>>, Json(body): Json<DecideBody>) -> Response {
    let caller = match Caller::new(&body.tenant, &body.reviewer) {
        Ok(caller) => caller,
        Err(err) => return failure(err),
    };
    let Some(decision) = Decision::from_name(&body.decision) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "decision: {:?} is not approve, reject, modify or defer",
                body.decision
            ),
        );
    };
    match state
        .reviews
        .decide(
            caller.tenant(),
            caller.principal(),
            &body.update_id,
            decision,
            &body.new_value,
            &body.note,
        )
        .await
    {
        Ok(decided) => Json(json!({
            "applied": decided.applied,
            "already_decided": decided.already_decided,
        }))
        .into_response(),
        Err(err) => failure(err),
    }
}

async fn patterns(State(state): State<Arc<Dashboard>>, Query(who): Query<Who>) -> Response {
    let caller = match Caller::new(&who.tenant, &who.reviewer) {
        Ok(caller) => caller,
        Err(err) => return failure(err),
    };
    match crate::patterns::with_status(&state.ctx, caller.tenant(), Utc::now()).await {
        Ok(found) => Json(json!({
            "patterns": found.iter().map(|(p, status)| json!({
                "id": format!("{}:{}", p.kind.name(), p.key),
                "kind": p.kind.name(),
                "key": p.key,
                "signal_count": p.signals,
                "agent_count": p.agents,
                "severity": p.severity.name(),
                "status": status.status,
                "action": status.action,
                "signal_to_heal_ms": status.signal_to_heal_ms,
                "first_seen": p.first_seen.to_rfc3339(),
                "last_seen": p.last_seen.to_rfc3339(),
            })).collect::<Vec<_>>()
        }))
        .into_response(),
        Err(err) => unavailable(err),
    }
}

/// Freshness of one region (entity type) of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// Entity type, or `untyped`.
    pub region: String,
    /// Current facts.
    pub facts: u64,
    /// Facts whose page changed after the graph read it.
    pub stale: u64,
    /// Latest extraction, RFC 3339.
    pub last_extracted: String,
}

/// Freshness by region of the tenant's graph.
pub async fn regions(writer: &KnowledgeWriter, tenant: &str) -> Result<Vec<Region>, Refusal> {
    let now = Utc::now();
    Ok(writer
        .read(tenant, |_, graph, pages| {
            let mut latest: BTreeMap<&str, u64> = BTreeMap::new();
            for page in pages {
                let entry = latest.entry(page.source_id.as_str()).or_default();
                *entry = (*entry).max(page.version);
            }
            let mut regions: BTreeMap<String, Region> = BTreeMap::new();
            for fact in graph.facts().iter().filter(|f| f.valid_at(now)) {
                let region = graph
                    .entity(&fact.entity)
                    .and_then(|e| e.entity_type.clone())
                    .unwrap_or_else(|| "untyped".to_owned());
                let entry = regions.entry(region.clone()).or_insert(Region {
                    region,
                    facts: 0,
                    stale: 0,
                    last_extracted: String::new(),
                });
                entry.facts += 1;
                if latest
                    .get(fact.source.source_id.as_str())
                    .is_some_and(|v| *v > fact.seen_version)
                {
                    entry.stale += 1;
                }
                let at = fact.extracted_at.to_rfc3339();
                if at > entry.last_extracted {
                    entry.last_extracted = at;
                }
            }
            regions.into_values().collect()
        })
        .await?
        .unwrap_or_default())
}

async fn freshness(State(state): State<Arc<Dashboard>>, Query(who): Query<Who>) -> Response {
    let caller = match Caller::new(&who.tenant, &who.reviewer) {
        Ok(caller) => caller,
        Err(err) => return failure(err),
    };
    match regions(&state.writer, caller.tenant()).await {
        Ok(regions) => Json(json!({
            "regions": regions.iter().map(|r| json!({
                "region": r.region,
                "facts": r.facts,
                "stale": r.stale,
                "fresh_share": if r.facts == 0 { 1.0 } else { (r.facts - r.stale) as f64 / r.facts as f64 },
                "last_extracted": r.last_extracted,
            })).collect::<Vec<_>>()
        }))
        .into_response(),
        Err(err) => unavailable(err),
    }
}

async fn decisions(State(state): State<Arc<Dashboard>>, Query(who): Query<Who>) -> Response {
    let caller = match Caller::new(&who.tenant, &who.reviewer) {
        Ok(caller) => caller,
        Err(err) => return failure(err),
    };
    match state.ctx.store.decisions(caller.tenant(), 50).await {
        Ok(found) => Json(json!({
            "decisions": found.iter().map(|d| json!({
                "update_id": d.update_id,
                "decision": d.decision,
                "reviewer": d.reviewer,
                "new_value": d.new_value,
                "note": d.note,
                "decided_at": d.decided_at.to_rfc3339(),
            })).collect::<Vec<_>>()
        }))
        .into_response(),
        Err(err) => unavailable(err),
    }
}
