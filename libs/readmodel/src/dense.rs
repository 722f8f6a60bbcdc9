//! The dense half of passage search: one unit vector per passage of each current page (the
//! page's title, the passage's headings and its text, as [`PassageIndex`](crate::PassageIndex)
//! indexes it), made by the sentence encoder the process extracts with, held in a
//! [`VectorIndex`] (exact up to
//! [`EXACT_UP_TO`](ontoloop_core::knowledge::vectors::EXACT_UP_TO) passages, an approximate
//! HNSW graph above) and patched page by page as versions move. Permission is the caller's filter applied before
//! ranking ([`VectorIndex::nearest`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};

use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::encoder::{EncodeError, SentenceEncoder};
use ontoloop_core::knowledge::passage::chunk_page;
use ontoloop_core::knowledge::vectors::VectorIndex;

/// Passages encoded in one call to the model.
const BATCH: usize = 32;

/// A passage: its page and its number among the page's chunks.
pub type PassageKey = (String, usize);

/// Vectors of the passages of a tenant's current pages.
pub struct DenseIndex {
    encoder: Arc<dyn SentenceEncoder>,
    vectors: VectorIndex<PassageKey>,
    /// How many passages each page holds in the index.
    chunks: HashMap<String, usize>,
    /// Which index this is, process-wide: a graph built in the background is installed only in
    /// the index its input came from.
    generation: u64,
    /// While a graph is built in the background: the passages changed since its input was
    /// taken (stale in it when installed).
    changed: Option<Vec<PassageKey>>,
    /// New versions whose old passages have left and whose new ones wait for the patcher.
    waiting: BTreeMap<String, (PageVersion, usize)>,
    /// The passages of the waiting versions (the second of each entry of `waiting`).
    waiting_passages: usize,
    /// Versions the patcher is encoding, by page: a page written again or deleted meanwhile
    /// leaves here, and its encoded passages are dropped.
    in_flight: HashMap<String, u64>,
    /// Whether a patcher thread is running.
    patching: bool,
}

/// The next [`DenseIndex::generation`].
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

/// Why the dense index could not be built or patched.
#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The model failed.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The model gave a vector the index refuses.
    #[error("the encoder gave an unusable vector: {0}")]
    Vector(#[from] ontoloop_core::knowledge::vectors::VectorError),
}

