//! `ontoloop mcp`: the Model Context Protocol server (the official `rmcp` SDK) that lets an agent
//! use ontoloop as tools — `ask`, `search`, `lookup`, `cite`, `validate`, `report_signal`, `plate`,
//! `patterns` — over stdio or streamable HTTP (`http`). It owns the tools' argument schemas,
//! their descriptions and the answers' text form (`render`); the structured answer is the gRPC
//! reply as `ontoloop_proto::json` writes it, its schema the reply's. Every call goes to the running
//! services over gRPC through the CLI's [`Clients`](crate::client::Clients).
//!
//! It must never decide anything itself, and never take the caller from the tools' arguments:
//! who calls is the bearer token the services verify (over stdio the token the server was
//! started with, over HTTP the `Authorization` header of the MCP request, passed through as it
//! came), or, with no token at all, the caller the operator named with `--as` (for services run
//! with `auth.mode = "off"`).

pub mod http;
pub mod render;

use std::future::Future;
use std::sync::Arc;

use ontoloop_core::Caller;
use ontoloop_proto::v1;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServiceExt as _, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tonic::metadata::{Ascii, MetadataValue};

use crate::client::Clients;
use render::Render;

/// What the server tells a client about itself when it connects.
const INSTRUCTIONS: &str = "ontoloop is a knowledge layer: facts extracted from an \
organisation's pages and records, versioned, with provenance. Use `ask` for a question in \
natural language and `lookup` when you know the entity and the relation; both answer with a \
status, hedges (reasons to doubt) and the sources, or with passages to read, each cited: `cite` \
tells whether a cited passage is still current. `search` gives the passages best matching a \
query, to read. Before you state facts to a user, `validate` \
your text: a BLOCK verdict names what is wrong. When an answer was missing or wrong, \
`report_signal` so the knowledge gets fixed. `plate` lists your work items; `patterns` the \
failures agents reported.";

/// Makes the token of one call, or says there is none.
pub type TokenSource = Arc<dyn Fn() -> anyhow::Result<Option<String>> + Send + Sync>;

/// Where the bearer token of each call comes from.
#[derive(Clone)]
pub enum Credentials {
    /// Over stdio: the server's own, asked for on every call (a fixed token, or in dev mode a
    /// fresh short-lived one, so a long session never holds an expired token).
    Server(TokenSource),
    /// Over HTTP: the `Authorization` header of each MCP request, passed on as it came.
    Request,
}

/// The MCP server: the tools over one set of service clients.
#[derive(Clone)]
pub struct Server {
    clients: Clients,
    credentials: Credentials,
    fallback: Option<Caller>,
    tool_router: ToolRouter<Self>,
}

impl Server {
    /// A server calling through `clients` (which carry no token of their own) with
    /// `credentials`; `fallback` is the caller named in requests that carry no token (`--as`,
    /// for services with authentication off).
    pub fn new(clients: Clients, credentials: Credentials, fallback: Option<Caller>) -> Self {
        Self {
            clients,
            credentials,
            fallback,
            tool_router: Self::tool_router(),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes them.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| anyhow::anyhow!("start the MCP session on stdio: {err}"))?;
        running
            .waiting()
            .await
            .map_err(|err| anyhow::anyhow!("serve MCP on stdio: {err}"))?;
        Ok(())
    }

