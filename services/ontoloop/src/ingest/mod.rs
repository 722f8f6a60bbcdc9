//! `ontoloop ingest PATH`: a folder's documents, or a local git repository's history, pushed as
//! pages through the telemetry intake.
//!
//! One page per file: its id the path relative to the folder, its title the first heading (else
//! the file name), its origin the one configured for its folder ([`Origins`]). A run pushes only
//! what differs from what the store holds (the analyst's `ListPages`; [`state`] only spares
//! re-reading files unchanged since); pages whose files are gone are deleted, by one
//! `source.listing` per origin (the folder is the whole of its origins) or, without the listing,
//! a `doc.delete` each. With `--git` each commit that changed a file pushes that file's page
//! version at the commit's time, so questions as of an old commit see what it said then; with
//! `--watch` ([`Watch`]) the folder is followed and changes pushed as they happen.
//!
//! Reading runs on a blocking thread and hands prepared pages to the pushes over a bounded
//! channel, so files are read while earlier ones are in flight. Nothing is skipped silently:
//! every file not pushed is counted (hidden entries, other formats) or listed with its reason.

pub mod formats;
mod git;
mod html;
mod intake;
mod pdf;
mod progress;
pub mod scan;
pub mod state;
mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use ontoloop_core::events::{Event, MAX_LISTED_DOCS};
use prost::Message as _;
use serde::Serialize;
use tokio::sync::mpsc;

use intake::Applied;
pub use intake::Intake;
use progress::{Counts, Progress};
pub use scan::{Limits, Origins, origin_mapping};
use state::{Entry, State};
pub use watch::Watch;

/// Prepared pages waiting for a push, at most.
const QUEUED: usize = 64;

/// What a run reads and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The folder.
    pub root: PathBuf,
    /// Each page's origin.
    pub origins: Origins,
    /// Bounds.
    pub limits: Limits,
    /// Extensions read as plain text beside the formats known (lower case, no dot).
    pub text_exts: Vec<String>,
    /// Where the state of earlier runs is kept.
    pub state_file: PathBuf,
    /// Push every page, whatever earlier runs pushed.
    pub full: bool,
    /// Delete the pages of gone files with one `source.listing` per origin (else a `doc.delete`
    /// per page the state knows).
    pub listing: bool,
    /// Pushes in flight at once (folder mode; `--git` pushes one at a time, in order).
    pub in_flight: usize,
    /// Show progress on stderr.
    pub progress: bool,
    /// Wait up to this long for the run's last event to be applied (none: do not wait).
    pub wait: Option<Duration>,
}

/// What a run did.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// The folder.
    pub root: String,
    /// `folder` or `git`.
    pub mode: &'static str,
    /// Files of a format read (with `--git`: file versions in the commits read).
    pub files: usize,
    /// `--git`: commits read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<usize>,
    /// Pages (page versions) pushed.
    pub pushed: usize,
    /// Pages unchanged since the last run, not pushed.
    pub unchanged: usize,
    /// Pages deleted (their files gone).
    pub deleted: usize,
    /// Files not read or not pushed, with the reason.
    pub failed: Vec<Failure>,
    /// Files of formats not read, by extension.
    pub other_formats: BTreeMap<String, usize>,
    /// Hidden entries (names starting with `.`) not read.
    pub hidden: usize,
    /// What files were compared with: `store` (the pages the tenant holds), `state file` (the
    /// store could not be listed, see `store_unlisted`), `nothing` (`--full`).
    pub compared_with: &'static str,
    /// Why the store could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_unlisted: Option<String>,
    /// `source.listing` events pushed.
    pub listings: usize,
    /// The highest intake sequence number of the run's events (0: none pushed): pass it as
    /// `min_sequence` to read the run's writes.
    pub last_sequence: u64,
    /// Seconds from the start until the run's last event was applied (none: not waited for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_seconds: Option<f64>,
    /// Why the wait for the last event to apply said nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_unknown: Option<String>,
    /// Seconds until every push was acknowledged.
    pub pushed_seconds: f64,
    /// How long the run took (with the wait for the last event to apply).
    pub seconds: f64,
    /// Page ids pushed or deleted, in order.
    #[serde(skip)]
    pub changed: Vec<String>,
    /// Of `failed`, those the walk refused before reading (not among `files`).
    #[serde(skip)]
    refused_unread: usize,
}

