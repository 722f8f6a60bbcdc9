//! Questions about the knowledge as a whole, answered from the entity graph's communities
//! (`ontoloop_core::knowledge::communities`):
//! - "how does X relate to Y?" — the shortest chain of facts from X to Y, each step a hop decided
//!   by ontoloop's policy as a Lookup of that slot is (evidence, hedges), so the chain is only as
//!   sure as its weakest step;
//! - "what are the main themes?" / "give me an overview" (naming nothing) — the largest
//!   communities, each named by its central entities, with the facts that tie it as hops.
//!
//! Both are recognised by general English words (never an ontology's) and only when the graph
//! the caller may see has what they need; otherwise the question goes on as any other.
//!
//! The entity graph and its communities are not built per question: a read model keeps one
//! [`Overview`] per graph it shows ([`OverviewMemo`]), built by the first question that needs it
//! and forgotten whenever the graph changes (a commit patched in, a page's announced version
//! taking effect). Between changes every question reuses it; the first after a change pays the
//! build (`ontoloop bench overview` measures both).

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use ontoloop_core::knowledge::ask::{Asked, Question};
use ontoloop_core::knowledge::communities::{Community, EntityGraph};
use ontoloop_core::knowledge::designs::{self, Design, KnowledgeView};
use ontoloop_core::knowledge::question::is_stop_word;
use ontoloop_core::knowledge::{
    Answer, AnswerStatus, Entity, Graph, Scope, SlotDecision, plain_words, same_value,
};

/// Words that ask how two things are tied.
const RELATE_WORDS: &[&str] = &[
    "relate",
    "relates",
    "related",
    "relation",
    "relationship",
    "relationships",
    "connect",
    "connects",
    "connected",
    "connection",
    "linked",
    "link",
    "links",
    "tied",
];

/// Words that ask for the main themes of everything known.
const THEME_WORDS: &[&str] = &[
    "theme",
    "themes",
    "topic",
    "topics",
    "overview",
    "summary",
    "summarise",
    "summarize",
    "subjects",
    "areas",
];

/// Words an overview question may hold beside [`THEME_WORDS`]: general English.
#[rustfmt::skip]
const OVERVIEW_FILLER: &[&str] = &[
    "main", "key", "major", "big", "picture", "give", "me", "us", "tell", "show", "list", "covered",
    "cover", "covers", "here", "knowledge", "documents", "docs", "pages", "corpus", "everything",
    "all", "this", "these", "there", "please", "high", "level", "general", "overall", "quick",
];

/// Communities an overview names at most.
pub const MAX_THEMES: usize = 5;
/// Tying facts an overview decides per community.
const FACTS_PER_THEME: usize = 2;

/// The entity graph of one graph a read model shows and its communities, each built when first
/// needed ("how does X relate to Y?" needs only the entity graph).
#[derive(Default)]
pub struct Overview {
    entities: OnceLock<EntityGraph>,
    communities: OnceLock<Vec<Community>>,
}

impl Overview {
    /// The entity graph of `graph` (the graph this overview was kept for).
    pub fn entities(&self, graph: &Graph) -> &EntityGraph {
        self.entities.get_or_init(|| EntityGraph::of(graph))
    }

    /// The communities of `graph` (the graph this overview was kept for), largest first.
    pub fn communities(&self, graph: &Graph) -> &[Community] {
        self.communities
            .get_or_init(|| self.entities(graph).communities())
    }

    /// Whether the entity graph and the communities are built.
    pub fn built(&self) -> (bool, bool) {
        (
            self.entities.get().is_some(),
            self.communities.get().is_some(),
        )
    }
}

/// Graphs whose overview a read model keeps at most: the whole graph and the views of the few
/// ACLs its callers hold (oldest out first).
const MAX_OVERVIEWS: usize = 17;

/// The overviews a read model keeps, one per graph it shows (the whole graph, or a caller's
/// view of it), until the graph changes ([`OverviewMemo::graph_changed`]).
#[derive(Default)]
pub struct OverviewMemo {
    /// Each graph by a weak reference (its allocation is not reused while this lives, so a
    /// view dropped and another made cannot be mistaken for it) with its overview.
    kept: Mutex<Vec<(Weak<Graph>, Arc<Overview>)>>,
}

