//! The folder-ingest benchmark: `ontoloop ingest PATH` as the CLI runs it (the CLI's own
//! `ontoloop::ingest::folder`: the same walk, reading, content hashes, pushes in flight and wait
//! for the last event to apply) on a folder of N generated Markdown files, into every service in
//! this process.
//!
//! The files are the scale benchmark's catalog pages (about 1.2 KB each, three sentences the
//! tenant's ontology reads among paragraphs it does not), a hundred to a folder. Three runs: the
//! first pushes every file; a re-run with nothing changed pushes nothing (each file's size and
//! modification time match what the state file kept); a re-run after one file in a hundred was
//! edited pushes those alone. Each run is timed until the intake acknowledged its last push
//! (pushed) and until the analyst applied its last event (applied: the run's own wait, as
//! `ontoloop ingest` waits). The analyst's `TenantSummary` then says how many pages it holds,
//! which must be every file.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use ontoloop::client::Clients;
use ontoloop::ingest::{self, Intake, Limits, Options, Origins};
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;
use serde::Serialize;

use crate::scale::{catalog_body, ontology};

/// The tenant the benchmark ingests into.
const TENANT: &str = "ingest";

/// Files a generated folder holds.
const PER_FOLDER: usize = 100;

/// One file in this many is edited before the last run.
const EDIT_EVERY: usize = 100;

/// The longest a run waits for its last event to apply.
const APPLY_WAIT: Duration = Duration::from_secs(3600);

/// How big the run is.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Markdown files generated.
    pub files: usize,
    /// Pushes in flight at once (`ontoloop ingest --in-flight`).
    pub in_flight: usize,
}

/// One run of `ontoloop ingest PATH` over the folder.
#[derive(Debug, Clone, Serialize)]
pub struct RunFigures {
    /// Files of a known format read.
    pub files: usize,
    /// Pages pushed.
    pub pushed: usize,
    /// Pages unchanged since the run before, not pushed.
    pub unchanged: usize,
    /// Seconds until the intake acknowledged every push.
    pub pushed_s: f64,
    /// Seconds until the run's last event was applied (the whole run when nothing was pushed).
    pub applied_s: f64,
    /// Files per second, read and pushed (`files / pushed_s`).
    pub pushed_files_per_s: f64,
    /// Files per second, read, pushed and applied (`files / applied_s`).
    pub applied_files_per_s: f64,
}

impl RunFigures {
    fn of(summary: &ingest::Summary) -> anyhow::Result<Self> {
        anyhow::ensure!(
            summary.failed.is_empty(),
            "files not read: {:?}",
            summary.failed
        );
        // A run that pushed nothing has nothing to wait for: its end is when it applied.
        let applied_s = match (summary.applied_seconds, summary.last_sequence) {
            (Some(seconds), _) => seconds,
            (None, 0) => summary.seconds,
            (None, _) => anyhow::bail!(
                "the run's last event was not seen applied: {}",
                summary
                    .applied_unknown
                    .as_deref()
                    .unwrap_or("not waited for")
            ),
        };
        let per_s = |seconds: f64| {
            if seconds > 0.0 {
                summary.files as f64 / seconds
            } else {
                0.0
            }
        };
        Ok(Self {
            files: summary.files,
            pushed: summary.pushed,
            unchanged: summary.unchanged,
            pushed_s: summary.pushed_seconds,
            applied_s,
            pushed_files_per_s: per_s(summary.pushed_seconds),
            applied_files_per_s: per_s(applied_s),
        })
    }
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    /// Markdown files generated.
    pub files: usize,
    /// Their size, MiB.
    pub folder_mb: f64,
    /// Pushes in flight at once.
    pub in_flight: usize,
    /// How the analyst read text (the extraction stages).
    pub extraction: String,
    /// The first run: every file pushed.
    pub first: RunFigures,
    /// A re-run with nothing changed.
    pub unchanged: RunFigures,
    /// A re-run after one file in a hundred was edited.
    pub edited: RunFigures,
    /// Pages the analyst holds at the end (`TenantSummary`): every file.
    pub pages: u64,
    /// Facts that hold at the end.
    pub facts: u64,
    /// Resident memory of this process (every service and the client) at the end, MiB.
    pub rss_mb: f64,
    /// The most this process held resident at any moment, MiB.
    pub peak_rss_mb: f64,
    /// Size of the store on disk, MiB (0 when the store is not a SQLite file).
    pub store_mb: f64,
}

impl IngestReport {
    /// The report as a table.
    pub fn to_text(&self) -> String {
        let row = |name: &str, run: &RunFigures| {
            format!(
                "{name:<22} {:>6} {:>7} {:>9} {:>9.2} {:>9.2} {:>10.0} {:>10.0}\n",
                run.files,
                run.pushed,
                run.unchanged,
                run.pushed_s,
                run.applied_s,
                run.pushed_files_per_s,
                run.applied_files_per_s,
            )
        };
        format!(
            "ingest: `ontoloop ingest PATH` on {} generated Markdown files ({:.1} MB), {} pushes \
             in flight, every service in this process\n\
             extraction {}\n\
             run                     files  pushed unchanged  pushed s applied s  pushed f/s applied f/s\n\
             {}{}{}\
             the analyst holds {} pages and {} facts; rss {:.1} MB (peak {:.1} MB), store {:.1} MB\n",
            self.files,
            self.folder_mb,
            self.in_flight,
            self.extraction,
            row("first run", &self.first),
            row("re-run, unchanged", &self.unchanged),
            row(&format!("re-run, 1 in {EDIT_EVERY} edited"), &self.edited),
            self.pages,
            self.facts,
            self.rss_mb,
            self.peak_rss_mb,
            self.store_mb,
        )
    }
}