impl DenseIndex {
    /// Encodes the passages of `pages` (their current versions) with `encoder`.
    pub fn build<'a>(
        encoder: Arc<dyn SentenceEncoder>,
        pages: impl IntoIterator<Item = &'a PageVersion>,
    ) -> Result<Self, DenseError> {
        let dimensions = encoder
            .encode(&["dimensions"])?
            .pop()
            .map_or(0, |v| v.len());
        let mut index = Self {
            encoder,
            vectors: VectorIndex::new(dimensions),
            chunks: HashMap::new(),
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            changed: None,
            waiting: BTreeMap::new(),
            waiting_passages: 0,
            in_flight: HashMap::new(),
            patching: false,
        };
        index.update(pages.into_iter().map(|page| (None, page)))?;
        // Above the exact size, questions rank the candidates of an approximate graph.
        index.vectors.build_approx();
        Ok(index)
    }

    /// Every passage of each `old` version leaves and every passage of the new one comes in
    /// (a deleted page only leaves), as [`PassageIndex::update`](crate::PassageIndex::update).
    /// Encodes here: a read model patches through [`LazyDense::update`], which encodes in the
    /// background.
    pub fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> Result<(), DenseError> {
        let mut pending: Vec<(PassageKey, String)> = Vec::new();
        for (_, page) in pages {
            self.leave(&page.source_id);
            if !page.deleted {
                let texts = passage_texts(page);
                self.chunks.insert(page.source_id.clone(), texts.len());
                pending.extend(texts);
            }
        }
        let vectors = encode_all(self.encoder.as_ref(), &pending)?;
        self.insert(pending.into_iter().map(|(key, _)| key).zip(vectors))
    }

    /// Takes every passage of page `id` out.
    fn leave(&mut self, id: &str) {
        self.in_flight.remove(id);
        if let Some((_, passages)) = self.waiting.remove(id) {
            self.waiting_passages -= passages;
        }
        for n in 0..self.chunks.remove(id).unwrap_or(0) {
            let key = (id.to_owned(), n);
            self.vectors.remove(&key);
            if let Some(changed) = &mut self.changed {
                changed.push(key);
            }
        }
    }

    /// Puts encoded passages in.
    fn insert(
        &mut self,
        encoded: impl IntoIterator<Item = (PassageKey, Vec<f32>)>,
    ) -> Result<(), DenseError> {
        for (key, vector) in encoded {
            self.vectors.insert(key.clone(), &vector)?;
            if let Some(changed) = &mut self.changed {
                changed.push(key);
            }
        }
        Ok(())
    }

    /// The new versions of `pages`: their old passages leave at once, the new ones wait for
    /// the patcher. False when the tenant outgrew [`MAX_DENSE_PASSAGES`]: BM25 alone ranks it
    /// from then on.
    fn wait_for<'a>(&mut self, pages: impl IntoIterator<Item = &'a PageVersion>) -> bool {
        for page in pages {
            self.leave(&page.source_id);
            if !page.deleted {
                let passages = chunk_page(&page.source_id, page.version, &page.body).len();
                self.waiting_passages += passages;
                self.waiting
                    .insert(page.source_id.clone(), (page.clone(), passages));
            }
        }
        let passages = self.len() + self.waiting_passages;
        if passages > MAX_DENSE_PASSAGES {
            tracing::warn!(
                passages,
                limit = MAX_DENSE_PASSAGES,
                "the tenant outgrew the dense index: BM25 alone ranks its passages"
            );
            return false;
        }
        true
    }

    /// Pages whose new passages wait for the background patcher ([`LazyDense::update`]).
    pub fn outstanding(&self) -> usize {
        self.waiting.len() + self.in_flight.len()
    }

    /// The `limit` passages nearest in meaning to `vector` (a query's, from
    /// [`DenseIndex::encode`]), nearest first, with their cosine similarity, among those
    /// `readable` admits (checked before ranking).
    pub fn nearest(
        &self,
        vector: &[f32],
        limit: usize,
        readable: impl Fn(&PassageKey) -> bool,
    ) -> Vec<(PassageKey, f32)> {
        self.vectors.nearest(vector, limit, readable)
    }

    /// A query's vector (`None` for an empty text).
    pub fn encode(&self, query: &str) -> Result<Option<Vec<f32>>, DenseError> {
        if query.trim().is_empty() {
            return Ok(None);
        }
        Ok(self.encoder.encode(&[query])?.pop())
    }

    /// Cosine similarity of `vector` (from [`DenseIndex::encode`]) and the passage `key`.
    pub fn similarity(&self, vector: &[f32], key: &PassageKey) -> Option<f32> {
        let held = self.vectors.get(key)?;
        (held.len() == vector.len())
            .then(|| ontoloop_core::knowledge::encoder::cosine(held, vector))
    }

    /// Passages held.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// The passages' vectors.
    pub fn vectors(&self) -> &VectorIndex<PassageKey> {
        &self.vectors
    }

    /// Whether no passage is held.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Approximate memory of the vectors and keys.
    pub fn approx_bytes(&self) -> usize {
        self.vectors.approx_bytes()
    }
}

/// Passages a tenant may hold for its dense index to be built: up to
/// [`EXACT_UP_TO`](ontoloop_core::knowledge::vectors::EXACT_UP_TO) every one
/// is scored per question, above it the candidates of an approximate (HNSW) graph; at this size
/// the vectors take about 300 MB (twice that with the graph's copy), so a larger tenant is
/// searched by BM25 alone (logged). `ontoloop bench passages` measures both indexes.
pub const MAX_DENSE_PASSAGES: usize = 200_000;

/// Passages encoded inline at a tenant's first question that wants them (a fraction of a
/// second); more are encoded by a thread of their own while BM25 alone answers, so neither the
/// question nor the tenant's updates wait for the model.
pub const INLINE_DENSE_PASSAGES: usize = 256;

/// Niceness of the threads that encode passages in the background (the lowest priority): the
/// dense half waits for the callers and for the analyst, BM25 ranks meanwhile.
const BACKGROUND_NICENESS: i32 = 19;

/// The pool the background threads encode on: the model fans its matrix products out over the
/// rayon pool it is called in, and the global one runs at the callers' priority, so encoding
/// there from a low-priority thread would still take the cores from the callers.
fn background<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|n| format!("dense-encode-{n}"))
            .start_handler(|_| crate::search::lower_priority(BACKGROUND_NICENESS))
            .build()
            .inspect_err(|err| {
                tracing::warn!(error = %err, "no pool for background encoding; the global one encodes");
            })
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// Pages a patcher takes from the waiting ones at a time (a few model calls of [`BATCH`]).
const PATCH_PAGES: usize = 16;