    /// The bearer of this call (`Bearer <token>`), if any; a value that cannot be a gRPC
    /// header, or a token that cannot be made, is the tool's error.
    fn bearer(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Option<MetadataValue<Ascii>>, String> {
        let header = match &self.credentials {
            Credentials::Server(source) => source()
                .map_err(|err| format!("make the server's token: {err:#}"))?
                .map(|token| format!("Bearer {}", token.trim())),
            Credentials::Request => ctx
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION))
                .map(|value| {
                    value
                        .to_str()
                        .map(str::to_owned)
                        .map_err(|_| "the Authorization header is not ASCII".to_owned())
                })
                .transpose()?,
        };
        header
            .map(|value| {
                value
                    .parse::<MetadataValue<Ascii>>()
                    .map_err(|_| "the bearer token cannot be a gRPC header".to_owned())
            })
            .transpose()
    }

    /// A gRPC request for `message` as this call's caller: with a bearer, the token's identity
    /// (no caller named in the body); without, the `--as` caller.
    fn request<M>(
        &self,
        ctx: &RequestContext<RoleServer>,
        build: impl FnOnce(Option<v1::Caller>) -> M,
    ) -> Result<tonic::Request<M>, String> {
        let bearer = self.bearer(ctx)?;
        let named = match &bearer {
            Some(_) => None,
            None => self.fallback.as_ref().map(v1::Caller::from),
        };
        let mut request = tonic::Request::new(build(named));
        if let Some(bearer) = bearer {
            request.metadata_mut().insert("authorization", bearer);
        }
        Ok(request)
    }

    /// Runs one tool call: the request `build` makes as this call's caller ([`Self::request`]),
    /// sent by `send` through the server's clients, and its reply as the tool's result (the
    /// structured answer with its text rendering), or a tool error naming why (a bearer that
    /// cannot be sent, the gRPC status).
    async fn call<M, R, Fut>(
        &self,
        ctx: &RequestContext<RoleServer>,
        what: &str,
        build: impl FnOnce(Option<v1::Caller>) -> M,
        send: impl FnOnce(Clients, tonic::Request<M>) -> Fut,
    ) -> Result<CallToolResult, ErrorData>
    where
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
        R: Serialize + Render,
    {
        let request = match self.request(ctx, build) {
            Ok(request) => request,
            Err(message) => return Ok(refused(&message)),
        };
        match send(self.clients.clone(), request).await {
            Ok(response) => {
                let answer = response.into_inner();
                let value = serde_json::to_value(&answer).map_err(|err| {
                    ErrorData::internal_error(format!("{what}: encode the answer: {err}"), None)
                })?;
                let mut result = CallToolResult::structured(value);
                result.content = vec![ContentBlock::text(answer.render())];
                Ok(result)
            }
            Err(status) => Ok(refused(&failed(what, &status))),
        }
    }
}

/// A failed call as the agent reads it: what was asked, the gRPC code and the service's reason.
fn failed(what: &str, status: &tonic::Status) -> String {
    let hint = if status.code() == tonic::Code::Unauthenticated {
        " (the MCP server passes on the caller's bearer token: start it with --token or \
         ONTOLOOP_TOKEN for stdio, send Authorization: Bearer over HTTP)"
    } else {
        ""
    };
    format!("{what}: {:?}: {}{hint}", status.code(), status.message())
}

fn refused(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

/// Arguments of `ask`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question in natural language, for example "Who maintains the service Kite depends on?".
    pub question: String,
    /// Answer only once this intake sequence number (from an event you pushed) is applied, so you
    /// read your own writes. 0 or absent: answer now.
    #[serde(default)]
    pub min_sequence: u64,
    /// Where the answer should hold, as `key=value` pairs (for example "region=EU"). Absent: the
    /// scope the question names, else everywhere; a NEEDS_SCOPE answer lists the scopes to pick
    /// from.
    #[serde(default)]
    pub scope: String,
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in words, for example "refund policy for enterprise customers".
    pub query: String,
    /// Passages wanted, 1 to 100; 0 or absent: 10.
    #[serde(default)]
    pub k: u32,
    /// Only pages of these origins, for example ["wiki"]; absent: any.
    #[serde(default)]
    pub origins: Vec<String>,
    /// Only pages whose id starts with this, for example "docs/"; absent: any.
    #[serde(default)]
    pub prefix: String,
    /// Only passages that hold in this scope, as `key=value` pairs ("region=EU"); absent:
    /// everywhere.
    #[serde(default)]
    pub scope: String,
    /// As in `ask`: search only once this intake sequence number is applied.
    #[serde(default)]
    pub min_sequence: u64,
}