/// A file not read or not pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// Its path relative to the folder (`--git`: with the commit).
    pub path: String,
    /// Why.
    pub reason: String,
}

impl Summary {
    fn new(opts: &Options, mode: &'static str) -> Self {
        Self {
            root: opts.root.display().to_string(),
            mode,
            ..Self::default()
        }
    }

    fn fail(&mut self, path: impl Into<String>, reason: impl Into<String>) {
        self.failed.push(Failure {
            path: path.into(),
            reason: reason.into(),
        });
    }

    fn counts(&self) -> Counts {
        Counts {
            read: self.pushed + self.unchanged + self.failed.len() - self.refused_unread,
            pushed: self.pushed,
            unchanged: self.unchanged,
            failed: self.failed.len() - self.refused_unread,
        }
    }
}

/// Ingests the folder: pushes the pages of files changed since the last run and deletes those
/// of files gone.
pub async fn folder(intake: &Intake, opts: &Options) -> anyhow::Result<Summary> {
    folder_run(intake, opts, Run::Full).await
}

/// Whether a folder run is a whole run or a watch's rescan (no progress; a listing only when a
/// file went).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Full,
    Rescan,
}

async fn folder_run(intake: &Intake, opts: &Options, run: Run) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut summary = Summary::new(opts, "folder");
    let mut state = if opts.full && run == Run::Full {
        State::default()
    } else {
        State::load(&opts.state_file)?
    };
    let scan = {
        let (root, limits, exts) = (
            opts.root.clone(),
            opts.limits.clone(),
            opts.text_exts.clone(),
        );
        tokio::task::spawn_blocking(move || scan::scan(&root, &limits, &exts))
            .await
            .context("walk the folder")??
    };
    summary.hidden = scan.hidden;
    summary.other_formats = scan.other_formats.clone();
    for (id, reason) in &scan.refused {
        summary.fail(id.clone(), reason.clone());
    }
    summary.refused_unread = scan.refused.len();
    summary.files = scan.files.len();
    // Before any push, so a run that cannot list pushes nothing.
    let stored = stored(intake, opts, run, &state, &mut summary).await?;
    let mut progress = Progress::new(scan.files.len(), "files", opts.progress && run == Run::Full);
    let result = async {
        let known: HashMap<String, Entry> = scan
            .files
            .iter()
            .filter_map(|f| {
                let read = state.pages.get(&f.id);
                let known = match &stored {
                    // A file read before counts only while the store holds what it said.
                    Some(stored) => match (stored.get(&f.id), read) {
                        (Some(held), Some(read)) if held.same_page(read) => read,
                        (held, _) => held?,
                    },
                    None => read?,
                };
                Some((f.id.clone(), known.clone()))
            })
            .collect();
        let (files, origins, limits) = (
            scan.files.clone(),
            opts.origins.clone(),
            opts.limits.clone(),
        );
        read_and_push(
            intake,
            opts.in_flight.max(1),
            &mut state,
            &mut summary,
            &mut progress,
            "read the files",
            move |tx| read_files(files, &known, &origins, &limits, tx),
        )
        .await?;
        let stored_ids: Vec<String> = stored.iter().flat_map(HashMap::keys).cloned().collect();
        delete_gone(
            intake,
            opts,
            run,
            &scan,
            stored_ids,
            &mut state,
            &mut summary,
        )
        .await
    }
    .await;
    finish(intake, opts, started, state, summary, progress, result).await
}

