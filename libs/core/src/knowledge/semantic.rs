//! The semantic extractor: claims from sentences written in any phrasing, not only the
//! ontology's templates.
//!
//! For one sentence it finds entity mentions (known names and aliases, capitalised names, names
//! marked by a type noun such as "the Pro plan") and typed values (numbers with their unit words),
//! refuses sentences that do not assert a current fact (negations, hypotheticals, proposals and
//! drafts, rejected, past or future states — except a rename predicate's own phrasings), then
//! chooses the predicate by meaning: the similarity of the sentence to each predicate's patterns,
//! name and unit (through a sentence encoder when one is given, else lexically, weighting the
//! words that tell predicates apart), constrained by the types of what the sentence names.
//! Nothing here knows any world: every word list is general English.

use std::collections::BTreeSet;

use super::encoder::{SentenceEncoder, cosine};
use super::extract::{Claim, ClaimSubject};
pub use super::names::Lexicon;
use super::names::NameNormaliser;
use super::ontology::{Ontology, Predicate, PredicateKind};
use super::words::{STOPWORDS, stem};

mod profiles;
pub(crate) use profiles::{Profile, Profiles, profiles};

/// Extractor id of the lexical scorer (no model loaded).
pub const LEXICAL_ID: &str = "semantic/lexical/v1";

/// A word of a sentence with its byte span.
#[derive(Debug, Clone)]
pub(crate) struct Token<'a> {
    pub text: &'a str,
    pub start: usize,
    pub lower: String,
}

/// Words (letters, digits and inner `-`, `'`, `.` between digits) and single punctuation marks.
pub(crate) fn tokens(sentence: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = sentence.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if c.is_alphanumeric() {
            while j < chars.len() {
                let (_, d) = chars[j];
                let next_is_word = chars.get(j + 1).is_some_and(|(_, n)| n.is_alphanumeric());
                let inner = matches!(d, '-' | '\'' | '’') && next_is_word;
                let decimal = d == '.'
                    && chars[j - 1].1.is_ascii_digit()
                    && chars.get(j + 1).is_some_and(|(_, n)| n.is_ascii_digit());
                if d.is_alphanumeric() || inner || decimal {
                    j += 1;
                } else {
                    break;
                }
            }
        }
        let end = chars.get(j).map_or(sentence.len(), |(at, _)| *at);
        let text = &sentence[start..end];
        out.push(Token {
            text,
            start,
            lower: text.to_lowercase(),
        });
        i = j;
    }
    out
}

fn is_word(token: &Token<'_>) -> bool {
    token.text.chars().next().is_some_and(char::is_alphanumeric)
}

fn is_number(token: &Token<'_>) -> bool {
    token.text.chars().all(|c| c.is_ascii_digit() || c == '.')
        && token
            .text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
}

fn is_capitalised(token: &Token<'_>) -> bool {
    token.text.chars().next().is_some_and(char::is_uppercase)
}

/// Words that begin sentences without naming anything.
const STARTERS: &[&str] = &[
    "the",
    "a",
    "an",
    "our",
    "we",
    "you",
    "they",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "meet",
    "introducing",
    "welcome",
    "note",
    "today",
    "now",
    "also",
    "all",
    "every",
    "each",
    "some",
    "any",
    "no",
    "if",
    "when",
    "while",
    "since",
    "after",
    "before",
    "because",
    "as",
    "at",
    "in",
    "on",
    "for",
    "from",
    "with",
    "by",
    "to",
    "of",
    "and",
    "but",
    "or",
    "so",
    "then",
    "please",
    "see",
    "use",
    "ask",
    "try",
    "contact",
    "yes",
    "hello",
    "hi",
    "one",
    "two",
    "only",
    "both",
    "new",
    "next",
    "last",
    "his",
    "her",
    "their",
    "my",
    "your",
    "he",
    "she",
    "i",
    "who",
    "what",
    "which",
    "where",
    "why",
    "how",
];

/// A name in a sentence: tokens `[from, to)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mention {
    pub from: usize,
    pub to: usize,
    pub name: String,
    /// Types the name may have; empty when nothing is known.
    pub types: BTreeSet<String>,
}

