//! The retrieval service: agents ask questions, search passages, look up facts and ask what is
//! on their plate.
//!
//! Owns the `RetrievalService` gRPC edge and a per-tenant read model (graph, current pages, BM25
//! indexes of pages and passages, the passages' vectors) patched whenever the tenant's knowledge
//! version moves, and per tenant the ephemeral
//! org, product and context graphs that answer Plate and org questions (`plate`). It reads the
//! store, publishes failure signals and keeps the questions it answers in the query log (which
//! the analyst's gate replays); it must never write facts (only the analyst does) and never
//! ranks a candidate the caller may not read.

pub mod plate;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use ontoloop_core::events::MAX_NAME_BYTES;
use ontoloop_core::knowledge::ask::{Asked, Question};
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::knowledge::passage::{Anchor, resolve};
use ontoloop_core::knowledge::{Access, Scope};
use ontoloop_core::{Caller, DomainError, ErrorCode, ServiceKind, SignalType};
use ontoloop_proto::v1::retrieval_service_server::{RetrievalService, RetrievalServiceServer};
use ontoloop_proto::v1::{
    self as pb, Answer, AskRequest, LookupRequest, PlateRequest, PlateResponse,
    ProjectContextRequest, ProjectContextResponse,
};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{Context, Parts};
use tonic::{Request, Response, Status};

use ontoloop_readmodel::asking::{self, Answering, Asking};
use ontoloop_readmodel::searching::{self, Searching};
use ontoloop_readmodel::{QUERY_LOG_BUFFER, QueryLog, RECENT_QUESTIONS, SnapshotGuard, Snapshots};
use wire::MAX_QUESTION_BYTES;

/// Retrieval as the runtime runs it (`ontoloop_runtime::{main, run, serve}`): the gRPC edge,
/// the org graph watcher and the context graph sweeper.
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Retrieval;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        let views = Arc::new(plate::OrgViews::new(ctx.clone()));
        let contexts = Arc::new(plate::context::Contexts::new(
            ctx.settings.org.contexts(),
            ctx.settings.cache.context_graphs,
        ));
        let every = Duration::from_secs(ctx.settings.org.context_sweep_secs);
        let service = RetrievalServiceServer::new(Retrieval {
            snapshots: ctx.read_models().await,
            plate_settings: ctx.settings.plate.clone(),
            questions: QueryLog::start(ctx.store.clone(), RECENT_QUESTIONS, QUERY_LOG_BUFFER),
            views: Arc::clone(&views),
            contexts: Arc::clone(&contexts),
            ctx,
        });
        Ok(Parts::new(service)
            .task("org graph watcher", move |cancel| async move {
                views.watch(cancel).await;
                Ok(())
            })
            .task("context graph sweeper", move |cancel| async move {
                contexts.run_sweeper(every, cancel).await;
                Ok(())
            }))
    }
}

/// Longest chunk hash a citation may name (ours are 16 hex digits).
const MAX_HASH_BYTES: usize = 64;

struct Retrieval {
    ctx: Context,
    /// The process's read models of knowledge (shared with the firewall in one process).
    snapshots: Arc<Snapshots>,
    views: Arc<plate::OrgViews>,
    contexts: Arc<plate::context::Contexts>,
    plate_settings: ontoloop_org::PlateSettings,
    /// The tenants' recent questions, which the analyst's gate replays.
    questions: QueryLog,
}

impl Retrieval {
    /// The tenant's org, product and item graphs; with `fresh`, brought up to date with the store
    /// first (read-your-writes).
    async fn org_view(&self, tenant: &str, fresh: bool) -> Result<Arc<plate::TenantView>, Status> {
        let view = if fresh {
            self.views.current(tenant).await
        } else {
            self.views.get(tenant).await
        };
        view.map_err(status_from)
    }

