//! BM25 with tantivy over what the caller may read, in two shapes: [`PageIndex`] over the
//! current version of every page (one document per page: title and body, as the study indexed
//! them), and [`PassageIndex`] over the passages of those versions (one document per chunk of
//! [`chunk_page`]: the page's title, the chunk's headings and its text). Both live as long as
//! their read model and are updated page by page as versions move. Query terms are
//! de-duplicated, stop words and question words left out (core's `question::is_stop_word`, unless
//! the query holds nothing else), and ties go to the lower page id (then the lower chunk), so
//! rankings are stable.
//!
//! Scores are computed with statistics of the live documents only ([`LiveStats`]): tantivy
//! counts a replaced document in its term and document counts until a merge drops it, so an
//! index updated in place would rank a little differently from one built afresh over the same
//! pages. With live statistics both rank alike.
//!
//! An update can be written beside readers ([`PageIndex::stage`]: its documents added and
//! committed, its statistics counted aside) and made searchable later under an exclusive hold
//! ([`PageIndex::publish`]: the statistics moved and the reader reloaded), so readers never wait
//! for the indexing itself. Both indexes live in RAM ([`crate::ram::RamIndexDirectory`]).

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};

use tantivy::collector::TopDocs;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue, SortByString};
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term, doc};

use ontoloop_core::Caller;
use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::passage::chunk_page;
use ontoloop_core::knowledge::question::is_stop_word;

/// The fields a document's page id and part number are kept in (fast fields: a search reads
/// them, and breaks ties with them, without loading a stored document).
const PAGE: &str = "page";
const PART: &str = "part";

/// The field a document's page origin is kept in (indexed only: a filter, never scored).
const ORIGIN: &str = "origin";

/// ACL value of a page the whole tenant may read.
const EVERYONE: &str = "*";

/// Indexing buffer of a writer, bytes (tantivy's smallest per thread).
const WRITER_BUDGET: usize = 15_000_000;

/// Documents from which an index keeps its writer between updates (when a slot is free): below
/// it a writer made for each update and merged before it ends costs little; above it that
/// merge grows with the index and every reader of the model waits for it.
const LIVE_WRITER_MIN_DOCS: u64 = 1_000;

/// Writers the process keeps alive between updates at most, over every index of every model.
/// Each holds an indexing thread, a merging thread and its buffers; an index without a slot
/// makes a writer for each update, as a small one does.
const MAX_LIVE_WRITERS: usize = 8;

/// Live writers held now, process-wide (at most [`MAX_LIVE_WRITERS`]).
static LIVE_WRITERS: AtomicUsize = AtomicUsize::new(0);

/// The page index of one tenant: one document per current page.
pub struct PageIndex(TextIndex);

/// The passage index of one tenant: one document per chunk of each current page.
pub struct PassageIndex(TextIndex);

/// Which pages a search may rank, beside the caller's permission: those of one of `origins`
/// (any when empty) whose id starts with `prefix`. Part of the search's query, as the
/// permission filter is: a page outside it is never ranked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageFilter {
    /// Origins admitted (`wiki`, `git`); empty: any.
    pub origins: Vec<String>,
    /// Start of the page ids admitted; empty: any.
    pub prefix: String,
}

impl PageFilter {
    /// Whether `page` passes the filter.
    pub fn admits(&self, page: &PageVersion) -> bool {
        (self.origins.is_empty() || self.origins.contains(&page.origin))
            && page.source_id.starts_with(&self.prefix)
    }

    /// Whether the filter admits every page.
    pub fn is_any(&self) -> bool {
        self.origins.is_empty() && self.prefix.is_empty()
    }
}

/// One passage found: the page, the chunk's number in [`chunk_page`]'s order, its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageHit {
    /// Page id.
    pub source_id: String,
    /// Index of the chunk among the page's current version's chunks.
    pub chunk: usize,
    /// BM25 score (positive).
    pub score: f32,
}

/// The texts a page version is indexed as, numbered by position.
type Parts = fn(&PageVersion) -> Vec<String>;

