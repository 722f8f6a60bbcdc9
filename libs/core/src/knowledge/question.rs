//! Natural-language questions to (entity, predicate path), through the ontology's own words.
//!
//! Entities are linked by finding a known name or alias in the question (longest first). Every
//! type-consistent path of up to three slots from the entity's type is scored by the question's
//! words its predicates explain — a word of a predicate's vocabulary (name, unit, pattern words,
//! lightly stemmed), or with an encoder a word close in meaning to one of its own words — plus
//! the answer type the question asks for ("who" a person, "which team" a team, "how much" a
//! number, "what is" a text), less a cost per hop beyond the first. A hop no word names is taken
//! from the types ("who should I page about the Payments service?" goes through the owning team).
//! Words the best path leaves unexplained although they name a relation (a word of another
//! predicate, the verb of a relative clause, a verb between a name and its preposition) are
//! returned, so the answer is hedged naming them instead of going out as if understood.
//!
//! Must never: drop a word that names a relation silently, or know any ontology's words.

use std::collections::BTreeSet;

use super::graph::Graph;
use super::ontology::{Ontology, Predicate, PredicateKind};
use super::ontology::{acronym, relation_terms, vocabulary};
use super::structured::{ValueKind, value_kind};
use super::words::{QUESTION_WORDS, STOPWORDS, content_words, stem, words_plain};
pub use super::words::{is_stop_word, words};

/// A question mapped onto the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The entity name found in the question (or the predicate's fixed subject).
    pub entity: String,
    /// Predicates to follow.
    pub path: Vec<String>,
    /// Words of the question that name a relation the path does not follow (a hop the mapping
    /// could not place, or a relation the ontology lacks): an answer must not go out unhedged.
    pub unexplained: Vec<String>,
    /// Why the path is only a guess: no word of the question names a relation well enough, and
    /// the predicate the noun it asks for ("what *state* ...") comes closest to in meaning, by a
    /// clear lead, was taken ([`GUESS_COSINE`], [`GUESS_GAP`]). An answer on it is weak evidence
    /// and must say so.
    pub guessed: Option<String>,
}

/// Why a question could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unmapped {
    /// No predicate's words appear in the question.
    #[error("the question matches no predicate of the ontology")]
    NoPredicate,
    /// No known entity appears in the question and the predicate has no fixed subject.
    #[error("the question names no known entity")]
    NoEntity,
}

/// The object types a question asks for, from its question words.
fn asked_types(question: &str) -> BTreeSet<String> {
    let lower = question.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The same words as written, for their capitals.
    let written: Vec<&str> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut types = BTreeSet::new();
    // The words of a noun phrase naming the kind asked for, from `from` on: a word naming
    // versions names any kind of versions, unless a name before it says whose ("which *patch
    // release*" asks for a version, "what *Python version*" for one of Python's).
    let phrase = |from: usize, types: &mut BTreeSet<String>| {
        let mut named = false;
        for (at, next) in tokens.iter().enumerate().skip(from).take(3) {
            if STOPWORDS.contains(next) || AUXILIARIES.contains(next) {
                break;
            }
            types.insert((*next).to_owned());
            if !named && value_kind(next) == ValueKind::Version {
                types.insert(VERSIONS.to_owned());
            }
            named |= written
                .get(at)
                .is_some_and(|w| w.starts_with(char::is_uppercase));
        }
    };
    for (i, token) in tokens.iter().enumerate() {
        match *token {
            "who" | "whom" => {
                types.insert("person".to_owned());
            }
            "when" if i == 0 => {
                types.insert(DATE.to_owned());
            }
            "which" | "what" => {
                // The noun phrase after it names the kind asked for: "which Python *release*",
                // "what *date*".
                phrase(i + 1, &mut types);
                if tokens.get(i + 1) == Some(&"is") || tokens.get(i + 1) == Some(&"are") {
                    types.insert("text".to_owned());
                }
                // "what is the *latest version* of X": the noun phrase after the verb and its
                // article ("what is PEP 594 about?" names the thing, not a kind).
                if tokens
                    .get(i + 1)
                    .is_some_and(|t| ["is", "are", "was", "were"].contains(t))
                    && tokens
                        .get(i + 2)
                        .is_some_and(|t| ["the", "a", "an"].contains(t))
                {
                    phrase(i + 3, &mut types);
                }
            }
            "much" | "many" | "long" | "price" | "cost" | "percent" => {
                types.insert("number".to_owned());
            }
            _ => {}
        }
    }
    types
}

/// What [`asked_types`] names a question asking for a date ("when ...?"): any object type whose
/// values are dates fits it.
const DATE: &str = "date";

/// What [`asked_types`] names a question asking for a version ("which patch *release*", "what
/// is the latest *version*"): any object type whose values are versions fits it. Not a word.
const VERSIONS: &str = "(versions)";

/// Whether an answer of `object_type` is of a kind `asked` names: the type itself, or a date
/// for "when" and "what date".
fn asked_for(asked: &BTreeSet<String>, object_type: &str) -> bool {
    let kind = value_kind(&object_type.to_lowercase());
    asked.contains(object_type)
        || (asked.contains(DATE) && kind == ValueKind::Date)
        || (asked.contains(VERSIONS) && kind == ValueKind::Version)
}