/// Entity mentions, left to right, not overlapping: known names (longest first, a trailing type
/// noun included), then runs of capitalised words (a sentence's first word only when the run
/// goes on or is known), each with a trailing type noun and its type when one follows.
pub(crate) fn mentions(
    tokens: &[Token<'_>],
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    type_nouns: &[String],
    predicate_words: &BTreeSet<String>,
) -> Vec<Mention> {
    const LONGEST: usize = 6;
    let noun_at = |i: usize| {
        tokens
            .get(i)
            .and_then(|t| type_nouns.iter().find(|n| **n == t.lower).cloned())
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_word(&tokens[i]) || (tokens[i].lower == "the" && !is_capitalised(&tokens[i])) {
            i += 1;
            continue;
        }
        // Known names, longest span first.
        let mut known = None;
        for len in (1..=LONGEST.min(tokens.len() - i)).rev() {
            let span = &tokens[i..i + len];
            if span.iter().any(|t| !is_word(t)) {
                continue;
            }
            let text = join(span);
            let key = normaliser.key(&text);
            if let Some(types) = lexicon.get(&key) {
                if len == 1 && STARTERS.contains(&tokens[i].lower.as_str()) {
                    continue;
                }
                known = Some((len, text, types.into_owned()));
                break;
            }
        }
        if let Some((len, text, known_types)) = known {
            let mut to = i + len;
            // "The Routing engine": the article is not part of the name.
            let (from, text) = if tokens[i].lower == "the" && len > 1 {
                (i + 1, join(&tokens[i + 1..i + len]))
            } else {
                (i, text)
            };
            let mut name = text;
            let mut types = known_types;
            if let Some(noun) = noun_at(to) {
                name = format!("{name} {}", tokens[to].text);
                types = BTreeSet::from([noun]);
                to += 1;
            } else if let Some(noun) = normaliser.type_of(&name) {
                types = BTreeSet::from([noun]);
            } else if let Some(noun) = from.checked_sub(1).and_then(noun_at) {
                types = BTreeSet::from([noun]);
            }
            found.push(Mention {
                from,
                to,
                name,
                types,
            });
            i = to;
            continue;
        }
        if is_capitalised(&tokens[i]) {
            let mut to = i;
            while to < tokens.len()
                && is_word(&tokens[to])
                && (is_capitalised(&tokens[to]) || is_number(&tokens[to]) && to > i)
            {
                to += 1;
            }
            // A lone capitalised word the ontology uses ("SLA", "Pricing") is not a name.
            if to - i == 1 && predicate_words.contains(&stem(&tokens[i].lower)) {
                i += 1;
                continue;
            }
            let first_is_starter = STARTERS.contains(&tokens[i].lower.as_str());
            let from = if first_is_starter && to - i > 1 {
                i + 1
            } else {
                i
            };
            // "Crew Amber", "team Helix": a type noun before the name types it.
            let (from, leading) = match noun_at(from) {
                Some(noun) if to - from > 1 => (from + 1, Some(noun)),
                _ => (from, from.checked_sub(1).and_then(noun_at)),
            };
            let noun = noun_at(to);
            let lone_first_word = from == 0 && to - from == 1 && noun.is_none();
            if (first_is_starter && from == i) || lone_first_word {
                i = to.max(i + 1);
                continue;
            }
            let mut name = join(&tokens[from..to]);
            let mut types: BTreeSet<String> = leading.into_iter().collect();
            let mut end = to;
            if let Some(noun) = noun {
                name = format!("{name} {}", tokens[to].text);
                types = BTreeSet::from([noun]);
                end += 1;
            } else if trailing_common_noun(tokens, to) {
                // "owns Routing engine." — a capitalised word and a common noun ending the clause.
                name = format!("{name} {}", tokens[to].text);
                end += 1;
            }
            found.push(Mention {
                from,
                to: end,
                name,
                types,
            });
            i = end;
            continue;
        }
        i += 1;
    }
    found
}

/// Whether token `at` is one lower-case content word that ends the clause.
fn trailing_common_noun(tokens: &[Token<'_>], at: usize) -> bool {
    let Some(token) = tokens.get(at) else {
        return false;
    };
    let ends = tokens.get(at + 1).is_none_or(|t| !is_word(t));
    ends && is_word(token)
        && !is_capitalised(token)
        && !is_number(token)
        && !STOPWORDS.contains(&token.lower.as_str())
        && !CUES.iter().any(|(w, _)| *w == token.lower)
}

fn join(tokens: &[Token<'_>]) -> String {
    tokens.iter().map(|t| t.text).collect::<Vec<_>>().join(" ")
}

/// A number in a sentence with the unit words around it.
#[derive(Debug, Clone)]
pub(crate) struct Value {
    pub at: usize,
    pub text: String,
    pub unit: BTreeSet<String>,
}

/// Numbers (not parts of clock times or of dates written with month names) with the currency
/// symbol before them and up to four unit words after.
pub(crate) fn values(tokens: &[Token<'_>]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if !is_number(token) {
            continue;
        }
        let before = i.checked_sub(1).map(|j| tokens[j].text);
        let after = tokens.get(i + 1).map(|t| t.text);
        if before == Some(":") || after == Some(":") {
            continue;
        }
        let mut unit = BTreeSet::new();
        match before {
            Some("€") => {
                unit.insert("eur".to_owned());
            }
            Some("$") => {
                unit.insert("usd".to_owned());
            }
            Some("£") => {
                unit.insert("gbp".to_owned());
            }
            _ => {}
        }
        if after == Some("%") {
            unit.insert("percent".to_owned());
        }
        for next in tokens.iter().skip(i + 1).take(4) {
            if is_number(next) || matches!(next.text, "." | ";" | "," | "!" | "?") {
                break;
            }
            if is_word(next) {
                unit.insert(stem(&next.lower));
            }
        }
        out.push(Value {
            at: i,
            text: token.text.to_owned(),
            unit,
        });
    }
    out
}

/// Why a sentence asserts no current fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// "not", "never", "no", "n't".
    Negation,
    /// "if", "would", "might".
    Hypothetical,
    /// A proposal, draft, suggestion, discussion, rejection.
    Proposal,
    /// "used to", "formerly", "was", a past-tense verb.
    Past,
    /// "will", "next year".
    Future,
    /// A question.
    Question,
}

/// General English cue words and the refusal each signals.
const CUES: &[(&str, Refusal)] = &[
    ("not", Refusal::Negation),
    ("never", Refusal::Negation),
    ("no", Refusal::Negation),
    ("none", Refusal::Negation),
    ("nothing", Refusal::Negation),
    ("neither", Refusal::Negation),
    ("nor", Refusal::Negation),
    ("cannot", Refusal::Negation),
    ("if", Refusal::Hypothetical),
    ("would", Refusal::Hypothetical),
    ("could", Refusal::Hypothetical),
    ("might", Refusal::Hypothetical),
    ("may", Refusal::Hypothetical),
    ("unless", Refusal::Hypothetical),
    ("suppose", Refusal::Hypothetical),
    ("supposing", Refusal::Hypothetical),
    ("assuming", Refusal::Hypothetical),
    ("hypothetically", Refusal::Hypothetical),
    ("whether", Refusal::Hypothetical),
    ("imagine", Refusal::Hypothetical),
    ("maybe", Refusal::Hypothetical),
    ("perhaps", Refusal::Hypothetical),
    ("possibly", Refusal::Hypothetical),
    ("proposal", Refusal::Proposal),
    ("proposals", Refusal::Proposal),
    ("propose", Refusal::Proposal),
    ("proposed", Refusal::Proposal),
    ("proposes", Refusal::Proposal),
    ("proposing", Refusal::Proposal),
    ("suggest", Refusal::Proposal),
    ("suggested", Refusal::Proposal),
    ("suggestion", Refusal::Proposal),
    ("draft", Refusal::Proposal),
    ("drafts", Refusal::Proposal),
    ("floated", Refusal::Proposal),
    ("tentative", Refusal::Proposal),
    ("tentatively", Refusal::Proposal),
    ("pending", Refusal::Proposal),
    ("considering", Refusal::Proposal),
    ("considered", Refusal::Proposal),
    ("discussed", Refusal::Proposal),
    ("discussing", Refusal::Proposal),
    ("brainstorm", Refusal::Proposal),
    ("idea", Refusal::Proposal),
    ("rejected", Refusal::Proposal),
    ("declined", Refusal::Proposal),
    ("vetoed", Refusal::Proposal),
    ("was", Refusal::Past),
    ("were", Refusal::Past),
    ("had", Refusal::Past),
    ("formerly", Refusal::Past),
    ("previously", Refusal::Past),
    ("once", Refusal::Past),
    ("former", Refusal::Past),
    ("older", Refusal::Past),
    ("earlier", Refusal::Past),
    ("until", Refusal::Past),
    ("anymore", Refusal::Past),
    ("kept", Refusal::Past),
    ("paid", Refusal::Past),
    ("sold", Refusal::Past),
    ("held", Refusal::Past),
    ("ran", Refusal::Past),
    ("took", Refusal::Past),
    ("made", Refusal::Past),
    ("gave", Refusal::Past),
    ("went", Refusal::Past),
    ("came", Refusal::Past),
    ("became", Refusal::Past),
    ("belonged", Refusal::Past),
    ("will", Refusal::Future),
    ("soon", Refusal::Future),
    ("upcoming", Refusal::Future),
    ("tomorrow", Refusal::Future),
];

/// Pairs of words that signal a refusal together.
const CUE_PAIRS: &[(&str, &str, Refusal)] = &[
    ("used", "to", Refusal::Past),
    ("in", "past", Refusal::Past),
    ("back", "then", Refusal::Past),
    ("going", "to", Refusal::Future),
    ("plan", "to", Refusal::Proposal),
    ("plans", "to", Refusal::Proposal),
    ("planning", "to", Refusal::Proposal),
    ("want", "to", Refusal::Proposal),
    ("wants", "to", Refusal::Proposal),
    ("aim", "to", Refusal::Proposal),
    ("intend", "to", Refusal::Proposal),
    ("next", "week", Refusal::Future),
    ("next", "month", Refusal::Future),
    ("next", "quarter", Refusal::Future),
    ("next", "year", Refusal::Future),
    ("next", "release", Refusal::Future),
];

/// Phrases that say a thing changed its name (general English).
const RENAME_CUES: &[&str] = &[
    "renamed",
    "formerly",
    "used to be called",
    "was called",
    "now called",
    "now known as",
    "previously known as",
    "new name",
];

/// Of those, the ones that name the old name first ("Y was renamed X").
const OLD_NAME_FIRST: &[&str] = &["renamed", "now called", "now known as"];

/// Why the sentence asserts no current fact, if it does not. `past_allowed` lets past-tense
/// cues through (a rename says what something used to be called).
pub fn refusal(sentence: &str, past_allowed: bool) -> Option<Refusal> {
    let toks = tokens(sentence);
    if sentence.trim_end().ends_with('?') {
        return Some(Refusal::Question);
    }
    let words: Vec<&str> = toks
        .iter()
        .filter(|t| is_word(t))
        .map(|t| t.lower.as_str())
        .collect();
    let keep = |r: Refusal| !(past_allowed && r == Refusal::Past);
    for word in &words {
        if word.ends_with("n't") || word.ends_with("n’t") {
            return Some(Refusal::Negation);
        }
        if let Some((_, r)) = CUES.iter().find(|(cue, _)| cue == word)
            && keep(*r)
        {
            return Some(*r);
        }
    }
    for pair in words.windows(2) {
        if let Some((_, _, r)) = CUE_PAIRS
            .iter()
            .find(|(a, b, _)| *a == pair[0] && *b == pair[1])
            && keep(*r)
        {
            return Some(*r);
        }
    }
    None
}

/// A past-tense verb right after a name or a pronoun ("Helix owned ...", "we changed ...").
fn past_tense_after_subject(tokens: &[Token<'_>], mentions: &[Mention]) -> bool {
    const PRONOUNS: &[&str] = &["we", "they", "he", "she", "it", "i", "you", "who"];
    tokens.iter().enumerate().any(|(i, t)| {
        let regular = t.lower.len() > 4 && t.lower.ends_with("ed");
        regular
            && i > 0
            && (PRONOUNS.contains(&tokens[i - 1].lower.as_str())
                || mentions.iter().any(|m| m.to == i))
    })
}

/// A sentence as the encoder sees it: names of known type become their type nouns, numbers `10`.
pub(crate) fn masked(
    tokens: &[Token<'_>],
    mentions: &[Mention],
    unknown_as_someone: bool,
) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(m) = mentions.iter().find(|m| m.from == i) {
            // A name of known type reads as its type noun ("the team"); an unknown name stays.
            let typed = m.types.iter().next().filter(|_| m.types.len() == 1);
            let article = out
                .last()
                .is_some_and(|w: &String| w.eq_ignore_ascii_case("the"));
            out.push(match typed {
                Some(t) if article => t.clone(),
                Some(t) => format!("the {t}"),
                None if unknown_as_someone => "someone".to_owned(),
                None => join(&tokens[m.from..m.to]),
            });
            i = m.to;
            continue;
        }
        out.push(if is_number(&tokens[i]) {
            "10".to_owned()
        } else {
            tokens[i].text.to_owned()
        });
        i += 1;
    }
    out.join(" ")
}

/// How the extractor scores a sentence against predicates.
pub(crate) enum Scorer<'a> {
    /// Word overlap weighted by rarity across predicates.
    Lexical,
    /// Cosine similarity through an encoder, with the prototypes' vectors.
    Encoder {
        encoder: &'a dyn SentenceEncoder,
        prototypes: &'a [Vec<Vec<f32>>],
    },
}

