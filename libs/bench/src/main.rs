//! `ontoloop-bench`: the benchmarks, each on a system of its own (SQLite in a temporary
//! directory and, but for signals and outage, the in-process queue; outage on PostgreSQL) unless
//! told otherwise, and `gen-org`. `ontoloop bench ...` and `ontoloop gen-org` run this binary.
//! It parses arguments, calls the library and prints (`print`).

mod print;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use ontoloop::client::{Bearer, Clients};
use ontoloop::up::Local;
use ontoloop_bench::auth;
use ontoloop_bench::drift::{self, Mode};
use ontoloop_bench::fake_model;
use ontoloop_bench::org::GenSpec;
use ontoloop_core::knowledge::{ExtractSettings, Stage};
use ontoloop_core::world::World;
use ontoloop_settings::{Loader, Settings};

fn main() -> ExitCode {
    let cli = Cli::parse();
    ontoloop::run_command(cli.command.run(cli.config.as_deref()))
}

/// The `ontoloop-bench` command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "ontoloop-bench",
    version,
    about = "The ontoloop benchmarks (also run as `ontoloop bench ...`)"
)]
struct Cli {
    /// Settings file (TOML) layered over the defaults; `ONTOLOOP__SECTION__KEY` variables
    /// override it.
    #[arg(long, global = true, env = "ONTOLOOP_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// The settings: defaults, then `config` if given, then `ONTOLOOP__...` variables, then each
/// `(key, value)` a flag set.
fn load_settings(
    config: Option<&Path>,
    overrides: &[(&str, Option<&str>)],
) -> anyhow::Result<Settings> {
    Loader::new()
        .file_if_given(config)
        .set_given(overrides)
        .load()
        .context("load settings")
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Plate over loopback gRPC on a generated world against the oracle, with latency (also with
    /// the store restarted with auth.mode = jwt, each call carrying its caller's HS256 bearer),
    /// throughput, peak memory, org-graph rebuild time, event-to-visible latency and a BM25
    /// baseline; prints {"oracle_mismatches","p50_ms","p99_ms","p50_auth_ms","p99_auth_ms","qps",
    /// "peak_rss_mb","rebuild_ms","precision","baseline_precision",...} with --json.
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
        /// RabbitMQ URL (sets queue.url; the benchmark needs RabbitMQ, so without this flag
        /// queue.url must name one).
        #[arg(long)]
        amqp_url: Option<String>,
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
    /// ten-claim answers in process and over loopback gRPC, with authentication off and, on the
    /// same store restarted with auth.mode = jwt (HS256, a secret of the run's own), on.
    Firewall {
        /// The world file.
        #[arg(long)]
        world: PathBuf,
        /// Print {"confusion":{...},"latency_us":{...}} (latency_us with inproc_, grpc_,
        /// inproc_auth_ and grpc_auth_ p50 and p99).
        #[arg(long)]
        json: bool,
        /// Ten-claim answers timed each way.
        #[arg(long, default_value_t = 2000)]
        rounds: usize,
    },
    /// Sentences per second of each extraction stage on a world's pages, and two full rebuilds
    /// of its graph (the second with the sentence encoder's cache warm: no model calls).
    Extract {
        /// The world file.
        #[arg(long)]
        world: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ask and Validate latency over loopback gRPC on PostgreSQL (a fresh database, dropped
    /// after) and RabbitMQ reached through a proxy of the run's own: with the broker up, with the
    /// proxy cut and restored. Fails when either p99 with the broker cut is over twice its p99
    /// with it up; prints {"phases":[...],"ask_ratio","validate_ratio",...} with --json.
    Outage {
        /// The world file.
        #[arg(long, default_value = "tests/fixtures/orbit.world.json")]
        world: PathBuf,
        /// Ask and Validate calls per phase.
        #[arg(long, default_value_t = 2000)]
        requests: usize,
        /// RabbitMQ URL, plain amqp:// (default: ONTOLOOP_TEST_AMQP_URL or the local broker);
        /// the database is made on ONTOLOOP_TEST_DATABASE_URL's server (default the local one).
        #[arg(long)]
        amqp_url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The PostgreSQL restart drill at full size: N generated pages (the scale benchmark's)
    /// ingested on a fresh PostgreSQL database (dropped after) reached through a proxy of the
    /// run's own, then a flow of events and Asks one at a time while the proxy is cut and
    /// restored. Prints pushes refused while the store was away (all UNAVAILABLE with a reason?
    /// how soon, how many within 100 ms), Asks answered meanwhile, the time to resume and the
    /// acknowledged events lost; fails when one is lost, a push is refused otherwise, a call
    /// hangs or an Ask fails. {"phases":[...],"refused","first_refusal_after_s",
    /// "resumed_after_s","all_applied_after_s","lost",...} with --json.
    StoreOutage {
        /// Pages in the tenant (one service each, about 1.2 KB).
        #[arg(long, default_value_t = 10_000)]
        pages: usize,
        /// Events per second in the flow (each moves a service to another team).
        #[arg(long, default_value_t = 50.0)]
        events_per_second: f64,
        /// Seconds the store stays away.
        #[arg(long, default_value_t = 30)]
        outage_seconds: u64,
        /// Seconds the flow runs before the cut, and after pushes are acknowledged again.
        #[arg(long, default_value_t = 10)]
        steady_seconds: u64,
        /// RabbitMQ URL (default: ONTOLOOP_TEST_AMQP_URL or the local broker); the database is
        /// made on ONTOLOOP_TEST_DATABASE_URL's server (default the local one).
        #[arg(long)]
        amqp_url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resident memory of the whole system in this process over many tenants' signals and Asks:
    /// the curve after the warm-up (the first tenth of the load), and a failure when its end is
    /// more than 10% above its start.
    Memory {
        /// Tenants, each with a small generated ontology and a few pages.
        #[arg(long, default_value_t = 1000)]
        tenants: usize,
        /// Failure signals, through ReportSignals streams, spread over the tenants.
        #[arg(long, default_value_t = 1_000_000)]
        signals: u64,
        /// Asks, spread over the tenants.
        #[arg(long, default_value_t = 100_000)]
        asks: u64,
        /// Store URL (sets store.url; default: a fresh SQLite file in a temporary directory).
        #[arg(long)]
        store_url: Option<String>,
        /// RabbitMQ URL (sets queue.url; default: the in-process queue).
        #[arg(long)]
        amqp_url: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Passage search costs: N generated pages (the scale benchmark's) cut into passages,
    /// indexed by BM25 and embedded with the in-process sentence encoder, then searched by
    /// questions no slot answers with BM25, dense and fused rankings; prints passages embedded
    /// per second and search p50/p99 per ranking ({"pages","passages","embedded_per_s",
    /// "bm25_ms","dense_ms","fused_ms",...} with --json). Needs the model (`make model`).
    Passages {
        /// Pages (about 1.2 KB, four passages each).
        #[arg(long, default_value_t = 10_000)]
        pages: usize,
        /// Questions timed per ranking.
        #[arg(long, default_value_t = 1_000)]
        questions: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The gate's cost before a rebuild goes live: N generated pages (the scale benchmark's) read
    /// into a graph, the rebuild built in a shadow, Q recent questions replayed against both as
    /// the analyst's gate replays them; prints the shadow's build time and the replay time
    /// ({"pages","shadow_build_s","replayed","replay_s","per_question_ms","differing",...} with
    /// --json).
    Gate {
        /// Pages (one service each, about 1.2 KB).
        #[arg(long, default_value_t = 10_000)]
        pages: usize,
        /// Recent questions replayed.
        #[arg(long, default_value_t = 1_000)]
        questions: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What the communities cost: N generated pages (services in domains of 50 that depend on
    /// and call each other) read into a graph; prints the time to build the entity graph and to
    /// find its communities, their memory, and the latency of "what are the main themes?" and
    /// "how does X relate to Y?", the first after a change and from what the read model kept
    /// ({"pages","entity_graph_s","communities_s","memory_mb","relate_first_ms",
    /// "themes_first_ms","relate_ms":{"p50","p99"},"themes_ms":{"p50","p99"},...} with --json).
    Overview {
        /// Pages (one service each).
        #[arg(long, default_value_t = 10_000)]
        pages: usize,
        /// Questions of each kind timed from what the read model kept.
        #[arg(long, default_value_t = 200)]
        questions: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One tenant of N generated pages (an ontology of its own, no world file) ingested through
    /// the intake, the same pages again (nothing to read: 0 texts encoded), then a steady stream
    /// of single-page events while agents ask and validate, searches (BM25, then fused) and last
    /// the wait (up to 30 minutes from the ingest) for the dense index to cover every passage;
    /// every call over loopback gRPC with auth.mode = jwt, carrying a bearer; prints {"pages",
    /// "ingest_pages_per_s","ingest_sentences_scored","ingest_texts_encoded",
    /// "encoded_texts_per_s","reingest_secs","reingest_sentences_scored",
    /// "reingest_texts_encoded","dense_covered_after_s","dense",
    /// "event_to_visible_ms":{"p50","p99"},"event_to_accepted_ms","event_to_applied_ms","ask_ms":{"p50","p99"},
    /// "validate_ms":{"p50","p99"},"first_validate_ms","search_bm25_ms":{"p50","p99"},
    /// "search_fused_ms","search_fused_ranking","rss_mb","store_mb",...} with --json.
    Scale {
        /// Pages in the tenant (one service each, about 1.2 KB).
        #[arg(long, default_value_t = 10_000)]
        pages: usize,
        /// Single-page events per second once ingested.
        #[arg(long, default_value_t = 50.0)]
        events_per_second: f64,
        /// Seconds the steady stream runs.
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Pushes kept in flight while ingesting (a bulk load pipelines its pushes; the intake
        /// writes the ones that arrive together in one transaction).
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
        in_flight: u16,
        /// Store URL (sets store.url; default: a fresh SQLite file in a temporary directory).
        #[arg(long)]
        store_url: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// `ontoloop ingest PATH` (the CLI's own folder ingest) on N generated Markdown files into
    /// every service in this process: the first run, a re-run with nothing changed and one after
    /// one file in a hundred was edited, each timed until pushed and until applied; prints
    /// {"files","first":{"pushed_s","applied_s","pushed_files_per_s","applied_files_per_s",...},
    /// "unchanged":{...},"edited":{...},"pages","facts","rss_mb","store_mb",...} with --json.
    Ingest {
        /// Markdown files generated (about 1.2 KB each, a hundred to a folder).
        #[arg(long, default_value_t = 10_000)]
        files: usize,
        /// Pushes in flight at once (the default of `ontoloop ingest --in-flight`).
        #[arg(long, default_value_t = 8)]
        in_flight: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
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
        /// Which extraction reads the pages: `patterns` (the exact templates only),
        /// `semantic` (structured, patterns and semantic stages) or `model` (structured,
        /// patterns and the model stage, answered by a seeded fake model built from the world);
        /// default: the configured `[extract]` pipeline.
        #[arg(long)]
        extractor: Option<String>,
        /// With `--extractor model`: the rate (0 to 1) at which the fake model drops a fact,
        /// respells a name, picks a neighbouring predicate or invents a value from a sentence
        /// that asserts nothing.
        #[arg(long, default_value_t = 0.0)]
        extractor_noise: f64,
        /// With `--extractor model`: the fake model's seed.
        #[arg(long, default_value_t = 11)]
        extractor_seed: u64,
    },
    /// Does the ontology grow itself? Replays a world with its predicates stripped, lets an
    /// agent ask its questions, proposes an ontology from the pages and the failed questions,
    /// has a reviewer stand-in approve what agrees with the world's own predicates, applies it
    /// and asks again; prints {"accuracy_before","accuracy_after","accuracy_full",
    /// "wrong_unhedged","proposals_made","proposals_approved",...} with --json.
    Grow {
        /// The world file (format ontoloop.world/v1).
        #[arg(long)]
        world: PathBuf,
        /// Give the proposer the world's entity type names.
        #[arg(long)]
        keep_types: bool,
        /// The scenario replayed (default: the world's first).
        #[arg(long)]
        scenario: Option<String>,
        /// Print the report as JSON.
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
}

impl Command {
    async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        match self {
            Command::GenOrg {
                people,
                items,
                services,
                tenants,
                seed,
                database_url,
                json,
            } => {
                let settings = load_settings(config, &[("store.url", database_url.as_deref())])?;
                let spec = GenSpec {
                    people,
                    items,
                    services: services.unwrap_or((people / 10).max(1)),
                    tenants: tenants.max(1),
                    seed,
                };
                let report = ontoloop_bench::org::gen_org(&settings, &spec).await?;
                print::gen_org(&report, json)?;
            }
            Command::Signals {
                signals,
                amqp_url,
                database_url,
                preload,
                json,
            } => {
                let scratch = Scratch::new(database_url)?;
                let settings = load_settings(
                    config,
                    &[
                        ("queue.url", amqp_url.as_deref()),
                        ("store.url", Some(&scratch.store_url)),
                    ],
                )?;
                let report = ontoloop_bench::signals::run(settings, signals, preload).await?;
                print::bench_signals(&report, preload, json)?;
            }
            Command::Memory {
                tenants,
                signals,
                asks,
                store_url,
                amqp_url,
                json,
            } => {
                let scratch = Scratch::new(store_url)?;
                let settings = load_settings(config, &[])?;
                let mut settings = scratch.settings(&settings);
                if let Some(url) = amqp_url {
                    settings.queue.url = url;
                }
                eprintln!("bench: starting every service in this process");
                let local = Local::start(settings).await?;
                let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
                let load = ontoloop_bench::memory::Load {
                    tenants,
                    signals,
                    asks,
                };
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report = ontoloop_bench::memory::run(&clients, load, &mut progress).await?;
                local.stop().await?;
                print::report(&report, json, |report| report.to_text())?;
                if !report.flat() {
                    return Ok(ExitCode::FAILURE);
                }
            }
            Command::Scale {
                pages,
                events_per_second,
                seconds,
                in_flight,
                store_url,
                json,
            } => {
                let scratch = Scratch::new(store_url)?;
                let mut settings = scratch.settings(&load_settings(config, &[])?);
                // Every call carries a bearer, as an agent's does: auth.mode = jwt, a secret of
                // the run's own, one token for the tenant's loader, agent and admin.
                settings.auth = auth::jwt(&settings.auth);
                let token = auth::token_with(
                    &settings.auth,
                    ontoloop_bench::scale::TENANT,
                    "bench",
                    ontoloop_auth::Role::Admin,
                )?;
                eprintln!("bench: starting every service in this process (auth.mode = jwt)");
                let local = Local::start(settings).await?;
                let clients = Clients::from_addrs_with(
                    &local.addrs,
                    &local.ctx.settings.tls,
                    Bearer::new(&token)?,
                )
                .await?;
                let load = ontoloop_bench::scale::Load {
                    pages,
                    events_per_second,
                    seconds,
                    in_flight: usize::from(in_flight),
                };
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let store_url = scratch.store_url.clone();
                let encoder = local.ctx.extraction().await.encoder().cloned();
                let read_models = local.ctx.read_models().await;
                let report = ontoloop_bench::scale::run(
                    &clients,
                    Some(&local.ctx.store),
                    Some(read_models),
                    load,
                    || ontoloop_bench::scale::sqlite_mb(&store_url),
                    || encoder.as_ref().and_then(|e| e.texts_encoded()),
                    &mut progress,
                )
                .await?;
                local.stop().await?;
                print::report(&report, json, |report| report.to_text())?;
            }
            Command::Ingest {
                files,
                in_flight,
                json,
            } => {
                let scratch = Scratch::new(None)?;
                let settings = load_settings(config, &[])?;
                let local = scratch.start(&settings).await?;
                let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
                let settings = &local.ctx.settings;
                let extraction = ontoloop_embed::describe(&settings.extract);
                let max_message_bytes = settings.services.max_message_bytes;
                let load = ontoloop_bench::ingest::Load { files, in_flight };
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let store_url = scratch.store_url.clone();
                let report = ontoloop_bench::ingest::run(
                    &clients,
                    load,
                    extraction,
                    max_message_bytes,
                    || ontoloop_bench::scale::sqlite_mb(&store_url),
                    &mut progress,
                )
                .await?;
                local.stop().await?;
                print::report(&report, json, |report| report.to_text())?;
            }
            Command::Gate {
                pages,
                questions,
                json,
            } => {
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report = ontoloop_bench::gate::run(pages, questions, &mut progress)?;
                print::report(&report, json, |report| report.to_text())?;
            }
            Command::Overview {
                pages,
                questions,
                json,
            } => {
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report = ontoloop_bench::overview::run(pages, questions, &mut progress)?;
                print::report(&report, json, |report| report.to_text())?;
            }
            Command::Passages {
                pages,
                questions,
                json,
            } => {
                let settings = load_settings(config, &[])?;
                let configured = &settings.extract.model_dir;
                let configured = (!configured.trim().is_empty()).then(|| Path::new(configured));
                let embedder = ontoloop_embed::Embedder::load_default(configured)
                    .context("load the sentence-encoder model (fetch it with `make model`)")?;
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report = ontoloop_bench::passages::run(
                    std::sync::Arc::new(embedder),
                    pages,
                    questions,
                    &mut progress,
                )?;
                print::report(&report, json, |report| report.to_text())?;
            }
            Command::Plate {
                people,
                items,
                database_url,
                json,
            } => {
                let scratch = Scratch::new(database_url)?;
                let settings = load_settings(config, &[])?;
                let report =
                    ontoloop_bench::plate::run(scratch.settings(&settings), people, items).await?;
                print::bench_plate(&report, json)?;
            }
            Command::Firewall {
                world,
                json,
                rounds,
            } => {
                let settings = load_settings(config, &[])?;
                bench_firewall(settings, &world, json, rounds).await?;
            }
            Command::Outage {
                world,
                requests,
                amqp_url,
                json,
            } => {
                let settings = load_settings(config, &[])?;
                let world = read_world(&world)?;
                let amqp_url = amqp_url.unwrap_or_else(ontoloop_testkit::servers::amqp_url);
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report = ontoloop_bench::outage::run(
                    settings,
                    &world,
                    &amqp_url,
                    requests,
                    &mut progress,
                )
                .await?;
                print::report(&report, json, |report| report.to_text())?;
                if !report.holds() {
                    return Ok(ExitCode::FAILURE);
                }
            }
            Command::StoreOutage {
                pages,
                events_per_second,
                outage_seconds,
                steady_seconds,
                amqp_url,
                json,
            } => {
                let settings = load_settings(config, &[])?;
                let amqp_url = amqp_url.unwrap_or_else(ontoloop_testkit::servers::amqp_url);
                let load = ontoloop_bench::store_outage::Load {
                    pages,
                    events_per_second,
                    outage: std::time::Duration::from_secs(outage_seconds),
                    steady: std::time::Duration::from_secs(steady_seconds),
                };
                let mut progress = |line: &str| eprintln!("bench: {line}");
                let report =
                    ontoloop_bench::store_outage::run(settings, &amqp_url, load, &mut progress)
                        .await?;
                print::report(&report, json, |report| report.to_text())?;
                if !report.holds() {
                    return Ok(ExitCode::FAILURE);
                }
            }
            Command::Extract { world, json } => {
                let settings = load_settings(config, &[])?;
                let world = read_world(&world)?;
                let dir = settings.extract.model_dir.trim().to_owned();
                let dir = (!dir.is_empty()).then(|| PathBuf::from(dir));
                let report = tokio::task::spawn_blocking(move || {
                    ontoloop_bench::extract::run(&world, dir.as_deref()).map(|r| (r, world))
                })
                .await
                .context("run the extraction benchmark")??;
                let (report, world) = report;
                print::report(&report, json, |report| report.to_text(&world))?;
            }
            Command::Grow {
                world,
                keep_types,
                scenario,
                json,
            } => {
                let settings = load_settings(config, &[])?;
                let options = ontoloop_bench::grow::Options {
                    keep_types,
                    scenario,
                };
                bench_grow(settings, &world, &options, json).await?;
            }
            Command::Drift {
                world,
                mode,
                json,
                target,
                csv,
                extractor,
                extractor_noise,
                extractor_seed,
            } => {
                let mut settings = load_settings(config, &[])?;
                let mut fake = None;
                match extractor.as_deref() {
                    None => {}
                    Some("patterns") => settings.extract = ExtractSettings::patterns_only(),
                    Some("semantic") => {
                        settings.extract.stages = ExtractSettings::default().stages;
                    }
                    Some("model") if !target => {
                        let world = read_world(&world)?;
                        let model =
                            fake_model::start(&world, extractor_noise, extractor_seed).await?;
                        let extract = &mut settings.extract;
                        extract.stages = vec![Stage::Structured, Stage::Patterns, Stage::Model];
                        extract.model.enabled = true;
                        extract.model.base_url = model.base_url.clone();
                        extract.model.model = "fake-model".to_owned();
                        extract.model.api_key = String::new();
                        fake = Some(model);
                    }
                    Some("model") => {}
                    Some(other) => {
                        anyhow::bail!("--extractor {other:?}: use patterns, semantic or model")
                    }
                }
                if target && extractor.is_some() {
                    anyhow::bail!("--extractor applies to the embedded system, not to --target");
                }
                let mode = match mode.as_str() {
                    "structured" => Mode::Structured,
                    "nl" => Mode::Nl,
                    other => anyhow::bail!("--mode {other:?}: use structured or nl"),
                };
                bench_drift(settings, &world, mode, json, target, csv).await?;
                if let Some(fake) = fake {
                    eprintln!(
                        "bench: {} (noise {extractor_noise}, seed {extractor_seed})",
                        fake.faults.describe()
                    );
                    for line in fake.faults.lines() {
                        eprintln!("bench:   {line}");
                    }
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A benchmark's own store: the one `--database-url` names, else a fresh SQLite file in a
/// temporary directory that lives as long as this.
struct Scratch {
    store_url: String,
    _dir: tempfile::TempDir,
}

impl Scratch {
    fn new(database_url: Option<String>) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir().context("create a temporary directory")?;
        let store_url = database_url
            .unwrap_or_else(|| format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()));
        Ok(Self {
            store_url,
            _dir: dir,
        })
    }

    /// `settings` on this store and the in-process queue: an embedded system of its own.
    fn settings(&self, settings: &Settings) -> Settings {
        let mut embedded = settings.clone();
        embedded.store.url = self.store_url.clone();
        embedded.queue.url = "memory".to_owned();
        embedded
    }

    /// An embedded system of its own, started.
    async fn start(&self, settings: &Settings) -> anyhow::Result<Local> {
        eprintln!(
            "bench: starting an embedded system (SQLite in a temporary directory, in-process queue)"
        );
        Local::start(self.settings(settings)).await
    }
}

fn read_world(path: &Path) -> anyhow::Result<World> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    Ok(World::parse(&text)?)
}

/// How long the drift benchmark's own system waits for an event to apply, or a call to end:
/// ten minutes, so a busy machine slows the run down instead of failing it.
const BENCH_PATIENCE_MS: u64 = 600_000;

/// `settings` waiting [`BENCH_PATIENCE_MS`] for the system: a slow machine gives a slow run, not
/// an aborted one (read-your-writes and a call's deadline are the ones a user's system keeps).
fn patient(mut settings: Settings) -> Settings {
    settings.retrieval.read_your_writes_timeout_ms = BENCH_PATIENCE_MS;
    settings.services.request_timeout_ms = BENCH_PATIENCE_MS;
    settings
}

/// `ontoloop bench drift`.
async fn bench_drift(
    settings: Settings,
    world_path: &Path,
    mode: Mode,
    json: bool,
    target: bool,
    csv: Option<PathBuf>,
) -> anyhow::Result<()> {
    let world = read_world(world_path)?;
    let mut progress = |line: &str| eprintln!("bench: {line}");
    let (report, extraction) = if target {
        let clients = Clients::from_settings(&settings).await?;
        let report = drift::run(&world, clients, mode, &mut progress).await?;
        (report, "the deployment's own [extract] pipeline".to_owned())
    } else {
        let scratch = Scratch::new(None)?;
        let settings = patient(settings);
        let local = scratch.start(&settings).await?;
        let extraction = local.ctx.extraction().await.describe();
        progress(&format!("extraction: {extraction}"));
        let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
        let report = drift::run(&world, clients, mode, &mut progress).await?;
        let extraction = if settings.extract.model_wanted() {
            let usage = local.ctx.extraction().await.model_usage();
            format!(
                "{extraction}; model stage: {} requests, {} sentences sent, {} answered from the \
                 cache, {} tokens, {} triples returned, {} dropped by grounding, {} kept, {} \
                 regrounded under a better-fitting predicate, {} failed calls",
                usage.cost.requests,
                usage.cost.sentences_sent,
                usage.cost.cache_hits,
                usage.cost.tokens,
                usage.returned,
                usage.dropped,
                usage.kept,
                usage.corrected,
                usage.errors
            )
        } else {
            extraction
        };
        local.stop().await?;
        (report, extraction)
    };
    let mode_name = if mode == Mode::Structured {
        "structured"
    } else {
        "nl"
    };
    let csv = csv.unwrap_or_else(|| {
        PathBuf::from(format!("target/bench/drift-{}-{mode_name}.csv", world.name))
    });
    if let Some(dir) = csv.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(&csv, report.to_csv()).with_context(|| format!("write {}", csv.display()))?;
    print::bench_drift(&report, &world, mode, &extraction, &csv, json)
}

/// `ontoloop bench grow`: always on an embedded system of its own.
async fn bench_grow(
    settings: Settings,
    world_path: &Path,
    options: &ontoloop_bench::grow::Options,
    json: bool,
) -> anyhow::Result<()> {
    let world = read_world(world_path)?;
    let mut progress = |line: &str| eprintln!("bench: {line}");
    let scratch = Scratch::new(None)?;
    let settings = patient(settings);
    let local = scratch.start(&settings).await?;
    let setup = local.ctx.extraction().await;
    progress(&format!("extraction: {}", setup.describe()));
    let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
    let dashboard = ontoloop_bench::grow::Dashboard {
        addr: local
            .http_addrs
            .iter()
            .find(|(kind, _)| *kind == ontoloop_core::ServiceKind::Analyst)
            .map(|(_, addr)| *addr)
            .context("the analyst's HTTP address")?,
    };
    let report =
        ontoloop_bench::grow::run(&world, clients, &setup, &dashboard, options, &mut progress)
            .await?;
    local.stop().await?;
    print::report(&report, json, |report| report.to_text())?;
    Ok(())
}

/// `ontoloop bench firewall`: always on an embedded system, since it also times the firewall in
/// process.
async fn bench_firewall(
    settings: Settings,
    world_path: &Path,
    json: bool,
    rounds: usize,
) -> anyhow::Result<()> {
    let world = read_world(world_path)?;
    let mut progress = |line: &str| eprintln!("bench: {line}");
    let scratch = Scratch::new(None)?;
    let local = scratch.start(&settings).await?;
    let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
    let validator =
        ontoloop_firewall::Validator::new(local.ctx.clone(), local.ctx.read_models().await)?;
    let (mut report, answer) = ontoloop_bench::firewall::run(
        &world,
        clients,
        &validator,
        rounds,
        settings.retrieval.hedge_below_authority,
        &mut progress,
    )
    .await?;
    local.stop().await?;
    // The same store, restarted with auth.mode = "jwt" and a secret of this run's own; the
    // replayed caller's token carried by every call.
    let mut with_auth = settings.clone();
    with_auth.auth = auth::jwt(&settings.auth);
    let token = auth::token(
        &with_auth.auth,
        answer.caller.tenant(),
        answer.caller.principal(),
    )?;
    progress(&format!(
        "timing {rounds} ten-claim answers in process and over gRPC with auth.mode = jwt"
    ));
    let local = scratch.start(&with_auth).await?;
    let clients =
        Clients::from_addrs_with(&local.addrs, &local.ctx.settings.tls, Bearer::new(&token)?)
            .await?;
    let validator =
        ontoloop_firewall::Validator::new(local.ctx.clone(), local.ctx.read_models().await)?;
    let verifier = ontoloop_auth::Verifier::new(&with_auth.auth, None)
        .context("a verifier of the benchmark's tokens")?;
    ontoloop_bench::firewall::time_with_auth(
        &mut report,
        &answer,
        &validator,
        &verifier,
        &token,
        clients,
        rounds,
    )
    .await?;
    local.stop().await?;
    print::bench_firewall(&report, &world, json)
}