/// A page's one document: title and body.
fn whole_page(page: &PageVersion) -> Vec<String> {
    vec![format!("{} {}", page.title, page.body)]
}

/// A page's passages, each under the page's title and its headings.
fn page_chunks(page: &PageVersion) -> Vec<String> {
    chunk_page(&page.source_id, page.version, &page.body)
        .iter()
        .map(|chunk| chunk.indexed_text(&page.title))
        .collect()
}

/// The tantivy index both shapes share: documents keyed by page id and part number, with the
/// page's ACL, updated a page at a time.
struct TextIndex {
    index: Index,
    reader: IndexReader,
    page: Field,
    part: Field,
    text: Field,
    acl: Field,
    origin: Field,
    stats: LiveStats,
    parts: Parts,
    /// The writer kept between updates by a large index ([`LIVE_WRITER_MIN_DOCS`]) while a
    /// process slot was free: an update commits on it and its merges run in the background.
    /// Behind a lock of its own so an update is written beside readers ([`TextIndex::stage`]).
    live: std::sync::Mutex<Option<LiveWriter>>,
}

/// Documents an update wrote and committed that readers do not see yet, and what they change in
/// the statistics: readers go on searching the index as it was until it is published
/// ([`PageIndex::publish`]), so the costly write and commit need no exclusive hold on the model.
pub struct Staged(StatsDelta);

/// How the statistics of the live documents move with an update: the documents, tokens and
/// document frequencies it adds (positive) and takes out (negative).
#[derive(Default)]
struct StatsDelta {
    docs: i64,
    text_tokens: i64,
    acl_tokens: i64,
    text_df: HashMap<String, i64>,
    acl_df: HashMap<String, i64>,
}

impl StatsDelta {
    /// Counts `page` in (`sign` 1) or out (`sign` -1).
    fn count(&mut self, page: &DocTerms, sign: i64) {
        self.docs += sign;
        self.text_tokens += sign * page.tokens as i64;
        self.acl_tokens += sign * page.acl.len() as i64;
        for term in &page.terms {
            *self.text_df.entry(term.clone()).or_default() += sign;
        }
        for value in page.acl.iter().collect::<BTreeSet<_>>() {
            *self.acl_df.entry(value.clone()).or_default() += sign;
        }
    }
}

/// A writer kept alive between updates, holding one of the process's [`MAX_LIVE_WRITERS`]
/// slots until it is dropped.
struct LiveWriter(IndexWriter<TantivyDocument>);

impl LiveWriter {
    /// A writer of `index` on a free slot, or `None` when every slot is held.
    fn claim(index: &Index) -> tantivy::Result<Option<Self>> {
        let claimed = LIVE_WRITERS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held < MAX_LIVE_WRITERS).then_some(held + 1)
        });
        if claimed.is_err() {
            return Ok(None);
        }
        match writer(index) {
            Ok(writer) => Ok(Some(Self(writer))),
            Err(err) => {
                LIVE_WRITERS.fetch_sub(1, Ordering::AcqRel);
                Err(err)
            }
        }
    }
}

/// A writer of `index` as every update uses one: one indexing thread, one merging thread,
/// [`WRITER_BUDGET`] of buffer, and [`merge_policy`]. Made on a thread of its own at
/// [`WRITER_NICENESS`]: the threads tantivy starts for it take that thread's priority.
fn writer(index: &Index) -> tantivy::Result<IndexWriter<TantivyDocument>> {
    let index = index.clone();
    let making = std::thread::Builder::new()
        .name("index-writer".to_owned())
        .spawn(move || {
            lower_priority(WRITER_NICENESS);
            let options = IndexWriterOptions::builder()
                .memory_budget_per_thread(WRITER_BUDGET)
                .num_worker_threads(1)
                .num_merge_threads(1)
                .build();
            let writer = index.writer_with_options(options)?;
            writer.set_merge_policy(Box::new(merge_policy()));
            Ok(writer)
        })
        .map_err(|err| {
            tantivy::TantivyError::SystemError(format!("start a thread to make a writer: {err}"))
        })?;
    making.join().map_err(|_| {
        tantivy::TantivyError::SystemError("the thread making a writer panicked".to_owned())
    })?
}