/// The minimum similarity a predicate needs, per scorer.
const MIN_LEXICAL: f64 = 0.34;
const MIN_COSINE: f64 = 0.5;
const MIN_COSINE_UNTYPED: f64 = 0.65;

/// The fit of a claim whose every slot is filled by something of the slot's type: a name of
/// known type, a number, a description or a fixed subject (2 each).
const FULL_FIT: f64 = 4.0;

/// Sentences scored through an encoder in this process (read from the cache or sent to the
/// model): the ones some predicate could take, which only meaning decides.
static SCORED_BY_ENCODER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many sentences this process has scored through an encoder so far (see
/// [`claims_by_meaning`]); the scale benchmark reads it around an ingest.
pub fn sentences_scored_by_encoder() -> u64 {
    SCORED_BY_ENCODER.load(std::sync::atomic::Ordering::Relaxed)
}

/// A sentence read up to its scoring: what it names, its content words, and the predicates it
/// could state (not refused, with a subject and an object of their types).
pub(crate) struct Reading<'s> {
    toks: Vec<Token<'s>>,
    found: Vec<Mention>,
    content: BTreeSet<String>,
    candidates: Vec<(usize, f64, Claim)>,
}

impl Reading<'_> {
    /// The texts an encoder scores the sentence by: unknown names kept, and unknown names as
    /// "someone".
    pub(crate) fn encoded_texts(&self) -> [String; 2] {
        [
            masked(&self.toks, &self.found, false),
            masked(&self.toks, &self.found, true),
        ]
    }
}

