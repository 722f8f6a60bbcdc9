//! The retrieval service: agents ask questions, look up facts and ask what is on their plate.
//!
//! Owns the `RetrievalService` gRPC edge and a per-tenant read model (graph, current pages, BM25
//! indexes of pages and passages, the passages' vectors) patched whenever the tenant's knowledge
//! version moves, and per tenant the ephemeral
//! org, product and context graphs that answer Plate and org questions (`plate`). It reads the
//! store and publishes failure signals; it must never write facts (only the analyst does) and
//! never ranks a candidate the caller may not read.

pub mod plate;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use ontoloop_core::events::MAX_NAME_BYTES;
use ontoloop_core::knowledge::ask::{self, Asked, Question};
use ontoloop_core::knowledge::designs::{Design, KnowledgeView};
use ontoloop_core::knowledge::passage::{Anchor, Chunk, chunk_page, resolve};
use ontoloop_core::knowledge::{Access, Graph, PageVersion, Scope};
use ontoloop_core::{Caller, DomainError, ErrorCode, ServiceKind, SignalType};
use ontoloop_proto::v1::retrieval_service_server::{RetrievalService, RetrievalServiceServer};
use ontoloop_proto::v1::{
    self as pb, Answer, AskRequest, LookupRequest, PlateRequest, PlateResponse,
    ProjectContextRequest, ProjectContextResponse,
};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_runtime::{Context, Parts};
use ontoloop_settings::RetrievalSettings;
use tonic::{Request, Response, Status};

use ontoloop_readmodel::{
    Hybrid, INLINE_DENSE_PASSAGES, MAX_DENSE_PASSAGES, PassageIndex, Ranked, Ranking, Snapshot,
    SnapshotGuard, Snapshots,
};

/// Retrieval as the runtime runs it (`ontoloop_runtime::{main, run, serve}`): the gRPC edge,
/// the org graph watcher and the context graph sweeper.
pub struct Service;

impl ontoloop_runtime::Service for Service {
    const KIND: ServiceKind = ServiceKind::Retrieval;

