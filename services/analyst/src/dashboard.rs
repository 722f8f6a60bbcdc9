//! The reviewers' dashboard, served by the analyst over HTTP: one static page (no build step)
//! and the JSON API it calls; decisions go through the same [`Reviews`] as the gRPC `Decide`.
//!
//! With `auth.mode = "off"` (loopback only) every API call names its tenant and reviewer, as
//! every gRPC call carries its caller. With `jwt` or `dev` a reviewer signs in with a bearer
//! token holding the `reviewer` or `admin` role (`POST /api/session`), which opens a session
//! ([`crate::session`]) held in an HttpOnly, SameSite=Strict cookie; the tenant and reviewer of
//! every call are the session's (a request naming others is refused with 403), and every POST
//! but the sign-in itself must carry the session's CSRF token in `x-csrf-token`. The runtime
//! refuses a foreign Host or Origin before any route here runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;
use ontoloop_auth::{Denied, Role};
use ontoloop_core::{Caller, ErrorCode, ServiceError};
use ontoloop_runtime::Context;
use ontoloop_runtime::auth::Authenticator;
use ontoloop_store::UpdateRecord;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::knowledge::KnowledgeWriter;
use crate::refusal::Refusal;
use crate::review::{Decision, Reviews};
use crate::session::{Session, Sessions, same_secret};

const PAGE: &str = include_str!("../assets/dashboard.html");

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "ontoloop_session";

/// The header state-changing requests carry the session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

#[derive(Clone)]
struct Dashboard {
    ctx: Context,
    reviews: Reviews,
    writer: KnowledgeWriter,
    /// Checks sign-in tokens; `None` with `auth.mode = "off"`.
    verifier: Option<Arc<Authenticator>>,
    /// Whether the page is served over TLS (`[tls]` names a certificate): the session cookie
    /// is then `Secure`.
    https: bool,
    sessions: Sessions,
}

/// The dashboard's routes: `/` (the page), `/api/session` (`GET`: who is signed in; `POST`:
/// sign in), `/api/signout`, `/api/queue`, `/api/decide`, `/api/patterns`, `/api/freshness` and
/// `/api/decisions`, `/api/summary` (what the tenant holds and its intake's backlog, as the
/// `TenantSummary` RPC answers), `/api/gate` (the changes the gate judged, held ones with the
/// answers that differ) and `/api/gate/decide` (approve or discard a held change) (the runtime serves
/// `/metrics` beside them). Sign-in tokens are checked by
/// the context's authenticator.
pub fn router(ctx: Context, reviews: Reviews, writer: KnowledgeWriter) -> anyhow::Result<Router> {
    let verifier = ctx.auth.clone();
    let https = ctx.settings.tls.serves_tls();
    let state = Arc::new(Dashboard {
        ctx,
        reviews,
        writer,
        verifier,
        https,
        sessions: Sessions::default(),
    });
    Ok(Router::new()
        .route("/", get(page))
        .route("/api/session", get(session_info).post(sign_in))
        .route("/api/signout", post(sign_out))
        .route("/api/queue", get(queue))
        .route("/api/decide", post(decide))
        .route("/api/patterns", get(patterns))
        .route("/api/freshness", get(freshness))
        .route("/api/decisions", get(decisions))
        .route("/api/summary", get(summary))
        .route("/api/gate", get(gate_changes))
        .route("/api/gate/decide", post(decide_gate))
        .with_state(state))
}

#[derive(Deserialize)]
struct Who {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    reviewer: String,
}

/// A refused API call: the HTTP status and the reason, answered as `{"error": reason}`.
struct Refused(StatusCode, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

/// The refusal of a service error, with the HTTP status of its code.
fn refused(err: impl ServiceError) -> Refused {
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
    Refused(status, err.to_string())
}

fn unavailable(err: impl std::fmt::Display) -> Refused {
    Refused(StatusCode::SERVICE_UNAVAILABLE, err.to_string())
}

/// What an API call answers: its JSON, or why it was refused.
type Answer = Result<Json<Value>, Refused>;

/// The caller of a reading API call ([`Dashboard::caller`] of the tenant and reviewer its query
/// names, if any): the handler never runs for a refused one.
struct Reader(Caller);

impl FromRequestParts<Arc<Dashboard>> for Reader {
    type Rejection = Refused;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<Dashboard>,
    ) -> Result<Self, Refused> {
        let Query(who) = Query::<Who>::from_request_parts(parts, state)
            .await
            .map_err(|err| Refused(StatusCode::BAD_REQUEST, err.body_text()))?;
        state
            .caller(&parts.headers, &who.tenant, &who.reviewer, false)
            .map(Reader)
    }
}

