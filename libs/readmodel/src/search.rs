//! BM25 over the current version of every page, with tantivy, restricted to what the caller may
//! read. The index lives as long as its read model and is updated page by page as versions
//! move. One field holds title and body, as the study indexed them; query terms are de-duplicated
//! and ties go to the lower page id, so rankings are stable.
//!
//! Scores are computed with statistics of the live pages only ([`LiveStats`]): tantivy counts a
//! replaced document in its term and document counts until a merge drops it, so an index
//! updated in place would rank a little differently from one built afresh over the same pages.
//! With live statistics both rank alike.

use std::collections::{BTreeSet, HashMap};

use tantivy::collector::TopDocs;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};

use ontoloop_core::Caller;
use ontoloop_core::knowledge::PageVersion;

/// ACL value of a page the whole tenant may read.
const EVERYONE: &str = "*";

/// Indexing buffer of a writer, bytes (tantivy's smallest per thread).
const WRITER_BUDGET: usize = 15_000_000;

/// The page index of one tenant.
pub struct PageIndex {
    index: Index,
    reader: IndexReader,
    id: Field,
    text: Field,
    acl: Field,
    stats: LiveStats,
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

/// What one page adds to the statistics: its text's tokens and distinct terms, its ACL values.
struct PageTerms {
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

    fn add(&mut self, page: &PageTerms) {
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

    fn remove(&mut self, page: &PageTerms) {
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
        let mut schema = Schema::builder();
        let id = schema.add_text_field("id", STRING | STORED);
        let text = schema.add_text_field("text", TEXT);
        let acl = schema.add_text_field("acl", STRING);
        let index = Index::create_in_ram(schema.build());
        let reader = index.reader()?;
        let mut built = Self {
            index,
            reader,
            id,
            text,
            acl,
            stats: LiveStats::new(text, acl),
        };
        built.update(pages.into_iter().map(|page| (None, page)))?;
        Ok(built)
    }

    /// Replaces pages by their new current versions: each `(old, new)` pair deletes the
    /// document of `old` (none for a page not indexed yet) and adds `new`'s (none for a
    /// tombstone), and the change becomes searchable. A writer is made for the update and let go after it, merges
    /// included, so an idle tenant holds no indexing threads or buffers.
    pub fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> tantivy::Result<()> {
        let mut writer: IndexWriter<TantivyDocument> =
            self.index.writer_with_num_threads(1, WRITER_BUDGET)?;
        // A tombstone (a deleted page) is never indexed: it only takes its page's document out.
        for (old, page) in pages {
            if let Some(old) = old.filter(|old| !old.deleted) {
                writer.delete_term(Term::from_field_text(self.id, &old.source_id));
                let terms = self.terms_of(old);
                self.stats.remove(&terms);
            }
            if page.deleted {
                continue;
            }
            writer.add_document(self.document(page))?;
            let terms = self.terms_of(page);
            self.stats.add(&terms);
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
    }

    /// The text as indexed (title and body) of a page version.
    fn text_of(page: &PageVersion) -> String {
        format!("{} {}", page.title, page.body)
    }

    /// A page's tokens, distinct terms and ACL values, as the index counts them.
    fn terms_of(&self, page: &PageVersion) -> PageTerms {
        let mut terms = BTreeSet::new();
        let mut tokens = 0;
        if let Ok(mut analyzer) = self.index.tokenizer_for_field(self.text) {
            let text = Self::text_of(page);
            let mut stream = analyzer.token_stream(&text);
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
        PageTerms { tokens, terms, acl }
    }

    /// The document of one page version.
    fn document(&self, page: &PageVersion) -> TantivyDocument {
        let mut document = doc!(
            self.id => page.source_id.clone(),
            self.text => Self::text_of(page)
        );
        if page.acl.is_empty() {
            document.add_text(self.acl, EVERYONE);
        }
        for principal in &page.acl {
            document.add_text(self.acl, principal);
        }
        document
    }

    /// Page ids best first, at most `limit`, among pages `caller` may read (an ACL entry names
    /// the principal or one of the caller's groups). The permission filter is part of the
    /// query, so a page the caller may not read is never ranked.
    pub fn search(&self, query: &str, limit: usize, caller: &Caller) -> Vec<String> {
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
        let mut ranked: Vec<(f32, String)> = hits
            .into_iter()
            .filter(|(score, _)| *score > 0.0)
            .filter_map(|(score, address)| {
                let document: TantivyDocument = searcher.doc(address).ok()?;
                let id = document.get_first(self.id)?.as_str()?.to_owned();
                Some((score, id))
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        ranked.into_iter().take(limit).map(|(_, id)| id).collect()
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
}
