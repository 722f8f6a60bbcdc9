//! Search: the top passages of a tenant for a query, as retrieval's `Search` gives them. Ranked
//! by BM25, by the sentence encoder or both fused ([`crate::asking::ranked_passages`]), among
//! the pages the caller may read and the request's filter admits (origins, an id prefix), both
//! inside the ranking; then kept to the scope asked for; each with the entities of the graph it
//! names. Pure CPU work, like asking: callers on an async runtime run it on the blocking pool.
//! It answers nothing and reports no signal.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::ask::Passage;
use ontoloop_core::knowledge::{Access, Graph, PageVersion, Scope, plain_words, split_sentences};
use ontoloop_core::{Caller, DomainError};

use crate::asking::{Within, ranked_passages};
use crate::hybrid::Ranking;
use crate::search::PageFilter;
use crate::snapshot::Snapshot;

/// Most passages one search returns.
pub const MAX_SEARCH_K: usize = 100;

/// Passages a search returns when it names no number.
pub const DEFAULT_SEARCH_K: usize = 10;

/// Passages ranked for each one returned when a scope is asked for: the scope is read from the
/// passages' own words, after ranking, so a few more are ranked than are returned.
const SCOPE_CANDIDATES_PER_HIT: usize = 4;

/// Entities named per passage at most.
pub const MAX_MENTIONS: usize = 16;

/// A search as `Search` takes it, checked.
#[derive(Debug, Clone)]
pub struct Searching<'a> {
    /// The query, in words.
    pub query: &'a str,
    /// Passages wanted, 1 ..= [`MAX_SEARCH_K`].
    pub k: usize,
    /// The ranking asked for (`None`: fused with the model, else BM25).
    pub ranking: Option<Ranking>,
    /// The instant whose page versions are searched.
    pub as_of: DateTime<Utc>,
    /// Origins and id prefix of the pages searched.
    pub filter: PageFilter,
    /// Where what a passage says must hold; everywhere keeps every passage.
    pub scope: Scope,
}

/// An entity a passage names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mentioned {
    /// Canonical id.
    pub id: String,
    /// Its current name.
    pub name: String,
    /// Its type, when known.
    pub entity_type: Option<String>,
}

/// One passage found, with the entities it names.
#[derive(Debug, Clone)]
pub struct Found {
    /// The passage and its citation.
    pub passage: Passage,
    /// Entities of the caller's graph it names by a name or alias, at most [`MAX_MENTIONS`].
    pub entities: Vec<Mentioned>,
}

/// The passages `searching` asks for, best first, at most its `k`, and the ranking used.
/// A passage is out of a scope when its page's front matter sets another value of a key asked
/// for, or every sentence of it that names a scope names another ("In the US, refunds take 30
/// days." for `region=EU`); a passage naming no scope holds everywhere.
pub fn search(
    snapshot: &Snapshot,
    caller: &Caller,
    searching: &Searching<'_>,
) -> Result<(Vec<Found>, Ranking), DomainError> {
    let k = searching.k.clamp(1, MAX_SEARCH_K);
    let limit = if searching.scope.is_everywhere() {
        k
    } else {
        k * SCOPE_CANDIDATES_PER_HIT
    };
    let within = Within {
        at: searching.as_of,
        limit,
        filter: &searching.filter,
    };
    let (passages, ranking) =
        ranked_passages(snapshot, searching.query, caller, searching.ranking, within)?;
    let graph = snapshot.graph_for(&Access::new(caller, &snapshot.current));
    let vocabulary = snapshot.ontology.scope_vocabulary();
    let in_scope = |passage: &Passage| {
        if searching.scope.is_everywhere() {
            return true;
        }
        let page_scope = snapshot
            .current
            .get(&passage.chunk.anchor.doc_id)
            .map(|page: &PageVersion| vocabulary.front_matter_scope(&page.body))
            .unwrap_or_default();
        if !page_scope.meets(&searching.scope) {
            return false;
        }
        split_sentences(&passage.chunk.text)
            .into_iter()
            .any(|sentence| {
                vocabulary
                    .scope_of(sentence)
                    .is_none_or(|(stated, _)| stated.meets(&searching.scope))
            })
    };
    let found = passages
        .into_iter()
        .filter(|p| in_scope(p))
        .take(k)
        .map(|passage| Found {
            entities: mentioned(&graph, &passage),
            passage,
        })
        .collect();
    Ok((found, ranking))
}

/// The entities of `graph` `passage` names (its title, headings and text), by a name or alias,
/// in the order of their names, at most [`MAX_MENTIONS`].
fn mentioned(graph: &Graph, passage: &Passage) -> Vec<Mentioned> {
    let words: Vec<String> = plain_words(&passage.chunk.indexed_text(&passage.title))
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut seen = BTreeSet::new();
    graph
        .needles()
        .found_in(&words, |_| false)
        .iter()
        .filter_map(|name| graph.resolve(name))
        .filter(|entity| seen.insert(entity.id.clone()))
        .take(MAX_MENTIONS)
        .map(|entity| Mentioned {
            id: entity.id.clone(),
            name: entity.name.clone(),
            entity_type: entity.entity_type.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
