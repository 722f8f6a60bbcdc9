//! One question answered from a tenant's read model, as retrieval's `Ask` and `Lookup` answer
//! it and as the analyst's gate replays it against the live graph and a shadow: linked onto the
//! graph (helped by the names stated in the pages the caller's search finds), answered in its
//! scope by a design, else offered the passages that answer it. Pure CPU work: callers on an
//! async runtime run it on the blocking pool.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::ask::{self, Asked, Question};
use ontoloop_core::knowledge::designs::{Design, KnowledgeView};
use ontoloop_core::knowledge::passage::{Chunk, chunk_page};
use ontoloop_core::knowledge::{Access, Graph, PageVersion, Scope};
use ontoloop_core::{Caller, DomainError, ErrorCode};

use crate::dense::{INLINE_DENSE_PASSAGES, MAX_DENSE_PASSAGES};
use crate::hybrid::{Hybrid, Ranked, Ranking};
use crate::search::PassageIndex;
use crate::snapshot::Snapshot;

/// Passages searched for a question before [`ask::unlinked`] keeps those that hold enough of
/// its words.
const PASSAGE_CANDIDATES: usize = 20;

/// Pages an answer as of an earlier instant indexes for its passages at most: the index of the
/// pages as they were is built for the one question, so a larger tenant abstains instead.
pub const MAX_PAST_PASSAGE_PAGES: usize = 5_000;

/// How answers are given: the retrieval settings a question needs.
#[derive(Debug, Clone, Copy)]
pub struct Answering {
    /// Pages ontoloop's policy reads besides the sources the graph cites.
    pub top_k: usize,
    /// Answers resting only on origins below this authority are hedged.
    pub hedge_below_authority: i32,
}

impl Answering {
    /// As the embedded defaults set them (`[retrieval]`: `top_k = 5`,
    /// `hedge_below_authority = 2`), for callers built without settings.
    pub const DEFAULT: Answering = Answering {
        top_k: 5,
        hedge_below_authority: 2,
    };
}

impl From<&ontoloop_settings::RetrievalSettings> for Answering {
    /// As retrieval answers with these `[retrieval]` settings (the gate's replay answers so too).
    fn from(settings: &ontoloop_settings::RetrievalSettings) -> Self {
        Answering {
            top_k: settings.top_k,
            hedge_below_authority: settings.hedge_below_authority,
        }
    }
}

/// A question in words, as `Ask` takes it.
#[derive(Debug, Clone)]
pub struct Asking<'a> {
    /// The question.
    pub text: &'a str,
    /// The scope the caller gave; everywhere lets the question's own words name one.
    pub scope: Scope,
    /// The design that answers.
    pub design: Design,
    /// The instant asked about.
    pub as_of: DateTime<Utc>,
    /// The passage ranking asked for; `None` for the default ([`passage_ranking`]).
    pub ranking: Option<Ranking>,
}

/// Answers a question in words for `caller` from `snapshot`: linked and answered on what the
/// caller may see, else the passages that answer it. Returns the answer and the graph the
/// caller saw (its names render the answer).
pub fn ask_text(
    snapshot: &Snapshot,
    answering: Answering,
    caller: &Caller,
    asking: Asking<'_>,
) -> Result<(Asked, std::sync::Arc<Graph>), DomainError> {
    // Names stated in the pages the question finds help link entities the graph lacks; the
    // same search is the first hop's, so it is handed on rather than run twice.
    let found = snapshot.index.search(asking.text, answering.top_k, caller);
    let pages: Vec<&PageVersion> = found
        .iter()
        .filter_map(|id| snapshot.current.get(id))
        .collect();
    // Linked and answered on what the caller may see: an entity only hidden facts name is as
    // unknown as a name that names nothing.
    let graph = snapshot.graph_for(&Access::new(caller, &snapshot.current));
    let claims = snapshot.claims_for(&graph);
    let asked = match ask::link(asking.text, &snapshot.ontology, &graph, &pages, &claims) {
        Ok(mut question) => {
            // A scope the caller gives is the one asked about, whatever the words say.
            if !asking.scope.is_everywhere() {
                question.scope = asking.scope;
            }
            answer(
                snapshot,
                answering,
                caller,
                &graph,
                question,
                asking.design,
                asking.as_of,
                Some(&found),
            )
        }
        Err(why) => {
            let found = if asking.design == Design::Ontoloop {
                passages(snapshot, asking.text, caller, asking.ranking, asking.as_of)?
            } else {
                Vec::new()
            };
            ask::unlinked(asking.text.to_owned(), &why, asking.design, found)
        }
    };
    Ok((asked, graph))
}

