//! `ontoloop`: the command line. Runs the four services in one process (`up`) and talks to
//! running services over gRPC (`status`; later: ask, validate, review, ...).
//!
//! It owns argument parsing and printing only; every behaviour lives in the services and
//! libraries it calls.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use ontoloop_settings::{Loader, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "ontoloop",
    version,
    about = "The knowledge layer for fleets of AI agents"
)]
struct Cli {
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
    Up {
        /// Store URL, e.g. postgres://postgres@127.0.0.1:5432/ontoloop (sets store.url).
        #[arg(long)]
        database_url: Option<String>,
        /// RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/%2f (sets queue.url).
        #[arg(long)]
        amqp_url: Option<String>,
    },
    /// Ask each service's gRPC health endpoint and print one line per service; exits non-zero
    /// unless every service asked is SERVING.
    Status {
        /// Print `{"services":[{"name","addr","status"}]}`.
        #[arg(long)]
        json: bool,
        /// Ask only this service (repeatable): retrieval, firewall, telemetry or analyst.
        #[arg(long = "service", value_name = "NAME")]
        services: Vec<String>,
        /// Host to dial instead of `services.host`.
        #[arg(long)]
        host: Option<String>,
        /// Seconds to wait for each service.
        #[arg(long, default_value_t = 2)]
        timeout_secs: u64,
    },
    /// Ask a question in natural language and print the answer with its provenance.
    Ask {
        /// The question.
        text: String,
        /// Who asks, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// Answer only once this intake sequence number is applied (read-your-writes).
        #[arg(long, default_value_t = 0)]
        min_sequence: u64,
        /// ontoloop (default) or a study baseline: Rag, Graph, Hybrid, HybridVersioned.
        #[arg(long, default_value = "ontoloop")]
        design: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Push events from a file through the telemetry intake: a JSON array or JSON lines of
    /// events ({"type":"doc.upsert",...}, "record.set", "record.rename", "ontology.set",
    /// "graph.maintain"; an optional "at"), or a world file (its ontology and the first
    /// scenario's timeline).
    Ingest {
        /// The file.
        file: PathBuf,
        /// Whose tenant, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
    },
    /// Validate an answer text against the graph: pass, or block with reasons.
    Validate {
        /// The answer text.
        text: String,
        /// Who will read the answer, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// standard (default), high-risk or exploratory.
        #[arg(long, default_value = "standard")]
        context: String,
        /// Domain of the answer, for example financial.
        #[arg(long, default_value = "")]
        domain: String,
        /// Print the verdicts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report a failure signal through the telemetry intake; prints its severity.
    Signal {
        /// Who reports, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// entity_missing, relationship_unknown, temporal_stale, confidence_drop or query_pattern.
        #[arg(long = "type")]
        kind: String,
        /// The query that failed.
        #[arg(long)]
        query: String,
        /// The entity it concerns.
        #[arg(long, default_value = "")]
        entity: String,
        /// The relationship it concerns.
        #[arg(long, default_value = "")]
        relationship: String,
        /// The graph region it concerns.
        #[arg(long, default_value = "")]
        sector: String,
        /// The agent that saw the failure (default: the principal).
        #[arg(long)]
        agent: Option<String>,
        /// Idempotency key (default: a fresh one).
        #[arg(long)]
        key: Option<String>,
    },
    /// List the patterns the analyst found in failure signals.
    Patterns {
        /// Whose tenant, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// "What is on my plate?": the caller's work items ranked through the dimensional filters,
    /// with the candidates left after each dimension and why each item is there.
    Plate {
        /// Who asks, as TENANT/PRINCIPAL (the principal is a person id of the organisation).
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// Most items to show (default: the `plate.limit` setting).
        #[arg(long, default_value_t = 0)]
        limit: u32,
        /// Rank as of this instant (RFC 3339) instead of now.
        #[arg(long)]
        as_of: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Generate an organisation (people in teams, services with owners and dependencies, work
    /// items) with a seeded generator and load it into the configured store, replacing what its
    /// tenants (`tenant-0`, ...) had.
    GenOrg {
        /// People over all tenants.
        #[arg(long, default_value_t = 10_000)]
        people: usize,
        /// Work items over all tenants.
        #[arg(long, default_value_t = 100_000)]
        items: usize,
        /// Services over all tenants (default: one per ten people).
        #[arg(long)]
        services: Option<usize>,
        /// Tenants.
        #[arg(long, default_value_t = 1)]
        tenants: usize,
        /// Seed of the generator (the same seed gives the same organisation).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Store URL (sets store.url).
        #[arg(long)]
        database_url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Work through the review queue of the statistical supervisor.
    #[command(subcommand)]
    Review(ReviewCommand),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Apply pending store migrations and exit (run once per release in the scaled-out shape).
    Migrate {
        /// Store URL (sets store.url).
        #[arg(long)]
        database_url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum ReviewCommand {
    /// Show the next update to review: your expertise domains first, then priority, then age.
    Next {
        /// The reviewer, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// A domain you are expert in (repeatable), for example financial.
        #[arg(long = "expertise", value_name = "DOMAIN")]
        expertise: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Decide an update: approve, reject, modify (with --value) or defer.
    Decide {
        /// The update id (from `review next`).
        update: String,
        /// approve, reject, modify or defer.
        decision: String,
        /// The reviewer, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// The value to apply instead (modify).
        #[arg(long, default_value = "")]
        value: String,
        /// A note kept with the decision.
        #[arg(long, default_value = "")]
        note: String,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Plate over loopback gRPC on a generated world against the oracle, with latency,
    /// throughput, peak memory, org-graph rebuild time, event-to-visible latency and a BM25
    /// baseline; prints {"oracle_mismatches","p50_ms","p99_ms","qps","peak_rss_mb","rebuild_ms",
    /// "precision","baseline_precision",...} with --json.
    Plate {
        /// People in the generated world.
        #[arg(long, default_value_t = 10_000)]
        people: usize,
        /// Work items in the generated world.
        #[arg(long, default_value_t = 100_000)]
        items: usize,
        /// Store URL (sets store.url; default: a fresh SQLite file in a temporary directory).
        #[arg(long)]
        database_url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Publish N failure signals to RabbitMQ and time them into the analyst's store end to end;
    /// prints {"signals","per_second","lost","duplicated"} with --json.
    Signals {
        /// Signals to publish.
        #[arg(long, default_value_t = 100_000)]
        signals: u64,
        /// RabbitMQ URL (sets queue.url; the benchmark needs RabbitMQ).
        #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
        amqp_url: String,
        /// Store URL (sets store.url; default: a fresh SQLite file in a temporary directory).
        #[arg(long)]
        database_url: Option<String>,
        /// Publish every signal before the analyst starts, and time the analyst alone.
        #[arg(long)]
        preload: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Validate a labelled claim set generated from a world (confusion table) and time
    /// ten-claim answers in process and over loopback gRPC.
    Firewall {
        /// The world file.
        #[arg(long)]
        world: PathBuf,
        /// Print {"confusion":{...},"latency_us":{...}}.
        #[arg(long)]
        json: bool,
        /// Ten-claim answers timed each way.
        #[arg(long, default_value_t = 2000)]
        rounds: usize,
    },
    /// Replay every scenario of a world file through the services and grade every answer.
    Drift {
        /// The world file (format ontoloop.world/v1).
        #[arg(long)]
        world: PathBuf,
        /// structured (entity + predicate path) or nl (question text only).
        #[arg(long, default_value = "structured")]
        mode: String,
        /// Print {"rows":[...],"costs":[...]} instead of tables.
        #[arg(long)]
        json: bool,
        /// Use the running deployment the settings point at instead of an embedded system.
        #[arg(long)]
        target: bool,
        /// Where to write the CSV of every answer (default target/bench/drift-WORLD-MODE.csv).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
}

fn load_settings(
    config: Option<&PathBuf>,
    overrides: &[(&str, Option<&String>)],
) -> anyhow::Result<Settings> {
    let mut loader = Loader::new();
    if let Some(path) = config {
        loader = loader.file(path);
    }
    for (key, value) in overrides {
        if let Some(value) = value {
            loader = loader.set(key, value.as_str());
        }
    }
    loader.load().context("load settings")
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    match cli.command {
        Command::Up {
            database_url,
            amqp_url,
        } => {
            let settings = load_settings(
                cli.config.as_ref(),
                &[
                    ("store.url", database_url.as_ref()),
                    ("queue.url", amqp_url.as_ref()),
                ],
            )?;
            ontoloop_observability::init(&settings.log).context("set up logging")?;
            ontoloop::up::up(settings, ontoloop_runtime::shutdown_signal()).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Status {
            json,
            services,
            host,
            timeout_secs,
        } => {
            let settings = load_settings(cli.config.as_ref(), &[("services.host", host.as_ref())])?;
            let kinds = ontoloop::status::select(&services)?;
            let timeout = std::time::Duration::from_secs(timeout_secs);
            let report = ontoloop::status::check(&settings, &kinds, timeout).await;
            ontoloop::status::print(&report, json)?;
            Ok(if report.iter().all(|s| s.status == "SERVING") {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            })
        }
        Command::Ask {
            text,
            caller,
            min_sequence,
            design,
            json,
        } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let answer = clients
                .retrieval
                .ask(ontoloop_proto::v1::AskRequest {
                    caller: ontoloop::client::caller(&caller),
                    text,
                    min_sequence,
                    as_of: None,
                    design,
                })
                .await
                .map_err(|status| anyhow::anyhow!("ask: {}: {}", status.code(), status.message()))?
                .into_inner();
            ontoloop::show::print_answer(&answer, json)?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Ingest { file, caller } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("read {}", file.display()))?;
            let events = ontoloop::show::events_from_file(&text)
                .with_context(|| format!("read events from {}", file.display()))?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let mut last = 0;
            for (i, (event, at)) in events.iter().enumerate() {
                let ack = clients
                    .telemetry
                    .push_event(ontoloop::client::event(
                        &caller,
                        event,
                        at.unwrap_or_else(chrono::Utc::now),
                    ))
                    .await
                    .map_err(|status| {
                        anyhow::anyhow!(
                            "event {i} ({}): {}: {}",
                            event.kind(),
                            status.code(),
                            status.message()
                        )
                    })?;
                last = ack.into_inner().sequence;
            }
            println!(
                "pushed {} events; last sequence number {last} (pass --min-sequence {last} to read your writes)",
                events.len()
            );
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Validate {
            text,
            caller,
            context,
            domain,
            json,
        } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let risk = match context.as_str() {
                "standard" => ontoloop_proto::v1::RiskLevel::Unspecified,
                "high-risk" => ontoloop_proto::v1::RiskLevel::High,
                "exploratory" => ontoloop_proto::v1::RiskLevel::Exploratory,
                other => {
                    anyhow::bail!("--context {other:?}: use standard, high-risk or exploratory")
                }
            };
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let response = clients
                .firewall
                .validate(ontoloop_proto::v1::ValidateRequest {
                    caller: ontoloop::client::caller(&caller),
                    input: Some(ontoloop_proto::v1::validate_request::Input::Text(text)),
                    context: Some(ontoloop_proto::v1::ValidationContext {
                        domain,
                        risk: risk as i32,
                    }),
                    as_of: None,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("validate: {}: {}", status.code(), status.message())
                })?
                .into_inner();
            let pass = ontoloop::show::print_verdicts(&response, json)?;
            Ok(if pass {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::from(3)
            })
        }
        Command::Signal {
            caller,
            kind,
            query,
            entity,
            relationship,
            sector,
            agent,
            key,
        } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let r#type = ontoloop_proto::v1::SignalType::from_str_name(&format!("SIGNAL_TYPE_{}", kind.to_uppercase()))
                .with_context(|| format!("--type {kind:?}: use entity_missing, relationship_unknown, temporal_stale, confidence_drop or query_pattern"))?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let ack = clients
                .telemetry
                .report_signal(ontoloop_proto::v1::Signal {
                    caller: ontoloop::client::caller(&caller),
                    r#type: r#type as i32,
                    query,
                    entity,
                    relationship,
                    sector,
                    agent_id: agent.unwrap_or_else(|| caller.principal().to_owned()),
                    idempotency_key: key.unwrap_or_else(|| {
                        format!(
                            "cli-{}",
                            chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
                        )
                    }),
                    observed_at: None,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("signal: {}: {}", status.code(), status.message())
                })?
                .into_inner();
            let severity = ontoloop_proto::v1::Severity::try_from(ack.severity)
                .map(|s| s.as_str_name())
                .unwrap_or("UNKNOWN");
            println!(
                "{}{severity}",
                if ack.duplicate {
                    "duplicate; "
                } else {
                    "accepted; "
                }
            );
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Patterns { caller, json } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let patterns = clients
                .analyst
                .list_patterns(ontoloop_proto::v1::ListPatternsRequest {
                    caller: ontoloop::client::caller(&caller),
                    limit: 0,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("patterns: {}: {}", status.code(), status.message())
                })?
                .into_inner()
                .patterns;
            ontoloop::show::print_patterns(&patterns, json);
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Plate {
            caller,
            limit,
            as_of,
            json,
        } => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let as_of = match as_of {
                Some(text) => Some(ontoloop_proto::convert::timestamp(
                    chrono::DateTime::parse_from_rfc3339(&text)
                        .with_context(|| format!("--as-of {text:?}: expected RFC 3339"))?
                        .with_timezone(&chrono::Utc),
                )),
                None => None,
            };
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let plate = clients
                .retrieval
                .plate(ontoloop_proto::v1::PlateRequest {
                    caller: ontoloop::client::caller(&caller),
                    limit,
                    as_of,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("plate: {}: {}", status.code(), status.message())
                })?
                .into_inner();
            ontoloop::org::print_plate(&plate, json)?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::GenOrg {
            people,
            items,
            services,
            tenants,
            seed,
            database_url,
            json,
        } => {
            let settings =
                load_settings(cli.config.as_ref(), &[("store.url", database_url.as_ref())])?;
            let spec = ontoloop::org::GenSpec {
                people,
                items,
                services: services.unwrap_or((people / 10).max(1)),
                tenants: tenants.max(1),
                seed,
            };
            let report = ontoloop::org::gen_org(&settings, &spec).await?;
            ontoloop::org::print_gen(&report, json)?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Review(ReviewCommand::Next {
            caller,
            expertise,
            json,
        }) => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let next = clients
                .analyst
                .next_review(ontoloop_proto::v1::NextReviewRequest {
                    caller: ontoloop::client::caller(&caller),
                    expertise,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("review next: {}: {}", status.code(), status.message())
                })?
                .into_inner();
            ontoloop::show::print_update(next.update.as_ref(), json);
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Review(ReviewCommand::Decide {
            update,
            decision,
            caller,
            value,
            note,
        }) => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let caller = ontoloop_core::Caller::parse(&caller)?;
            let wire = ontoloop_proto::v1::Decision::from_str_name(&format!(
                "DECISION_{}",
                decision.to_uppercase()
            ))
            .filter(|d| *d != ontoloop_proto::v1::Decision::Unspecified)
            .with_context(|| {
                format!("decision {decision:?}: use approve, reject, modify or defer")
            })?;
            let mut clients = ontoloop::client::Clients::from_settings(&settings).await?;
            let outcome = clients
                .analyst
                .decide(ontoloop_proto::v1::DecideRequest {
                    caller: ontoloop::client::caller(&caller),
                    update_id: update.clone(),
                    decision: wire as i32,
                    new_value: value,
                    note,
                })
                .await
                .map_err(|status| {
                    anyhow::anyhow!("review decide: {}: {}", status.code(), status.message())
                })?
                .into_inner();
            if outcome.already_decided {
                println!("{update} was already decided; nothing changed");
            } else if outcome.applied {
                println!("{update}: {decision} recorded and applied to the graph");
            } else {
                println!("{update}: {decision} recorded");
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Signals {
            signals,
            amqp_url,
            database_url,
            preload,
            json,
        }) => {
            let dir = tempfile::tempdir().context("create a temporary directory")?;
            let store = database_url
                .unwrap_or_else(|| format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()));
            let settings = load_settings(
                cli.config.as_ref(),
                &[("queue.url", Some(&amqp_url)), ("store.url", Some(&store))],
            )?;
            let report = ontoloop::bench::signals::run(settings, signals, preload).await?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                let what = if preload {
                    "the analyst alone, from a loaded queue"
                } else {
                    "end to end, publishing while the analyst consumes"
                };
                println!("signals through RabbitMQ into the analyst's store ({what})");
                println!(
                    "signals   per second   lost   duplicated   published (confirmed) per second"
                );
                println!(
                    "{:>7}   {:>10.0}   {:>4}   {:>10}   {:>10.0}",
                    report.signals,
                    report.per_second,
                    report.lost,
                    report.duplicated,
                    report.published_per_second
                );
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Plate {
            people,
            items,
            database_url,
            json,
        }) => {
            let dir = tempfile::tempdir().context("create a temporary directory")?;
            let store = database_url
                .unwrap_or_else(|| format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()));
            let memory = "memory".to_owned();
            let settings = load_settings(
                cli.config.as_ref(),
                &[("store.url", Some(&store)), ("queue.url", Some(&memory))],
            )?;
            let report = ontoloop::bench::plate::run(settings, people, items).await?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!(
                    "plate on {} people / {} items, {} callers",
                    report.people, report.items, report.callers
                );
                println!(
                    "  oracle mismatches {}  p50 {:.3} ms  p99 {:.3} ms  {:.0} plates/s  peak RSS {:.0} MiB",
                    report.oracle_mismatches,
                    report.p50_ms,
                    report.p99_ms,
                    report.qps,
                    report.peak_rss_mb
                );
                for (people, ms) in &report.rebuild_ms {
                    println!("  org graph rebuild at {people} people: {ms:.1} ms");
                }
                println!(
                    "  first load {:.0} ms; employee.transferred visible after {:.1} ms (median of {}, slowest {:.1} ms)",
                    report.load_ms,
                    report.event_to_visible_ms,
                    ontoloop::bench::plate::TRANSFERS,
                    report.event_to_visible_max_ms
                );
                println!(
                    "  precision vs oracle: plate {:.3}, BM25 baseline {:.3}",
                    report.precision, report.baseline_precision
                );
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Firewall {
            world,
            json,
            rounds,
        }) => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            ontoloop::show::bench_firewall(settings, &world, json, rounds).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Drift {
            world,
            mode,
            json,
            target,
            csv,
        }) => {
            let settings = load_settings(cli.config.as_ref(), &[])?;
            let mode = match mode.as_str() {
                "structured" => ontoloop::bench::drift::Mode::Structured,
                "nl" => ontoloop::bench::drift::Mode::Nl,
                other => anyhow::bail!("--mode {other:?}: use structured or nl"),
            };
            ontoloop::show::bench_drift(settings, &world, mode, json, target, csv).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Migrate { database_url } => {
            let settings =
                load_settings(cli.config.as_ref(), &[("store.url", database_url.as_ref())])?;
            ontoloop_observability::init(&settings.log).context("set up logging")?;
            let store = ontoloop_store::Store::open(&settings.store)
                .await
                .context("open the store and apply migrations")?;
            let applied = store
                .applied_migrations()
                .await
                .context("list applied migrations")?;
            println!("migrations applied: {}", applied.join(", "));
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}
