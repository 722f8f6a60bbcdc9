//! The claims of the pages questions read, kept by a read model ([`ClaimMemo`]): an answer reads
//! the claims of the pages its search finds, and the pages many questions find (those a common
//! word ranks first) are read once, not at every question.
//!
//! What a page states without the graph's names ([`PageClaims::stated`]) depends only on the
//! ontology and the page version, so it is kept for the model's life. What it states knowing
//! the graph's names ([`PageClaims::scoped`]) is kept for one state of the whole graph: it is
//! forgotten whenever the graph changes, and a caller who sees only part of the graph (facts
//! hidden from it) reads it afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ontoloop_core::knowledge::extract::{Claim, Extract, PageClaims};
use ontoloop_core::knowledge::semantic::Lexicon;
use ontoloop_core::knowledge::{Ontology, PageVersion, Scope};

/// Page versions whose claims each half of a memo keeps at most; past it, that half starts
/// again empty.
const MAX_PAGES: usize = 4096;

/// A page version: its id and version number.
type PageKey = (String, u64);

/// Claims kept by page version.
type Kept<V> = Mutex<HashMap<PageKey, Arc<V>>>;

/// The claims a read model keeps, by page version.
#[derive(Default)]
pub(crate) struct ClaimMemo {
    stated: Kept<Vec<Claim>>,
    scoped: Kept<Vec<(Scope, Claim)>>,
}

impl ClaimMemo {
    /// Forgets the claims read with the graph's names: the graph changed.
    pub(crate) fn graph_changed(&mut self) {
        self.scoped
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The claims as a caller reads them: `whole_graph` says whether it sees the whole graph
    /// the memo's scoped claims were read with.
    pub(crate) fn for_caller(&self, whole_graph: bool) -> Memo<'_> {
        Memo {
            memo: self,
            whole_graph,
        }
    }
}

/// Kept claims, or for a part of the graph those read afresh (see [`ClaimMemo::for_caller`]).
pub(crate) struct Memo<'a> {
    memo: &'a ClaimMemo,
    whole_graph: bool,
}

/// The value `map` keeps for `key`, else `make`'s, kept (made without the lock held).
fn kept<V>(map: &Kept<V>, page: &PageVersion, make: impl FnOnce() -> Arc<V>) -> Arc<V> {
    let key = (page.source_id.clone(), page.version);
    if let Some(found) = map.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Arc::clone(found);
    }
    let made = make();
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    if map.len() >= MAX_PAGES {
        map.clear();
    }
    map.insert(key, Arc::clone(&made));
    made
}

impl PageClaims for Memo<'_> {
    fn stated(&self, ontology: &Ontology, page: &PageVersion) -> Arc<Vec<Claim>> {
        kept(&self.memo.stated, page, || Extract.stated(ontology, page))
    }

    fn scoped(
        &self,
        ontology: &Ontology,
        page: &PageVersion,
        known: &Lexicon,
    ) -> Arc<Vec<(Scope, Claim)>> {
        if !self.whole_graph {
            return Extract.scoped(ontology, page, known);
        }
        kept(&self.memo.scoped, page, || {
            Extract.scoped(ontology, page, known)
        })
    }
}
