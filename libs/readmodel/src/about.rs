//! A question about a thing as a whole ("what is X?", "what do we know about X?", "tell me about
//! X"): the entity it names, each slot of it the caller may read decided as a Lookup decides it,
//! and the passages that name it. Such a question names no relation, so it maps to no slot; a
//! tenant with no ontology yet (the empty one) answers it from its passages alone.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use ontoloop_core::knowledge::ask::{self, Asked, MAX_PASSAGES, Passage, Question};
use ontoloop_core::knowledge::designs::{self, Design, KnowledgeView};
use ontoloop_core::knowledge::passage::Chunk;
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
    "did", "we", "our", "have", "has", "please", "give", "propose", "proposes", "proposed",
    "proposal", "cover", "covers", "purpose",
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
    // A parenthetical is an aside naming the thing again ("KEP-3063 (dynamic resource
    // allocation)"): when the whole question is not about a thing, without it it may be.
    asked_about_in(text, graph, ontology).or_else(|| {
        let outside = outside_parentheses(text);
        (outside != text)
            .then(|| asked_about_in(&outside, graph, ontology))
            .flatten()
    })
}

/// [`asked_about`] on `text` as written.
fn asked_about_in(text: &str, graph: &Graph, ontology: &Ontology) -> Option<String> {
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
/// one of its aliases, at most [`MAX_PASSAGES`] — the opening of the best-found page about it
/// first (its title, or the label or heading above its passages, names it; `openings` holds the
/// first passage of each page of `found`, in the version found): the first passage of a page
/// about a thing says what it is. Status [`AnswerStatus::AnsweredPassages`], no value. Nothing
/// is missing from a graph that answers so: no signal is reported. `None` when neither a slot
/// nor a passage answers (the question is then answered as any other that maps to no slot).
pub fn answer_about(
    text: &str,
    graph: &Graph,
    id: &str,
    scope: Scope,
    slots: Vec<(String, String, SlotDecision)>,
    (found, openings): (Vec<Passage>, &[Passage]),
) -> Option<Asked> {
    let entity = graph.entity(id)?;
    let names: Vec<BTreeSet<String>> = entity
        .aliases
        .iter()
        .chain([&entity.name])
        .map(|name| words_of(name).into_iter().collect::<BTreeSet<String>>())
        .filter(|words| !words.is_empty())
        .collect();
    let names_it = |text: &str| {
        let held: BTreeSet<String> = words_of(text).into_iter().collect();
        names.iter().any(|name| name.is_subset(&held))
    };
    let named: Vec<Passage> = found
        .into_iter()
        .filter(|p| names_it(&p.chunk.indexed_text(&p.title)))
        .collect();
    let passages: Vec<Passage> = opening_first(&names, named, openings)
        .into_iter()
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
            guessed: None,
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

/// `found` (best first) with the opening of the best-found page about what `names` name put
/// first: a page whose title, or the label or heading above the passage found (a document's
/// header label, its title heading), holds every word of one of `names`; of several, the one
/// holding the most of `names`, then the best found. `openings` holds the
/// first passage of pages of `found`, in the version found; a page without one (a record) has
/// no opening. The first passage of a page about a thing says what it is (a PEP's abstract, a
/// package's description, a KEP's summary), however the search ranked it.
pub fn opening_first(
    names: &[BTreeSet<String>],
    found: Vec<Passage>,
    openings: &[Passage],
) -> Vec<Passage> {
    // How many of the names the page's title or label holds: a page titled by the thing's id
    // and its name ("KEP-3063: Dynamic resource allocation") is about it more than one whose
    // title holds only the name, inside its own ("Structured Parameters for Dynamic Resource
    // Allocation").
    let about_it = |p: &Passage| {
        let label = p.chunk.headings.first().map_or("", String::as_str);
        let held: BTreeSet<String> = words_of(&format!("{} {label}", p.title))
            .into_iter()
            .collect();
        names
            .iter()
            .filter(|name| !name.is_empty() && name.is_subset(&held))
            .count()
    };
    let mut opening: Option<(usize, &Passage)> = None;
    for p in &found {
        let covered = about_it(p);
        if covered == 0 || opening.is_some_and(|(best, _)| best >= covered) {
            continue;
        }
        let Some(o) = openings.iter().find(|o| {
            o.chunk.anchor.doc_id == p.chunk.anchor.doc_id
                && o.chunk.anchor.version == p.chunk.anchor.version
        }) else {
            continue;
        };
        opening = Some((covered, o));
    }
    let Some((_, opening)) = opening else {
        return found;
    };
    std::iter::once(opening.clone())
        .chain(
            found
                .into_iter()
                .filter(|p| p.chunk.anchor != opening.chunk.anchor),
        )
        .collect()
}

/// Words of prose a passage needs to open its page ([`opening`]): a sentence that says what the
/// thing is ("This PEP outlines Python's backwards compatibility policy."), not a motto quoted
/// above it ("Any color you like.") or a row of badges.
pub const OPENING_WORDS: usize = 5;

/// The passage that opens a page, of its passages in order: the first holding at least
/// [`OPENING_WORDS`] words outside markup ([`prose_words`]), else the first. `None` for none.
pub fn opening(passages: Vec<Chunk>) -> Option<Chunk> {
    let mut passages = passages.into_iter();
    let first = passages.next()?;
    if prose_words(&first.text) >= OPENING_WORDS {
        return Some(first);
    }
    Some(
        passages
            .find(|p| prose_words(&p.text) >= OPENING_WORDS)
            .unwrap_or(first),
    )
}

/// How many words `text` holds outside markup: HTML tags, images, link targets (`](…)`) and
/// addresses are left out; a word holds a letter.
pub fn prose_words(text: &str) -> usize {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Past the next `close`.
    let skip_past = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, close: char| {
        chars.by_ref().find(|&c| c == close);
    };
    while let Some(c) = chars.next() {
        match c {
            // A tag, not a comparison ("x < 5").
            '<' if chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!')) =>
            {
                skip_past(&mut chars, '>')
            }
            // An image's text is no prose: `![alt](target)` goes whole.
            '!' if chars.peek() == Some(&'[') => {
                skip_past(&mut chars, ']');
                if chars.peek() == Some(&'(') {
                    skip_past(&mut chars, ')');
                }
            }
            ']' if chars.peek() == Some(&'(') => skip_past(&mut chars, ')'),
            _ => {
                plain.push(c);
                continue;
            }
        }
        plain.push(' ');
    }
    plain
        .split_whitespace()
        .filter(|w| !w.contains("://") && w.chars().any(char::is_alphabetic))
        .count()
}

/// For a question no slot answers and that names no known entity: when it asks about what it
/// names as a whole (beside the names it writes — capitalised words and the numbers after them,
/// [`ask::named_words`], or the whole title of a page found — and a parenthetical aside, only
/// words that ask for everything: "What does PEP 649 propose?", "What is KEP-3063 (dynamic
/// resource allocation) about?", "What is black for?"), `found`
/// with the opening of the page about that first ([`opening_first`]); else `found` as ranked.
pub fn unknown_named_first(text: &str, found: Vec<Passage>, openings: &[Passage]) -> Vec<Passage> {
    let asked: Vec<String> = words_of(&outside_parentheses(text));
    let named: BTreeSet<String> = words_of(&ask::named_words(text)).into_iter().collect();
    // A page's title the question writes whole, in any case ("What is black for?" of the
    // page titled "black"), names what it asks about too.
    let mut names: Vec<BTreeSet<String>> = Vec::new();
    for p in &found {
        let title: BTreeSet<String> = words_of(&p.title).into_iter().collect();
        let written = !title.is_empty()
            && !title.iter().all(|w| asks_for_all(w))
            && title.iter().all(|w| asked.contains(w));
        if written && !names.contains(&title) {
            names.push(title);
        }
    }
    if !named.is_empty() {
        names.insert(0, named);
    }
    let asks_about_it = !names.is_empty()
        && asked
            .iter()
            .all(|w| names.iter().any(|name| name.contains(w)) || asks_for_all(w));
    if asks_about_it {
        opening_first(&names, found, openings)
    } else {
        found
    }
}

/// `text` without its parenthetical asides (`(…)`, an unclosed one to the end).
fn outside_parentheses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use ontoloop_core::knowledge::passage::chunk_page;

    /// The passages of a page titled `title`: its opening first.
    fn passages(id: &str, title: &str, body: &str) -> Vec<Passage> {
        chunk_page(id, 1, body)
            .into_iter()
            .map(|chunk| Passage {
                chunk,
                title: title.to_owned(),
                origin: "kep".to_owned(),
                score: 1.0,
                similarity: None,
            })
            .collect()
    }

    #[test]
    fn of_pages_about_a_thing_the_one_titled_by_more_of_its_names_opens() {
        let other = passages(
            "4381",
            "KEP-4381: Structured Parameters for Dynamic Resource Allocation",
            "Dynamic resource allocation was added as alpha.\n\nStructured parameters help.\n",
        );
        let own = passages(
            "3063",
            "KEP-3063: Dynamic resource allocation",
            "This KEP lets pods request resources.\n\nDynamic resource allocation details.\n",
        );
        let names: Vec<BTreeSet<String>> = ["KEP-3063", "dynamic resource allocation"]
            .iter()
            .map(|name| words_of(name).into_iter().collect())
            .collect();
        // The other page ranks first and its title holds one of the names.
        let found = vec![other[1].clone(), own[1].clone()];
        let openings = [other[0].clone(), own[0].clone()];
        let ranked = opening_first(&names, found, &openings);
        assert_eq!(
            ranked[0].chunk.text,
            "This KEP lets pods request resources."
        );
        assert_eq!(ranked[1].chunk.anchor.doc_id, "4381");
        // One name only: the best found of the pages that hold it.
        let found = vec![other[1].clone(), own[1].clone()];
        let ranked = opening_first(&names[1..], found, &openings);
        assert_eq!(
            ranked[0].chunk.text,
            "Dynamic resource allocation was added as alpha."
        );
    }

    #[test]
    fn a_page_opens_with_its_first_passage_of_prose() {
        assert_eq!(prose_words("> “Any color you like.”"), 4);
        assert_eq!(prose_words("It needs x < 5 and y to hold, always."), 8);
        assert_eq!(
            prose_words(
                "[![Docs](https://x.io/badge.svg)](https://x.io) <a href=\"https://y\">\n\
                 <img src=\"b.svg\"></a> see https://z.io"
            ),
            1
        );
        let body = "[![Logo](https://x.io/logo.png)](https://x.io)\n\n> “Any color you like.”\n\n\
                    _Black_ is the uncompromising Python code formatter.\n\nMore text here.\n";
        let opening = opening(chunk_page("black", 1, body)).expect("an opening");
        assert!(opening.text.contains("uncompromising"), "{opening:?}");
        // No passage of prose: the first.
        let opening = super::opening(chunk_page("q", 1, "> “Any color.”\n\nShort one.\n"));
        assert!(opening.is_some_and(|o| o.text.contains("Any color")));
    }

    #[test]
    fn a_parenthetical_aside_is_left_out() {
        assert_eq!(
            outside_parentheses("What is KEP-3063 (dynamic resource allocation) about?"),
            "What is KEP-3063  about?"
        );
        assert_eq!(
            outside_parentheses("Is it (still) open (now"),
            "Is it  open "
        );
    }
}
