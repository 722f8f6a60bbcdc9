//! BM25 over the current version of every page, with tantivy, restricted to what the caller may
//! read. One field holds title and body, as the study indexed them; query terms are de-duplicated
//! and ties go to the lower page id, so rankings are stable.

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, TantivyDocument, Term, doc};

use ontoloop_core::Caller;
use ontoloop_core::knowledge::PageVersion;

/// ACL value of a page the whole tenant may read.
const EVERYONE: &str = "*";

/// The page index of one tenant.
pub struct PageIndex {
    index: Index,
    reader: IndexReader,
    id: Field,
    text: Field,
    acl: Field,
}

impl PageIndex {
    /// Indexes `pages` (their current versions).
    pub fn build<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> tantivy::Result<Self> {
        let mut schema = Schema::builder();
        let id = schema.add_text_field("id", STRING | STORED);
        let text = schema.add_text_field("text", TEXT);
        let acl = schema.add_text_field("acl", STRING);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000)?;
        for page in pages {
            let mut document =
                doc!(id => page.source_id.clone(), text => format!("{} {}", page.title, page.body));
            if page.acl.is_empty() {
                document.add_text(acl, EVERYONE);
            }
            for principal in &page.acl {
                document.add_text(acl, principal);
            }
            writer.add_document(document)?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        reader.reload()?;
        Ok(Self {
            index,
            reader,
            id,
            text,
            acl,
        })
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
        let Ok(hits) = searcher.search(&query, &TopDocs::with_limit(limit + 32).order_by_score())
        else {
            return Vec::new();
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
    fn a_group_in_an_acl_admits_the_callers_in_it() {
        let pages = vec![page("d", "Gold plan budget: 80.", &["finance"])];
        let index = PageIndex::build(&pages).expect("index");
        let bob = Caller::new("t", "bob").expect("caller");
        assert!(index.search("Gold plan budget", 3, &bob).is_empty());
        let in_finance = bob.with_groups(["finance".to_owned()]);
        assert_eq!(index.search("Gold plan budget", 3, &in_finance), vec!["d"]);
    }
}