    /// Answers an organisational question ("who does X report to?", "who owns the Y service?")
    /// from the org and product graphs; `None` when the text is not one or the tenant has no
    /// organisation data, so the knowledge path answers.
    async fn org_answer(
        &self,
        caller: &Caller,
        request: &wire::AskCall,
        applied: u64,
    ) -> Result<Option<Answer>, Status> {
        if request.as_of.is_some()
            || request.design != Design::Ontoloop
            || ontoloop_org::parse_org_question(&request.text).is_none()
        {
            return Ok(None);
        }
        let view = self.org_view(caller.tenant(), applied > 0).await?;
        if view.version == 0 {
            return Ok(None);
        }
        let Some(answer) =
            ontoloop_org::answer_org_question(&request.text, &view.org, &view.product)
        else {
            return Ok(None);
        };
        let revealed = plate::wire::org_asked(&answer, &request.text, || {
            answer.render(&view.org, &view.product)
        });
        if let Some(asked) = revealed {
            self.report(caller, &asked).await;
        }
        Ok(Some(plate::wire::org_answer(&answer, &view, applied)))
    }

    /// Waits until the analyst has settled the caller's intake event `seq` (read-your-writes);
    /// another tenant's number is NOT_FOUND like one that never existed.
    async fn wait_for(&self, caller: &Caller, seq: u64) -> Result<u64, Status> {
        let timeout =
            Duration::from_millis(self.ctx.settings.retrieval.read_your_writes_timeout_ms);
        ontoloop_runtime::wait_for_sequence(&self.ctx.store, caller.tenant(), seq, timeout)
            .await
            .map_err(status_from)?;
        Ok(seq)
    }

    /// Keeps a question ontoloop's design answered for the gate's replay (the study's baselines
    /// and questions as of an earlier instant are not what agents rely on now).
    fn log_question(&self, caller: &Caller, text: &str, scope: &Scope, design: Design, now: bool) {
        if design == Design::Ontoloop && now {
            self.questions.record(caller, text, scope);
        }
    }

    /// The caller's read model: holding every commit made before the call when the caller
    /// waited for a write of its own (`applied`, its `min_sequence`), else the most recent one
    /// without waiting for a catch-up another call or the follower has under way.
    async fn snapshot(&self, caller: &Caller, applied: u64) -> Result<SnapshotGuard, Status> {
        let held = if applied > 0 {
            self.snapshots.get(caller.tenant()).await
        } else {
            self.snapshots.recent_or_standing(caller.tenant()).await
        };
        held.map_err(status_from)
    }

    /// Counts the answer by status, and tells the analyst what it revealed (abstentions,
    /// contradictions, a graph that lags its pages, stale siblings); nothing for the study's
    /// baselines. Reporting is best effort: a failure is logged and the answer still goes out.
    async fn report(&self, caller: &Caller, asked: &Asked) {
        let Some(signals) = &asked.signals else {
            return;
        };
        ontoloop_observability::metrics::global().add(
            "ontoloop_retrieval_answers_total",
            "Answers by status.",
            &[(
                "status",
                &format!("{:?}", asked.answer.status).to_lowercase(),
            )],
            1.0,
        );
        let question = &asked.question;
        for signal in signals {
            // A question linked to nothing is about its key words: a relation the ontology
            // lacks when passages answered a question naming none, else an entity.
            let (entity, relationship) = if signal.subject.is_empty() {
                (question.entity.clone(), question.path.join("."))
            } else if signal.kind == SignalType::RelationshipUnknown {
                (String::new(), signal.subject.clone())
            } else {
                (signal.subject.clone(), String::new())
            };
            let report = ontoloop_runtime::signals::SignalReport {
                tenant: caller.tenant().to_owned(),
                reporter: "retrieval".to_owned(),
                kind: signal.kind,
                query: question.text.clone(),
                entity,
                relationship,
                sector: String::new(),
                agent_id: format!("retrieval:{}", caller.principal()),
                idempotency_key: ontoloop_queue::new_message_id(),
                detail: signal.detail.clone(),
                at: chrono::Utc::now(),
            };
            // Off the request path: a slow or absent broker never slows an answer.
            self.ctx.signals.report(report);
        }
    }
}

/// The instant an answer is as of: `as_of`, or now.
fn instant(as_of: Option<prost_types::Timestamp>) -> Result<chrono::DateTime<chrono::Utc>, Status> {
    ontoloop_proto::convert::instant_or(as_of, "as_of", chrono::Utc::now())
}

/// Runs `work` on the blocking pool (the answer's CPU work must not hold an async worker).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Status::internal(format!("the answer's task failed: {err}")))?
}