/// Niceness of the threads a writer indexes and merges on. An update's indexing and merging
/// are the costly part of bringing a read model forward, and an update is seen within tens of
/// milliseconds either way; on a machine whose cores the callers keep busy they wait for the
/// callers' Asks and Validates instead of taking a core from one mid-call (at 100,000 pages
/// under 50 events/s on two cores, those preemptions made Validate's p99).
const WRITER_NICENESS: i32 = 10;

/// Lowers the calling thread's priority to `niceness` (Linux: niceness is per thread, and a
/// thread it starts inherits it). Lowering needs no privilege; a failure leaves the priority as
/// it was, which costs latency, never correctness.
pub(crate) fn lower_priority(niceness: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority only read their arguments; the thread id is this
        // thread's own.
        let lowered = unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, niceness)
        };
        if lowered != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "cannot lower a background thread's priority"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = niceness;
}

/// Segments below this many documents count as one size when merges are chosen.
const MIN_MERGE_LAYER_DOCS: u32 = 100;

/// Share of a segment's documents that may be deleted (replaced versions) before its layer is
/// merged, which drops them.
const MAX_DELETED_SHARE: f32 = 0.5;

/// tantivy's log merge policy, with segments of like size merged together, except that only
/// segments under [`MIN_MERGE_LAYER_DOCS`] count as one size (tantivy's default is 10,000). Each
/// update commits a segment of a few documents; with the default, those fell in one layer with
/// every segment of up to 10,000 documents, so an index of that size was rewritten whole every
/// few updates. A large segment is then seldom merged, so one whose documents are more than
/// [`MAX_DELETED_SHARE`] replaced is merged for that alone (tantivy's default never does): the
/// index holds at most about twice the live documents however long the pages keep changing.
fn merge_policy() -> tantivy::indexer::LogMergePolicy {
    let mut policy = tantivy::indexer::LogMergePolicy::default();
    policy.set_min_layer_size(MIN_MERGE_LAYER_DOCS);
    policy.set_del_docs_ratio_before_merge(MAX_DELETED_SHARE);
    policy
}

