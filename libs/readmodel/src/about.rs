//! A question about a thing as a whole ("what is X?", "what do we know about X?", "tell me about
//! X"): the entity it names, each slot of it the caller may read decided as a Lookup decides it,
//! and the passages that name it. Such a question names no relation, so it maps to no slot; a
//! tenant with no ontology yet (the empty one) answers it from its passages alone.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use ontoloop_core::knowledge::ask::{Asked, MAX_PASSAGES, Passage, Question};
use ontoloop_core::knowledge::designs::{self, Design, KnowledgeView};
use ontoloop_core::knowledge::question::is_stop_word;
use ontoloop_core::knowledge::{
    Answer, AnswerStatus, Entity, Graph, Ontology, PredicateKind, Scope, SlotDecision, plain_words,
};

/// Slots of an entity an answer about it decides at most: each is one Lookup's work.
pub const MAX_ABOUT_SLOTS: usize = 16;

/// Words that ask for everything known of a thing, beside stop words and question words.
/// General English, not any ontology's words.
#[rustfmt::skip]
const ABOUT_WORDS: &[&str] = &[
    "know", "knows", "known", "tell", "me", "you", "us", "is", "are", "was", "were", "about",
    "describe", "explain", "overview", "summary", "summarise", "summarize", "information",
    "info", "anything", "everything", "all", "any", "there", "say", "says", "said", "do", "does",
    "did", "we", "our", "have", "has", "please", "give",
];

/// Whether `word` (lower-cased) asks for everything known of a thing ("know", "tell", "about"),
/// or says nothing of what is asked (a stop word or a question word).
pub fn asks_for_all(word: &str) -> bool {
    is_stop_word(word) || ABOUT_WORDS.contains(&word)
}

/// The entity `text` asks about as a whole, by its id: the question names an entity of `graph`
/// (by its words or its key's, as a question links a name) and, beside that name, only question
/// words, stop words, the ontology's type nouns ("the Pro *plan*") and words that ask for
/// everything known ("know", "tell", "about"). `None` when it names none, or asks something of
/// it ("what pets does Melanie have?").
pub fn asked_about(text: &str, graph: &Graph, ontology: &Ontology) -> Option<String> {
    let words = words_of(text);
    let type_nouns = ontology.type_nouns();
    let normaliser = graph.normaliser();
    // The longest name written wins ("Payments service" over "Payments").
    let mut best: Option<(usize, usize, &Entity)> = None;
    for name in graph.needles().found_in(&words, |_| false) {
        let Some(entity) = graph.resolve(&name) else {
            continue;
        };
        for needle in [words_of(&name), words_of(&normaliser.key(&name))] {
            let Some(at) = find(&words, &needle) else {
                continue;
            };
            if best.is_none_or(|(_, len, _)| needle.len() > len) {
                best = Some((at, needle.len(), entity));
            }
        }
    }
    let (at, len, entity) = best?;
    let rest_asks_for_all = words
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < at || *i >= at + len)
        .all(|(_, w)| asks_for_all(w) || type_nouns.contains(w));
    rest_asks_for_all.then(|| entity.id.clone())
}

/// What `view` holds of entity `id` for a question about it as a whole (`text`, the first hop's
/// search query): each slot of the ontology the entity has a fact of that the caller may read
/// and that holds at the instant asked about, in the ontology's order, at most
/// [`MAX_ABOUT_SLOTS`], each decided by ontoloop's policy as a Lookup of it is (authority,
/// recency, hedges, scopes). Slots the policy abstains on are left out.
pub fn slots_of(
    view: &KnowledgeView<'_>,
    id: &str,
    text: &str,
) -> Vec<(String, String, SlotDecision)> {
    let Some(entity) = view.graph.entity(id) else {
        return Vec::new();
    };
    let held: BTreeSet<&str> = view
        .graph
        .facts_of(id)
        .filter(|f| f.valid_at(view.as_of) && view.access.fact(f))
        .map(|f| f.predicate.as_str())
        .collect();
    // Every slot searches for the same question: once.
    let searched: RefCell<HashMap<(String, usize), Vec<String>>> = RefCell::default();
    let search = |query: &str, k: usize| {
        let key = (query.to_owned(), k);
        if let Some(ids) = searched.borrow().get(&key) {
            return ids.clone();
        }
        let ids = (view.search)(query, k);
        searched.borrow_mut().insert(key, ids.clone());
        ids
    };
    let view = KnowledgeView {
        search: &search,
        ..*view
    };
    view.ontology
        .predicates()
        .iter()
        .filter(|p| p.kind == PredicateKind::Slot && held.contains(p.name.as_str()))
        .take(MAX_ABOUT_SLOTS)
        .filter_map(|p| {
            let path = [p.name.clone()];
            let answer = designs::answer(&view, Design::Ontoloop, &entity.name, &path, text);
            if answer.status == AnswerStatus::Abstained {
                return None;
            }
            answer.hops.into_iter().next()
        })
        .collect()
}

/// The answer to `text`, a question about entity `id` as a whole: its `slots` ([`slots_of`])
/// as the answer's hops, and the passages of `found` (best first) that name it by its name or
/// one of its aliases, at most [`MAX_PASSAGES`]; status [`AnswerStatus::AnsweredPassages`],
/// no value. Nothing is missing from a graph that answers so: no signal is reported. `None`
/// when neither a slot nor a passage answers (the question is then answered as any other that
/// maps to no slot).
pub fn answer_about(
    text: &str,
    graph: &Graph,
    id: &str,
    scope: Scope,
    slots: Vec<(String, String, SlotDecision)>,
    found: Vec<Passage>,
) -> Option<Asked> {
    let entity = graph.entity(id)?;
    let names: Vec<BTreeSet<String>> = entity
        .aliases
        .iter()
        .chain([&entity.name])
        .map(|name| words_of(name).into_iter().collect::<BTreeSet<String>>())
        .filter(|words| !words.is_empty())
        .collect();
    let passages: Vec<Passage> = found
        .into_iter()
        .filter(|p| {
            let held: BTreeSet<String> = words_of(&p.chunk.indexed_text(&p.title))
                .into_iter()
                .collect();
            names.iter().any(|name| name.is_subset(&held))
        })
        .take(MAX_PASSAGES)
        .collect();
    if slots.is_empty() && passages.is_empty() {
        return None;
    }
    Some(Asked {
        question: Question {
            entity: entity.id.clone(),
            path: Vec::new(),
            text: text.to_owned(),
            unexplained: Vec::new(),
            scope,
        },
        answer: Answer {
            status: AnswerStatus::AnsweredPassages,
            value: String::new(),
            hops: slots,
            abstain_reason: String::new(),
        },
        signals: Some(Vec::new()),
        passages,
    })
}

/// Lower-case words of `text`, as a question's words are matched.
fn words_of(text: &str) -> Vec<String> {
    plain_words(text)
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Where `needle` first stands, whole and in order, among `words`.
fn find(words: &[String], needle: &[String]) -> Option<usize> {
    if needle.is_empty() || needle.len() > words.len() {
        return None;
    }
    words.windows(needle.len()).position(|w| w == needle)
}
