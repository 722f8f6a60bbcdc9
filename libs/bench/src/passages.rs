//! The passage-search cost benchmark: the pages of the scale benchmark (about 1.2 KB each, four
//! passages), cut into passages, indexed by BM25 and embedded with the in-process sentence
//! encoder (all-MiniLM-L6-v2 through candle), then searched by questions no slot answers with
//! each ranking. Prints how many passages a second the model embeds on this machine and the
//! search latency by ranking: what the retrieval service does for such a question, without the
//! gRPC edge.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ontoloop_core::Caller;
use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::ask::key_words;
use ontoloop_core::knowledge::encoder::SentenceEncoder;
use ontoloop_readmodel::{DenseIndex, Hybrid, PassageIndex, Ranking};
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

use super::scale::{Quantiles, catalog_body, catalog_version, service};

/// Candidates each search returns (as retrieval asks for).
const CANDIDATES: usize = 20;

/// What the benchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct PassagesReport {
    /// Pages generated.
    pub pages: usize,
    /// Passages they were cut into.
    pub passages: usize,
    /// Passages embedded per second (the model alone, batches of 32).
    pub embedded_per_s: f64,
    /// Seconds the BM25 passage index took to build.
    pub bm25_build_s: f64,
    /// Memory of the vectors, MB.
    pub vectors_mb: f64,
    /// Questions asked per ranking.
    pub questions: usize,
    /// BM25 alone, milliseconds.
    pub bm25_ms: Quantiles,
    /// Dense alone (the question encoded, then the exact nearest passages), milliseconds.
    pub dense_ms: Quantiles,
    /// Both, fused by reciprocal rank, milliseconds.
    pub fused_ms: Quantiles,
    /// The approximate (HNSW) index against the exact one, on the passages' own vectors and the
    /// questions'.
    pub approximate: ApproxReport,
}

/// The approximate index against the exact one, on the same vectors.
#[derive(Debug, Clone, Serialize)]
pub struct ApproxReport {
    /// Vectors held.
    pub vectors: usize,
    /// Their dimensions.
    pub dimensions: usize,
    /// Seconds the graph took to build.
    pub build_s: f64,
    /// Exact nearest 20, milliseconds.
    pub exact_ms: Quantiles,
    /// Approximate nearest 20, milliseconds.
    pub approx_ms: Quantiles,
    /// Share of the exact nearest 10 the approximate search found.
    pub recall_at_10: f64,
}

/// Questions timed against each index.
const APPROX_QUESTIONS: usize = 500;