#[tonic::async_trait]
impl RetrievalService for Retrieval {
    async fn ask(&self, request: Request<AskRequest>) -> Result<Response<Answer>, Status> {
        let caller = caller_from(&request)?;
        let call = wire::AskCall::try_from(request.into_inner())?;
        let applied = self.wait_for(&caller, call.min_sequence).await?;
        if let Some(answer) = self.org_answer(&caller, &call, applied).await? {
            return Ok(Response::new(answer));
        }
        let (request_text, request_scope) = (call.text.clone(), call.scope.clone());
        let (design, now) = (call.design, call.as_of.is_none());
        let snapshot = self.snapshot(&caller, applied).await?;
        // "Now" is read once the model is held: a model brought forward for this call may hold
        // a page changed after the call came, which now must see as current, not as the future
        // (that would read every page as of an earlier instant, a copy of them all).
        let as_of = call.as_of.unwrap_or_else(chrono::Utc::now);
        let answering = Answering::from(&self.ctx.settings.retrieval);
        let who = caller.clone();
        let (asked, response) = blocking(move || {
            let asking = Asking {
                text: &call.text,
                scope: call.scope,
                design: call.design,
                as_of,
                ranking: call.ranking,
            };
            let (asked, graph) =
                asking::ask_text(&snapshot, answering, &who, asking).map_err(status_from)?;
            let response = wire::answer(&asked, &graph, applied);
            Ok((asked, response))
        })
        .await?;
        self.log_question(&caller, &request_text, &request_scope, design, now);
        self.report(&caller, &asked).await;
        Ok(Response::new(response))
    }