/// A question waits for the patcher when at most this many pages wait for it
/// ([`LazyDense::with`]): a few model calls.
pub const HELD_FOR_PAGES: usize = 32;

/// How long a question waits for the patcher at the most.
pub const HELD_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// Dense indexes (or their approximate graphs) being built in the background at once,
/// process-wide; a tenant whose build finds none free starts it at a later question (a graph,
/// at a later patch).
const MAX_BUILDERS: usize = 2;

/// Background builds running now.
static BUILDERS: AtomicUsize = AtomicUsize::new(0);

/// Where a tenant's dense index stands ([`LazyDense::coverage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DenseState {
    /// Not started: no page arrived and no question asked for it yet.
    #[default]
    Idle,
    /// Its first build is under way.
    Building,
    /// Built; pages may wait for the patcher.
    Ready,
    /// No model, too many passages, or the model failed: BM25 alone ranks.
    Off,
}

/// How much of a tenant's passages its dense index covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DenseCoverage {
    /// Where the index stands.
    pub state: DenseState,
    /// Passages it holds vectors of.
    pub passages: usize,
    /// Pages whose passages wait to be encoded (0 when ready: it covers every passage).
    pub waiting_pages: usize,
}

impl DenseCoverage {
    /// Whether it covers every passage of the tenant's current pages.
    pub fn complete(&self) -> bool {
        self.state == DenseState::Ready && self.waiting_pages == 0
    }
}

/// A tenant's dense index as its read model holds it: built at the first question that wants
/// it (inline when small, else by a thread of its own), patched with each change after, ready
/// or off.
pub struct LazyDense {
    encoder: Option<Arc<dyn SentenceEncoder>>,
    state: Arc<RwLock<State>>,
    /// Notified when a patch is done, for the questions [`LazyDense::with`] holds for one.
    patched: Arc<(Mutex<()>, Condvar)>,
}

enum State {
    /// Not asked for yet (or to be built again after a patch failed).
    Idle,
    /// A thread is encoding the pages; the versions written meanwhile, to patch in after.
    Building(Vec<PageVersion>),
    Ready(Box<DenseIndex>),
    /// No encoder, too many passages, or the model failed: BM25 alone ranks.
    Off,
}

impl LazyDense {
    /// Not built yet; made with `encoder` when there is one.
    pub fn new(encoder: Option<Arc<dyn SentenceEncoder>>) -> Self {
        let state = if encoder.is_some() {
            State::Idle
        } else {
            State::Off
        };
        Self {
            encoder,
            state: Arc::new(RwLock::new(state)),
            patched: Arc::new((Mutex::new(()), Condvar::new())),
        }
    }

    /// Runs `f` with the index of `pages` (a tenant's current versions) when it is ready, else
    /// with `None`. The first call starts the build: inline up to [`INLINE_DENSE_PASSAGES`],
    /// else in the background (`None` until it is done). When at most [`HELD_FOR_PAGES`] pages
    /// wait for the patcher, the call waits for them (up to [`HELD_FOR`]), so a small tenant's
    /// questions see its writes; a larger catch-up is not waited for.
    pub fn with<R>(
        &self,
        pages: &Arc<BTreeMap<String, PageVersion>>,
        f: impl FnOnce(Option<&DenseIndex>) -> R,
    ) -> R {
        if matches!(*read(&self.state), State::Idle) {
            self.start(pages, true);
        }
        self.hold_for_patch();
        match &*read(&self.state) {
            State::Ready(index) => f(Some(index.as_ref())),
            _ => f(None),
        }
    }

    /// Starts building the index of `pages` in the background when none is (as pages arrive,
    /// so it is ready before the first question that wants it); a no-op while one is built,
    /// ready or off, or while every background builder is busy (a later call starts it).
    pub fn warm(&self, pages: &Arc<BTreeMap<String, PageVersion>>) {
        if matches!(*read(&self.state), State::Idle) && !pages.is_empty() {
            self.start(pages, false);
        }
    }

