//! BM25 with tantivy over what the caller may read, in two shapes: [`PageIndex`] over the
//! current version of every page (one document per page: title and body, as the study indexed
//! them), and [`PassageIndex`] over the passages of those versions (one document per chunk of
//! [`chunk_page`]: the page's title, the chunk's headings and its text). Both live as long as
//! their read model and are updated page by page as versions move. Query terms are
//! de-duplicated and ties go to the lower page id (then the lower chunk), so rankings are stable.
//!
//! Scores are computed with statistics of the live documents only ([`LiveStats`]): tantivy
//! counts a replaced document in its term and document counts until a merge drops it, so an
//! index updated in place would rank a little differently from one built afresh over the same
//! pages. With live statistics both rank alike.

use std::collections::{BTreeSet, HashMap};

use tantivy::collector::TopDocs;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};

use ontoloop_core::Caller;
use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::passage::chunk_page;

/// ACL value of a page the whole tenant may read.
const EVERYONE: &str = "*";

/// Indexing buffer of a writer, bytes (tantivy's smallest per thread).
const WRITER_BUDGET: usize = 15_000_000;

/// The page index of one tenant: one document per current page.
pub struct PageIndex(TextIndex);

/// The passage index of one tenant: one document per chunk of each current page.
pub struct PassageIndex(TextIndex);

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
    stats: LiveStats,
    parts: Parts,
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

    fn add(&mut self, page: &DocTerms) {
        self.docs += 1;
        self.text_tokens += page.tokens;
        self.acl_tokens += page.acl.len() as u64;
        for term in &page.terms {
            *self.text_df.entry(term.clone()).or_default() += 1;
        }
        for value in page.acl.iter().collect::<BTreeSet<_>>() {
            *self.acl_df.entry(value.clone()).or_default() += 1;
        }
    }

    fn remove(&mut self, page: &DocTerms) {
        self.docs = self.docs.saturating_sub(1);
        self.text_tokens = self.text_tokens.saturating_sub(page.tokens);
        self.acl_tokens = self.acl_tokens.saturating_sub(page.acl.len() as u64);
        for term in &page.terms {
            Self::decrement(&mut self.text_df, term);
        }
        for value in page.acl.iter().collect::<BTreeSet<_>>() {
            Self::decrement(&mut self.acl_df, value);
        }
    }

    fn decrement(counts: &mut HashMap<String, u64>, key: &str) {
        if let Some(count) = counts.get_mut(key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(key);
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

impl PageIndex {
    /// Indexes `pages` (their current versions).
    pub fn build<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> tantivy::Result<Self> {
        TextIndex::build(pages, whole_page).map(Self)
    }

    /// Replaces pages by their new current versions: each `(old, new)` pair deletes the
    /// document of `old` (none for a page not indexed yet) and adds `new`'s (none for a
    /// tombstone), and the change becomes searchable.
    pub fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<()> {
        self.0.update(pages)
    }

    /// Page ids best first, at most `limit`, among pages `caller` may read (an ACL entry names
    /// the principal or one of the caller's groups). The permission filter is part of the
    /// query, so a page the caller may not read is never ranked.
    pub fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<String> {
        self.0
            .search(query, limit, caller)
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

    /// As [`PageIndex::update`]: every passage of `old` leaves, every passage of `new` comes in.
    pub fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<()> {
        self.0.update(pages)
    }

    /// Passages best first, at most `limit`, among pages `caller` may read; the permission
    /// filter is part of the query, as in [`PageIndex::search`].
    pub fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<PassageHit> {
        self.0.search(query, limit, caller)
    }
}

impl TextIndex {
    fn build<'a>(
        pages: impl IntoIterator<Item = &'a PageVersion>,
        parts: Parts,
    ) -> tantivy::Result<Self> {
        let mut schema = Schema::builder();
        let page = schema.add_text_field("page", STRING | STORED);
        let part = schema.add_u64_field("part", STORED);
        let text = schema.add_text_field("text", TEXT);
        let acl = schema.add_text_field("acl", STRING);
        let index = Index::create_in_ram(schema.build());
        let reader = index.reader()?;
        let mut built = Self {
            index,
            reader,
            page,
            part,
            text,
            acl,
            stats: LiveStats::new(text, acl),
            parts,
        };
        built.update(pages.into_iter().map(|page| (None, page)))?;
        Ok(built)
    }

    /// See [`PageIndex::update`]. A writer is made for the update and let go after it, merges
    /// included, so an idle tenant holds no indexing threads or buffers.
    fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<()> {
        let mut writer: IndexWriter<TantivyDocument> =
            self.index.writer_with_num_threads(1, WRITER_BUDGET)?;
        // A tombstone (a deleted page) is never indexed: it only takes its page's documents out.
        for (old, page) in pages {
            if let Some(old) = old.filter(|old| !old.deleted) {
                writer.delete_term(Term::from_field_text(self.page, &old.source_id));
                for text in (self.parts)(old) {
                    let terms = self.terms_of(&text, old);
                    self.stats.remove(&terms);
                }
            }
            if page.deleted {
                continue;
            }
            for (n, text) in (self.parts)(page).into_iter().enumerate() {
                let terms = self.terms_of(&text, page);
                self.stats.add(&terms);
                writer.add_document(self.document(page, n, text))?;
            }
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
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
            self.text => text
        );
        if page.acl.is_empty() {
            document.add_text(self.acl, EVERYONE);
        }
        for principal in &page.acl {
            document.add_text(self.acl, principal);
        }
        document
    }

    /// Documents best first, at most `limit`, among pages `caller` may read.
    fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<PassageHit> {
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
        let readable: Vec<(Occur, Box<dyn Query>)> = [EVERYONE, caller.principal()]
            .into_iter()
            .chain(caller.groups().iter().map(String::as_str))
            .map(|p| {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.acl, p),
                        IndexRecordOption::Basic,
                    )) as Box<dyn Query>,
                )
            })
            .collect();
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(BooleanQuery::new(text)) as Box<dyn Query>,
            ),
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(BooleanQuery::new(readable)),
                    0.0,
                )),
            ),
        ]);
        let searcher = self.reader.searcher();
        // Candidates best first; where the last one ties with the `limit`-th, the tie goes on
        // past the window and which of its pages tantivy kept would depend on where they sit
        // in the index: widen until the whole tie group is in, so the lower ids win it.
        let mut window = limit + 32;
        let hits = loop {
            let Ok(hits) = searcher.search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(window).order_by_score(),
                &self.stats,
            ) else {
                return Vec::new();
            };
            let tie_cut = hits.len() == window
                && hits.len() > limit
                && hits[window - 1].0 >= hits[limit - 1].0;
            if !tie_cut || window as u64 >= self.stats.docs {
                break hits;
            }
            window = window.saturating_mul(4);
        };
        let mut ranked: Vec<PassageHit> = hits
            .into_iter()
            .filter(|(score, _)| *score > 0.0)
            .filter_map(|(score, address)| {
                let document: TantivyDocument = searcher.doc(address).ok()?;
                let source_id = document.get_first(self.page)?.as_str()?.to_owned();
                let chunk = usize::try_from(document.get_first(self.part)?.as_u64()?).ok()?;
                Some(PassageHit {
                    source_id,
                    chunk,
                    score,
                })
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.source_id.cmp(&b.source_id))
                .then_with(|| a.chunk.cmp(&b.chunk))
        });
        ranked.truncate(limit);
        ranked
    }

    /// The query's terms as the index tokenises them, first occurrence only.
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
        terms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn page(id: &str, body: &str, acl: &[&str]) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version: 1,
            title: id.into(),
            origin: "faq".into(),
            body: body.into(),
            updated_at: Utc::now(),
            acl: acl.iter().map(|s| s.to_string()).collect(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    #[test]
    fn ranks_by_bm25_and_never_returns_what_the_caller_may_not_read() {
        let pages = vec![
            page("a", "The Pro plan costs 49 per user per month.", &[]),
            page("b", "Pro pricing secret: the Pro plan costs 59.", &["cfo"]),
            page("c", "Office guide.", &[]),
        ];
        let index = PageIndex::build(&pages).expect("index");
        let alice = Caller::new("t", "alice").expect("caller");
        let cfo = Caller::new("t", "cfo").expect("caller");
        assert_eq!(
            index.search("How much is the Pro plan?", 3, &alice),
            vec!["a"]
        );
        assert_eq!(index.search("How much is the Pro plan?", 3, &cfo)[0], "b");
        assert!(index.search("", 3, &alice).is_empty());
        assert!(index.search("zebra", 3, &alice).is_empty());
    }

    #[test]
    fn a_deleted_page_leaves_the_index_and_comes_back_with_its_next_version() {
        let live = page("a", "The Pro plan costs 49 per user per month.", &[]);
        let other = page("b", "Office guide for the Pro team.", &[]);
        let mut index = PageIndex::build([&live, &other]).expect("index");
        let alice = Caller::new("t", "alice").expect("caller");
        let tombstone = PageVersion::tombstone(&live, Utc::now());
        index.update([(Some(&live), &tombstone)]).expect("delete");
        assert_eq!(index.search("Pro plan costs", 3, &alice), vec!["b"]);
        // The stats lost the page's terms once: a tombstone replaced by a new version does not
        // take them out again.
        let back = PageVersion {
            version: 3,
            ..page("a", "The Pro plan costs 49 per user per month.", &[])
        };
        index.update([(Some(&tombstone), &back)]).expect("restore");
        let fresh = PageIndex::build([&back, &other]).expect("index");
        assert_eq!(
            index.search("Pro plan costs", 3, &alice),
            fresh.search("Pro plan costs", 3, &alice)
        );
        assert_eq!(index.search("Pro plan costs", 3, &alice)[0], "a");
    }

    #[test]
    fn a_group_in_an_acl_admits_the_callers_in_it() {
        let pages = vec![page("d", "Gold plan budget: 80.", &["finance"])];
        let index = PageIndex::build(&pages).expect("index");
        let bob = Caller::new("t", "bob").expect("caller");
        assert!(index.search("Gold plan budget", 3, &bob).is_empty());
        let in_finance = bob.with_groups(["finance".to_owned()]);
        assert_eq!(index.search("Gold plan budget", 3, &in_finance), vec!["d"]);
    }

    #[test]
    fn passages_rank_by_chunk_and_follow_their_page() {
        let handbook = page(
            "handbook",
            "# Travel\n\nBook trains two weeks ahead.\n\n# Office\n\nThe guest wifi password is on the fridge.",
            &[],
        );
        let secret = page("vault", "The admin wifi password is in the vault.", &["it"]);
        let mut index = PassageIndex::build([&handbook, &secret]).expect("index");
        let alice = Caller::new("t", "alice").expect("caller");
        let hits = index.search("guest wifi password", 3, &alice);
        assert_eq!(
            hits.iter()
                .map(|h| (h.source_id.as_str(), h.chunk))
                .collect::<Vec<_>>(),
            [("handbook", 1)],
            "the second chunk of the handbook, never the page alice may not read"
        );
        let it = Caller::new("t", "it").expect("caller");
        assert_eq!(
            index.search("admin wifi password", 3, &it)[0].source_id,
            "vault"
        );
        // The title is part of every passage of its page.
        assert_eq!(index.search("handbook trains", 3, &alice)[0].chunk, 0);
        // A new version replaces every passage of the old one; a fresh build ranks alike.
        let revised = PageVersion {
            version: 2,
            ..page("handbook", "# Office\n\nWifi: ask reception.", &[])
        };
        index.update([(Some(&handbook), &revised)]).expect("update");
        assert!(index.search("trains", 3, &alice).is_empty());
        let fresh = PassageIndex::build([&revised, &secret]).expect("index");
        assert_eq!(
            index.search("wifi reception", 3, &it),
            fresh.search("wifi reception", 3, &it)
        );
        let tombstone = PageVersion::tombstone(&revised, Utc::now());
        index
            .update([(Some(&revised), &tombstone)])
            .expect("delete");
        assert!(index.search("wifi reception", 3, &alice).is_empty());
    }
}