/// The shape of answer a question's own words ask for: a person ("who"), a date ("when", "what
/// date"), a number ("how much"); none for "what is" or "which team".
fn asked_kind(asked: &BTreeSet<String>) -> Option<ValueKind> {
    [
        ("person", ValueKind::Name),
        (DATE, ValueKind::Date),
        ("number", ValueKind::Number),
    ]
    .iter()
    .find(|(t, _)| asked.contains(*t))
    .map(|(_, k)| *k)
}

/// A name known from outside the graph (stated in a page retrieval just read), with the entity
/// type its sentence implies, if any.
pub type ExtraName = (String, Option<String>);

/// Names and implied types stated by these claims: a subject takes its predicate's subject type
/// (when it has one), an entity object its object type.
pub fn names_in_claims(ontology: &Ontology, claims: &[super::extract::Claim]) -> Vec<ExtraName> {
    let mut names = Vec::new();
    for claim in claims {
        let predicate = ontology.predicate(&claim.predicate);
        let subject_type = predicate.and_then(|p| {
            (p.subject_types.len() == 1 && p.subject_types[0] != "any")
                .then(|| p.subject_types[0].clone())
        });
        names.push((claim.subject.name().to_owned(), subject_type));
        let object_type = predicate
            .filter(|p| p.object_is_entity())
            .map(|p| p.object_type.clone());
        names.push((claim.object.clone(), object_type));
    }
    // Another name of a subject (an alias, a rename) is of the subject's type.
    for claim in claims.iter().filter(|c| c.kind == PredicateKind::Rename) {
        let subject = claim.subject.name();
        if let Some(kind) = names
            .iter()
            .find(|(name, kind)| name == subject && kind.is_some())
            .and_then(|(_, kind)| kind.clone())
        {
            names.push((claim.object.clone(), Some(kind)));
        }
    }
    names
}

/// Known names in the question, longest first: graph names and aliases, fixed subjects, and
/// `extra` names (for example subjects stated in pages retrieval found).
fn linked_names(
    question: &str,
    graph: &Graph,
    ontology: &Ontology,
    extra: &[ExtraName],
) -> Vec<String> {
    let words = words_plain(question);
    let haystack = format!(" {} ", words.join(" "));
    // A name is found by its words or by its key ("Kestrel mission" is asked as "Kestrel"),
    // except a predicate's fixed subject, whose key is a common word ("Refund policy").
    let normaliser = graph.normaliser();
    let fixed: BTreeSet<String> = ontology
        .predicates()
        .iter()
        .filter_map(|p| p.fixed_subject.as_deref())
        .map(|name| normaliser.key(name))
        .collect();
    // The graph's names through its needles (each contiguous run of the question's words looked
    // up), not by testing every name against the question.
    let mut found: Vec<String> = graph
        .needles()
        .found_in(&words, |name| fixed.contains(&normaliser.key(name)))
        .into_iter()
        .collect();
    let others = ontology
        .predicates()
        .iter()
        .filter_map(|p| p.fixed_subject.clone())
        .chain(extra.iter().map(|(name, _)| name.clone()));
    found.extend(others.filter(|name| {
        let key = normaliser.key(name);
        let mut needles = vec![words_plain(name).join(" ")];
        if !fixed.contains(&key) {
            needles.push(words_plain(&key).join(" "));
        }
        needles
            .iter()
            .any(|needle| !needle.is_empty() && haystack.contains(&format!(" {needle} ")))
    }));
    // Ordered by what each name covers of the question, not by its own length: "Which team
    // maintains Anchor?" finds "Team plan" by its key, one word and the type noun the question
    // asks for, and "Anchor" by its own word. A bare type noun comes last, then the longest
    // span, a name's own words before its key's, the longest name.
    let type_nouns = ontology.type_nouns();
    let rank = |name: &String| {
        let own = words_plain(name);
        let written = !own.is_empty() && haystack.contains(&format!(" {} ", own.join(" ")));
        let span = if written {
            own
        } else {
            words_plain(&normaliser.key(name))
        };
        let bare_type_noun = span.len() == 1 && type_nouns.contains(&span[0]);
        (
            bare_type_noun,
            std::cmp::Reverse(span.len()),
            !written,
            std::cmp::Reverse(name.len()),
        )
    };
    // A name found by a bare number ("v8" by its key "8") is not asked about where that number
    // is only a part of a dotted one ("When does v0.8 come out?").
    found.retain(|name| {
        let key = normaliser.key(name);
        !key.bytes().all(|b| b.is_ascii_digit()) || stands_alone(question, &key)
    });
    // A name written right before a number asks about the thing it numbers: "Ubuntu 25.04" is
    // not Ubuntu, nor "Python 3.12.1" Python 3.12.
    found.retain(|name| !numbered_in(&words, &words_plain(name)));
    found.sort_by_cached_key(|name| (rank(name), name.clone()));
    found.dedup();
    found
}