/// The pages of the folder's origins the store holds (none: compare with the state file, for a
/// rescan, whose state the first run made from the store, or when the caller may not list;
/// `--full`: with nothing).
async fn stored(
    intake: &Intake,
    opts: &Options,
    run: Run,
    state: &State,
    summary: &mut Summary,
) -> anyhow::Result<Option<HashMap<String, Entry>>> {
    if opts.full && run == Run::Full {
        summary.compared_with = "nothing";
        return Ok(Some(HashMap::new()));
    }
    summary.compared_with = "state file";
    if run == Run::Rescan {
        return Ok(None);
    }
    let listed = listed(intake, &folder_origins(opts, state), summary).await?;
    if listed.is_some() {
        summary.compared_with = "store";
    }
    Ok(listed)
}

/// The pages of `origins` the store holds; `None`, with the reason in `summary`, when the caller
/// may not list them (or the server has no `ListPages`).
async fn listed(
    intake: &Intake,
    origins: &BTreeSet<String>,
    summary: &mut Summary,
) -> anyhow::Result<Option<HashMap<String, Entry>>> {
    use tonic::Code;
    match intake.stored(origins).await {
        Ok(stored) => Ok(Some(stored)),
        Err(status) if matches!(status.code(), Code::PermissionDenied | Code::Unimplemented) => {
            summary.store_unlisted = Some(format!("{:?}: {}", status.code(), status.message()));
            Ok(None)
        }
        Err(status) => Err(anyhow::anyhow!(
            "list the pages the store holds: {:?}: {}",
            status.code(),
            status.message()
        )),
    }
}

/// Runs `read` on a blocking thread, handing over what it reads through a channel, while
/// [`drain`] pushes it, `in_flight` pushes at a time; `read`'s result once both are done (or a
/// reader that could not finish, named by `what`, else a push that ended the run).
async fn read_and_push<T: Send + 'static>(
    intake: &Intake,
    in_flight: usize,
    state: &mut State,
    summary: &mut Summary,
    progress: &mut Progress,
    what: &'static str,
    read: impl FnOnce(&mpsc::Sender<Item>) -> T + Send + 'static,
) -> anyhow::Result<T> {
    let (tx, rx) = mpsc::channel(QUEUED);
    let reader = tokio::task::spawn_blocking(move || read(&tx));
    let pushed = drain(intake, rx, in_flight, state, summary, progress).await;
    let read = reader.await.context(what)?;
    pushed?;
    Ok(read)
}