impl OverviewMemo {
    /// The overview of `graph`, kept or made empty and kept (its parts are built by the first
    /// question that needs them, once, while others that need them wait).
    pub fn of(&self, graph: &Arc<Graph>) -> Arc<Overview> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|(held, _)| held.strong_count() > 0);
        if let Some((_, overview)) = kept
            .iter()
            .find(|(held, _)| std::ptr::eq(held.as_ptr(), Arc::as_ptr(graph)))
        {
            return Arc::clone(overview);
        }
        if kept.len() >= MAX_OVERVIEWS {
            kept.remove(0);
        }
        let overview = Arc::new(Overview::default());
        kept.push((Arc::downgrade(graph), Arc::clone(&overview)));
        overview
    }

    /// Forgets every overview: the graph changed.
    pub fn graph_changed(&mut self) {
        self.kept
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// The two entities `text` asks to relate, by id, in the order written: the question holds a
/// relation word ("relate", "connected", ...) and names two distinct entities of `graph`.
pub fn asked_to_relate(text: &str, graph: &Graph) -> Option<(String, String)> {
    let words = words_of(text);
    if !words.iter().any(|w| RELATE_WORDS.contains(&w.as_str())) {
        return None;
    }
    let mut found: Vec<(usize, usize, &Entity)> = Vec::new();
    for name in graph.needles().found_in(&words, |_| false) {
        let Some(entity) = graph.resolve(&name) else {
            continue;
        };
        let needle = words_of(&name);
        let at = (!needle.is_empty())
            .then(|| {
                words
                    .windows(needle.len())
                    .position(|w| w == needle.as_slice())
            })
            .flatten();
        if let Some(at) = at {
            found.push((at, needle.len(), entity));
        }
    }
    // The longest name at each place, then in the order written; a name inside a longer one
    // is not another entity.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut picked: Vec<&Entity> = Vec::new();
    let mut end = 0;
    for (at, len, entity) in found {
        if at < end || picked.iter().any(|e| e.id == entity.id) {
            continue;
        }
        end = at + len;
        picked.push(entity);
    }
    match picked.as_slice() {
        [a, b] => Some((a.id.clone(), b.id.clone())),
        _ => None,
    }
}

/// Whether `text` asks for the main themes of everything known, naming nothing in particular.
pub fn asks_for_themes(text: &str) -> bool {
    let words = words_of(text);
    words.iter().any(|w| THEME_WORDS.contains(&w.as_str()))
        && words.iter().all(|w| {
            THEME_WORDS.contains(&w.as_str())
                || OVERVIEW_FILLER.contains(&w.as_str())
                || is_stop_word(w)
        })
}

/// "How does X relate to Y?": the shortest chain of facts from `from` to `to` in what the view's
/// caller may see (`overview` is that graph's), each step decided as a Lookup of its slot.
/// `None` when no chain joins them or a step's slot is not decided to the value the chain goes
/// through (the question then goes on as any other).
pub fn relate(
    view: &KnowledgeView<'_>,
    overview: &Overview,
    text: &str,
    from: &str,
    to: &str,
    scope: Scope,
) -> Option<Asked> {
    let graph = view.graph;
    let chain = overview.entities(graph).relate(graph, from, to)?;
    let mut hops = Vec::new();
    let mut steps = Vec::new();
    for id in chain {
        let fact = graph.fact(id)?;
        let subject = graph.entity(&fact.entity)?;
        let decision = decided(view, text, &subject.name, &fact.predicate, &fact.object)?;
        steps.push(format!(
            "{} —{}→ {}",
            subject.name, fact.predicate, decision.value
        ));
        hops.push((subject.id.clone(), fact.predicate.clone(), decision));
    }
    if hops.is_empty() {
        return None;
    }
    let mut answer = Answer::combine(hops, None);
    answer.value = steps.join("; ");
    Some(asked(text, from, scope, answer))
}

/// "What are the main themes?": the largest communities of what the view's caller may see, at
/// most [`MAX_THEMES`] (`overview` is that graph's), each named by its central entities, with
/// its tying facts decided as hops. `None` when the graph has no community.
pub fn themes(
    view: &KnowledgeView<'_>,
    overview: &Overview,
    text: &str,
    scope: Scope,
) -> Option<Asked> {
    let graph = view.graph;
    let communities = overview.communities(graph);
    let mut hops = Vec::new();
    let mut named = Vec::new();
    for community in communities.iter().take(MAX_THEMES) {
        named.push(theme_name(graph, community));
        for id in community.facts.iter().take(FACTS_PER_THEME) {
            let Some(fact) = graph.fact(*id) else {
                continue;
            };
            let Some(subject) = graph.entity(&fact.entity) else {
                continue;
            };
            if let Some(decision) =
                decided(view, text, &subject.name, &fact.predicate, &fact.object)
            {
                hops.push((subject.id.clone(), fact.predicate.clone(), decision));
            }
        }
    }
    if hops.is_empty() {
        return None;
    }
    let mut answer = Answer::combine(hops, None);
    answer.value = named.join("; ");
    Some(asked(text, "", scope, answer))
}

/// A community's name: its central entities' names and how many it holds.
fn theme_name(graph: &Graph, community: &Community) -> String {
    let names: Vec<&str> = community
        .central
        .iter()
        .filter_map(|id| graph.entity(id).map(|e| e.name.as_str()))
        .collect();
    format!(
        "{} ({} entities)",
        names.join(", "),
        community.members.len()
    )
}

/// The slot `entity` —`predicate`→ decided by ontoloop's policy, when its value (or one of its
/// values) is `object`.
fn decided(
    view: &KnowledgeView<'_>,
    text: &str,
    entity: &str,
    predicate: &str,
    object: &str,
) -> Option<SlotDecision> {
    let answer = designs::answer(
        view,
        Design::Ontoloop,
        entity,
        &[predicate.to_owned()],
        text,
    );
    let (_, _, decision) = answer.hops.into_iter().next()?;
    let holds = matches!(
        decision.status,
        AnswerStatus::Answered | AnswerStatus::AnsweredPossiblyStale | AnswerStatus::ConflictOpen
    ) && (same_value(&decision.value, object)
        || decision.values.iter().any(|v| same_value(v, object)));
    holds.then_some(decision)
}

fn asked(text: &str, entity: &str, scope: Scope, answer: Answer) -> Asked {
    let mut question = Question::lookup(entity.to_owned(), Vec::new(), text.to_owned());
    question.scope = scope;
    Asked {
        question,
        answer,
        // Nothing is missing from a graph that answers so: no signal.
        signals: Some(Vec::new()),
        passages: Vec::new(),
    }
}

/// Lower-case words of `text`, as a question's words are matched.
fn words_of(text: &str) -> Vec<String> {
    plain_words(text)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}
