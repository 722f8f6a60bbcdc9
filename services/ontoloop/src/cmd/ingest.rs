//! `ontoloop ingest`: events from a file, or a folder's documents (a git repository's history
//! with `--git`, followed with `--watch`), pushed through the telemetry intake.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use ontoloop::ingest::{self, Intake, Limits, Options, Origins, Watch};
use ontoloop_core::events::Event;
use ontoloop_core::world::World;

use crate::print;
use crate::session::{Session, rpc};

/// The exit code of a folder run that pushed what it read but could not read every file.
const SOME_FILES_FAILED: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file of events, or a folder of documents (with --git: a folder in a git work tree).
    path: PathBuf,
    /// Whose tenant, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Folder: the origin of its pages (an origin names a page's authority in the ontology).
    #[arg(long, default_value = "docs", value_name = "NAME")]
    origin: String,
    /// Folder: the pages under DIR (relative to the folder) get ORIGIN instead; repeatable, the
    /// longest DIR wins.
    #[arg(long = "origin-map", value_name = "DIR=ORIGIN")]
    origin_map: Vec<String>,
    /// Folder: read the repository's history (in process, with libgit2): every commit that
    /// changed a file under the folder (first-parent line, oldest first) pushes that file's page
    /// version at the commit's time; a re-run pushes the commits after the last one pushed.
    #[arg(long, conflicts_with = "watch")]
    git: bool,
    /// Folder: after the run, follow the folder and push changes as they happen (Ctrl-C stops).
    #[arg(long)]
    watch: bool,
    /// Folder: a larger file is refused unread.
    #[arg(long, default_value_t = 2 * 1024 * 1024, value_name = "BYTES")]
    max_file_bytes: u64,
    /// Folder: more files than this end the run before anything is pushed.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    max_files: usize,
    /// Folder: also read files with this extension as plain text (repeatable, e.g. adoc).
    #[arg(long = "text-ext", value_name = "EXT")]
    text_exts: Vec<String>,
    /// Folder: where the hashes of what was pushed are kept between runs (default:
    /// FOLDER/.ontoloop/ingest-TENANT.json).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Folder: push every page, whatever earlier runs pushed (after pointing at a fresh store).
    #[arg(long)]
    full: bool,
    /// Folder: delete the pages of gone files one `doc.delete` each (of those earlier runs
    /// pushed) instead of a `source.listing` per origin; for a folder that shares its origin
    /// with other sources.
    #[arg(long)]
    no_listing: bool,
    /// Folder: pushes in flight at once.
    #[arg(long, default_value_t = 8, value_name = "N")]
    in_flight: usize,
    /// Folder: wait up to this long for the run's last event to be applied, and fail when the
    /// analyst refused it (0: do not wait).
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    wait_secs: u64,
    /// Print the summary as JSON (with --watch: one line per change).
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let meta = std::fs::metadata(&self.path)
            .with_context(|| format!("open {}", self.path.display()))?;
        if meta.is_dir() {
            return self.folder(session).await;
        }
        anyhow::ensure!(
            !self.git && !self.watch,
            "--git and --watch read a folder; {} is a file",
            self.path.display()
        );
        let file = &self.path;
        let text =
            std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
        let events = events_from_file(&text)
            .with_context(|| format!("read events from {}", file.display()))?;
        let caller = session.caller()?.clone();
        let telemetry = &mut session.clients().await?.telemetry;
        let mut last = 0;
        for (i, (event, at)) in events.iter().enumerate() {
            let pushed =
                ontoloop_proto::convert::event_to_wire(&caller, event, at.unwrap_or_else(Utc::now));
            let ack = telemetry
                .push_event(pushed)
                .await
                .map_err(rpc(&format!("event {i} ({})", event.kind())))?;
            last = ack.into_inner().sequence;
        }
        print::pushed(events.len(), last);
        Ok(ExitCode::SUCCESS)
    }

    async fn folder(self, mut session: Session) -> anyhow::Result<ExitCode> {
        let root = self
            .path
            .canonicalize()
            .with_context(|| format!("open {}", self.path.display()))?;
        let caller = session.caller()?.clone();
        let map = self
            .origin_map
            .iter()
            .map(|spec| ingest::origin_mapping(spec))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let opts = Options {
            origins: Origins::new(&self.origin, &map)?,
            limits: Limits::new(
                self.max_file_bytes,
                self.max_files,
                session.settings.services.max_message_bytes,
            ),
            text_exts: self
                .text_exts
                .iter()
                .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                .collect(),
            state_file: self
                .state
                .clone()
                .unwrap_or_else(|| ingest::state::default_path(&root, caller.tenant())),
            full: self.full,
            listing: !self.no_listing,
            in_flight: self.in_flight,
            progress: !self.json,
            wait: (self.wait_secs > 0).then(|| Duration::from_secs(self.wait_secs)),
            root,
        };
        let clients = session.clients().await?;
        let intake = Intake::new(
            clients.telemetry.clone(),
            clients.retrieval.clone(),
            clients.analyst.clone(),
            caller,
        );
        if self.git {
            let summary = ingest::git(&intake, &opts).await?;
            print::ingested(&summary, self.json)?;
            return Ok(exit(&summary));
        }
        let mut watch = if self.watch {
            Some(Watch::start(&opts)?)
        } else {
            None
        };
        let summary = ingest::folder(&intake, &opts).await?;
        print::ingested(&summary, self.json)?;
        let Some(watch) = watch.as_mut() else {
            return Ok(exit(&summary));
        };
        print::watching(&opts.root, self.json);
        follow(watch, &intake, &opts, summary.failed, self.json).await?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Pushes each burst of changes until Ctrl-C or SIGTERM; a failed rescan is printed and the
/// following goes on. A file not read is printed once, not on every rescan (`reported`: those
/// the first run printed).
async fn follow(
    watch: &mut Watch,
    intake: &Intake,
    opts: &Options,
    mut reported: Vec<ingest::Failure>,
    json: bool,
) -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listen for SIGTERM")?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
            next = watch.next(intake, opts) => match next {
                None => break,
                Some(Ok(mut summary)) => {
                    summary.failed.retain(|f| !reported.contains(f));
                    reported.extend(summary.failed.iter().cloned());
                    print::ingest_change(&summary, json)?;
                }
                Some(Err(err)) => eprintln!("error: {err:#}"),
            },
        }
    }
    Ok(())
}

