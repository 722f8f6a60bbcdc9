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
    /// Apply pending store migrations and exit (run once per release in the scaled-out shape).
    Migrate {
        /// Store URL (sets store.url).
        #[arg(long)]
        database_url: Option<String>,
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