/// The page, which no other site may frame: its buttons decide updates, so a foreign page must
/// not overlay them (clickjacking).
async fn page() -> Response {
    (
        [
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::CONTENT_SECURITY_POLICY, "frame-ancestors 'none'"),
        ],
        Html(PAGE),
    )
        .into_response()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The session id in the request's cookie, if any.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

impl Dashboard {
    /// The session the request's cookie names; 401 without a live one.
    fn session(&self, headers: &HeaderMap) -> Result<Session, Refused> {
        session_id(headers)
            .and_then(|id| self.sessions.get(id, now_secs()))
            .ok_or_else(|| {
                Refused(
                    StatusCode::UNAUTHORIZED,
                    "sign in first: POST /api/session with a reviewer's bearer token".to_owned(),
                )
            })
    }

    /// The caller of an API call. With auth off, the tenant and reviewer it names. With auth
    /// on, the signed-in session's (401 without one); naming another tenant or reviewer is 403,
    /// and so is a state change (`write`) without the session's CSRF token.
    fn caller(
        &self,
        headers: &HeaderMap,
        tenant: &str,
        reviewer: &str,
        write: bool,
    ) -> Result<Caller, Refused> {
        if self.verifier.is_none() {
            return Caller::new(tenant, reviewer).map_err(refused);
        }
        let session = self.session(headers)?;
        if write {
            check_csrf(headers, &session)?;
        }
        let identity = &session.identity;
        for (field, given, own) in [
            ("tenant", tenant, &identity.tenant),
            ("reviewer", reviewer, &identity.principal),
        ] {
            let given = given.trim();
            if !given.is_empty() && given != own {
                return Err(Refused(
                    StatusCode::FORBIDDEN,
                    format!("{field} {given:?} is not the signed-in reviewer's"),
                ));
            }
        }
        // The session's groups come with it, as every service's caller carries its token's.
        Caller::new(&identity.tenant, &identity.principal)
            .map(|caller| caller.with_groups(identity.groups.iter().cloned()))
            .map_err(refused)
    }
}

/// 403 unless the request's `x-csrf-token` is the session's.
fn check_csrf(headers: &HeaderMap, session: &Session) -> Result<(), Refused> {
    let given = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if same_secret(given.trim(), &session.csrf) {
        Ok(())
    } else {
        Err(Refused(
            StatusCode::FORBIDDEN,
            format!("missing or wrong {CSRF_HEADER}: send the csrf_token GET /api/session returns"),
        ))
    }
}

/// A JSON body, read after the caller was checked (so a refused call learns nothing of it).
impl Dashboard {
    /// A state-changing call's body and caller. With auth on, the session and CSRF token are
    /// checked before the body is read; the tenant and reviewer it names (`who`), if any, are
    /// then checked against the session's.
    fn posted<T: DeserializeOwned>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        who: impl Fn(&T) -> (&String, &String),
    ) -> Result<(T, Caller), Refused> {
        if self.verifier.is_some() {
            self.caller(headers, "", "", true)?;
        }
        let body: T = parse(body)?;
        let (tenant, reviewer) = who(&body);
        let caller = self.caller(headers, tenant, reviewer, true)?;
        Ok((body, caller))
    }
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Refused> {
    serde_json::from_slice(body)
        .map_err(|err| Refused(StatusCode::BAD_REQUEST, format!("body: {err}")))
}

/// An answer carrying a session's CSRF token, which no cache may keep.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn session_json(session: &Session) -> Value {
    json!({
        "auth": true,
        "tenant": session.identity.tenant,
        "reviewer": session.identity.principal,
        "csrf_token": session.csrf,
        "expires_at": session.expires_at,
    })
}