/// Ends a run: waits for its last event to apply, then keeps the state. What was pushed is
/// kept even when the run stopped half way; nothing is when the analyst refused the run's
/// last event (a re-run pushes them again).
async fn finish(
    intake: &Intake,
    opts: &Options,
    started: Instant,
    mut state: State,
    mut summary: Summary,
    mut progress: Progress,
    result: anyhow::Result<()>,
) -> anyhow::Result<Summary> {
    summary.pushed_seconds = started.elapsed().as_secs_f64();
    let applied = match (&result, opts.wait) {
        (Ok(()), Some(timeout)) if summary.last_sequence > 0 => {
            let events = summary.pushed + summary.deleted + summary.listings;
            intake
                .applied_showing(
                    summary.last_sequence,
                    timeout,
                    &mut progress,
                    summary.counts(),
                    events,
                )
                .await
                .unwrap_or_else(|e| Applied::Unknown(format!("{e:#}")))
        }
        _ => Applied::Unknown("not waited for".to_owned()),
    };
    progress.finish();
    if let Applied::Refused(reason) = applied {
        anyhow::bail!(
            "the system refused the run's last event ({}): {reason}; nothing is recorded as \
             pushed, so a re-run pushes it all again",
            summary.last_sequence
        );
    }
    let saved = state.save(&opts.state_file);
    result?;
    saved?;
    match applied {
        Applied::Yes => summary.applied_seconds = Some(started.elapsed().as_secs_f64()),
        Applied::Unknown(why) if opts.wait.is_some() && summary.last_sequence > 0 => {
            summary.applied_unknown = Some(why);
        }
        _ => {}
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A prepared item for the pushes.
enum Item {
    /// A page to push (`at`: the version's time; now when none).
    Page {
        id: String,
        title: String,
        body: String,
        entry: Entry,
        at: Option<DateTime<Utc>>,
    },
    /// A page unchanged since it was last pushed (its entry refreshed).
    Unchanged { id: String, entry: Entry },
    /// A file not read.
    Failed { id: String, reason: String },
    /// `--git`: a page deleted at `at`.
    Delete { id: String, at: DateTime<Utc> },
    /// `--git`: every change of a commit was handed over.
    CommitDone { id: String },
}

/// Reads `files` (on a blocking thread) and hands each over as an item; stops when the pushes
/// stop taking them.
fn read_files(
    files: Vec<scan::Found>,
    known: &HashMap<String, Entry>,
    origins: &Origins,
    limits: &Limits,
    tx: &mpsc::Sender<Item>,
) {
    for file in files {
        let origin = origins.of(&file.id).to_owned();
        let before = known.get(&file.id).filter(|e| e.origin == origin);
        let item = match before {
            Some(entry) if entry.unchanged(file.size, file.mtime_ns) => Item::Unchanged {
                id: file.id,
                entry: entry.clone(),
            },
            _ => read_file(file, origin, before, limits),
        };
        if tx.blocking_send(item).is_err() {
            return;
        }
    }
}

fn read_file(file: scan::Found, origin: String, before: Option<&Entry>, limits: &Limits) -> Item {
    // Taken before reading: a change during the read is then never trusted away.
    let read_ns = state::now_ns();
    let bytes = match std::fs::read(&file.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Item::Failed {
                id: file.id,
                reason: format!("cannot read it: {e}"),
            };
        }
    };
    if bytes.len() as u64 > limits.max_file_bytes {
        return Item::Failed {
            id: file.id,
            reason: format!(
                "{} bytes, more than --max-file-bytes ({})",
                bytes.len(),
                limits.max_file_bytes
            ),
        };
    }
    let page = match formats::read(&file.id, file.format, &bytes, limits.max_body_bytes) {
        Ok(page) => page,
        Err(reason) => {
            return Item::Failed {
                id: file.id,
                reason,
            };
        }
    };
    let entry = Entry::new(
        origin,
        &page.title,
        &page.body,
        file.size,
        file.mtime_ns,
        read_ns,
    );
    if before.is_some_and(|b| b.same_page(&entry)) {
        return Item::Unchanged { id: file.id, entry };
    }
    Item::Page {
        id: file.id,
        title: page.title,
        body: page.body,
        entry,
        at: None,
    }
}

/// One push's outcome: the page, its entry and the intake's answer.
type Pushed = (String, Entry, Result<u64, tonic::Status>);

/// Pushes the items as they come, `in_flight` at once; records what was pushed in `state` and
/// `summary`. Items other than pages wait for the pushes before them (order matters there).
async fn drain(
    intake: &Intake,
    mut rx: mpsc::Receiver<Item>,
    in_flight: usize,
    state: &mut State,
    summary: &mut Summary,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let mut pushes = FuturesUnordered::new();
    let mut open = true;
    loop {
        tokio::select! {
            Some(done) = pushes.next(), if !pushes.is_empty() => {
                pushed(done, state, summary)?;
                progress.update(summary.counts());
            }
            item = rx.recv(), if open && pushes.len() < in_flight => {
                let Some(item) = item else {
                    open = false;
                    continue;
                };
                match item {
                    Item::Page { id, title, body, entry, at } => {
                        let event = Event::DocUpsert {
                            doc_id: id.clone(),
                            title,
                            origin: entry.origin.clone(),
                            body,
                            acl: Vec::new(),
                            hold: false,
                            confidence: None,
                            effective_from: None,
                        };
                        let intake = intake.clone();
                        pushes.push(async move {
                            let result = intake.push(&event, at.unwrap_or_else(Utc::now)).await;
                            (id, entry, result)
                        });
                    }
                    Item::Unchanged { id, entry } => {
                        state.pages.insert(id, entry);
                        summary.unchanged += 1;
                    }
                    Item::Failed { id, reason } => summary.fail(id, reason),
                    Item::Delete { id, at } => {
                        while let Some(done) = pushes.next().await {
                            pushed(done, state, summary)?;
                        }
                        let event = Event::DocDelete { doc_id: id.clone() };
                        match intake.push(&event, at).await {
                            Ok(seq) => {
                                summary.last_sequence = summary.last_sequence.max(seq);
                                if state.pages.remove(&id).is_some() {
                                    summary.deleted += 1;
                                }
                                summary.changed.push(id);
                            }
                            Err(status) => refused(status, &id, summary)?,
                        }
                    }
                    Item::CommitDone { id } => {
                        while let Some(done) = pushes.next().await {
                            pushed(done, state, summary)?;
                        }
                        state.git_head = Some(id);
                        *summary.commits.get_or_insert(0) += 1;
                    }
                }
                progress.update(summary.counts());
            }
            else => break,
        }
    }
    Ok(())
}

/// Records one push's outcome.
fn pushed(
    (id, entry, result): Pushed,
    state: &mut State,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    match result {
        Ok(seq) => {
            summary.last_sequence = summary.last_sequence.max(seq);
            summary.pushed += 1;
            state.pages.insert(id.clone(), entry);
            summary.changed.push(id);
            Ok(())
        }
        Err(status) => refused(status, &id, summary),
    }
}

/// A refused push: the page's failure when the intake refused that event, the run's end when the
/// intake cannot be reached or refuses the caller.
fn refused(status: tonic::Status, id: &str, summary: &mut Summary) -> anyhow::Result<()> {
    use tonic::Code;
    match status.code() {
        Code::InvalidArgument
        | Code::FailedPrecondition
        | Code::OutOfRange
        | Code::ResourceExhausted
        | Code::AlreadyExists
        | Code::NotFound => {
            summary.fail(
                id,
                format!(
                    "the intake refused it: {:?}: {}",
                    status.code(),
                    status.message()
                ),
            );
            Ok(())
        }
        code => Err(anyhow::anyhow!("push {id}: {code:?}: {}", status.message())),
    }
}

/// The folder's origins: those configured and those of the pages earlier runs read.
fn folder_origins(opts: &Options, state: &State) -> BTreeSet<String> {
    opts.origins
        .all()
        .map(str::to_owned)
        .chain(state.pages.values().map(|e| e.origin.clone()))
        .collect()
}

/// Deletes the pages of files gone since the last run: a `source.listing` per origin when
/// listing (every run; a rescan only when a file went), else a `doc.delete` per gone page.
async fn delete_gone(
    intake: &Intake,
    opts: &Options,
    run: Run,
    scan: &scan::Scan,
    stored: Vec<String>,
    state: &mut State,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let gone: Vec<String> = state
        .pages
        .keys()
        .cloned()
        .chain(stored)
        .filter(|id| !scan.holds(id))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    if !opts.listing {
        for id in gone {
            match intake
                .push(&Event::DocDelete { doc_id: id.clone() }, Utc::now())
                .await
            {
                Ok(seq) => {
                    summary.last_sequence = summary.last_sequence.max(seq);
                    state.pages.remove(&id);
                    summary.deleted += 1;
                    summary.changed.push(id);
                }
                Err(status) => refused(status, &id, summary)?,
            }
        }
        return Ok(());
    }
    if run == Run::Rescan && gone.is_empty() {
        return Ok(());
    }
    let origins = folder_origins(opts, state);
    let mut all_listed = true;
    for origin in origins {
        let doc_ids: Vec<String> = state
            .pages
            .iter()
            .filter(|(id, e)| e.origin == origin && scan.holds(id))
            .map(|(id, _)| id.clone())
            .collect();
        let event = Event::SourceListing {
            origin: origin.clone(),
            doc_ids,
        };
        let what = format!("(the listing of origin {origin})");
        if let Err(reason) = fits(intake, &event, &opts.limits) {
            summary.fail(what, reason);
            all_listed = false;
            continue;
        }
        match intake.push(&event, Utc::now()).await {
            Ok(seq) => {
                summary.last_sequence = summary.last_sequence.max(seq);
                summary.listings += 1;
            }
            Err(status) => {
                refused(status, &what, summary)?;
                all_listed = false;
            }
        }
    }
    if all_listed {
        for id in gone {
            state.pages.remove(&id);
            summary.deleted += 1;
            summary.changed.push(id);
        }
    }
    Ok(())
}

/// Whether a listing can be pushed: at most [`MAX_LISTED_DOCS`] ids in one message the services
/// take.
fn fits(intake: &Intake, event: &Event, limits: &Limits) -> Result<(), String> {
    if let Event::SourceListing { doc_ids, .. } = event
        && doc_ids.len() > MAX_LISTED_DOCS
    {
        return Err(format!(
            "{} pages, more than one listing names ({MAX_LISTED_DOCS}); split the folder into \
             origins with --origin-map",
            doc_ids.len()
        ));
    }
    let wire = ontoloop_proto::convert::event_to_wire(intake.caller(), event, Utc::now());
    let len = wire.encoded_len();
    if len > limits.max_event_bytes {
        return Err(format!(
            "{len} bytes, more than one message carries ({}); split the folder into origins \
             with --origin-map",
            limits.max_event_bytes
        ));
    }
    Ok(())
}

/// Ingests the history of the git repository the folder is in: every commit after the last one
/// pushed that changed files under the folder, oldest first, each changed file a page version
/// at the commit's time (a deleted file a `doc.delete` then).
pub async fn git(intake: &Intake, opts: &Options) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut summary = Summary::new(opts, "git");
    summary.commits = Some(0);
    summary.compared_with = if opts.full { "nothing" } else { "state file" };
    let mut state = if opts.full {
        State::default()
    } else {
        State::load(&opts.state_file)?
    };
    let repo = git::Repo::open(&opts.root)?;
    let head = repo.head()?;
    let since = state.git_head.clone();
    if let Some(since) = &since {
        if *since == head {
            summary.seconds = started.elapsed().as_secs_f64();
            return Ok(summary);
        }
        anyhow::ensure!(
            repo.is_ancestor(since, &head),
            "the history was rewritten since the last run ({since} is no ancestor of HEAD): \
             ingest with --full into a tenant that holds none of these pages"
        );
    } else if !opts.full {
        // Without the last commit pushed, the whole history would be pushed again on top of
        // what the store holds: old texts as new versions.
        let held = listed(intake, &folder_origins(opts, &state), &mut summary).await?;
        // A caller that may not list pushes as before.
        if let Some(held) = held {
            anyhow::ensure!(
                held.is_empty(),
                "the store holds {} pages of this folder's origins but {} names no last commit \
                 pushed: pass --state FILE with the state of the run that pushed them, or ingest \
                 with --full into a tenant that holds none of these pages",
                held.len(),
                opts.state_file.display()
            );
        }
    }
    let commits = repo.commits(since.as_deref(), &head)?;
    let plan = GitPlan::new(commits, opts, &mut summary)?;
    summary.files = plan.versions;
    let mut progress = Progress::new(plan.versions, "file versions", opts.progress);
    let known: HashMap<String, Entry> = state.pages.clone().into_iter().collect();
    let result = read_and_push(
        intake,
        1,
        &mut state,
        &mut summary,
        &mut progress,
        "read the history",
        move |tx| plan.read(&repo, known, tx),
    )
    .await
    .and_then(|read| read);
    finish(intake, opts, started, state, summary, progress, result).await
}