    /// Starts the build: inline when `inline` and the pages hold at most
    /// [`INLINE_DENSE_PASSAGES`] passages, else by a thread of its own (which counts them
    /// itself when not `inline`, so pages arriving under the read model's lock never wait for
    /// the count).
    fn start(&self, pages: &Arc<BTreeMap<String, PageVersion>>, inline: bool) {
        let Some(encoder) = self.encoder.clone() else {
            return;
        };
        if inline {
            // A question counts here: above the limit it is answered by BM25 at once.
            let passages = passage_count(pages);
            let mut state = write(&self.state);
            if !matches!(*state, State::Idle) {
                return;
            }
            if passages > MAX_DENSE_PASSAGES {
                tracing::warn!(
                    passages,
                    limit = MAX_DENSE_PASSAGES,
                    "too many passages for the dense index: BM25 alone ranks them"
                );
                *state = State::Off;
                return;
            }
            if passages <= INLINE_DENSE_PASSAGES {
                *state = built(DenseIndex::build(encoder, pages.values()));
                return;
            }
        }
        let mut state = write(&self.state);
        if !matches!(*state, State::Idle) {
            return;
        }
        if BUILDERS.fetch_add(1, Ordering::SeqCst) >= MAX_BUILDERS {
            BUILDERS.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        *state = State::Building(Vec::new());
        drop(state);
        // The builder reads the pages as they were when it started (the read model copies its
        // map on its next patch while the builder holds this one); later versions wait for the
        // patcher it starts when done.
        let shared = Arc::clone(&self.state);
        let patched = Arc::clone(&self.patched);
        let pages = Arc::clone(pages);
        let spawned = std::thread::Builder::new()
            .name("dense-index".into())
            .spawn(move || {
                crate::search::lower_priority(BACKGROUND_NICENESS);
                let passages = passage_count(&pages);
                let result = if passages > MAX_DENSE_PASSAGES {
                    tracing::warn!(
                        passages,
                        limit = MAX_DENSE_PASSAGES,
                        "too many passages for the dense index: BM25 alone ranks them"
                    );
                    None
                } else {
                    tracing::info!(passages, "building the dense passage index");
                    let encoder = Arc::clone(&encoder);
                    Some(background(|| DenseIndex::build(encoder, pages.values())))
                };
                drop(pages);
                let mut state = write(&shared);
                let pending = match std::mem::replace(&mut *state, State::Off) {
                    State::Building(pending) => pending,
                    _ => Vec::new(),
                };
                if let Some(result) = result {
                    *state = built(result);
                    // What arrived meanwhile waits for the patcher, outside this lock.
                    if let State::Ready(index) = &mut *state
                        && !index.wait_for(&pending)
                    {
                        *state = State::Off;
                    }
                    start_patcher(&shared, &mut state, &encoder, &patched);
                }
                drop(state);
                BUILDERS.fetch_sub(1, Ordering::SeqCst);
                notify(&patched);
            });
        if let Err(err) = spawned {
            BUILDERS.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(error = %err, "cannot start the dense index's builder");
            *write(&self.state) = State::Idle;
        }
    }

    /// Brings the index to the new versions of `pages`: when ready, their old passages leave at
    /// once and their new ones are encoded by a patcher thread of their own, never under the
    /// caller (the read model's write lock); when building, kept for the builder. A failed
    /// patch leaves the index to be built again at the next question.
    pub fn update<'a>(&self, pages: impl IntoIterator<Item = &'a PageVersion>) {
        self.queue(pages);
        // A question held for a patch looks again: the index may have gone off or idle.
        self.settled();
    }

