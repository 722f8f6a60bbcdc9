//! One question answered from a tenant's read model, as retrieval's `Ask` and `Lookup` answer
//! it and as the analyst's gate replays it against the live graph and a shadow: linked onto the
//! graph (helped by the names stated in the pages the caller's search finds), answered in its
//! scope by a design, else (a question about a known entity as a whole) given what is known of
//! it, else offered the passages that answer it. Pure CPU work: callers on an async runtime run
//! it on the blocking pool.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::ask::{self, Asked, Question};
use ontoloop_core::knowledge::designs::{Design, KnowledgeView};
use ontoloop_core::knowledge::passage::{Chunk, chunk_page, is_record};
use ontoloop_core::knowledge::{Access, Graph, PageVersion, Scope};
use ontoloop_core::{Caller, DomainError, ErrorCode};

use crate::about;
use crate::dense::{INLINE_DENSE_PASSAGES, MAX_DENSE_PASSAGES};
use crate::hybrid::{Hybrid, Ranked, Ranking};
use crate::overview;
use crate::search::{PageFilter, PassageIndex};
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
/// caller may see; else, for a question about a known entity as a whole, its slots and the
/// passages that name it ([`about`]); else the passages that answer it. Returns the answer and
/// the graph the caller saw (its names render the answer).
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
    let ontoloop = asking.design == Design::Ontoloop;
    // "How does X relate to Y?" and "what are the main themes?" are answered from the entity
    // graph's communities when it has what they need ([`overview`]).
    if ontoloop && let Some(asked) = overview_of(snapshot, answering, caller, &graph, &asking) {
        return Ok((asked, graph));
    }
    let linked = ask::link(asking.text, &snapshot.ontology, &graph, &pages, &claims);
    // A question about a known entity as a whole ("what do we know about X?") gets what the
    // graph holds of it and the passages that name it: when it maps to no slot, or maps to one
    // only by guessing from the entity's type (every word it leaves unexplained asks for
    // everything, "know", "tell").
    let whole = match &linked {
        Err(_) => true,
        Ok(question) => {
            !question.unexplained.is_empty()
                && question.unexplained.iter().all(|w| about::asks_for_all(w))
        }
    };
    let about_id = (ontoloop && whole)
        .then(|| about::asked_about(asking.text, &graph, &snapshot.ontology))
        .flatten();
    let answer_linked = |mut question: Question| {
        // A scope the caller gives is the one asked about, whatever the words say.
        if !asking.scope.is_everywhere() {
            question.scope = asking.scope.clone();
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
    };
    let asked = match linked {
        Ok(question) if about_id.is_none() => answer_linked(question),
        linked => {
            let offered = if ontoloop {
                passages(snapshot, asking.text, caller, asking.ranking, asking.as_of)?
            } else {
                Vec::new()
            };
            let about = about_id.and_then(|id| {
                let slots = with_view(
                    snapshot,
                    answering,
                    caller,
                    &graph,
                    asking.as_of,
                    &asking.scope,
                    |view| about::slots_of(view, &id, asking.text),
                );
                let openings = openings(snapshot, &offered);
                about::answer_about(
                    asking.text,
                    &graph,
                    &id,
                    asking.scope.clone(),
                    slots,
                    (offered.clone(), &openings),
                )
            });
            match (about, linked) {
                (Some(asked), _) => asked,
                (None, Err(why)) => {
                    let openings = openings(snapshot, &offered);
                    let offered = about::unknown_named_first(asking.text, offered, &openings);
                    ask::unlinked(asking.text.to_owned(), &why, asking.design, offered)
                }
                // Linked, asked about as a whole, and nothing known of it: answered as linked.
                (None, Ok(question)) => answer_linked(question),
            }
        }
    };
    Ok((asked, graph))
}

/// A question about how two entities relate, or about the main themes, answered from what
/// `caller` may see ([`overview`]); `None` for any other question, or when the graph has no
/// chain of facts or no community to answer it with.
fn overview_of(
    snapshot: &Snapshot,
    answering: Answering,
    caller: &Caller,
    graph: &std::sync::Arc<Graph>,
    asking: &Asking<'_>,
) -> Option<Asked> {
    let relate = overview::asked_to_relate(asking.text, graph);
    if relate.is_none() && !overview::asks_for_themes(asking.text) {
        return None;
    }
    // Built once per graph shown and kept until it changes, not per question.
    let kept = snapshot.overview_of(graph);
    let scope = asking.scope.clone();
    with_view(
        snapshot,
        answering,
        caller,
        graph,
        asking.as_of,
        &asking.scope,
        |view| match &relate {
            Some((from, to)) => overview::relate(view, &kept, asking.text, from, to, scope),
            None => overview::themes(view, &kept, asking.text, scope),
        },
    )
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
    // ask::answer answers in the question's scope.
    with_view(
        snapshot,
        answering,
        caller,
        graph,
        as_of,
        &Scope::everywhere(),
        |view| ask::answer(view, design, question, searched),
    )
}

/// Runs `read` over the view of `snapshot` a design answers from: what `caller` may see of it
/// (`graph`, [`Snapshot::graph_for`]) as of `as_of`, in `scope`.
fn with_view<T>(
    snapshot: &Snapshot,
    answering: Answering,
    caller: &Caller,
    graph: &Graph,
    as_of: DateTime<Utc>,
    scope: &Scope,
    read: impl FnOnce(&KnowledgeView<'_>) -> T,
) -> T {
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
        scope,
        claims: &snapshot.claims_for(graph),
    };
    read(&view)
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
    let within = Within {
        at,
        limit: PASSAGE_CANDIDATES,
        filter: &PageFilter::default(),
    };
    Ok(ranked_passages(snapshot, text, caller, asked, within)?.0)
}