/// The commits to push, their changes filtered to the pages read, and how to read them.
struct GitPlan {
    commits: Vec<git::Commit>,
    /// File versions to read.
    versions: usize,
    origins: Origins,
    limits: Limits,
    exts: Vec<String>,
}

impl GitPlan {
    /// Keeps the changes of files read; counts the others in `summary` (hidden, other formats,
    /// paths too long to be page ids); refuses a history of more distinct files than allowed.
    fn new(
        mut commits: Vec<git::Commit>,
        opts: &Options,
        summary: &mut Summary,
    ) -> anyhow::Result<Self> {
        let mut paths = BTreeSet::new();
        let mut versions = 0;
        for commit in &mut commits {
            commit.changes.retain(|change| {
                let path = match change {
                    git::Change::Write { path, .. }
                    | git::Change::Delete { path }
                    | git::Change::NotAFile { path } => path,
                };
                if path.split('/').any(|part| part.starts_with('.')) {
                    summary.hidden += 1;
                    return false;
                }
                if formats::Format::of(path, &opts.text_exts).is_none() {
                    let ext = formats::extension(path).unwrap_or_default();
                    *summary.other_formats.entry(format!(".{ext}")).or_default() += 1;
                    return false;
                }
                if path.len() > ontoloop_core::events::MAX_NAME_BYTES {
                    summary.fail(path.clone(), "its path is longer than a page id may be");
                    return false;
                }
                paths.insert(path.clone());
                if matches!(change, git::Change::Write { .. }) {
                    versions += 1;
                }
                true
            });
        }
        anyhow::ensure!(
            paths.len() <= opts.limits.max_files,
            "the history holds {} files under {} (more than --max-files {})",
            paths.len(),
            opts.root.display(),
            opts.limits.max_files
        );
        Ok(Self {
            commits,
            versions,
            origins: opts.origins.clone(),
            limits: opts.limits.clone(),
            exts: opts.text_exts.clone(),
        })
    }