/// Reads `sentence` up to its scoring; `None` when no predicate could take it, so it costs no
/// model call.
pub(crate) fn reading<'s>(
    ontology: &Ontology,
    profiles: &Profiles,
    scorer: &Scorer<'_>,
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    sentence: &'s str,
) -> Option<Reading<'s>> {
    let toks = tokens(sentence);
    let found = mentions(
        &toks,
        lexicon,
        normaliser,
        &profiles.type_nouns,
        &profiles.words,
    );
    let numbers = values(&toks);
    if found.is_empty() && numbers.is_empty() {
        return None;
    }
    let content: BTreeSet<String> = toks
        .iter()
        .enumerate()
        .filter(|(i, t)| is_word(t) && !found.iter().any(|m| (m.from..m.to).contains(i)))
        .map(|(_, t)| stem(&t.lower))
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect();
    // Whether the sentence asserts a current fact, asked once for every predicate.
    let refused_outright = refusal(sentence, false).is_some();
    let refused_allowing_past = refusal(sentence, true).is_some();
    let past_tense = past_tense_after_subject(&toks, &found);
    let candidates: Vec<(usize, f64, Claim)> = ontology
        .predicates()
        .iter()
        .zip(profiles.iter())
        .enumerate()
        .filter_map(|(i, (predicate, profile))| {
            let rename = predicate.kind == PredicateKind::Rename;
            let refused = if rename {
                refused_allowing_past
            } else {
                refused_outright || past_tense
            };
            if refused {
                return None;
            }
            // A rename must use the predicate's own words; any other predicate needs either
            // its words or an encoder's judgement, and in both cases enough similarity.
            let words_hit = profile.words.keys().any(|w| content.contains(w));
            let descriptive = predicate.object_type == "text";
            if (rename || matches!(scorer, Scorer::Lexical)) && !words_hit && !descriptive {
                return None;
            }
            let (fit, claim) = fill(predicate, profile, &toks, &found, &numbers, sentence)?;
            Some((i, fit, claim))
        })
        .collect();
    (!candidates.is_empty()).then_some(Reading {
        toks,
        found,
        content,
        candidates,
    })
}