impl Drop for LiveWriter {
    fn drop(&mut self) {
        LIVE_WRITERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// BM25 statistics of the live documents: how many, how many tokens each field holds, and how
/// many documents hold each term, kept as pages come and go.
struct LiveStats {
    text: Field,
    acl: Field,
    docs: u64,
    text_tokens: u64,
    acl_tokens: u64,
    text_df: HashMap<String, u64>,
    acl_df: HashMap<String, u64>,
}

/// What one document adds to the statistics: its text's tokens and distinct terms, its ACL
/// values.
struct DocTerms {
    tokens: u64,
    terms: BTreeSet<String>,
    acl: Vec<String>,
}

impl LiveStats {
    fn new(text: Field, acl: Field) -> Self {
        Self {
            text,
            acl,
            docs: 0,
            text_tokens: 0,
            acl_tokens: 0,
            text_df: HashMap::new(),
            acl_df: HashMap::new(),
        }
    }

    /// Moves the statistics by `delta` (never below zero).
    fn apply(&mut self, delta: StatsDelta) {
        let moved = |held: u64, by: i64| held.saturating_add_signed(by);
        self.docs = moved(self.docs, delta.docs);
        self.text_tokens = moved(self.text_tokens, delta.text_tokens);
        self.acl_tokens = moved(self.acl_tokens, delta.acl_tokens);
        Self::move_counts(&mut self.text_df, delta.text_df);
        Self::move_counts(&mut self.acl_df, delta.acl_df);
    }

    fn move_counts(counts: &mut HashMap<String, u64>, by: HashMap<String, i64>) {
        for (key, by) in by {
            if by == 0 {
                continue;
            }
            match counts.entry(key) {
                Entry::Occupied(mut held) => {
                    let count = held.get().saturating_add_signed(by);
                    if count == 0 {
                        held.remove();
                    } else {
                        *held.get_mut() = count;
                    }
                }
                Entry::Vacant(none) => {
                    if by > 0 {
                        none.insert(by.unsigned_abs());
                    }
                }
            }
        }
    }
}

impl Bm25StatisticsProvider for LiveStats {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(if field == self.text {
            self.text_tokens
        } else if field == self.acl {
            self.acl_tokens
        } else {
            self.docs
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let value = term.value();
        let Some(text) = value.as_str() else {
            return Ok(0);
        };
        let counts = if term.field() == self.text {
            &self.text_df
        } else if term.field() == self.acl {
            &self.acl_df
        } else {
            return Ok(0);
        };
        // Never above the document count (BM25's idf requires it).
        Ok(counts.get(text).copied().unwrap_or(0).min(self.docs))
    }
}

/// The updates of an index (both take them alike, from the [`TextIndex`] inside).
macro_rules! updates {
    ($index:ident) => {
        impl $index {
            /// Replaces pages by their new current versions: each `(old, new)` pair deletes the
            /// documents of `old` (none for a page not indexed yet) and adds `new`'s (none for
            /// a tombstone), and the change becomes searchable.
            pub fn update<'a>(
                &mut self,
                pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
            ) -> tantivy::Result<()> {
                self.0.update(pages)
            }

            /// Writes and commits what [`update`](Self::update) would, beside readers: they see
            /// it once it is [`published`](Self::publish). Stage one update at a time and
            /// publish each before the next; a staged update never published is seen by the
            /// next one's readers, with statistics that do not count it (rebuild the index
            /// instead).
            pub fn stage<'a>(
                &self,
                pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
            ) -> tantivy::Result<Staged> {
                self.0.stage(pages)
            }

            /// Makes a staged update searchable.
            pub fn publish(&mut self, staged: Staged) -> tantivy::Result<()> {
                self.0.publish(staged)
            }
        }
    };
}

updates!(PageIndex);
updates!(PassageIndex);

impl PageIndex {
    /// Indexes `pages` (their current versions).
    pub fn build<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> tantivy::Result<Self> {
        TextIndex::build(pages, whole_page).map(Self)
    }

    /// Page ids best first, at most `limit`, among pages `caller` may read (an ACL entry names
    /// the principal or one of the caller's groups). The permission filter is part of the
    /// query, so a page the caller may not read is never ranked.
    pub fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<String> {
        self.0
            .search(query, limit, caller, &PageFilter::default())
            .into_iter()
            .map(|hit| hit.source_id)
            .collect()
    }
}

impl PassageIndex {
    /// Indexes the passages of `pages` (their current versions).
    pub fn build<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> tantivy::Result<Self> {
        TextIndex::build(pages, page_chunks).map(Self)
    }

    /// Passages best first, at most `limit`, among pages `caller` may read; the permission
    /// filter is part of the query, as in [`PageIndex::search`].
    pub fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<PassageHit> {
        self.0.search(query, limit, caller, &PageFilter::default())
    }

