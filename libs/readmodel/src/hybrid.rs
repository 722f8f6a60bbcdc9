//! Hybrid passage search: BM25 over the question's key words ([`PassageIndex`]) and the
//! sentence encoder's nearest passages to the question ([`DenseIndex`]), fused by reciprocal
//! rank ([`fuse_ranks`]). Permission is applied inside each search, before ranking.

use ontoloop_core::Caller;
use ontoloop_core::knowledge::passage::fuse_ranks;

use crate::dense::{DenseIndex, PassageKey};
use crate::search::{PageFilter, PassageIndex};

/// Rank constant of reciprocal rank fusion: 60, as Cormack et al. (2009) chose it, so that a
/// passage both rankings place well beats one only a single ranking places first.
pub const FUSION_K: f64 = 60.0;

/// How passages are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// BM25 alone.
    Bm25,
    /// Sentence-embedding similarity alone.
    Dense,
    /// Both, fused by reciprocal rank.
    Fused,
}

/// A passage ranked: its page and chunk number, its rank score (fused, BM25 or cosine, after
/// the ranking) and its similarity to the question when the model ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Page id.
    pub source_id: String,
    /// The chunk's number among its page's current chunks.
    pub chunk: usize,
    /// Rank score, higher is better.
    pub score: f64,
    /// Cosine similarity of the question and the passage, when the dense index is there.
    pub similarity: Option<f32>,
}

/// What one hybrid search reads.
pub struct Hybrid<'a> {
    /// BM25 over the passages (none: no lexical half).
    pub lexical: Option<&'a PassageIndex>,
    /// Their vectors (none: no dense half).
    pub dense: Option<&'a DenseIndex>,
}

impl Hybrid<'_> {
    /// At most `limit` passages best first for `question` (BM25 searches `key_words`), among
    /// those `caller` may read (`readable` says it of a page id for the dense half; the BM25
    /// half filters by the pages' ACLs inside its query). A ranking whose half is missing
    /// finds nothing; an encoder failure leaves the dense half empty (logged).
    pub fn search(
        &self,
        question: &str,
        key_words: &str,
        limit: usize,
        caller: &Caller,
        readable: impl Fn(&str) -> bool,
        ranking: Ranking,
    ) -> Vec<Ranked> {
        let any = PageFilter::default();
        self.search_in(
            question,
            key_words,
            (limit, ranking),
            caller,
            readable,
            &any,
        )
    }

    /// As [`Hybrid::search`], among the pages `filter` admits too: part of the BM25 half's
    /// query; `readable` must say it for the dense half.
    pub fn search_in(
        &self,
        question: &str,
        key_words: &str,
        (limit, ranking): (usize, Ranking),
        caller: &Caller,
        readable: impl Fn(&str) -> bool,
        filter: &PageFilter,
    ) -> Vec<Ranked> {
        let lexical: Vec<(PassageKey, f64)> = match (ranking, self.lexical) {
            (Ranking::Dense, _) | (_, None) => Vec::new(),
            (_, Some(index)) => index
                .search_in(key_words, limit, caller, filter)
                .into_iter()
                .map(|hit| ((hit.source_id, hit.chunk), f64::from(hit.score)))
                .collect(),
        };
        let query = self.dense.and_then(|index| match index.encode(question) {
            Ok(vector) => vector.map(|v| (index, v)),
            Err(err) => {
                tracing::warn!(error = %err, "cannot encode the question; no dense ranking");
                None
            }
        });
        let semantic: Vec<(PassageKey, f64)> = match (ranking, &query) {
            (Ranking::Bm25, _) | (_, None) => Vec::new(),
            (_, Some((index, vector))) => index
                .nearest(vector, limit, |(id, _)| readable(id))
                .into_iter()
                .map(|(key, similarity)| (key, f64::from(similarity)))
                .collect(),
        };
        let ranked: Vec<(PassageKey, f64)> = match ranking {
            Ranking::Bm25 => lexical,
            Ranking::Dense => semantic,
            Ranking::Fused => {
                let keys = |list: &[(PassageKey, f64)]| -> Vec<PassageKey> {
                    list.iter().map(|(key, _)| key.clone()).collect()
                };
                let mut fused = fuse_ranks(&[keys(&lexical), keys(&semantic)], FUSION_K);
                fused.truncate(limit);
                fused
            }
        };
        ranked
            .into_iter()
            .map(|(key, score)| {
                let similarity = query
                    .as_ref()
                    .and_then(|(index, vector)| index.similarity(vector, &key));
                Ranked {
                    source_id: key.0,
                    chunk: key.1,
                    score,
                    similarity,
                }
            })
            .collect()
    }
}