    async fn build(ctx: Context) -> anyhow::Result<Parts> {
        let views = Arc::new(plate::OrgViews::new(ctx.clone()));
        let contexts = Arc::new(
            plate::context::Contexts::new(ctx.settings.org.contexts())
                .with_budget(ctx.settings.cache.context_graphs),
        );
        let every = Duration::from_secs(ctx.settings.org.context_sweep_secs);
        let service = RetrievalServiceServer::new(Retrieval {
            snapshots: Snapshots::with_budget(
                ctx.store.clone(),
                ctx.extraction.clone(),
                "retrieval_read_models",
                ctx.settings.cache.read_models,
            ),
            plate_settings: ctx.settings.plate.clone(),
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

/// Longest question accepted; a question is a sentence or two, not a document.
const MAX_QUESTION_BYTES: usize = 4096;

/// Longest chunk hash a citation may name (ours are 16 hex digits).
const MAX_HASH_BYTES: usize = 64;

struct Retrieval {
    ctx: Context,
    snapshots: Snapshots,
    views: Arc<plate::OrgViews>,
    contexts: Arc<plate::context::Contexts>,
    plate_settings: ontoloop_org::PlateSettings,
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
        request: &AskRequest,
        applied: u64,
    ) -> Result<Option<Answer>, Status> {
        if request.as_of.is_some()
            || !wire::design(&request.design).is_ok_and(|d| d == Design::Ontoloop)
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

    async fn snapshot(&self, caller: &Caller) -> Result<SnapshotGuard, Status> {
        self.snapshots
            .get(caller.tenant())
            .await
            .map_err(status_from)
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

/// Answers `question` from `snapshot` as of `as_of` (now when absent). `searched` is a search
/// already run for the question's text, reused instead of run again. CPU work (the graph, the
/// search, the extraction pipeline and its encoder on the pages read): callers run it on the
/// blocking pool, never on an async worker. `graph` is what the caller may see of the snapshot's
/// graph ([`Snapshot::graph_for`]).
#[allow(clippy::too_many_arguments)]
fn answer(
    settings: &RetrievalSettings,
    caller: &Caller,
    snapshot: &Snapshot,
    graph: &Graph,
    question: Question,
    design: Design,
    as_of: Option<prost_types::Timestamp>,
    searched: Option<&[String]>,
) -> Result<Asked, Status> {
    let as_of = ontoloop_proto::convert::instant_or(as_of, "as_of", chrono::Utc::now())?;
    // As of an earlier instant, a page is seen at the version it had then.
    let current_then;
    let current = if snapshot.latest_change > as_of {
        current_then = snapshot.current_at(as_of);
        &current_then
    } else {
        &snapshot.current
    };
    let search = |query: &str, k: usize| snapshot.index.search(query, k, caller);
    let view = KnowledgeView {
        ontology: &snapshot.ontology,
        graph,
        current,
        log: &snapshot.log,
        search: &search,
        // Permission is today's: the newest version of every page decides, even as of an
        // earlier instant.
        access: Access::new(caller, &snapshot.current),
        as_of,
        hedge_below_authority: settings.hedge_below_authority,
        top_k: settings.top_k,
        // ask::answer answers in the question's scope.
        scope: &Scope::everywhere(),
    };
    Ok(ask::answer(&view, design, question, searched))
}

/// Passages searched for a question before [`ask::unlinked`] keeps those that hold enough of
/// its words.
const PASSAGE_CANDIDATES: usize = 20;

/// The instant an answer is as of: `as_of`, or now.
fn instant(as_of: Option<prost_types::Timestamp>) -> Result<chrono::DateTime<chrono::Utc>, Status> {
    ontoloop_proto::convert::instant_or(as_of, "as_of", chrono::Utc::now())
}

/// Pages an answer as of an earlier instant indexes for its passages at most: the index of the
/// pages as they were is built for the one question, so a larger tenant abstains instead.
const MAX_PAST_PASSAGE_PAGES: usize = 5_000;

/// The passages `caller` may read that best answer `text` as of `at`, best first: from the
/// current pages by the ranking asked for ([`passage_ranking`]; [`Hybrid::search`]: BM25 over
/// its key words, the sentence encoder's nearest passages, or both fused by reciprocal rank)
/// when no page changed since; else by BM25 over the page versions current at `at` (a deleted
/// page still there before its deletion), indexed for this question, at most
/// [`MAX_PAST_PASSAGE_PAGES`]. Permission is today's and is applied before ranking.
fn passages(
    snapshot: &Snapshot,
    text: &str,
    caller: &Caller,
    asked: Option<Ranking>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<ask::Passage>, Status> {
    let access = Access::new(caller, &snapshot.current);
    let readable = |id: &str| {
        snapshot
            .current
            .get(id)
            .is_some_and(|page| access.page(page))
    };
    let key_words = ask::key_words(text).join(" ");
    let search = |hybrid: Hybrid<'_>, ranking, pages: &BTreeMap<String, PageVersion>| {
        let ranked = hybrid.search(
            text,
            &key_words,
            PASSAGE_CANDIDATES,
            caller,
            readable,
            ranking,
        );
        cited(ranked, pages)
    };
    if at >= snapshot.latest_change {
        return snapshot.with_dense(|dense| {
            let ranking = passage_ranking(asked, dense.is_some())?;
            let hybrid = Hybrid {
                lexical: snapshot.passages(),
                dense,
            };
            Ok(search(hybrid, ranking, &snapshot.current))
        });
    }
    let then = snapshot.current_at(at);
    if then.len() > MAX_PAST_PASSAGE_PAGES {
        tracing::debug!(
            pages = then.len(),
            "too many pages to index passages as of then"
        );
        return Ok(Vec::new());
    }
    let shown = then.values().filter(|p| readable(&p.source_id));
    let index = match PassageIndex::build(shown) {
        Ok(index) => index,
        Err(err) => {
            tracing::warn!(error = %err, "cannot index the passages as of then");
            return Ok(Vec::new());
        }
    };
    let hybrid = Hybrid {
        lexical: Some(&index),
        dense: None,
    };
    Ok(search(hybrid, Ranking::Bm25, &then))
}

/// Ranked passages as answers' passages, cut from `pages` (the versions they were found in).
fn cited(ranked: Vec<Ranked>, pages: &BTreeMap<String, PageVersion>) -> Vec<ask::Passage> {
    // Several hits are often passages of one page: each page is cut once.
    let mut cut: HashMap<String, Vec<Chunk>> = HashMap::new();
    ranked
        .into_iter()
        .filter_map(|hit| {
            let page = pages.get(&hit.source_id)?;
            let chunks = cut
                .entry(hit.source_id)
                .or_insert_with(|| chunk_page(&page.source_id, page.version, &page.body));
            let chunk = chunks.get(hit.chunk)?.clone();
            Some(ask::Passage {
                chunk,
                title: page.title.clone(),
                origin: page.origin.clone(),
                score: hit.score,
                similarity: hit.similarity,
            })
        })
        .collect()
}

/// The ranking a request gets: the one it asked for, else fused when the tenant's passages
/// have their vectors (`dense`) and BM25 when not. Dense alone without vectors is refused.
fn passage_ranking(asked: Option<Ranking>, dense: bool) -> Result<Ranking, Status> {
    match asked {
        Some(Ranking::Dense) if !dense => Err(status_from(DomainError::new(
            ErrorCode::FailedPrecondition,
            format!(
                "passage_ranking DENSE needs the sentence-encoder model (make model) and a \
                 tenant of at most {MAX_DENSE_PASSAGES} passages whose vectors are built (a \
                 tenant of more than {INLINE_DENSE_PASSAGES} passages has them built in the \
                 background after its first such question)"
            ),
        ))),
        Some(ranking) => Ok(ranking),
        None if dense => Ok(Ranking::Fused),
        None => Ok(Ranking::Bm25),
    }
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
        let request = request.into_inner();
        if request.text.trim().is_empty() {
            return Err(status_from(DomainError::missing("text")));
        }
        if request.text.len() > MAX_QUESTION_BYTES {
            return Err(status_from(DomainError::invalid(
                "text",
                format!("a question is at most {MAX_QUESTION_BYTES} bytes"),
            )));
        }
        let design = wire::design(&request.design)?;
        let asked_ranking = wire::ranking(request.passage_ranking)?;
        let scope = ontoloop_proto::convert::scope(&request.scope, "scope")?;
        let applied = self.wait_for(&caller, request.min_sequence).await?;
        if let Some(answer) = self.org_answer(&caller, &request, applied).await? {
            return Ok(Response::new(answer));
        }
        let snapshot = self.snapshot(&caller).await?;
        let settings = self.ctx.settings.retrieval.clone();
        let who = caller.clone();
        let (asked, response) = blocking(move || {
            // Names stated in the pages the question finds help link entities the graph lacks;
            // the same search is the first hop's, so it is handed on rather than run twice.
            let found = snapshot.index.search(&request.text, settings.top_k, &who);
            let pages: Vec<&PageVersion> = found
                .iter()
                .filter_map(|id| snapshot.current.get(id))
                .collect();
            // Linked and answered on what the caller may see: an entity only hidden facts name
            // is as unknown as a name that names nothing.
            let graph = snapshot.graph_for(&Access::new(&who, &snapshot.current));
            let asked = match ask::link(&request.text, &snapshot.ontology, &graph, &pages) {
                Ok(mut question) => {
                    // A scope the caller gives is the one asked about, whatever the words say.
                    if !scope.is_everywhere() {
                        question.scope = scope;
                    }
                    answer(
                        &settings,
                        &who,
                        &snapshot,
                        &graph,
                        question,
                        design,
                        request.as_of,
                        Some(&found),
                    )?
                }
                Err(why) => {
                    let found = if design == Design::Ontoloop {
                        let at = instant(request.as_of)?;
                        passages(&snapshot, &request.text, &who, asked_ranking, at)?
                    } else {
                        Vec::new()
                    };
                    ask::unlinked(request.text, &why, design, found)
                }
            };
            let response = wire::answer(&asked, &graph, applied);
            Ok((asked, response))
        })
        .await?;
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
        let snapshot = self.snapshot(&caller).await?;
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
        let settings = self.ctx.settings.retrieval.clone();
        let who = caller.clone();
        let (asked, response) = blocking(move || {
            let graph = snapshot.graph_for(&Access::new(&who, &snapshot.current));
            let asked = answer(
                &settings,
                &who,
                &snapshot,
                &graph,
                question,
                design,
                request.as_of,
                None,
            )?;
            let response = wire::answer(&asked, &graph, applied);
            Ok((asked, response))
        })
        .await?;
        self.report(&caller, &asked).await;
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
            if value.trim().is_empty() {
                return Err(status_from(DomainError::missing(field)));
            }
            if value.len() > max {
                return Err(status_from(DomainError::invalid(
                    field,
                    format!("at most {max} bytes"),
                )));
            }
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
        let snapshot = self.snapshot(&caller).await?;
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
        let caller = caller_from(&request)?;
        let request = request.into_inner();
        let asker = ontoloop_org::Caller::new(caller.tenant(), caller.principal())
            .map_err(|err| status_from(DomainError::invalid("caller", err)))?;
        let now = ontoloop_proto::convert::instant_or(request.as_of, "as_of", chrono::Utc::now())?;
        let view = self.org_view(caller.tenant(), false).await?;
        let limit = (request.limit > 0).then_some(request.limit as usize);
        let computed = ontoloop_org::plate(
            &ontoloop_org::PlateRequest {
                caller: asker,
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