/// Whether the words `name` are written in `words`, each time right before a number.
fn numbered_in(words: &[String], name: &[String]) -> bool {
    if name.is_empty() || name.len() > words.len() {
        return false;
    }
    let mut written = (0..=words.len() - name.len())
        .filter(|&at| words[at..at + name.len()] == name[..])
        .peekable();
    written.peek().is_some()
        && written.all(|at| {
            words
                .get(at + name.len())
                .is_some_and(|next| next.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Whether the digits `number` stand somewhere in `question` as a number of their own, not as a
/// part of a longer or dotted one (`8` in "v8" and "Node 8", not in "v0.8", "18" or "8.1").
fn stands_alone(question: &str, number: &str) -> bool {
    let bytes = question.as_bytes();
    let digit = |at: Option<usize>| {
        at.and_then(|i| bytes.get(i))
            .is_some_and(u8::is_ascii_digit)
    };
    question.match_indices(number).any(|(at, _)| {
        let end = at + number.len();
        let before = at.checked_sub(1);
        let joined_before =
            digit(before) || (before.is_some_and(|i| bytes[i] == b'.') && digit(at.checked_sub(2)));
        let joined_after =
            digit(Some(end)) || (bytes.get(end) == Some(&b'.') && digit(Some(end + 1)));
        !joined_before && !joined_after
    })
}

/// The type of the entity a name refers to: from the graph, the name's own type noun, or what
/// the pages just read imply.
fn entity_type(
    graph: &Graph,
    ontology: &Ontology,
    name: &str,
    extra: &[ExtraName],
) -> Option<String> {
    if let Some(entity) = graph.resolve(name) {
        if let Some(t) = &entity.entity_type {
            return Some(t.clone());
        }
        // Infer from the predicates it is the subject of.
        let mut types: BTreeSet<String> = BTreeSet::new();
        for fact in graph.facts_of(&entity.id) {
            if let Some(p) = ontology.predicate(&fact.predicate)
                && p.subject_types.len() == 1
            {
                types.insert(p.subject_types[0].clone());
            }
        }
        if types.len() == 1 {
            return types.into_iter().next();
        }
    }
    graph.normaliser().type_of(name).or_else(|| {
        let key = graph.normaliser().key(name);
        extra
            .iter()
            .filter(|(n, t)| t.is_some() && graph.normaliser().key(n) == key)
            .find_map(|(_, t)| t.clone())
    })
}

/// Hops a question's path may have at most.
const MAX_HOPS: usize = 3;

/// Candidate paths scored per question at most (a bound on the work one question can cause).
const MAX_PATHS: usize = 4096;

/// What each hop beyond the first costs: a longer path must explain more of the question.
const HOP_COST: f64 = 0.25;
/// What each word naming a path's slot by its own name adds to the path's score: enough to part
/// paths the question's words explain alike, too little to outweigh a word explained.
const NAME_EDGE: f64 = 0.01;

/// What naming the answer's type ("who", "which team", "how much") is worth.
const ASKED_TYPE_BONUS: f64 = 1.5;

/// The similarity at which an encoder says a word of the question names a relation (below it a
/// word explains nothing), and the higher one at which an unexplained word is taken to name a
/// relation the path skipped.
const EXPLAIN_COSINE: f64 = 0.5;
const SKIPPED_COSINE: f64 = 0.65;

/// When no word of a question explains any relation, the noun it asks for ("what *state* is X
/// in?") may still name one below [`EXPLAIN_COSINE`]: the slot of the entity closest to it in
/// meaning is taken, as a guess the answer is hedged for, when the similarity is at least this
/// floor and the slot either leads every other slot of the entity by [`GUESS_GAP`] or is kin to
/// the word by form ([`KIN_PREFIX`]). Measured with all-MiniLM-L6-v2 on single words: "state"
/// is 0.43 from `status` and 0.36 from the next slot of a design document, and words unrelated
/// to any slot reach 0.42 with as small a lead ("mood": 0.42 from a document's `type`, 0.36
/// from the next), so meaning alone cannot tell them apart at that lead.
pub const GUESS_COSINE: f64 = 0.4;
/// How far the slot closest in meaning must lead the next one to be guessed by meaning alone
/// (see [`GUESS_COSINE`]): "condition" leads from `status` by 0.15, "standing" by 0.48.
pub const GUESS_GAP: f64 = 0.1;
/// Letters a question's word and one of a slot's own words must share at their start to be kin
/// by form (`state`, `status`; `licence`, `license`; `homepage`, `home page`): with the slot
/// closest in meaning, though by a smaller lead than [`GUESS_GAP`], a second sign it is named.
pub const KIN_PREFIX: usize = 4;

/// Words that introduce a relative clause ("the team that maintains X", "the person who leads").
const RELATIVE_PRONOUNS: &[&str] = &["that", "which", "who", "whom", "whose"];

/// Words between a relative pronoun and its verb.
const AUXILIARIES: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "does",
    "do",
    "did",
    "has",
    "have",
    "had",
    "now",
    "currently",
    "also",
    "still",
];

/// Verbs of passing into a state or phase, whose meaning is the phrase after them: "enter its
/// maintenance phase", "reach end of life", "move into maintenance", "go to general
/// availability".
const LIGHT_VERBS: &[&str] = &[
    "enter", "reach", "move", "go", "goes", "get", "become", "turn",
];

/// Words between a light verb and the phrase it passes into.
const BEFORE_PHRASE: &[&str] = &[
    "its", "their", "the", "a", "an", "into", "to", "in", "on", "his", "her",
];

/// Prepositions that end a verb phrase ("X depends on", "X reports to").
const PREPOSITIONS: &[&str] = &[
    "on", "to", "with", "for", "from", "in", "into", "by", "under", "over", "at", "upon",
];

/// A content word of a question, outside the names it mentions.
#[derive(Debug, Clone)]
struct QuestionWord {
    /// As written, lower-cased.
    text: String,
    /// Its stem, as predicate vocabularies are kept.
    stem: String,
    /// Its position among the question's words.
    at: usize,
}

/// Maps a question. `extra_names` are names known from outside the graph (pages just read).
///
/// Every path of up to [`MAX_HOPS`] predicates that can start at the entity's type is scored by
/// how many of the question's words its predicates explain (a word in a predicate's vocabulary,
/// or, with an encoder, a word close in meaning to it), plus the answer type the question asks
/// for, less a cost per extra hop; the best path wins. Words left unexplained that name another
/// relation of the ontology, or stand where a relation does ("the team *that maintains* X",
/// "the system X *depends on*"), are returned so the answer can be hedged naming them.
pub fn map_question(
    question: &str,
    graph: &Graph,
    ontology: &Ontology,
    extra_names: &[ExtraName],
) -> Result<Mapped, Unmapped> {
    let names = linked_names(question, graph, ontology, extra_names);
    let entity = names.first().cloned();
    let tokens = words_plain(question);
    let slots: Vec<&Predicate> = ontology
        .predicates()
        .iter()
        .filter(|p| p.kind == PredicateKind::Slot)
        .collect();
    let acronyms: BTreeSet<String> = slots.iter().filter_map(|p| acronym(&p.name)).collect();
    let named = with_name_words(
        question,
        &tokens,
        name_spans(&tokens, &names, graph),
        &acronyms,
    );
    let words = question_words(&tokens, &named);
    let asked = asked_types(question);
    let vocabularies: Vec<BTreeSet<String>> = slots.iter().map(|p| vocabulary(p)).collect();
    let type_nouns = ontology.type_nouns();
    let terms: Vec<Vec<String>> = slots.iter().map(|p| relation_terms(p)).collect();
    // The words of each slot's own name: the ontology's label for the relation.
    let name_words: Vec<BTreeSet<String>> = slots
        .iter()
        .map(|p| content_words(&p.name.replace('_', " ")))
        .collect();
    let similar = similarities(ontology, &terms, &words);
    let mut fits = fits(&vocabularies, &words, similar.as_deref());
    naming_fits(&mut fits, &words, tokens.len(), &vocabularies);
    dated_fits(&mut fits, &words, &slots);
    let start = entity
        .as_deref()
        .and_then(|e| entity_type(graph, ontology, e, extra_names));
    let score = |path: &[usize]| {
        let explained: f64 = fits
            .iter()
            .map(|row| path.iter().map(|&p| row[p]).fold(0.0, f64::max))
            .sum();
        let last = slots[path[path.len() - 1]];
        let bonus = if asked_for(&asked, &last.object_type) {
            ASKED_TYPE_BONUS
        } else {
            0.0
        };
        // Between paths the words explain alike, the one whose slots the question calls by
        // their name ("enter its *maintenance* phase": `maintenance_start`, not `lts_start`
        // whose pattern says "enters").
        let called: usize = path
            .iter()
            .map(|&p| {
                words
                    .iter()
                    .filter(|w| name_words[p].contains(&w.stem) && !names_dates(w))
                    .count()
            })
            .sum();
        explained + bonus + NAME_EDGE * called as f64 - HOP_COST * (path.len() - 1) as f64
    };
    let best = |paths: Vec<Vec<usize>>| {
        let mut best: Option<(f64, Vec<usize>)> = None;
        for path in paths {
            let s = score(&path);
            // Strictly better only: among equals the shorter path, then the ontology's order.
            if s > 0.0 && best.as_ref().is_none_or(|(b, _)| s > *b + 1e-9) {
                best = Some((s, path));
            }
        }
        best
    };
    let mut candidates = paths(&slots, start.as_deref());
    // The slots the entity itself can have: what a guess chooses among.
    let own: Vec<usize> = candidates
        .iter()
        .filter(|path| path.len() == 1)
        .map(|path| path[0])
        .collect();
    candidates.extend(
        slots
            .iter()
            .enumerate()
            .filter(|(_, p)| p.fixed_subject.is_some())
            .map(|(i, _)| vec![i]),
    );
    // No path fits the entity's type: the best single predicate, as the question's words say.
    // No word explains any: a guess from the noun the question asks for, when it has one and a
    // known entity, and asks about no thing as a whole ("what is X about?").
    let mut guessed = None;
    // Whether another path of the same length scores as well as the one chosen: the ontology's
    // order chose it, not the question.
    let mut tied = false;
    let singles: Vec<Vec<usize>> = (0..slots.len()).map(|i| vec![i]).collect();
    let chosen = best(candidates.clone())
        .map(|found| (found, &candidates))
        .or_else(|| best(singles.clone()).map(|found| (found, &singles)));
    let kin = |word: usize, slot: usize| {
        terms[slot]
            .iter()
            .flat_map(|term| term.split(' '))
            .any(|own| kin_by_form(&words[word].text, own))
    };
    let about = tokens.iter().any(|t| t == "about");
    // A slot among `among` guessed by meaning from the words `from`, when the question names a
    // known entity and asks about no thing as a whole.
    let guess_among = |from: &[usize], among: &[usize]| match (&entity, &similar) {
        (Some(_), Some(similar)) if !about => guess(similar, from, among, kin),
        _ => None,
    };
    // The single slots tied at the top: what the ontology's order alone would choose among.
    let mut tied_slots: Vec<usize> = Vec::new();
    let mut path = match chosen {
        Some(((top, path), pool)) => {
            let level: Vec<&Vec<usize>> = pool
                .iter()
                .filter(|p| p.len() == path.len() && (score(p) - top).abs() < 1e-9)
                .collect();
            tied = level.len() > 1;
            if tied && path.len() == 1 {
                tied_slots = level.iter().map(|p| p[0]).collect();
            }
            path
        }
        None => {
            let asked_words: Vec<usize> = {
                let phrase = asked_phrase(&tokens, &named);
                words
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| phrase.contains(&w.at))
                    .map(|(i, _)| i)
                    .collect()
            };
            let Some(found) = guess_among(&asked_words, &own) else {
                return Err(Unmapped::NoPredicate);
            };
            guessed = Some(found);
            vec![found.slot]
        }
    };
    // "What is X about?", "what do we know about X?": a question about a thing, not one of its
    // relations, unless a word of the question names the relation. The noun of the thing's type
    // ("the Pro *plan*") names none, though a predicate's patterns may hold it. So is "what is X
    // for?", a question of no word but its names, when "what is" fits several slots of X alike:
    // nothing in it chose among them.
    let explained = words.iter().zip(&fits).any(|(w, row)| {
        let type_noun =
            type_nouns.contains(&w.text) || type_nouns.iter().any(|t| stem(t) == w.stem);
        !type_noun && path.iter().any(|&p| row[p] > 0.0)
    });
    let asks_a_kind = asked
        .iter()
        .any(|t| t == "number" || t == "person" || type_nouns.contains(t));
    // Tied paths and no word of the question explaining the one taken ("When is X due?" where
    // every slot is a date): the ontology's order chose it, not the question, whatever kind it
    // asks for. A word of the question close enough in meaning to one of the tied slots, by a
    // clear lead, chooses it as a guess; else none is ("What is PEP 8 *called*?" of a title, a
    // status, a type and a discussion: "called" is close to none).
    if !explained && tied {
        let every: Vec<usize> = (0..words.len()).collect();
        let Some(found) = guess_among(&every, &tied_slots) else {
            return Err(Unmapped::NoPredicate);
        };
        guessed = Some(found);
        path = vec![found.slot];
    } else if !explained && !asks_a_kind && about {
        return Err(Unmapped::NoPredicate);
    }
    // The word is explained by the slot, as far as a guess explains anything.
    if let Some(found) = guessed {
        fits[found.word][found.slot] = found.similarity;
    }
    let guessed = guessed.map(|found| {
        format!(
            "no word of the question names a relation of the ontology; {:?} was read as {}, \
             the closest by meaning (similarity {:.2}, the next slot {:.2}{})",
            words[found.word].text,
            slots[found.slot].name,
            found.similarity,
            found.next,
            if found.kin { ", and kin by form" } else { "" }
        )
    });
    let target = slots[path[path.len() - 1]];
    let entity = match (entity, &target.fixed_subject) {
        (_, Some(fixed)) => fixed.clone(),
        (Some(entity), None) => entity,
        (None, None) => return Err(Unmapped::NoEntity),
    };
    // The question's own verb ("who *audits* ...") is a relation too when the answer is not of
    // the kind asked for: explained by no hop, it is named.
    let answer_fits = asked.is_empty() || asked_for(&asked, &target.object_type);
    let verb = (!answer_fits)
        .then(|| main_verb(&tokens, &named, &type_nouns))
        .flatten();
    // A predicate no path through the chosen one could use, whose answer is not of the kind
    // asked for ("who is the *first* author": a date), is not what a word of the question
    // names here.
    let kind = asked_kind(&asked);
    let apart: Vec<bool> = slots
        .iter()
        .enumerate()
        .map(|(q, other)| {
            kind.is_some_and(|k| value_kind(&other.object_type.to_lowercase()) != k)
                && !path.contains(&q)
                && !composes(
                    other,
                    &path.iter().map(|&i| slots[i]).collect::<Vec<_>>(),
                    start.as_deref(),
                )
        })
        .collect();
    let unexplained = unexplained(
        (&vocabularies, &type_nouns),
        (&path, &apart),
        (&words, &fits),
        (&tokens, &named),
        verb,
    );
    Ok(Mapped {
        entity,
        path: path.iter().map(|&i| slots[i].name.clone()).collect(),
        unexplained,
        guessed,
    })
}

/// A slot guessed for a question no word of which explains any ([`GUESS_COSINE`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Guess {
    /// The slot (an index into the slots).
    slot: usize,
    /// The question's word that named it (an index into its words).
    word: usize,
    /// Their similarity.
    similarity: f64,
    /// The closest any other slot came to any of the words.
    next: f64,
    /// Whether the word is kin to one of the slot's own words by form.
    kin: bool,
}

/// The slot among `own` (the entity's slots) that the words `asked` (indices of the question's
/// words: the noun phrase it asks for) come closest to by `similar` (each word's similarity to
/// each slot), when that is at least [`GUESS_COSINE`] and the slot is at least [`GUESS_GAP`]
/// ahead of every other slot of `own`, or ahead at all and `kin` (by form) to the word. Slots
/// tied at the top are no lead: none is guessed.
fn guess(
    similar: &[Vec<f64>],
    asked: &[usize],
    own: &[usize],
    kin: impl Fn(usize, usize) -> bool,
) -> Option<Guess> {
    let closest = |slot: usize| {
        asked
            .iter()
            .filter_map(|&w| similar.get(w)?.get(slot).map(|&s| (w, s)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let mut ranked: Vec<(usize, usize, f64)> = own
        .iter()
        .filter_map(|&slot| closest(slot).map(|(w, s)| (slot, w, s)))
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2));
    let &(slot, word, similarity) = ranked.first()?;
    let next = ranked.get(1).map_or(0.0, |r| r.2);
    let lead = similarity - next;
    let kin = kin(word, slot);
    (similarity >= GUESS_COSINE && (lead >= GUESS_GAP || (kin && lead > 1e-9))).then_some(Guess {
        slot,
        word,
        similarity,
        next,
        kin,
    })
}

/// Whether two words share their first [`KIN_PREFIX`] letters (or more): kin by form.
fn kin_by_form(a: &str, b: &str) -> bool {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count() >= KIN_PREFIX
}

/// Type-consistent paths of up to [`MAX_HOPS`] slots (indices into `slots`) from an entity of
/// type `start` (any type when unknown); predicates with a fixed subject start nowhere else.
fn paths(slots: &[&Predicate], start: Option<&str>) -> Vec<Vec<usize>> {
    let free = |p: &&Predicate| p.fixed_subject.is_none();
    let mut frontier: Vec<Vec<usize>> = slots
        .iter()
        .enumerate()
        .filter(|(_, p)| free(p) && start.is_none_or(|t| p.applies_to(t)))
        .map(|(i, _)| vec![i])
        .collect();
    let mut all = Vec::new();
    for _ in 0..MAX_HOPS {
        all.extend(frontier.iter().cloned());
        if all.len() >= MAX_PATHS {
            all.truncate(MAX_PATHS);
            break;
        }
        frontier = frontier
            .iter()
            .flat_map(|path| {
                let last = slots[path[path.len() - 1]];
                slots
                    .iter()
                    .enumerate()
                    .filter(move |(_, q)| {
                        last.object_is_entity() && free(q) && q.applies_to(&last.object_type)
                    })
                    .map(move |(j, _)| {
                        let mut next = path.clone();
                        next.push(j);
                        next
                    })
            })
            .take(MAX_PATHS)
            .collect();
    }
    all
}

/// Positions of the question's words that belong to a name it mentions.
fn name_spans(tokens: &[String], names: &[String], graph: &Graph) -> BTreeSet<usize> {
    let normaliser = graph.normaliser();
    let mut covered = BTreeSet::new();
    for name in names {
        for needle in [words_plain(name), words_plain(&normaliser.key(name))] {
            if needle.is_empty() || needle.len() > tokens.len() {
                continue;
            }
            for from in 0..=tokens.len() - needle.len() {
                if tokens[from..from + needle.len()] == needle[..] {
                    covered.extend(from..from + needle.len());
                }
            }
        }
    }
    covered
}

/// `named` grown by the words written as names right before or after a name the question
/// mentions: capitalised past the question's first word ("When is *Python* 3.14.0 final?"),
/// part of how the question names the thing, not a relation.
fn with_name_words(
    question: &str,
    tokens: &[String],
    mut named: BTreeSet<usize>,
    acronyms: &BTreeSet<String>,
) -> BTreeSet<usize> {
    let capitalised: BTreeSet<String> = question
        .split_whitespace()
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .flat_map(words_plain)
        .collect();
    loop {
        let grown: Vec<usize> = (0..tokens.len())
            .filter(|at| {
                !named.contains(at)
                    && *at > 0
                    && capitalised.contains(&tokens[*at])
                    // "When is Node 16 *EOL*?": a relation's initials are no part of a name.
                    && !acronyms.contains(&tokens[*at])
                    && (named.contains(&(at + 1)) || named.contains(&(at - 1)))
            })
            .collect();
        if grown.is_empty() {
            return named;
        }
        named.extend(grown);
    }
}

/// The question's content words outside the names it mentions, one per stem.
fn question_words(tokens: &[String], named: &BTreeSet<usize>) -> Vec<QuestionWord> {
    let mut seen = BTreeSet::new();
    tokens
        .iter()
        .enumerate()
        .filter(|(at, token)| {
            !named.contains(at)
                && !STOPWORDS.contains(&token.as_str())
                && !token.chars().all(|c| c.is_ascii_digit())
        })
        .filter_map(|(at, token)| {
            let stem = stem(token);
            (!STOPWORDS.contains(&stem.as_str()) && seen.insert(stem.clone())).then(|| {
                QuestionWord {
                    text: token.clone(),
                    stem,
                    at,
                }
            })
        })
        .collect()
}

/// The encoder's similarity between each word and each slot's own words `terms` (the closest
/// of them); `None` without an encoder.
fn similarities(
    ontology: &Ontology,
    terms: &[Vec<String>],
    words: &[QuestionWord],
) -> Option<Vec<Vec<f64>>> {
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    ontology.extraction().word_similarities(&texts, terms)
}

/// How well each word explains each slot: 1 for a word of its vocabulary, else the encoder's
/// similarity between the word and the slot's own words (`similar`) when at least
/// [`EXPLAIN_COSINE`], else 0.
fn fits(
    vocabularies: &[BTreeSet<String>],
    words: &[QuestionWord],
    similar: Option<&[Vec<f64>]>,
) -> Vec<Vec<f64>> {
    words
        .iter()
        .enumerate()
        .map(|(w, word)| {
            vocabularies
                .iter()
                .enumerate()
                .map(|(p, vocabulary)| {
                    if vocabulary.contains(&word.stem) {
                        return 1.0;
                    }
                    let cosine = similar.map_or(0.0, |s| s[w][p]);
                    if cosine >= EXPLAIN_COSINE {
                        cosine
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// Whether a question's word names the kind dates are (`date`, `day`): the kind of answer, not
/// which relation gives it.
fn names_dates(word: &QuestionWord) -> bool {
    value_kind(&word.text) == ValueKind::Date
}

/// A word naming dates explains every slot of dates alike: "What is the release *date* of Go
/// 1.25?" is no more about `latest_release_date`, whose name says date, than about
/// `initial_release`; the other words choose between them.
fn dated_fits(fits: &mut [Vec<f64>], words: &[QuestionWord], slots: &[&Predicate]) {
    for (row, word) in fits.iter_mut().zip(words) {
        if !names_dates(word) {
            continue;
        }
        for (fit, slot) in row.iter_mut().zip(slots) {
            if value_kind(&slot.object_type.to_lowercase()) == ValueKind::Date {
                *fit = 1.0;
            }
        }
    }
}

/// Words that, ending a question, ask what a thing is called ("What is PEP 8 *called*?", "what
/// is X *titled*?"). General English, not any ontology's words.
const NAMING_WORDS: &[&str] = &["called", "named", "titled"];

/// What a thing is called is held by a slot whose own words say name or title.
const NAME_NOUNS: &str = "name title";

/// A naming word ([`NAMING_WORDS`]) that ends the question (`tokens` words in all) explains
/// every slot whose vocabulary holds a name noun ([`NAME_NOUNS`]): "What is PEP 8 called?" asks
/// for its title. Only as the last word: "who is *named* as the author of X?" asks for an author.
fn naming_fits(
    fits: &mut [Vec<f64>],
    words: &[QuestionWord],
    tokens: usize,
    vocabularies: &[BTreeSet<String>],
) {
    let nouns = content_words(NAME_NOUNS);
    for (row, word) in fits.iter_mut().zip(words) {
        if word.at + 1 != tokens || !NAMING_WORDS.contains(&word.text.as_str()) {
            continue;
        }
        for (fit, vocabulary) in row.iter_mut().zip(vocabularies) {
            if !vocabulary.is_disjoint(&nouns) {
                *fit = 1.0;
            }
        }
    }
}

/// Words of the question the chosen path leaves unexplained although they name a relation: a
/// word of another predicate (rare enough across predicates to be telling, or close in meaning
/// to it), or a word where a relation stands — the verb of a relative clause ("that maintains"),
/// or a word between a name and a preposition ("X depends on"). Type nouns are never counted.
fn unexplained(
    (vocabularies, type_nouns): (&[BTreeSet<String>], &[String]),
    (path, apart): (&[usize], &[bool]),
    (words, fits): (&[QuestionWord], &[Vec<f64>]),
    (tokens, named): (&[String], &BTreeSet<usize>),
    verb: Option<usize>,
) -> Vec<String> {
    let mut left = Vec::new();
    // The noun phrase a question asks for ("what *Python version* does X need?") describes the
    // answer; once the path explains another word of the question, it names no other relation.
    let kind_words = asked_phrase(tokens, named);
    let path_explains = |skip: usize| {
        words
            .iter()
            .zip(fits)
            .any(|(w, row)| w.at != skip && path.iter().any(|&p| row[p] > 0.0))
    };
    let explained_at = |at: usize| {
        words
            .iter()
            .zip(fits)
            .any(|(w, row)| w.at == at && path.iter().any(|&p| row[p] > 0.0))
    };
    // The first word after `at` past articles and the like is one the path explains.
    let explained_after = |at: usize| {
        tokens
            .iter()
            .enumerate()
            .skip(at + 1)
            .find(|(_, t)| !BEFORE_PHRASE.contains(&t.as_str()))
            .is_some_and(|(next, _)| explained_at(next))
    };
    for (word, row) in words.iter().zip(fits) {
        if path.iter().any(|&p| row[p] > 0.0)
            || type_nouns.contains(&word.text)
            || type_nouns.iter().any(|t| stem(t) == word.stem)
            || (kind_words.contains(&word.at) && path_explains(word.at))
        {
            continue;
        }
        let sharing = vocabularies
            .iter()
            .filter(|v| v.contains(&word.stem))
            .count();
        let names_another = row.iter().enumerate().any(|(q, &fit)| {
            !path.contains(&q)
                && !apart.get(q).copied().unwrap_or(false)
                && (fit >= SKIPPED_COSINE || (fit >= 1.0 && sharing * 2 <= vocabularies.len()))
        });
        let names_apart_only = row
            .iter()
            .enumerate()
            .filter(|(_, fit)| **fit > 0.0)
            .all(|(q, _)| apart.get(q).copied().unwrap_or(false))
            && row.iter().any(|fit| *fit > 0.0);
        if names_apart_only && path_explains(word.at) {
            continue;
        }
        // A light verb names what it passes into: once the path explains that phrase, the
        // verb names no other relation ("enter its maintenance phase" is the maintenance).
        if LIGHT_VERBS.iter().any(|verb| stem(verb) == word.stem) && explained_after(word.at) {
            continue;
        }
        if names_another || relation_position(tokens, word.at, named) || verb == Some(word.at) {
            left.push(word.text.clone());
        }
    }
    left
}

/// Whether `other` could be a hop of a path through `path` (from an entity of type `start`):
/// before its first hop, between two, or after its last, by the types.
fn composes(other: &Predicate, path: &[&Predicate], start: Option<&str>) -> bool {
    let leads_to =
        |p: &Predicate, q: &Predicate| p.object_is_entity() && q.applies_to(&p.object_type);
    let Some(first) = path.first() else {
        return true;
    };
    let before = start.is_none_or(|t| other.applies_to(t)) && leads_to(other, first);
    let between = path
        .windows(2)
        .any(|w| leads_to(w[0], other) && leads_to(other, w[1]));
    let after = path.last().is_some_and(|last| leads_to(last, other));
    before || between || after
}

/// Where the noun phrase a question asks for stands: the words right after an opening "what" or
/// "which" (or "in which"), or after "what is the", up to the first auxiliary, small word or
/// name.
fn asked_phrase(tokens: &[String], named: &BTreeSet<usize>) -> BTreeSet<usize> {
    let mut at = match tokens
        .iter()
        .take(2)
        .position(|t| t == "what" || t == "which")
    {
        Some(opens) => opens + 1,
        None => return BTreeSet::new(),
    };
    // "What is *the* LTS codename of X?": the noun phrase after the copula's article.
    let word = |i: usize| tokens.get(i).map(String::as_str);
    if matches!(word(at), Some("is" | "are" | "was" | "were"))
        && matches!(word(at + 1), Some("the" | "a" | "an"))
    {
        at += 2;
    }
    let mut phrase = BTreeSet::new();
    while let Some(t) = tokens.get(at) {
        if named.contains(&at)
            || AUXILIARIES.contains(&t.as_str())
            || STOPWORDS.contains(&t.as_str())
        {
            break;
        }
        phrase.insert(at);
        at += 1;
    }
    phrase
}

/// The question's own verb: the first word after its question word that is neither the noun it
/// asks for ("which *team*", a type noun), an amount word ("how *long*"), an auxiliary or a small
/// word, unless a name comes first.
fn main_verb(tokens: &[String], named: &BTreeSet<usize>, type_nouns: &[String]) -> Option<usize> {
    let opens = tokens
        .iter()
        .position(|t| QUESTION_WORDS.contains(&t.as_str()))?;
    let mut at = opens + 1;
    let asks_a_noun = matches!(tokens[opens].as_str(), "which" | "what");
    if let Some(next) = tokens.get(at)
        && !named.contains(&at)
        && (type_nouns.contains(next)
            || ["much", "many", "long", "often"].contains(&next.as_str())
            || (asks_a_noun
                && !AUXILIARIES.contains(&next.as_str())
                && !STOPWORDS.contains(&next.as_str())))
    {
        at += 1;
    }
    while tokens.get(at).is_some_and(|t| {
        !named.contains(&at)
            && (AUXILIARIES.contains(&t.as_str()) || STOPWORDS.contains(&t.as_str()))
    }) {
        at += 1;
    }
    (at < tokens.len() && !named.contains(&at)).then_some(at)
}

/// Whether the word at `at` stands where a relation does: the verb of a relative clause ("the
/// team that maintains", "who is led by"; not a question word opening the question), or a word
/// right after a name and before a preposition ("X depends on", "X reports to").
fn relation_position(tokens: &[String], at: usize, named: &BTreeSet<usize>) -> bool {
    let mut before = at;
    while before > 0 && AUXILIARIES.contains(&tokens[before - 1].as_str()) {
        before -= 1;
    }
    // A pronoun among the question's first two words asks ("in which release does ..."); only
    // one after a noun opens a relative clause ("the team that maintains ...").
    let after_relative = before > 2 && RELATIVE_PRONOUNS.contains(&tokens[before - 1].as_str());
    let after_name = at > 0 && named.contains(&(at - 1)) && !named.contains(&at);
    let before_preposition = tokens
        .get(at + 1)
        .is_some_and(|next| PREPOSITIONS.contains(&next.as_str()));
    after_relative || (after_name && before_preposition)
}

#[cfg(test)]
mod tests;
