//! The command tree: one module per subcommand, each with its arguments and what it runs.
//! Every command starts from a [`Session`](crate::session::Session) and prints through
//! [`print`](crate::print).

mod ask;
mod bench;
mod cite;
mod ingest;
mod maintain;
mod mcp;
mod migrate;
mod ontology;
mod patterns;
mod plate;
mod review;
mod search;
mod signal;
mod status;
mod token;
mod up;
mod validate;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ontoloop::client::Clients;
use ontoloop_proto::v1;

use crate::session::Session;

/// The `ontoloop` command line.
#[derive(Debug, Parser)]
#[command(
    name = "ontoloop",
    version,
    about = "The knowledge layer for fleets of AI agents"
)]
pub struct Cli {
    /// Settings file (TOML) layered over the defaults; `ONTOLOOP__SECTION__KEY` variables
    /// override it.
    #[arg(long, global = true, env = "ONTOLOOP_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run all four services in this process (embedded default: SQLite under ./data and the
    /// in-process queue).
    Up(up::Args),
    /// Ask each service's gRPC health endpoint and print one line per service; exits non-zero
    /// unless every service asked is SERVING.
    Status(status::Args),
    /// Ask a question in natural language and print the answer with its provenance.
    Ask(ask::Args),
    /// Search the passages: the best for a query (BM25, dense or fused), among what the caller
    /// may read, by origin, page id prefix, scope or as of an instant, each with its citation and
    /// the entities it names.
    Search(search::Args),
    /// Say what a passage cited earlier is now: current, moved, revised (with its text now) or
    /// gone.
    Cite(cite::Args),
    /// Push events from a file through the telemetry intake: a JSON array or JSON lines of
    /// events ({"type":"doc.upsert",...}, "doc.delete", "source.listing", "record.set",
    /// "record.rename", "ontology.set", "graph.maintain"; an optional "at"), or a world file (its
    /// ontology and the first scenario's timeline). Given a folder: one page per document
    /// (Markdown, reStructuredText, text, YAML/JSON/TOML, HTML, PDF), only what changed since the
    /// last run, pages of gone files deleted; --git pushes a repository's history (read with
    /// libgit2), --watch follows the folder.
    Ingest(ingest::Args),
    /// Ask the analyst for graph maintenance: patch, repair, rebuild (a rebuild, a large repair
    /// and an ontology change pass the gate: held for a reviewer when answers change that no
    /// page change explains) or rollback (the graph before the last change the gate let go live).
    Maintain(maintain::Args),
    /// Ontology proposals: `propose` drafts one from the tenant's pages and the questions its
    /// agents failed to get answered, queued for a reviewer (an ontology change always goes to
    /// a human, then through the gate).
    #[command(subcommand)]
    Ontology(ontology::Command),
    /// Validate an answer text against the graph: pass, or block with reasons.
    Validate(validate::Args),
    /// Report a failure signal through the telemetry intake; prints its severity.
    Signal(signal::Args),
    /// List the patterns the analyst found in failure signals.
    Patterns(patterns::Args),
    /// "What is on my plate?": the caller's work items ranked through the dimensional filters,
    /// with the candidates left after each dimension and why each item is there.
    Plate(plate::Args),
    /// Generate an organisation (people in teams, services with owners and dependencies, work
    /// items) with a seeded generator and load it into the configured store, replacing what its
    /// tenants (`tenant-0`, ...) had: `ontoloop-bench gen-org`, run from beside this binary
    /// (`ontoloop gen-org --help` for its flags).
    GenOrg(bench::Args),
    /// Work through the review queue of the statistical supervisor.
    #[command(subcommand)]
    Review(review::Command),
    /// Benchmarks: `ontoloop-bench`, run from beside this binary (`cargo build -p
    /// ontoloop-bench`, or `make bench`); `ontoloop bench --help` lists them.
    Bench(bench::Args),
    /// Apply pending store migrations and exit (run once per release in the scaled-out shape).
    Migrate(migrate::Args),
    /// Bearer tokens for `auth.mode = "jwt"`.
    #[command(subcommand)]
    Token(token::Command),
    /// Serve the tools (ask, search, lookup, cite, validate, report_signal, plate, patterns) to agents over
    /// the Model Context Protocol: on stdio, or streamable HTTP with --http.
    Mcp(mcp::Args),
}

impl Cli {
    /// Runs the command; the exit code says how it ended.
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let config = self.config.as_deref();
        match self.command {
            Command::Up(args) => args.run(config).await,
            Command::Status(args) => args.run(config).await,
            Command::Ask(args) => args.run(config).await,
            Command::Search(args) => args.run(config).await,
            Command::Cite(args) => args.run(config).await,
            Command::Ingest(args) => args.run(config).await,
            Command::Maintain(args) => args.run(config).await,
            Command::Ontology(command) => command.run(config).await,
            Command::Validate(args) => args.run(config).await,
            Command::Signal(args) => args.run(config).await,
            Command::Patterns(args) => args.run(config).await,
            Command::Plate(args) => args.run(config).await,
            Command::GenOrg(args) => args.run(config, Some("gen-org")),
            Command::Review(command) => command.run(config).await,
            Command::Bench(args) => args.run(config, None),
            Command::Migrate(args) => args.run(config).await,
            Command::Token(command) => command.run(config).await,
            Command::Mcp(args) => args.run(config).await,
        }
    }
}

/// The whole of a command that makes one call and prints its reply: acting as `caller` (its
/// `--as`), sends the request `request` builds around the caller's wire form through `send` (a
/// failed call names `what`), then prints the reply with `print` (as JSON with `json`).
async fn call_and_print<R, T, Fut>(
    config: Option<&Path>,
    caller: &str,
    what: &str,
    request: impl FnOnce(Option<v1::Caller>) -> anyhow::Result<R>,
    send: impl FnOnce(Clients, R) -> Fut,
    print: impl FnOnce(&T, bool) -> anyhow::Result<()>,
    json: bool,
) -> anyhow::Result<ExitCode>
where
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let mut session = Session::load(config, &[])?.acting_as(caller)?;
    let request = request(session.wire_caller()?)?;
    let reply = session.call(what, |clients| send(clients, request)).await?;
    print(&reply, json)?;
    Ok(ExitCode::SUCCESS)
}