    /// [`LazyDense::update`]'s work, under the state's lock.
    fn queue<'a>(&self, pages: impl IntoIterator<Item = &'a PageVersion>) {
        let mut state = write(&self.state);
        match &mut *state {
            State::Ready(index) => {
                let pages: Vec<&PageVersion> = pages.into_iter().collect();
                if !index.wait_for(pages.iter().copied()) {
                    *state = State::Off;
                    return;
                }
                if let Some(encoder) = &self.encoder {
                    start_patcher(&self.state, &mut state, encoder, &self.patched);
                }
            }
            State::Building(pending) => pending.extend(pages.into_iter().cloned()),
            State::Idle | State::Off => {}
        }
    }

    /// Waits while a few pages (at most [`HELD_FOR_PAGES`]) wait for the patcher, up to
    /// [`HELD_FOR`].
    fn hold_for_patch(&self) {
        let outstanding = || match &*read(&self.state) {
            State::Ready(index) => index.outstanding(),
            _ => 0,
        };
        if outstanding() == 0 {
            return;
        }
        let deadline = std::time::Instant::now() + HELD_FOR;
        let (lock, settled) = &*self.patched;
        let mut held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let waiting = outstanding();
            let now = std::time::Instant::now();
            if waiting == 0 || waiting > HELD_FOR_PAGES || now >= deadline {
                return;
            }
            held = settled
                .wait_timeout(held, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Wakes the questions waiting in [`LazyDense::with`] for a patch.
    fn settled(&self) {
        notify(&self.patched);
    }

    /// How far the index is: its state, the passages it holds and the pages waiting for it.
    pub fn coverage(&self) -> DenseCoverage {
        match &*read(&self.state) {
            State::Idle => DenseCoverage::default(),
            State::Building(pending) => DenseCoverage {
                state: DenseState::Building,
                passages: 0,
                waiting_pages: pending.len(),
            },
            State::Ready(index) => DenseCoverage {
                state: DenseState::Ready,
                passages: index.len(),
                waiting_pages: index.outstanding(),
            },
            State::Off => DenseCoverage {
                state: DenseState::Off,
                ..DenseCoverage::default()
            },
        }
    }

    /// Whether the index is ready.
    pub fn is_ready(&self) -> bool {
        matches!(*read(&self.state), State::Ready(_))
    }

    /// Approximate memory of the vectors, once built.
    pub fn approx_bytes(&self) -> usize {
        match &*read(&self.state) {
            State::Ready(index) => index.approx_bytes(),
            _ => 0,
        }
    }
}

/// Starts the patcher of the ready index in `state` (the guard of `shared`) when pages wait
/// and none runs; a patcher that cannot start leaves the index to be built again.
fn start_patcher(
    shared: &Arc<RwLock<State>>,
    state: &mut std::sync::RwLockWriteGuard<'_, State>,
    encoder: &Arc<dyn SentenceEncoder>,
    patched: &Arc<(Mutex<()>, Condvar)>,
) {
    let State::Ready(index) = &mut **state else {
        return;
    };
    if index.patching || index.waiting.is_empty() {
        return;
    }
    let (shared, generation) = (Arc::clone(shared), index.generation);
    let (encoder, patched) = (Arc::clone(encoder), Arc::clone(patched));
    let spawned = std::thread::Builder::new()
        .name("dense-patch".into())
        .spawn(move || {
            crate::search::lower_priority(BACKGROUND_NICENESS);
            while patch_some(&shared, encoder.as_ref(), generation) {
                notify(&patched);
            }
            notify(&patched);
        });
    match spawned {
        Ok(_) => index.patching = true,
        Err(err) => {
            tracing::warn!(error = %err, "cannot start the dense index's patcher; built again at the next question");
            **state = State::Idle;
        }
    }
}

/// Passages of the current versions of `pages`.
fn passage_count(pages: &BTreeMap<String, PageVersion>) -> usize {
    pages
        .values()
        .filter(|p| !p.deleted)
        .map(|p| chunk_page(&p.source_id, p.version, &p.body).len())
        .sum()
}

/// Builds `index`'s approximate graph again, by a thread of its own, when the patches since
/// the last one call for it ([`VectorIndex::wants_graph`]: the tenant grew past the exact
/// size, or a tenth of the graph changed); questions meanwhile use the graph there is,
/// with the passages changed since scored exactly.
fn rebuild_graph(state: &Arc<RwLock<State>>, index: &mut DenseIndex) {
    if index.changed.is_some() {
        return;
    }
    let Some(input) = index.vectors.graph_input() else {
        // Back within the exact size: the graph is dropped.
        index.vectors.build_approx();
        return;
    };
    // Graphs share the background builders' bound; a tenant that finds none free builds
    // at a later patch (it still wants one).
    if BUILDERS.fetch_add(1, Ordering::SeqCst) >= MAX_BUILDERS {
        BUILDERS.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    index.changed = Some(Vec::new());
    let (shared, generation) = (Arc::clone(state), index.generation);
    let spawned = std::thread::Builder::new()
        .name("dense-graph".into())
        .spawn(move || {
            let graph = input.build();
            if let State::Ready(index) = &mut *write(&shared)
                && index.generation == generation
            {
                let changed = index.changed.take().unwrap_or_default();
                index.vectors.install_graph(graph, changed);
            }
            BUILDERS.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(err) = spawned {
        BUILDERS.fetch_sub(1, Ordering::SeqCst);
        index.changed = None;
        tracing::warn!(error = %err, "cannot start the dense graph's builder");
    }
}

/// One step of the patcher of a ready index (generation `generation`): encodes a few of the
/// pages waiting outside the index's lock, and puts in the passages of those no later version
/// or deletion overtook meanwhile. False when none wait (the patcher ends), or when the index
/// it patches is gone. Questions meanwhile rank those pages by BM25 alone.
fn patch_some(shared: &Arc<RwLock<State>>, encoder: &dyn SentenceEncoder, generation: u64) -> bool {
    let taken: Vec<PageVersion> = {
        let mut state = write(shared);
        let State::Ready(index) = &mut *state else {
            return false;
        };
        if index.generation != generation {
            return false;
        }
        if index.waiting.is_empty() {
            index.patching = false;
            return false;
        }
        let mut taken = Vec::new();
        while taken.len() < PATCH_PAGES
            && let Some((id, (page, passages))) = index.waiting.pop_first()
        {
            index.waiting_passages -= passages;
            index.in_flight.insert(id, page.version);
            taken.push(page);
        }
        taken
    };
    let texts: Vec<(PassageKey, String)> = taken.iter().flat_map(passage_texts).collect();
    let encoded = background(|| encode_all(encoder, &texts));
    let mut state = write(shared);
    let State::Ready(index) = &mut *state else {
        return false;
    };
    if index.generation != generation {
        return false;
    }
    let mut keep = Vec::new();
    for page in &taken {
        if index.in_flight.get(&page.source_id) == Some(&page.version) {
            index.in_flight.remove(&page.source_id);
            keep.push(page.source_id.as_str());
        }
    }
    let inserted = encoded.and_then(|vectors| {
        let passages = texts.into_iter().map(|(key, _)| key).zip(vectors);
        let kept: Vec<(PassageKey, Vec<f32>)> = passages
            .filter(|((id, _), _)| keep.contains(&id.as_str()))
            .collect();
        for ((id, n), _) in &kept {
            let count = index.chunks.entry(id.clone()).or_default();
            *count = (*count).max(n + 1);
        }
        index.insert(kept)
    });
    if let Err(err) = inserted {
        tracing::warn!(error = %err, "cannot patch the dense passage index; built again at the next question");
        *state = State::Idle;
        return false;
    }
    if index.len() > MAX_DENSE_PASSAGES {
        tracing::warn!(
            passages = index.len(),
            limit = MAX_DENSE_PASSAGES,
            "the tenant outgrew the exact dense index: BM25 alone ranks its passages"
        );
        *state = State::Off;
        return false;
    }
    if index.vectors.wants_graph() {
        rebuild_graph(shared, index);
    }
    true
}

/// The passages of `page` as the dense index encodes them, keyed.
fn passage_texts(page: &PageVersion) -> Vec<(PassageKey, String)> {
    chunk_page(&page.source_id, page.version, &page.body)
        .iter()
        .enumerate()
        .map(|(n, chunk)| ((page.source_id.clone(), n), chunk.indexed_text(&page.title)))
        .collect()
}

/// The vectors of `texts`, in their order, encoded [`BATCH`] at a time.
fn encode_all(
    encoder: &dyn SentenceEncoder,
    texts: &[(PassageKey, String)],
) -> Result<Vec<Vec<f32>>, DenseError> {
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(BATCH) {
        let batch: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
        let encoded = encoder.encode(&batch)?;
        if encoded.len() != batch.len() {
            return Err(DenseError::Encode(EncodeError(format!(
                "{} vectors for {} texts",
                encoded.len(),
                batch.len()
            ))));
        }
        vectors.extend(encoded);
    }
    Ok(vectors)
}

/// The state a build ends in.
fn built(result: Result<DenseIndex, DenseError>) -> State {
    match result {
        Ok(index) => State::Ready(Box::new(index)),
        Err(err) => {
            tracing::warn!(error = %err, "cannot build the dense passage index");
            State::Off
        }
    }
}

/// Wakes the questions waiting for a patch.
fn notify(patched: &(Mutex<()>, Condvar)) {
    let (lock, settled) = patched;
    let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
    settled.notify_all();
}

fn read(state: &RwLock<State>) -> std::sync::RwLockReadGuard<'_, State> {
    state.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(state: &RwLock<State>) -> std::sync::RwLockWriteGuard<'_, State> {
    state.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