    /// As [`PassageIndex::search`], among the pages `filter` admits too (part of the query).
    pub fn search_in(
        &self,
        query: &str,
        limit: usize,
        caller: &Caller,
        filter: &PageFilter,
    ) -> Vec<PassageHit> {
        self.0.search(query, limit, caller, filter)
    }
}

impl TextIndex {
    fn build<'a>(
        pages: impl IntoIterator<Item = &'a PageVersion>,
        parts: Parts,
    ) -> tantivy::Result<Self> {
        let mut schema = Schema::builder();
        let page = schema.add_text_field(PAGE, STRING | FAST);
        let part = schema.add_u64_field(PART, FAST);
        // Tokenised as tantivy's TEXT is, with term frequencies but no positions: BM25 over
        // terms never reads them, and they cost memory and every merge time.
        let text = schema.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("default")
                    .set_index_option(IndexRecordOption::WithFreqs),
            ),
        );
        let acl = schema.add_text_field("acl", STRING);
        let origin = schema.add_text_field(ORIGIN, STRING);
        let index = Index::create(
            crate::ram::RamIndexDirectory::default(),
            schema.build(),
            tantivy::IndexSettings::default(),
        )?;
        // Reloaded by each update once it is committed, never behind its back.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let mut built = Self {
            index,
            reader,
            page,
            part,
            text,
            acl,
            origin,
            stats: LiveStats::new(text, acl),
            parts,
            live: std::sync::Mutex::new(None),
        };
        built.update(pages.into_iter().map(|page| (None, page)))?;
        Ok(built)
    }

    /// See [`PageIndex::update`].
    fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<()> {
        let staged = self.stage(pages)?;
        self.publish(staged)
    }

    /// See [`PageIndex::stage`]. A small index makes a writer for the update and lets it go
    /// after it, merges included, so an idle tenant holds no indexing threads or buffers. A
    /// large one keeps its writer while a process slot is free ([`LiveWriter`]): the update
    /// only commits, and merges run beside the readers.
    fn stage<'a>(
        &self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<Staged> {
        let mut live = self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if live.is_none() && self.stats.docs >= LIVE_WRITER_MIN_DOCS {
            *live = LiveWriter::claim(&self.index)?;
        }
        // Taken out while it writes; a writer whose commit failed is not kept.
        match live.take() {
            Some(mut writer) => {
                let staged = self.write(&mut writer.0, pages)?;
                *live = Some(writer);
                Ok(staged)
            }
            None => {
                drop(live);
                let mut writer = writer(&self.index)?;
                let staged = self.write(&mut writer, pages)?;
                writer.wait_merging_threads()?;
                Ok(staged)
            }
        }
    }

    /// See [`PageIndex::publish`]: the statistics move by the staged documents and readers see
    /// the commit.
    fn publish(&mut self, staged: Staged) -> tantivy::Result<()> {
        self.stats.apply(staged.0);
        self.reader.reload()
    }

    /// Deletes and adds the documents of each `(old, new)` pair on `writer` and commits.
    fn write<'a>(
        &self,
        writer: &mut IndexWriter<TantivyDocument>,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<Staged> {
        let mut delta = StatsDelta::default();
        // A tombstone (a deleted page) is never indexed: it only takes its page's documents out.
        for (old, page) in pages {
            if let Some(old) = old.filter(|old| !old.deleted) {
                writer.delete_term(Term::from_field_text(self.page, &old.source_id));
                for text in (self.parts)(old) {
                    delta.count(&self.terms_of(&text, old), -1);
                }
            }
            if page.deleted {
                continue;
            }
            for (n, text) in (self.parts)(page).into_iter().enumerate() {
                delta.count(&self.terms_of(&text, page), 1);
                writer.add_document(self.document(page, n, text))?;
            }
        }
        writer.commit()?;
        Ok(Staged(delta))
    }

    /// A document's tokens, distinct terms and ACL values, as the index counts them.
    fn terms_of(&self, text: &str, page: &PageVersion) -> DocTerms {
        let mut terms = BTreeSet::new();
        let mut tokens = 0;
        if let Ok(mut analyzer) = self.index.tokenizer_for_field(self.text) {
            let mut stream = analyzer.token_stream(text);
            stream.process(&mut |token| {
                tokens += 1;
                terms.insert(token.text.clone());
            });
        }
        let acl = if page.acl.is_empty() {
            vec![EVERYONE.to_owned()]
        } else {
            page.acl.clone()
        };
        DocTerms { tokens, terms, acl }
    }

    /// The document of one part of a page version.
    fn document(&self, page: &PageVersion, part: usize, text: String) -> TantivyDocument {
        let mut document = doc!(
            self.page => page.source_id.clone(),
            self.part => part as u64,
            self.text => text,
            self.origin => page.origin.clone()
        );
        if page.acl.is_empty() {
            document.add_text(self.acl, EVERYONE);
        }
        for principal in &page.acl {
            document.add_text(self.acl, principal);
        }
        document
    }

    /// Documents best first, at most `limit`, among pages `caller` may read and `filter` admits.
    fn search(
        &self,
        query: &str,
        limit: usize,
        caller: &Caller,
        filter: &PageFilter,
    ) -> Vec<PassageHit> {
        let terms = self.terms(query);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let text: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.text, &t),
                        IndexRecordOption::WithFreqs,
                    )) as Box<dyn Query>,
                )
            })
            .collect();
        let readable = any_term(
            self.acl,
            [EVERYONE, caller.principal()]
                .into_iter()
                .chain(caller.groups().iter().map(String::as_str)),
        );
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
            (
                Occur::Must,
                Box::new(BooleanQuery::new(text)) as Box<dyn Query>,
            ),
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(Box::new(readable), 0.0)),
            ),
        ];
        clauses.extend(self.filter_clauses(filter));
        let query = BooleanQuery::new(clauses);
        // Best first, ties to the lower page id and then the lower part, read off the fast
        // fields: no stored document is loaded, and a tie as wide as the index (a word every
        // page holds) costs no more than any other query.
        let order = (
            (SortBySimilarityScore, Order::Desc),
            (SortByString::for_field(PAGE), Order::Asc),
            (SortByStaticFastValue::<u64>::for_field(PART), Order::Asc),
        );
        let Ok(hits) = self.reader.searcher().search_with_statistics_provider(
            &query,
            &TopDocs::with_limit(limit).order_by(order),
            &self.stats,
        ) else {
            return Vec::new();
        };
        hits.into_iter()
            .filter_map(|((score, page, part), _)| {
                Some(PassageHit {
                    source_id: page?,
                    chunk: usize::try_from(part?).ok()?,
                    score,
                })
            })
            .filter(|hit| hit.score > 0.0)
            .collect()
    }

    /// The clauses that keep a search to the pages `filter` admits, unscored: one of its origins,
    /// and an id in the range of ids that start with its prefix.
    fn filter_clauses(&self, filter: &PageFilter) -> Vec<(Occur, Box<dyn Query>)> {
        let unscored = |query: Box<dyn Query>| -> (Occur, Box<dyn Query>) {
            (Occur::Must, Box::new(ConstScoreQuery::new(query, 0.0)))
        };
        let mut clauses = Vec::new();
        if !filter.origins.is_empty() {
            let origins = any_term(self.origin, filter.origins.iter().map(String::as_str));
            clauses.push(unscored(Box::new(origins)));
        }
        if !filter.prefix.is_empty() {
            // Every id that starts with the prefix sorts between it and it followed by the
            // highest scalar value.
            let upper = format!("{}{}", filter.prefix, char::MAX);
            clauses.push(unscored(Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_text(self.page, &filter.prefix)),
                Bound::Included(Term::from_field_text(self.page, &upper)),
            ))));
        }
        clauses
    }

    /// The query's terms as the index tokenises them, first occurrence only, without stop words
    /// and question words ("who", "the": a page holding only those is no answer, and scoring
    /// every page that holds one costs a pass over the whole index) unless the query holds
    /// nothing else.
    fn terms(&self, query: &str) -> Vec<String> {
        let Ok(mut analyzer) = self.index.tokenizer_for_field(self.text) else {
            return Vec::new();
        };
        let mut terms: Vec<String> = Vec::new();
        let mut stream = analyzer.token_stream(query);
        stream.process(&mut |token| {
            if !terms.contains(&token.text) {
                terms.push(token.text.clone());
            }
        });
        let telling: Vec<String> = terms
            .iter()
            .filter(|term| !is_stop_word(term))
            .cloned()
            .collect();
        if telling.is_empty() { terms } else { telling }
    }
}

/// Documents holding any of `values` in `field` (an untokenised field: each value one term).
fn any_term<'a>(field: Field, values: impl Iterator<Item = &'a str>) -> BooleanQuery {
    BooleanQuery::new(
        values
            .map(|value| {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(
                        Term::from_field_text(field, value),
                        IndexRecordOption::Basic,
                    )) as Box<dyn Query>,
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