/// Claims one sentence states, read by meaning, each with whether every slot was filled by
/// something of its type (a name of known type, a number, a description or a fixed subject).
/// Empty when it states nothing or is refused.
pub(crate) fn claims_by_meaning(
    ontology: &Ontology,
    profiles: &Profiles,
    scorer: &Scorer<'_>,
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    sentence: &str,
) -> Vec<(Claim, bool)> {
    let Some(read) = reading(ontology, profiles, scorer, lexicon, normaliser, sentence) else {
        return Vec::new();
    };
    let similarity: Vec<f64> = match scorer {
        Scorer::Lexical => profiles.iter().map(|p| lexical(p, &read.content)).collect(),
        Scorer::Encoder {
            encoder,
            prototypes,
        } => {
            SCORED_BY_ENCODER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let texts = read.encoded_texts();
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            match encoder.encode(&texts) {
                Ok(vectors) if vectors.len() == texts.len() => prototypes
                    .iter()
                    .map(|protos| {
                        protos
                            .iter()
                            .flat_map(|p| vectors.iter().map(move |v| f64::from(cosine(v, p))))
                            .fold(f64::MIN, f64::max)
                    })
                    .collect(),
                _ => profiles.iter().map(|p| lexical(p, &read.content)).collect(),
            }
        }
    };
    let minimum = match scorer {
        Scorer::Lexical => MIN_LEXICAL,
        Scorer::Encoder { .. } => MIN_COSINE,
    };
    let predicates = ontology.predicates();
    let mut best: Option<(f64, Claim, bool)> = None;
    for (i, fit, claim) in read.candidates {
        let predicate = &predicates[i];
        let score = similarity[i];
        let rename = predicate.kind == PredicateKind::Rename;
        let descriptive = predicate.object_type == "text";
        // A descriptive object is found by the sentence's shape ("X is our Y", "Meet X, a Y"),
        // which `fill` checked; any other predicate needs enough similarity, and more when a
        // name of unknown type fills a slot (weaker evidence).
        let minimum = match scorer {
            Scorer::Encoder { .. } if fit < FULL_FIT => MIN_COSINE_UNTYPED,
            _ => minimum,
        };
        // A rename says so in so many words ("renamed", "formerly", "used to be called").
        let renamed = rename && {
            let lower = sentence.to_lowercase();
            RENAME_CUES.iter().any(|cue| lower.contains(cue))
        };
        if score < minimum && !descriptive && !renamed {
            continue;
        }
        let total = score + 0.05 * fit;
        if best.as_ref().is_none_or(|(b, _, _)| total > *b) {
            best = Some((total, claim, fit >= FULL_FIT));
        }
    }
    best.map(|(_, claim, typed)| vec![(claim, typed)])
        .unwrap_or_default()
}