/// Builds the approximate index over the passages' own vectors (made approximate whatever
/// their number, as it is above the exact size) and times it against scoring every vector,
/// with the vectors of the questions asked.
fn approximate(
    dense: &DenseIndex,
    asked: &[String],
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ApproxReport> {
    use ontoloop_core::knowledge::vectors::{ExactIndex, VectorIndex};
    let held = dense.vectors();
    let dimensions = held.iter().next().map_or(0, |(_, v)| v.len());
    let mut exact = ExactIndex::new(dimensions);
    let mut approx = VectorIndex::exact_up_to(dimensions, 0);
    for (key, vector) in held.iter() {
        exact.insert(key.clone(), vector)?;
        approx.insert(key.clone(), vector)?;
    }
    progress(&format!(
        "building the approximate index over {} passage vectors",
        exact.len()
    ));
    let started = Instant::now();
    approx.build_approx();
    let build_s = started.elapsed().as_secs_f64();
    let mut queries = Vec::new();
    for text in asked.iter().take(APPROX_QUESTIONS) {
        queries.extend(dense.encode(text)?);
    }
    let (mut exact_samples, mut approx_samples) = (Vec::new(), Vec::new());
    let (mut hits, mut wanted) = (0usize, 0usize);
    for query in &queries {
        let started = Instant::now();
        let truth = exact.nearest(query, CANDIDATES, |_| true);
        exact_samples.push(started.elapsed());
        let started = Instant::now();
        let found = approx.nearest(query, CANDIDATES, |_| true);
        approx_samples.push(started.elapsed());
        let top: std::collections::HashSet<&(String, usize)> =
            found.iter().take(10).map(|(k, _)| k).collect();
        hits += truth
            .iter()
            .take(10)
            .filter(|(k, _)| top.contains(k))
            .count();
        wanted += truth.len().min(10);
    }
    Ok(ApproxReport {
        vectors: exact.len(),
        dimensions,
        build_s,
        exact_ms: Quantiles::of(exact_samples),
        approx_ms: Quantiles::of(approx_samples),
        recall_at_10: hits as f64 / wanted.max(1) as f64,
    })
}

impl PassagesReport {
    /// The report as a table.
    pub fn to_text(&self) -> String {
        format!(
            "passage search over {pages} pages ({passages} passages)\n\
             embedding: {rate:.0} passages/s (all-MiniLM-L6-v2, candle, this machine); vectors {mb:.1} MB\n\
             BM25 index built in {bm25:.1} s\n\
             {:<8} {:>10} {:>10}   ({questions} questions each)\n\
             {:<8} {:>10.2} {:>10.2}\n{:<8} {:>10.2} {:>10.2}\n{:<8} {:>10.2} {:>10.2}\n",
            "ranking",
            "p50 ms",
            "p99 ms",
            "bm25",
            self.bm25_ms.p50,
            self.bm25_ms.p99,
            "dense",
            self.dense_ms.p50,
            self.dense_ms.p99,
            "fused",
            self.fused_ms.p50,
            self.fused_ms.p99,
            pages = self.pages,
            passages = self.passages,
            rate = self.embedded_per_s,
            mb = self.vectors_mb,
            bm25 = self.bm25_build_s,
            questions = self.questions,
        ) + &format!(
            "approximate index (HNSW, as above the exact size) over the same {} passage vectors \
             of {} dimensions: built in {:.1} s; nearest {CANDIDATES} to a question's vector: \
             exact p50/p99 {:.2}/{:.2} ms, approximate {:.2}/{:.2} ms; recall@10 {:.1}%\n",
            self.approximate.vectors,
            self.approximate.dimensions,
            self.approximate.build_s,
            self.approximate.exact_ms.p50,
            self.approximate.exact_ms.p99,
            self.approximate.approx_ms.p50,
            self.approximate.approx_ms.p99,
            self.approximate.recall_at_10 * 100.0,
        )
    }
}

/// Off-ontology questions about page `k`'s prose, worded apart from it.
fn question(k: usize, n: usize) -> String {
    let name = service(k);
    match n % 4 {
        0 => format!("How fast does someone react when {name} raises an alarm?"),
        1 => format!("Where do I send a request to the people behind {name}?"),
        2 => format!("How long are old {name} interfaces supported after a new one?"),
        _ => format!("What can I watch to see how {name} is doing?"),
    }
}

/// The scale benchmark's page `k` as a page version.
fn page_version(k: usize) -> PageVersion {
    catalog_version(k, catalog_body(k, k), chrono::Utc::now())
}

/// Generates `pages` pages, indexes and embeds them with `encoder`, then times `questions`
/// searches with each ranking. `progress` hears about each phase.
pub fn run(
    encoder: Arc<dyn SentenceEncoder>,
    pages: usize,
    questions: usize,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<PassagesReport> {
    let versions: Vec<PageVersion> = (0..pages).map(page_version).collect();
    let started = Instant::now();
    let lexical = PassageIndex::build(&versions)?;
    let bm25_build_s = started.elapsed().as_secs_f64();
    progress(&format!(
        "BM25 passage index built in {bm25_build_s:.1} s; embedding"
    ));
    let started = Instant::now();
    let dense = DenseIndex::build(encoder, &versions)?;
    let embed_s = started.elapsed().as_secs_f64();
    let passages = dense.len();
    progress(&format!("{passages} passages embedded in {embed_s:.1} s"));
    let hybrid = Hybrid {
        lexical: Some(&lexical),
        dense: Some(&dense),
    };
    let caller = Caller::new("bench", "bench")?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let asked: Vec<String> = (0..questions)
        .map(|n| question(rng.random_range(0..pages.max(1)), n))
        .collect();
    let mut time = |ranking: Ranking| -> Quantiles {
        let samples: Vec<Duration> = asked
            .iter()
            .map(|text| {
                let started = Instant::now();
                let found = hybrid.search(
                    text,
                    &key_words(text).join(" "),
                    CANDIDATES,
                    &caller,
                    |_| true,
                    ranking,
                );
                std::hint::black_box(found);
                started.elapsed()
            })
            .collect();
        progress(&format!("{ranking:?}: {} searches", samples.len()));
        Quantiles::of(samples)
    };
    let bm25_ms = time(Ranking::Bm25);
    let dense_ms = time(Ranking::Dense);
    let fused_ms = time(Ranking::Fused);
    let approximate = approximate(&dense, &asked, progress)?;
    Ok(PassagesReport {
        approximate,
        pages,
        passages,
        embedded_per_s: passages as f64 / embed_s.max(f64::EPSILON),
        bm25_build_s,
        vectors_mb: dense.approx_bytes() as f64 / 1e6,
        questions,
        bm25_ms,
        dense_ms,
        fused_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_name_their_page_and_ask_in_other_words() {
        let page = page_version(3);
        let text = question(3, 0);
        assert!(text.contains(&service(3)));
        assert!(!page.body.contains("alarm"), "worded apart from the page");
    }
}