/// The path of generated file `k` under the folder.
fn file_path(root: &Path, k: usize) -> std::path::PathBuf {
    root.join(format!("area-{:03}", k / PER_FOLDER))
        .join(format!("svc-{k}.md"))
}

/// Writes the folder: `files` catalog pages as Markdown; their total size in bytes.
pub fn generate(root: &Path, files: usize) -> anyhow::Result<u64> {
    let mut bytes = 0u64;
    for k in 0..files {
        let path = file_path(root, k);
        if k % PER_FOLDER == 0
            && let Some(dir) = path.parent()
        {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        let body = catalog_body(k, k);
        bytes += body.len() as u64;
        std::fs::write(&path, body).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(bytes)
}

/// Edits one file in [`EDIT_EVERY`] (a line added, so its size changes); how many.
fn edit(root: &Path, files: usize) -> anyhow::Result<usize> {
    let mut edited = 0;
    for k in (0..files).step_by(EDIT_EVERY) {
        let path = file_path(root, k);
        let mut body =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        body.push_str("\nRevised after the quarterly review.\n");
        std::fs::write(&path, body).with_context(|| format!("write {}", path.display()))?;
        edited += 1;
    }
    Ok(edited)
}

/// Runs the benchmark through `clients` (a system in this process, whose text is read as
/// `extraction` says), reporting progress lines; `store_mb` measures the store at the end.
pub async fn run(
    clients: &Clients,
    load: Load,
    extraction: String,
    max_message_bytes: usize,
    store_mb: impl FnOnce() -> f64,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<IngestReport> {
    let dir = tempfile::tempdir().context("make a folder for the files")?;
    let root = dir.path().canonicalize().context("resolve the folder")?;
    progress(&format!(
        "writing {} Markdown files under {}",
        load.files,
        root.display()
    ));
    let bytes = {
        let (root, files) = (root.clone(), load.files);
        tokio::task::spawn_blocking(move || generate(&root, files))
            .await
            .context("write the files")??
    };
    let caller = Caller::new(TENANT, "bench")?;
    // The tenant's ontology first, as a new user's would be, so the analyst reads every page.
    let set = Event::OntologySet {
        ontology: ontology(),
    };
    clients
        .telemetry
        .clone()
        .push_event(ontoloop_proto::convert::event_to_wire(
            &caller,
            &set,
            chrono::Utc::now(),
        ))
        .await
        .context("set the ontology")?;
    let intake = Intake::new(
        clients.telemetry.clone(),
        clients.retrieval.clone(),
        clients.analyst.clone(),
        caller.clone(),
    );
    let opts = Options {
        origins: Origins::new("docs", &[])?,
        limits: Limits::new(2 * 1024 * 1024, load.files.max(20_000), max_message_bytes),
        text_exts: Vec::new(),
        state_file: ingest::state::default_path(&root, TENANT),
        full: false,
        listing: true,
        in_flight: load.in_flight.max(1),
        progress: false,
        wait: Some(APPLY_WAIT),
        root: root.clone(),
    };

    progress("first run: every file");
    let first = RunFigures::of(&ingest::folder(&intake, &opts).await?)?;
    anyhow::ensure!(
        first.pushed == load.files,
        "the first run pushed {} of {} files",
        first.pushed,
        load.files
    );
    progress(&format!(
        "pushed in {:.2} s, applied in {:.2} s",
        first.pushed_s, first.applied_s
    ));

    progress("re-run, nothing changed");
    let unchanged = RunFigures::of(&ingest::folder(&intake, &opts).await?)?;
    anyhow::ensure!(
        unchanged.pushed == 0,
        "a re-run of an unchanged folder pushed {}",
        unchanged.pushed
    );

    let edited_files = {
        let (root, files) = (root.clone(), load.files);
        tokio::task::spawn_blocking(move || edit(&root, files))
            .await
            .context("edit the files")??
    };
    progress(&format!("re-run, {edited_files} files edited"));
    let edited = RunFigures::of(&ingest::folder(&intake, &opts).await?)?;
    anyhow::ensure!(
        edited.pushed == edited_files,
        "the re-run after {edited_files} edits pushed {}",
        edited.pushed
    );

    let summary = clients
        .analyst
        .clone()
        .tenant_summary(v1::TenantSummaryRequest {
            caller: Some(v1::Caller::from(&caller)),
            min_sequence: 0,
        })
        .await
        .context("ask the analyst for the tenant's summary")?
        .into_inner();
    anyhow::ensure!(
        summary.pages == load.files as u64 && summary.backlog == 0,
        "the analyst holds {} pages with {} events waiting, after {} files",
        summary.pages,
        summary.backlog,
        load.files
    );
    Ok(IngestReport {
        files: load.files,
        folder_mb: bytes as f64 / (1024.0 * 1024.0),
        in_flight: opts.in_flight,
        extraction,
        first,
        unchanged,
        edited,
        pages: summary.pages,
        facts: summary.facts,
        rss_mb: super::memory::rss_mb(),
        peak_rss_mb: super::memory::peak_rss_mb(),
        store_mb: store_mb(),
    })
}