    async fn lookup(&self, request: Request<LookupRequest>) -> Result<Response<Answer>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        if request.entity.trim().is_empty() {
            return Err(status_from(DomainError::missing("entity")));
        }
        if request.predicate_path.is_empty()
            || request.predicate_path.iter().any(|p| p.trim().is_empty())
        {
            return Err(status_from(DomainError::missing("predicate_path")));
        }
        let design = wire::design(&request.design)?;
        let applied = self.wait_for(&caller, request.min_sequence).await?;
        let snapshot = self.snapshot(&caller, applied).await?;
        if let Some(unknown) = request
            .predicate_path
            .iter()
            .find(|p| snapshot.ontology.predicate(p).is_none())
        {
            return Err(status_from(DomainError::invalid(
                "predicate_path",
                format!("{unknown:?} is not in the ontology"),
            )));
        }
        if !request.query.trim().is_empty() && request.query.len() > MAX_QUESTION_BYTES {
            return Err(status_from(DomainError::invalid(
                "query",
                format!("a query is at most {MAX_QUESTION_BYTES} bytes"),
            )));
        }
        let scope = ontoloop_proto::convert::scope(&request.scope, "scope")?;
        let question = Question {
            scope,
            ..Question::lookup(request.entity, request.predicate_path, request.query)
        };
        let as_of = instant(request.as_of)?;
        let answering = Answering::from(&self.ctx.settings.retrieval);
        let who = caller.clone();
        let (asked, response) = blocking(move || {
            let graph = snapshot.graph_for(&Access::new(&who, &snapshot.current));
            let asked = asking::answer(
                &snapshot, answering, &who, &graph, question, design, as_of, None,
            );
            let response = wire::answer(&asked, &graph, applied);
            Ok((asked, response))
        })
        .await?;
        self.report(&caller, &asked).await;
        Ok(Response::new(response))
    }

    async fn search(
        &self,
        request: Request<pb::SearchRequest>,
    ) -> Result<Response<pb::SearchResponse>, Status> {
        let caller = caller_from(&request)?;
        let call = wire::SearchCall::try_from(request.into_inner())?;
        let applied = self.wait_for(&caller, call.min_sequence).await?;
        let snapshot = self.snapshot(&caller, applied).await?;
        // "Now" is read once the model is held, as Ask reads it.
        let as_of = call.as_of.unwrap_or_else(chrono::Utc::now);
        let response = blocking(move || {
            let searching = Searching {
                query: &call.query,
                k: call.k,
                ranking: call.ranking,
                as_of,
                filter: call.filter,
                scope: call.scope,
            };
            let (found, ranking) =
                searching::search(&snapshot, &caller, &searching).map_err(status_from)?;
            Ok(wire::search_response(&found, ranking, applied))
        })
        .await?;
        Ok(Response::new(response))
    }

    async fn resolve_citation(
        &self,
        request: Request<pb::ResolveCitationRequest>,
    ) -> Result<Response<pb::CitationResolution>, Status> {
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        for (field, value, max) in [
            ("source_id", &request.source_id, MAX_NAME_BYTES),
            ("chunk_hash", &request.chunk_hash, MAX_HASH_BYTES),
        ] {
            wire::bounded(field, value, max, || format!("at most {max} bytes"))?;
        }
        if request.source_version == 0 {
            return Err(status_from(DomainError::missing("source_version")));
        }
        if request.end < request.start {
            return Err(status_from(DomainError::invalid(
                "end",
                "the span ends before it starts",
            )));
        }
        let applied = self.wait_for(&caller, request.min_sequence).await?;
        let snapshot = self.snapshot(&caller, applied).await?;
        let who = caller.clone();
        let response = blocking(move || {
            let cited = Anchor {
                doc_id: request.source_id,
                version: request.source_version,
                hash: request.chunk_hash,
                start: usize::try_from(request.start).unwrap_or(usize::MAX),
                end: usize::try_from(request.end).unwrap_or(usize::MAX),
            };
            let history = snapshot.history(Access::new(&who, &snapshot.current));
            let resolution = resolve(&cited, &history).map_err(|err| {
                status_from(DomainError::new(ErrorCode::NotFound, err.to_string()))
            })?;
            Ok(wire::resolution(&resolution, &snapshot.current, applied))
        })
        .await?;
        Ok(Response::new(response))
    }

    async fn plate(
        &self,
        request: Request<PlateRequest>,
    ) -> Result<Response<PlateResponse>, Status> {
        // The caller as authenticated, groups included: an item shared with a group is on its
        // members' plates. The request body names no groups.
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let now = ontoloop_proto::convert::instant_or(request.as_of, "as_of", chrono::Utc::now())?;
        let view = self.org_view(caller.tenant(), false).await?;
        let limit = (request.limit > 0).then_some(request.limit as usize);
        let computed = ontoloop_org::plate(
            &ontoloop_org::PlateRequest {
                caller: caller.clone(),
                now,
                limit,
            },
            &view.org,
            &view.product,
            &view.items,
            &self.plate_settings,
        );
        Ok(Response::new(plate::wire::plate_response(
            &computed,
            &view,
            caller.tenant(),
        )))
    }

    async fn project_context(
        &self,
        request: Request<ProjectContextRequest>,
    ) -> Result<Response<ProjectContextResponse>, Status> {
        use pb::ProjectAction;
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let project = request.project.trim();
        if project.is_empty() {
            return Err(status_from(DomainError::missing("project")));
        }
        let tenant = caller.tenant();
        let response = match ProjectAction::try_from(request.action) {
            Ok(ProjectAction::Open) => {
                let view = self.org_view(tenant, false).await?;
                let spec = plate::context::ProjectSpec {
                    team: request.team,
                    services: request.services,
                    constraints: request.constraints,
                };
                let opened = self
                    .contexts
                    .open(tenant, project, || {
                        plate::context::build_parts(&spec, &view.org, &view.product)
                    })
                    .map_err(status_from)?;
                plate::wire::project_response(&opened, false)
            }
            Ok(ProjectAction::Extend) => {
                let by = plate::wire::extension(request.extend_secs).ok_or_else(|| {
                    status_from(DomainError::invalid("extend_secs", "must be positive"))
                })?;
                let extended = self
                    .contexts
                    .extend(tenant, project, by)
                    .map_err(status_from)?;
                plate::wire::project_response(&extended, false)
            }
            Ok(ProjectAction::Close) => {
                plate::wire::closed_response(project, self.contexts.close(tenant, project))
            }
            Ok(ProjectAction::Unspecified) => {
                return Err(status_from(DomainError::missing("action")));
            }
            Err(_) => {
                return Err(status_from(DomainError::invalid(
                    "action",
                    format!("unknown action {}", request.action),
                )));
            }
        };
        Ok(Response::new(response))
    }
}