/// Which passages a search ranks and how many it returns.
#[derive(Debug, Clone, Copy)]
pub struct Within<'a> {
    /// The instant whose page versions are searched.
    pub at: DateTime<Utc>,
    /// Passages returned at most.
    pub limit: usize,
    /// The pages searched, beside the caller's permission (part of the ranking's query).
    pub filter: &'a PageFilter,
}

/// As [`passages`], at most `within.limit`, among the pages `within.filter` admits (inside the
/// ranking, as permission is), with the ranking used: the one asked for or the default, BM25
/// for an earlier instant.
pub fn ranked_passages(
    snapshot: &Snapshot,
    text: &str,
    caller: &Caller,
    asked: Option<Ranking>,
    within: Within<'_>,
) -> Result<(Vec<ask::Passage>, Ranking), DomainError> {
    let access = Access::new(caller, &snapshot.current);
    let filter = within.filter;
    let readable = |id: &str| {
        snapshot
            .current
            .get(id)
            .is_some_and(|page| access.page(page) && filter.admits(page))
    };
    let key_words = ask::key_words(text).join(" ");
    let search = |hybrid: Hybrid<'_>, ranking, pages: &BTreeMap<String, PageVersion>| {
        let ranked = hybrid.search_in(
            text,
            &key_words,
            (within.limit, ranking),
            caller,
            readable,
            filter,
        );
        cited(ranked, pages)
    };
    if snapshot.current_holds_at(within.at) {
        return snapshot.with_dense(|dense| {
            let ranking = passage_ranking(asked, dense.is_some())?;
            let hybrid = Hybrid {
                lexical: snapshot.passages(),
                dense,
            };
            Ok((search(hybrid, ranking, &snapshot.current), ranking))
        });
    }
    let then = snapshot.current_at(within.at);
    if then.len() > MAX_PAST_PASSAGE_PAGES {
        tracing::debug!(
            pages = then.len(),
            "too many pages to index passages as of then"
        );
        return Ok((Vec::new(), Ranking::Bm25));
    }
    let shown = then.values().filter(|p| readable(&p.source_id));
    let index = match PassageIndex::build(shown) {
        Ok(index) => index,
        Err(err) => {
            tracing::warn!(error = %err, "cannot index the passages as of then");
            return Ok((Vec::new(), Ranking::Bm25));
        }
    };
    let hybrid = Hybrid {
        lexical: Some(&index),
        dense: None,
    };
    Ok((search(hybrid, Ranking::Bm25, &then), Ranking::Bm25))
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

/// The opening passage of each page `offered` was cut from ([`about::opening`]), in the version
/// it was cut from (the caller read that version's passages, so may read its first), in the
/// order offered; none of
/// a record ([`is_record`]: a YAML or JSON document, header blocks only), which has no opening.
fn openings(snapshot: &Snapshot, offered: &[ask::Passage]) -> Vec<ask::Passage> {
    let mut seen: HashSet<(&str, u64)> = HashSet::new();
    offered
        .iter()
        .filter(|p| seen.insert((&p.chunk.anchor.doc_id, p.chunk.anchor.version)))
        .filter_map(|p| {
            let (id, version) = (&p.chunk.anchor.doc_id, p.chunk.anchor.version);
            let page = snapshot
                .current
                .get(id)
                .filter(|page| page.version == version)
                .or_else(|| {
                    snapshot
                        .versions
                        .iter()
                        .rev()
                        .find(|page| &page.source_id == id && page.version == version)
                })
                .filter(|page| !is_record(&page.body))?;
            let chunk = about::opening(chunk_page(&page.source_id, page.version, &page.body))?;
            Some(ask::Passage {
                chunk,
                title: p.title.clone(),
                origin: p.origin.clone(),
                score: p.score,
                similarity: None,
            })
        })
        .collect()
}

/// The ranking a request gets: the one it asked for, else fused when the tenant's passages
/// have their vectors (`dense`) and BM25 when not. Dense alone without vectors is refused;
/// fused without them is BM25 alone, and is called so (a fusion of one list is that list).
pub fn passage_ranking(asked: Option<Ranking>, dense: bool) -> Result<Ranking, DomainError> {
    match asked {
        Some(Ranking::Fused) if !dense => Ok(Ranking::Bm25),
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

#[cfg(test)]
mod ranking_tests {
    use super::*;

    #[test]
    fn the_ranking_used_is_the_one_that_ran() {
        assert_eq!(passage_ranking(None, true).ok(), Some(Ranking::Fused));
        assert_eq!(passage_ranking(None, false).ok(), Some(Ranking::Bm25));
        assert_eq!(
            passage_ranking(Some(Ranking::Fused), true).ok(),
            Some(Ranking::Fused)
        );
        assert_eq!(
            passage_ranking(Some(Ranking::Fused), false).ok(),
            Some(Ranking::Bm25),
            "fused without vectors is BM25 alone"
        );
        assert_eq!(
            passage_ranking(Some(Ranking::Bm25), true).ok(),
            Some(Ranking::Bm25)
        );
        assert_eq!(
            passage_ranking(Some(Ranking::Dense), true).ok(),
            Some(Ranking::Dense)
        );
        assert!(passage_ranking(Some(Ranking::Dense), false).is_err());
    }
}
#[cfg(test)]
mod about_tests;
#[cfg(test)]
mod overview_tests;