/// Answers `question` from `snapshot` as of `as_of`. `searched` is a search already run for
/// the question's text, reused instead of run again. `graph` is what the caller may see of the
/// snapshot's graph ([`Snapshot::graph_for`]).
#[allow(clippy::too_many_arguments)]
pub fn answer(
    snapshot: &Snapshot,
    answering: Answering,
    caller: &Caller,
    graph: &Graph,
    question: Question,
    design: Design,
    as_of: DateTime<Utc>,
    searched: Option<&[String]>,
) -> Asked {
    // As of another instant, a page is seen at the version in effect then.
    let current_then;
    let current = if !snapshot.current_holds_at(as_of) {
        current_then = snapshot.current_at(as_of);
        &current_then
    } else {
        &snapshot.current
    };
    let search = |query: &str, k: usize| snapshot.index.search(query, k, caller);
    let view = KnowledgeView {
        ontology: &snapshot.ontology,
        graph,
        current,
        log: &snapshot.log,
        search: &search,
        // Permission is today's: the newest version of every page decides, even as of an
        // earlier instant.
        access: Access::new(caller, &snapshot.current),
        as_of,
        hedge_below_authority: answering.hedge_below_authority,
        top_k: answering.top_k,
        // ask::answer answers in the question's scope.
        scope: &Scope::everywhere(),
        claims: &snapshot.claims_for(graph),
    };
    ask::answer(&view, design, question, searched)
}

/// The passages `caller` may read that best answer `text` as of `at`, best first: from the
/// current pages by the ranking asked for ([`passage_ranking`]; [`Hybrid::search`]: BM25 over
/// its key words, the sentence encoder's nearest passages, or both fused by reciprocal rank)
/// when no page changed since; else by BM25 over the page versions current at `at` (a deleted
/// page still there before its deletion), indexed for this question, at most
/// [`MAX_PAST_PASSAGE_PAGES`]. Permission is today's and is applied before ranking.
pub fn passages(
    snapshot: &Snapshot,
    text: &str,
    caller: &Caller,
    asked: Option<Ranking>,
    at: DateTime<Utc>,
) -> Result<Vec<ask::Passage>, DomainError> {
    let access = Access::new(caller, &snapshot.current);
    let readable = |id: &str| {
        snapshot
            .current
            .get(id)
            .is_some_and(|page| access.page(page))
    };
    let key_words = ask::key_words(text).join(" ");
    let search = |hybrid: Hybrid<'_>, ranking, pages: &BTreeMap<String, PageVersion>| {
        let ranked = hybrid.search(
            text,
            &key_words,
            PASSAGE_CANDIDATES,
            caller,
            readable,
            ranking,
        );
        cited(ranked, pages)
    };
    if snapshot.current_holds_at(at) {
        return snapshot.with_dense(|dense| {
            let ranking = passage_ranking(asked, dense.is_some())?;
            let hybrid = Hybrid {
                lexical: snapshot.passages(),
                dense,
            };
            Ok(search(hybrid, ranking, &snapshot.current))
        });
    }
    let then = snapshot.current_at(at);
    if then.len() > MAX_PAST_PASSAGE_PAGES {
        tracing::debug!(
            pages = then.len(),
            "too many pages to index passages as of then"
        );
        return Ok(Vec::new());
    }
    let shown = then.values().filter(|p| readable(&p.source_id));
    let index = match PassageIndex::build(shown) {
        Ok(index) => index,
        Err(err) => {
            tracing::warn!(error = %err, "cannot index the passages as of then");
            return Ok(Vec::new());
        }
    };
    let hybrid = Hybrid {
        lexical: Some(&index),
        dense: None,
    };
    Ok(search(hybrid, Ranking::Bm25, &then))
}

/// Ranked passages as answers' passages, cut from `pages` (the versions they were found in).
fn cited(ranked: Vec<Ranked>, pages: &BTreeMap<String, PageVersion>) -> Vec<ask::Passage> {
    // Several hits are often passages of one page: each page is cut once.
    let mut cut: HashMap<String, Vec<Chunk>> = HashMap::new();
    ranked
        .into_iter()
        .filter_map(|hit| {
            let page = pages.get(&hit.source_id)?;
            let chunks = cut
                .entry(hit.source_id)
                .or_insert_with(|| chunk_page(&page.source_id, page.version, &page.body));
            let chunk = chunks.get(hit.chunk)?.clone();
            Some(ask::Passage {
                chunk,
                title: page.title.clone(),
                origin: page.origin.clone(),
                score: hit.score,
                similarity: hit.similarity,
            })
        })
        .collect()
}

/// The ranking a request gets: the one it asked for, else fused when the tenant's passages
/// have their vectors (`dense`) and BM25 when not. Dense alone without vectors is refused.
pub fn passage_ranking(asked: Option<Ranking>, dense: bool) -> Result<Ranking, DomainError> {
    match asked {
        Some(Ranking::Dense) if !dense => Err(DomainError::new(
            ErrorCode::FailedPrecondition,
            format!(
                "passage_ranking DENSE needs the sentence-encoder model (make model) and a \
                 tenant of at most {MAX_DENSE_PASSAGES} passages whose vectors are built (a \
                 tenant of more than {INLINE_DENSE_PASSAGES} passages has them built in the \
                 background after its first such question)"
            ),
        )),
        Some(ranking) => Ok(ranking),
        None if dense => Ok(Ranking::Fused),
        None => Ok(Ranking::Bm25),
    }
}