    /// Reads every change (on a blocking thread) and hands it over, a commit's changes followed
    /// by its end; a page whose text is what was last pushed is unchanged. Version times never
    /// go back (a commit older than the one before it takes that one's time).
    fn read(
        mut self,
        repo: &git::Repo,
        mut known: HashMap<String, Entry>,
        tx: &mpsc::Sender<Item>,
    ) -> anyhow::Result<()> {
        let mut last_at: Option<DateTime<Utc>> = None;
        for commit in std::mem::take(&mut self.commits) {
            let at = last_at.map_or(commit.time, |last| last.max(commit.time));
            last_at = Some(at);
            let short = &commit.id[..commit.id.len().min(12)];
            for change in commit.changes {
                let item = match change {
                    git::Change::Delete { path } => {
                        known.remove(&path);
                        Item::Delete { id: path, at }
                    }
                    git::Change::NotAFile { path } => Item::Failed {
                        id: format!("{path} (commit {short})"),
                        reason: "a symbolic link or submodule, not a file".to_owned(),
                    },
                    git::Change::Write { path, blob } => {
                        match self.version(repo, &path, &blob, at)? {
                            Item::Page { id, entry, .. }
                                if known.get(&id).is_some_and(|k| k.same_page(&entry)) =>
                            {
                                Item::Unchanged { id, entry }
                            }
                            Item::Failed { id, reason } => Item::Failed {
                                id: format!("{id} (commit {short})"),
                                reason,
                            },
                            other => other,
                        }
                    }
                };
                // A page that changed is what was last pushed from now on.
                if let Item::Page { id, entry, .. } = &item {
                    known.insert(id.clone(), entry.clone());
                }
                if tx.blocking_send(item).is_err() {
                    return Ok(());
                }
            }
            if tx
                .blocking_send(Item::CommitDone { id: commit.id })
                .is_err()
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One file version of a commit as an item.
    fn version(
        &self,
        repo: &git::Repo,
        path: &str,
        blob: &str,
        at: DateTime<Utc>,
    ) -> anyhow::Result<Item> {
        let failed = |reason: String| Item::Failed {
            id: path.to_owned(),
            reason,
        };
        let Some(format) = formats::Format::of(path, &self.exts) else {
            return Ok(failed("not a document format".to_owned()));
        };
        let bytes = match repo.blob(blob, self.limits.max_file_bytes)? {
            Ok(bytes) => bytes,
            Err(reason) => return Ok(failed(reason)),
        };
        let page = match formats::read(path, format, &bytes, self.limits.max_body_bytes) {
            Ok(page) => page,
            Err(reason) => return Ok(failed(reason)),
        };
        let origin = self.origins.of(path).to_owned();
        Ok(Item::Page {
            id: path.to_owned(),
            entry: Entry::new(origin, &page.title, &page.body, bytes.len() as u64, 0, 0),
            title: page.title,
            body: page.body,
            at: Some(at),
        })
    }
}