/// Arguments of `cite`: a passage as an answer's `passages` gave it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CiteArgs {
    /// The passage's page, its `source_id`.
    pub source_id: String,
    /// The page version it was cut from, its `source_version`.
    pub source_version: u64,
    /// Its `chunk_hash`.
    pub chunk_hash: String,
    /// Its `start` (picks among passages of equal text; absent: the first).
    #[serde(default)]
    pub start: u64,
    /// Its `end`.
    #[serde(default)]
    pub end: u64,
    /// As in `ask`: resolve only once this intake sequence number is applied.
    #[serde(default)]
    pub min_sequence: u64,
}

/// Arguments of `lookup`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LookupArgs {
    /// The entity as named in the pages, for example "Pro plan".
    pub entity: String,
    /// The relations to follow from it, in order, for example ["depends_on", "maintained_by"].
    pub path: Vec<String>,
    /// As in `ask`: answer only once this intake sequence number is applied.
    #[serde(default)]
    pub min_sequence: u64,
    /// As in `ask`: where the answer should hold ("region=EU"); absent: everywhere.
    #[serde(default)]
    pub scope: String,
}

/// Arguments of `validate`: a text, or claims.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// The answer text to check, sentence by sentence. Give this or `claims`.
    #[serde(default)]
    pub text: Option<String>,
    /// Claims to check, when you have them as triples. Give this or `text`.
    #[serde(default)]
    pub claims: Option<Vec<ClaimArg>>,
    /// How strict to be: standard (default), high (blocks single-source and low-confidence
    /// claims too) or exploratory.
    #[serde(default)]
    pub risk: Risk,
    /// The answer's domain, for example financial (stricter rules may apply).
    #[serde(default)]
    pub domain: String,
}

/// A claim to validate.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimArg {
    /// The entity, for example "Pro plan".
    pub subject: String,
    /// The relation, for example "price".
    pub predicate: String,
    /// The value claimed, for example "49".
    pub object: String,
}

/// How strictly `validate` checks.
#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// The default rules.
    #[default]
    Standard,
    /// Stricter: single-source and low-confidence claims block too.
    High,
    /// Looser, for brainstorming.
    Exploratory,
}

/// Arguments of `report_signal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalArgs {
    /// What went wrong.
    pub r#type: SignalKind,
    /// The question or query that failed.
    pub query: String,
    /// The entity it concerns (give at least one of entity, relationship, sector).
    #[serde(default)]
    pub entity: String,
    /// The relationship it concerns.
    #[serde(default)]
    pub relationship: String,
    /// The part of the knowledge it concerns.
    #[serde(default)]
    pub sector: String,
    /// Your agent's id; several agents reporting the same failure raise its severity. Default:
    /// the MCP client's name.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Idempotency key: the same key twice records one signal. Default: a fresh one.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Kinds of failure signal.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// An entity the question named is not known.
    EntityMissing,
    /// A relation the question used is not known.
    RelationshipUnknown,
    /// The answer was out of date.
    TemporalStale,
    /// The answer was not confident enough to use.
    ConfidenceDrop,
    /// A kind of question keeps failing.
    QueryPattern,
}

/// Arguments of `plate`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlateArgs {
    /// Most items to return; 0 or absent: the server's default.
    #[serde(default)]
    pub limit: u32,
    /// Rank as of this instant (RFC 3339) instead of now.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// Arguments of `patterns`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternsArgs {
    /// Most patterns to return; 0 or absent: all.
    #[serde(default)]
    pub limit: u32,
}

/// The tools, each declared once: its name with the names its arguments and call context take,
/// the arguments' type, the reply (its schema is the tool's output schema), the client and method
/// it is `send` through, the description an agent reads, the annotations, and `request`: the
/// gRPC request for a caller (`None`: the bearer token's). `request` may refuse the call before
/// anything is sent (`return Ok(refused(..))`). Every tool then runs through [`Server::call`].
macro_rules! tools {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident($args:ident: $args_type:ty, $ctx:ident) -> $reply:path {
            send: $client:ident.$method:ident,
            description: $description:literal,
            annotations: ($($annotation:tt)*),
            request: $request:expr,
        }
    )*) => {
        #[tool_router]
        impl Server {
            $(
                $(#[doc = $doc])*
                #[tool(
                    description = $description,
                    output_schema = rmcp::handler::server::tool::schema_for_output::<$reply>(),
                    annotations($($annotation)*)
                )]
                pub async fn $name(
                    &self,
                    Parameters($args): Parameters<$args_type>,
                    $ctx: RequestContext<RoleServer>,
                ) -> Result<CallToolResult, ErrorData> {
                    let build = $request;
                    self.call(&$ctx, stringify!($name), build, |mut clients, request| async move {
                        clients.$client.$method(request).await
                    })
                    .await
                }
            )*
        }
    };
}

