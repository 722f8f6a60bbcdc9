//! The sentence encoder's vectors kept in the store (`ontoloop_store::vectors`), so a restart, a
//! rebuilt dense index or a new version of a page sends the model only texts it never saw.
//!
//! An encoder is called from anywhere: the analyst reading a page, a question being matched, the
//! dense index's background threads. So a lookup must not wait on the process's runtime (a call
//! on a runtime thread would wait for itself): lookups go to a thread of their own, with its own
//! small runtime and read pool ([`VectorReader`]), and a caller waits at most [`FIND_WAIT`] for
//! its answer, else the model encodes; after a lookup failed or timed out, lookups are skipped
//! for [`SKIP_AFTER_FAILURE`], so a store outage never holds an encoder up. Fresh vectors are handed, without waiting, to a bounded
//! channel that a task on the process's runtime writes behind through the store's one writer,
//! in batches; a full channel drops them (they are encoded again when next asked for). A store
//! that cannot be reached costs model calls, never an error.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use ontoloop_core::knowledge::encoder::KeptVectors;
use ontoloop_settings::StoreSettings;
use ontoloop_store::{Store, VectorReader};
use tokio::sync::mpsc;

/// Fresh vectors waiting to be written at most; beyond, they are dropped.
const PENDING: usize = 4_096;

/// Vectors written in one transaction at most.
const BATCH: usize = 256;

/// Lookups waiting for the reader thread at most; beyond, a lookup finds nothing.
const LOOKUPS: usize = 64;

/// How long an encoder waits for a lookup before it asks the model instead (a short text costs
/// the model a few milliseconds).
pub const FIND_WAIT: Duration = Duration::from_millis(250);

/// How long lookups are skipped after one failed or timed out (the store down, or too slow to
/// be worth waiting for): meanwhile the model encodes at once.
const SKIP_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// Until when lookups are skipped (none: they are tried).
#[derive(Default)]
struct Skip(std::sync::Mutex<Option<Instant>>);

impl Skip {
    fn active(&self) -> bool {
        self.0
            .lock()
            .is_ok_and(|until| until.is_some_and(|at| Instant::now() < at))
    }

    fn start(&self) {
        if let Ok(mut until) = self.0.lock() {
            *until = Some(Instant::now() + SKIP_AFTER_FAILURE);
        }
    }
}

/// A lookup: the keys, and where the vectors go.
type Lookup = (Vec<String>, SyncSender<Vec<Option<Vec<f32>>>>);

/// Vectors of `model` kept in `store` (at most `keep`; 0: none kept, `None`), read through a
/// pool of their own to the store `settings` name.
pub fn kept_vectors(
    settings: &StoreSettings,
    store: &Store,
    model: &str,
    keep: u64,
) -> Option<Arc<dyn KeptVectors>> {
    if keep == 0 {
        return None;
    }
    let (lookups, waiting) = sync_channel::<Lookup>(LOOKUPS);
    let reader_settings = settings.clone();
    let skip = Arc::new(Skip::default());
    let reader_skip = Arc::clone(&skip);
    let spawned = std::thread::Builder::new()
        .name("kept-vectors".into())
        .spawn(move || read_lookups(&reader_settings, &waiting, &reader_skip));
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "cannot start the vector reader; vectors are not kept");
        return None;
    }
    let (sink, fresh) = mpsc::channel(PENDING);
    tokio::spawn(write_behind(store.clone(), model.to_owned(), keep, fresh));
    Some(Arc::new(StoredVectors {
        lookups,
        sink,
        skip,
    }))
}

/// The encoder's side: lookups to the reader thread, fresh vectors to the writer task.
struct StoredVectors {
    lookups: SyncSender<Lookup>,
    sink: mpsc::Sender<(String, Vec<f32>)>,
    skip: Arc<Skip>,
}

impl KeptVectors for StoredVectors {
    fn find(&self, keys: &[String]) -> Vec<Option<Vec<f32>>> {
        let none = || vec![None; keys.len()];
        if self.skip.active() {
            return none();
        }
        let (answer, answered) = sync_channel(1);
        if self.lookups.try_send((keys.to_vec(), answer)).is_err() {
            return none();
        }
        answered.recv_timeout(FIND_WAIT).unwrap_or_else(|_| {
            self.skip.start();
            none()
        })
    }

    fn keep(&self, vectors: Vec<(String, Vec<f32>)>) {
        for vector in vectors {
            if self.sink.try_send(vector).is_err() {
                return;
            }
        }
    }
}

/// How long the reader waits before it tries a store it could not reach again.
const RECONNECT: Duration = Duration::from_secs(30);

/// The reader thread: connects at once, then answers lookups until every sender is gone,
/// connecting again (at most every [`RECONNECT`]) while the store cannot be reached; meanwhile,
/// and for a database in memory, every lookup finds nothing.
fn read_lookups(settings: &StoreSettings, lookups: &Receiver<Lookup>, skip: &Skip) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::warn!(error = %err, "cannot start the vector reader's runtime");
            return;
        }
    };
    let mut reader: Option<VectorReader> = None;
    let mut tried: Option<Instant> = None;
    let mut in_memory = false;
    // Connected at once, so the first lookups find a pool ready.
    let mut connect = |reader: &mut Option<VectorReader>| {
        if reader.is_some() || in_memory || tried.is_some_and(|at| at.elapsed() < RECONNECT) {
            return;
        }
        tried = Some(Instant::now());
        match runtime.block_on(VectorReader::connect(settings)) {
            Ok(Some(connected)) => *reader = Some(connected),
            // In memory: nothing outlives the process, so nothing to look up.
            Ok(None) => in_memory = true,
            Err(err) => {
                skip.start();
                tracing::warn!(
                    error = %err,
                    "the vector reader cannot reach the store; vectors are encoded afresh"
                );
            }
        }
    };
    connect(&mut reader);
    while let Ok((keys, answer)) = lookups.recv() {
        connect(&mut reader);
        let found = match &reader {
            Some(connected) => match runtime.block_on(connected.find(&keys)) {
                Ok(mut found) => keys.iter().map(|k| found.remove(k)).collect(),
                Err(err) => {
                    skip.start();
                    tracing::debug!(error = %err, "vector lookup failed; the model encodes");
                    vec![None; keys.len()]
                }
            },
            None => vec![None; keys.len()],
        };
        // The caller may have stopped waiting.
        let _ = answer.try_send(found);
    }
}

/// Writes fresh vectors as they come, as many at once as are waiting (up to [`BATCH`]), and
/// keeps the newest `keep`: evicts at start and after each `keep / 10` written (at least 1,000).
async fn write_behind(
    store: Store,
    model: String,
    keep: u64,
    mut fresh: mpsc::Receiver<(String, Vec<f32>)>,
) {
    let every = (keep / 10).max(1_000);
    let mut written = every;
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        if written >= every {
            written = 0;
            match store.text_vectors_evict(&model, keep).await {
                Ok(evicted) if evicted > 0 => {
                    tracing::debug!(evicted, "kept vectors at their bound; oldest evicted");
                }
                Ok(_) => {}
                Err(err) => tracing::debug!(error = %err, "could not evict kept vectors"),
            }
        }
        if fresh.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        match store.text_vectors_put(&model, &batch).await {
            Ok(()) => written += batch.len() as u64,
            Err(err) => tracing::warn!(
                error = %err,
                vectors = batch.len(),
                "could not keep encoded vectors; they are encoded again when next asked for"
            ),
        }
        batch.clear();
    }
}