fn exit(summary: &ingest::Summary) -> ExitCode {
    if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(SOME_FILES_FAILED)
    }
}

/// Events in a file: a world file (ontology plus the first scenario's timeline), a JSON array
/// of events, or one event per line.
fn events_from_file(text: &str) -> anyhow::Result<Vec<(Event, Option<DateTime<Utc>>)>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') && trimmed.contains("\"ontoloop.world/v1\"") {
        let world = World::parse(text)?;
        let mut events = vec![(
            Event::OntologySet {
                ontology: world.ontology.clone(),
            },
            None,
        )];
        if let Some(scenario) = world.parsed.first() {
            for entry in &scenario.timeline {
                if let Some(event) = entry.kind.event(false) {
                    events.push((event, Some(entry.at)));
                }
            }
        }
        return Ok(events);
    }
    let values: Vec<serde_json::Value> = if trimmed.starts_with('[') {
        serde_json::from_str(text).context("parse the JSON array")?
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("line {}", i + 1)))
            .collect::<anyhow::Result<_>>()?
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, mut value)| {
            let at = value
                .as_object_mut()
                .and_then(|o| o.remove("at"))
                .map(|v| {
                    serde_json::from_value::<DateTime<Utc>>(v)
                        .with_context(|| format!("event {i}: at"))
                })
                .transpose()?;
            let event: Event =
                serde_json::from_value(value).with_context(|| format!("event {i}"))?;
            event.validate().with_context(|| format!("event {i}"))?;
            Ok((event, at))
        })
        .collect()
}