tools! {
    /// Ask a question in natural language.
    ask(args: AskArgs, ctx) -> v1::Answer {
        send: retrieval.ask,
        description: "Answer a question about the organisation's knowledge in natural language. \
        Returns value, status (ANSWERED, ANSWERED_POSSIBLY_STALE, CONFLICT_OPEN or ABSTAINED), \
        hedges (reasons to doubt the answer: mention them to the user) and the evidence (source \
        page, version, origin, authority, excerpt) for every step. A question no recorded fact \
        answers may get ANSWERED_PASSAGES instead: passages of pages to read, each with its \
        citation (check one later with `cite`). A value that differs by scope (region, plan...) \
        is NEEDS_SCOPE with each scope's value in `scoped`: ask again with `scope`.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: |caller| v1::AskRequest {
            caller,
            text: args.question,
            min_sequence: args.min_sequence,
            as_of: None,
            design: String::new(),
            scope: args.scope,
            ..Default::default()
        },
    }

    /// Look up a relation path from a named entity.
    lookup(args: LookupArgs, ctx) -> v1::Answer {
        send: retrieval.lookup,
        description: "Look up the value reached from an entity by following relations, when you \
        know them (for example entity \"Kite\", path [\"depends_on\", \"maintained_by\"]). \
        Same answer shape as `ask`: value, status, hedges, evidence.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: |caller| v1::LookupRequest {
            caller,
            entity: args.entity,
            predicate_path: args.path,
            min_sequence: args.min_sequence,
            scope: args.scope,
            ..Default::default()
        },
    }

    /// Search the passages.
    search(args: SearchArgs, ctx) -> v1::SearchResponse {
        send: retrieval.search,
        description: "Search the organisation's pages for passages about something, when you \
        want to read rather than get one answer: the best `k` passages (default 10, at most 100) \
        for a query, among what you may read, optionally only of some origins, of pages whose id \
        starts with `prefix`, or holding in a `scope` (\"region=EU\"). Each passage comes with \
        its citation (source_id, source_version, chunk_hash, start, end: check it later with \
        `cite`) and the known entities it names.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: |caller| v1::SearchRequest {
            caller,
            query: args.query,
            k: args.k,
            origins: args.origins,
            page_prefix: args.prefix,
            scope: args.scope,
            min_sequence: args.min_sequence,
            ..Default::default()
        },
    }

    /// What a passage cited earlier is now.
    cite(args: CiteArgs, ctx) -> v1::CitationResolution {
        send: retrieval.resolve_citation,
        description: "Check a passage an answer gave you earlier (its source_id, \
        source_version, chunk_hash, start and end) before you rely on it again: status current \
        (unchanged), moved (same text elsewhere on the page or on another page), revised (the \
        passage changed: the text now is returned) or gone (deleted).",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: |caller| v1::ResolveCitationRequest {
            caller,
            source_id: args.source_id,
            source_version: args.source_version,
            chunk_hash: args.chunk_hash,
            start: args.start,
            end: args.end,
            min_sequence: args.min_sequence,
        },
    }

    /// Check an answer against the knowledge before stating it.
    validate(args: ValidateArgs, ctx) -> v1::ValidateResponse {
        send: firewall.validate,
        description: "Check a text you are about to give a user (or claims as subject, \
        predicate, object triples) against the knowledge. overall is VERDICT_PASS or \
        VERDICT_BLOCK; each claim's verdict lists the reasons it was blocked, each with its \
        code (the output schema lists them) and what was wrong. Do not state a blocked claim.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: {
            let input = match (args.text, args.claims) {
                (Some(text), None) => v1::validate_request::Input::Text(text),
                (None, Some(claims)) => v1::validate_request::Input::Claims(v1::ClaimList {
                    claims: claims
                        .into_iter()
                        .map(|c| v1::Claim {
                            subject: c.subject,
                            predicate: c.predicate,
                            object: c.object,
                            chain: Vec::new(),
                            scope: String::new(),
                        })
                        .collect(),
                }),
                _ => return Ok(refused("validate: give either text or claims, not both")),
            };
            let risk = match args.risk {
                Risk::Standard => v1::RiskLevel::Unspecified,
                Risk::High => v1::RiskLevel::High,
                Risk::Exploratory => v1::RiskLevel::Exploratory,
            };
            move |caller| v1::ValidateRequest {
                caller,
                input: Some(input),
                context: Some(v1::ValidationContext {
                    domain: args.domain,
                    risk: risk as i32,
                }),
                as_of: None,
            }
        },
    }

    /// Report that an answer was missing or wrong.
    report_signal(args: SignalArgs, ctx) -> v1::SignalAck {
        send: telemetry.report_signal,
        description: "Report a knowledge failure you ran into (a missing entity, an unknown \
        relationship, a stale or unconfident answer) so the analyst can repair the knowledge. \
        Returns the signal's severity, which rises as more agents report the same failure.",
        annotations: (
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        ),
        request: {
            let r#type = match args.r#type {
                SignalKind::EntityMissing => v1::SignalType::EntityMissing,
                SignalKind::RelationshipUnknown => v1::SignalType::RelationshipUnknown,
                SignalKind::TemporalStale => v1::SignalType::TemporalStale,
                SignalKind::ConfidenceDrop => v1::SignalType::ConfidenceDrop,
                SignalKind::QueryPattern => v1::SignalType::QueryPattern,
            };
            let agent_id = args
                .agent_id
                .filter(|a| !a.trim().is_empty())
                .or_else(|| {
                    ctx.peer
                        .peer_info()
                        .map(|info| info.client_info.name.clone())
                })
                .filter(|a| !a.trim().is_empty())
                .unwrap_or_else(|| "mcp-client".to_owned());
            // A fresh key per call: the time alone could repeat between concurrent calls (or two
            // servers), and the second signal would be taken for a duplicate.
            let idempotency_key = args.idempotency_key.unwrap_or_else(|| {
                format!(
                    "mcp-{}-{:016x}",
                    chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default(),
                    rand::random::<u64>()
                )
            });
            move |caller| v1::Signal {
                caller,
                r#type: r#type as i32,
                query: args.query,
                entity: args.entity,
                relationship: args.relationship,
                sector: args.sector,
                agent_id,
                idempotency_key,
                observed_at: None,
            }
        },
    }

    /// The caller's work items, ranked.
    plate(args: PlateArgs, ctx) -> v1::PlateResponse {
        send: retrieval.plate,
        description: "List your work items (tickets, alerts, ...) ranked through the \
        organisation's dimensions: permission, scope, hierarchy, ownership, dependency, time, \
        authority. Each item says which dimensions admitted it and its score; dimensions count \
        the candidates left after each.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: {
            let as_of = match args
                .as_of
                .as_deref()
                .map(chrono::DateTime::parse_from_rfc3339)
            {
                None => None,
                Some(Ok(at)) => Some(ontoloop_proto::convert::timestamp(at.to_utc())),
                Some(Err(err)) => return Ok(refused(&format!("plate: as_of is not RFC 3339: {err}"))),
            };
            move |caller| v1::PlateRequest {
                caller,
                limit: args.limit,
                as_of,
            }
        },
    }

    /// Failure patterns agents reported.
    patterns(args: PatternsArgs, ctx) -> v1::ListPatternsResponse {
        send: analyst.list_patterns,
        description: "List the patterns the analyst found in the failure signals agents \
        reported: each groups one kind of failure on one key across spellings, with how many \
        signals and agents, its severity, its status and what was done about it.",
        annotations: (read_only_hint = true, open_world_hint = false),
        request: |caller| v1::ListPatternsRequest {
            caller,
            limit: args.limit,
        },
    }
}

#[tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "ontoloop",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }
}