/// `GET /api/session`: `{"auth": false}` with auth off; the signed-in session (tenant, reviewer,
/// CSRF token, expiry) otherwise, or 401.
async fn session_info(
    State(state): State<Arc<Dashboard>>,
    headers: HeaderMap,
) -> Result<Response, Refused> {
    if state.verifier.is_none() {
        return Ok(Json(json!({ "auth": false })).into_response());
    }
    let session = state.session(&headers)?;
    Ok(no_store(Json(session_json(&session)).into_response()))
}

#[derive(Deserialize)]
struct SignIn {
    #[serde(default)]
    token: String,
}

/// `POST /api/session {"token": "<JWT>"}`: opens a session for a token with the `reviewer` (or
/// `admin`) role, ending no later than the token; sets the session cookie.
async fn sign_in(
    State(state): State<Arc<Dashboard>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refused> {
    let Some(verifier) = &state.verifier else {
        return Err(Refused(
            StatusCode::NOT_FOUND,
            "auth.mode = \"off\": the dashboard has no sign-in; name the tenant and reviewer"
                .to_owned(),
        ));
    };
    let SignIn { token } = parse(&body)?;
    let (identity, exp) = verifier
        .verify_until(token.trim())
        .await
        .map_err(|err| refused(Denied::Token(err)))?;
    Denied::unless_may(&identity, Role::Reviewer, "the dashboard").map_err(refused)?;
    let now = now_secs();
    let Some((id, session)) = state.sessions.open(identity, exp, now) else {
        return Err(refused(Denied::Token(ontoloop_auth::AuthError::Expired)));
    };
    // Secure when the page is served over TLS, or reached over it (a proxy in front), so the
    // cookie never travels in clear text then; a plain-HTTP dashboard on loopback could not
    // sign in with it.
    let secure = state.https
        || headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|origin| origin.starts_with("https://"));
    let cookie = format!(
        "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        session.expires_at - now,
        if secure { "; Secure" } else { "" }
    );
    tracing::info!(
        tenant = %session.identity.tenant,
        reviewer = %session.identity.principal,
        "dashboard sign-in"
    );
    with_cookie(
        no_store(Json(session_json(&session)).into_response()),
        &cookie,
    )
}

/// `POST /api/signout` (with the CSRF token): ends the session and clears the cookie.
async fn sign_out(
    State(state): State<Arc<Dashboard>>,
    headers: HeaderMap,
) -> Result<Response, Refused> {
    if state.verifier.is_none() {
        return Ok(Json(json!({ "signed_out": false })).into_response());
    }
    let session = state.session(&headers)?;
    check_csrf(&headers, &session)?;
    if let Some(id) = session_id(&headers) {
        state.sessions.close(id);
    }
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    with_cookie(Json(json!({ "signed_out": true })).into_response(), &cookie)
}

fn with_cookie(mut response: Response, cookie: &str) -> Result<Response, Refused> {
    let value = HeaderValue::from_str(cookie)
        .map_err(|err| Refused(StatusCode::INTERNAL_SERVER_ERROR, err.to_string()))?;
    response.headers_mut().insert(header::SET_COOKIE, value);
    Ok(response)
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
        // An ontology proposal: its predicates (types, vocabulary, patterns, examples, preview)
        // and types, read from `after`; `null` for a slot's update.
        "ontology": crate::grow::is_ontology(update)
            .then(|| serde_json::from_str::<Value>(&update.after).ok())
            .flatten(),
    })
}

async fn queue(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let updates = state
        .ctx
        .store
        .review_queue(caller.tenant(), 200)
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({
        "updates": updates.iter().map(update_json).collect::<Vec<_>>()
    })))
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

async fn decide(State(state): State<Arc<Dashboard>>, headers: HeaderMap, body: Bytes) -> Answer {
    let (body, caller) =
        state.posted::<DecideBody>(&headers, &body, |b| (&b.tenant, &b.reviewer))?;
    let Some(decision) = Decision::from_name(&body.decision) else {
        return Err(Refused(
            StatusCode::BAD_REQUEST,
            format!(
                "decision: {:?} is not approve, reject, modify or defer",
                body.decision
            ),
        ));
    };
    let decided = state
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
        .map_err(refused)?;
    Ok(Json(json!({
        "applied": decided.applied,
        "already_decided": decided.already_decided,
    })))
}