pub(crate) fn lexical(profile: &Profile, content: &BTreeSet<String>) -> f64 {
    let total: f64 = profile.words.values().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let hit: f64 = profile
        .words
        .iter()
        .filter(|(w, _)| content.contains(*w))
        .map(|(_, weight)| weight)
        .sum();
    hit / total
}

/// Fills a predicate's subject and object from what the sentence names; returns how well the
/// types fit (2 per slot filled by something of its type, 1 per name of unknown type) and the
/// claim.
fn fill(
    predicate: &Predicate,
    profile: &Profile,
    tokens: &[Token<'_>],
    mentions: &[Mention],
    numbers: &[Value],
    sentence: &str,
) -> Option<(f64, Claim)> {
    let type_fits = |m: &Mention, wanted: &[String]| -> Option<f64> {
        if m.types.is_empty() {
            Some(1.0)
        } else if wanted.iter().any(|w| w == "any" || m.types.contains(w)) {
            Some(2.0)
        } else {
            None
        }
    };
    let claim = |subject: ClaimSubject, object: String| Claim {
        predicate: predicate.name.clone(),
        kind: predicate.kind,
        subject,
        object,
        sentence: sentence.trim().to_owned(),
        extractor: String::new(),
        confidence: 1.0,
    };
    if predicate.kind == PredicateKind::Rename {
        if mentions.len() != 2 {
            return None;
        }
        // "Y was renamed X" / "Y is now called X" name the old one first.
        let lower = sentence.to_lowercase();
        let old_first = OLD_NAME_FIRST.iter().any(|cue| lower.contains(cue));
        let (new, old) = if old_first {
            (&mentions[1], &mentions[0])
        } else {
            (&mentions[0], &mentions[1])
        };
        return Some((
            FULL_FIT,
            claim(ClaimSubject::Named(new.name.clone()), old.name.clone()),
        ));
    }
    let object_type = predicate.object_type.as_str();
    let subjects: Vec<(f64, Option<&Mention>)> = match &predicate.fixed_subject {
        Some(_) => vec![(2.0, None)],
        None => mentions
            .iter()
            .filter_map(|m| type_fits(m, &predicate.subject_types).map(|f| (f, Some(m))))
            .collect(),
    };
    let mut best: Option<(f64, Claim)> = None;
    for (subject_fit, subject) in subjects {
        let subject_claim = match (subject, &predicate.fixed_subject) {
            (Some(m), _) => ClaimSubject::Named(m.name.clone()),
            (None, Some(fixed)) => ClaimSubject::Fixed(fixed.clone()),
            (None, None) => continue,
        };
        let object = match object_type {
            "number" => best_number(profile, numbers).map(|v| (2.0, v.text.clone())),
            "text" | "any" => subject
                .and_then(|m| text_object(tokens, m, mentions, sentence))
                .map(|t| (2.0, t)),
            entity => mentions
                .iter()
                .filter(|m| Some(*m) != subject)
                .filter_map(|m| type_fits(m, &[entity.to_owned()]).map(|f| (f, m)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.from.cmp(&a.1.from)))
                .map(|(f, m)| (f, without_type_noun(&m.name, entity))),
        };
        let Some((object_fit, object)) = object else {
            continue;
        };
        let fit = subject_fit + object_fit;
        if best.as_ref().is_none_or(|(b, _)| fit > *b) {
            best = Some((fit, claim(subject_claim, object)));
        }
    }
    best
}

/// An entity object as the templates write it: "the Helix team" in a `team` slot is `Helix`.
pub(crate) fn without_type_noun(name: &str, object_type: &str) -> String {
    let name = name.trim();
    let name = name
        .strip_prefix("the ")
        .or_else(|| name.strip_prefix("The "))
        .unwrap_or(name);
    match name.rsplit_once(' ') {
        Some((head, last)) if last.eq_ignore_ascii_case(object_type) && !head.trim().is_empty() => {
            head.trim().to_owned()
        }
        _ => name.to_owned(),
    }
}

/// The number whose unit words best match the predicate's unit (the first on a tie).
fn best_number<'a>(profile: &Profile, numbers: &'a [Value]) -> Option<&'a Value> {
    let overlap = |v: &Value| {
        v.unit
            .iter()
            .filter(|w| profile.unit.contains(*w) || profile.words.contains_key(*w))
            .count()
    };
    let best = numbers
        .iter()
        .max_by(|a, b| overlap(a).cmp(&overlap(b)).then(b.at.cmp(&a.at)))?;
    if !profile.unit.is_empty() && overlap(best) == 0 && numbers.len() > 1 {
        return None;
    }
    Some(best)
}

/// Words that may join a subject to a descriptive object ("X is our Y", "Meet X, a Y").
const LINKS: &[&str] = &[
    "is", "are", "a", "an", "the", "our", "its", "their", ",", ":", "—", "–", "-",
];

/// The descriptive text after a subject, when only linking words stand between them and the
/// text runs to the end of the sentence in a few words.
fn text_object(
    tokens: &[Token<'_>],
    subject: &Mention,
    mentions: &[Mention],
    sentence: &str,
) -> Option<String> {
    if subject.from > 1 || mentions.iter().any(|m| m.from >= subject.to) {
        return None;
    }
    let mut at = subject.to;
    let mut saw_link = false;
    while at < tokens.len() && LINKS.contains(&tokens[at].lower.as_str()) {
        saw_link = true;
        at += 1;
    }
    if !saw_link || at >= tokens.len() {
        return None;
    }
    let words = tokens[at..].iter().filter(|t| is_word(t)).count();
    if !(1..=8).contains(&words) {
        return None;
    }
    let text = sentence[tokens[at].start..]
        .trim()
        .trim_end_matches(['.', '!'])
        .trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests;