async fn patterns(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let found = crate::patterns::with_status(&state.ctx, caller.tenant(), Utc::now())
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({
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
    })))
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
        .read(tenant, |_, graph, pages| regions_of(graph, pages, now))
        .await?
        .unwrap_or_default())
}

/// Freshness by region (entity type) of `graph`, whose pages are `pages`, at `now`.
pub(crate) fn regions_of(
    graph: &ontoloop_core::knowledge::Graph,
    pages: &[ontoloop_core::knowledge::PageVersion],
    now: chrono::DateTime<Utc>,
) -> Vec<Region> {
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
}

async fn freshness(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let regions = regions(&state.writer, caller.tenant())
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({
        "regions": regions.iter().map(|r| json!({
            "region": r.region,
            "facts": r.facts,
            "stale": r.stale,
            "fresh_share": if r.facts == 0 { 1.0 } else { (r.facts - r.stale) as f64 / r.facts as f64 },
            "last_extracted": r.last_extracted,
        })).collect::<Vec<_>>()
    })))
}

async fn decisions(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let found = state
        .ctx
        .store
        .decisions(caller.tenant(), 50)
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({
        "decisions": found.iter().map(|d| json!({
            "update_id": d.update_id,
            "decision": d.decision,
            "reviewer": d.reviewer,
            "new_value": d.new_value,
            "note": d.note,
            "decided_at": d.decided_at.to_rfc3339(),
        })).collect::<Vec<_>>()
    })))
}

async fn summary(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let found =
        crate::summary::summary(&state.ctx.store, &state.writer, caller.tenant(), Utc::now())
            .await
            .map_err(unavailable)?;
    Ok(Json(json!({
        "pages": found.held.pages,
        "page_versions": found.held.page_versions,
        "facts": found.held.facts,
        "entities": found.held.entities,
        "predicates": found.held.predicates,
        "last_ingest": found.intake.last_page_applied.map(|at| at.to_rfc3339()),
        "backlog": found.intake.pending,
        "failed_events": found.intake.failed,
        "knowledge_version": found.knowledge_version,
    })))
}

/// Changes the gate recorded that `/api/gate` lists, at most.
const GATE_CHANGES_SHOWN: u64 = 50;

async fn gate_changes(State(state): State<Arc<Dashboard>>, Reader(caller): Reader) -> Answer {
    let found = state
        .writer
        .gate_changes(caller.tenant(), GATE_CHANGES_SHOWN)
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({
        "changes": found.iter().map(|c| json!({
            "id": c.id,
            "kind": c.kind,
            "status": c.status,
            "replayed": c.replayed,
            // Written by the gate as JSON; an unreadable record shows no differences.
            "differences": serde_json::from_str::<Value>(&c.differences)
                .unwrap_or_else(|_| json!([])),
            "rollback_available": c.previous.is_some()
                && (c.status == crate::gate::status::LIVE
                    || c.status == crate::gate::status::APPROVED),
            "created_at": c.created_at.to_rfc3339(),
            "decided_at": c.decided_at.map(|at| at.to_rfc3339()),
            "decided_by": c.decided_by,
        })).collect::<Vec<_>>()
    })))
}

#[derive(Deserialize)]
struct GateDecideBody {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    reviewer: String,
    #[serde(default)]
    change_id: i64,
    #[serde(default)]
    decision: String,
}

async fn decide_gate(
    State(state): State<Arc<Dashboard>>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (body, caller) =
        state.posted::<GateDecideBody>(&headers, &body, |b| (&b.tenant, &b.reviewer))?;
    let approve = match body.decision.as_str() {
        "approve" => true,
        "discard" => false,
        other => {
            return Err(Refused(
                StatusCode::BAD_REQUEST,
                format!("decision: {other:?} is not approve or discard"),
            ));
        }
    };
    state
        .writer
        .decide_held(caller.tenant(), body.change_id, approve, caller.principal())
        .await
        .map_err(|err| match err {
            Refusal::Invalid(reason) => Refused(StatusCode::CONFLICT, reason),
            err => unavailable(err),
        })?;
    if approve {
        // An ontology proposal held at the gate is live now: its pattern is healed.
        state.reviews.heal_live_proposals(caller.tenant()).await;
    }
    Ok(Json(json!({ "decided": body.decision })))
}
