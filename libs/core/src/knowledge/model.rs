//! The model stage's contract and its grounding: a language model proposes claims for the
//! sentences earlier stages left, and every proposed triple is kept only if the sentence itself
//! carries it.
//!
//! The core names the contract (`ClaimModel`, implemented by `ontoloop-llm` over an
//! OpenAI-compatible endpoint) and owns the check (`ground`): the predicate must exist; the
//! sentence must assert a current fact (`semantic::refusal`); the subject must occur in the
//! sentence by its words or its name key (or be the predicate's fixed subject); an entity or text
//! object must occur in it; a number object must occur in it as a number. Anything else is
//! dropped and counted (`ModelUsage`), never stored. A neighbouring predicate picked by mistake
//! (another of the same kind fits the sentence clearly better by meaning, `better_predicate`) is
//! replaced by the better one, grounded again and counted. What the model spends answering
//! (requests, sentences sent, sentences answered from its cache, tokens) it adds to a `ModelCost`
//! on each call, counted with the rest; counters made for a part of the process add to the
//! process's too. Nothing here does IO.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;

use super::encoder::cosine;
use super::extract::{Claim, ClaimSubject};
use super::names::NameNormaliser;
use super::ontology::{Ontology, PredicateKind};
use super::semantic::{self, Lexicon, Profile, Refusal, Scorer, tokens};
use super::words::{STOPWORDS, stem};

/// An OpenAI-compatible chat endpoint for claim extraction (`[firewall.llm]`, `[extract.model]`).
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// Off by default.
    pub enabled: bool,
    /// Base URL, for example `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key; empty for none.
    pub api_key: String,
    /// Whole-request timeout.
    pub timeout_ms: u64,
    /// Prompt version recorded on extracted claims.
    pub prompt_version: String,
}

impl std::fmt::Debug for LlmSettings {
    // The API key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("enabled", &self.enabled)
            .field("base_url", &crate::redact_url(&self.base_url))
            .field("model", &self.model)
            .field(
                "api_key",
                &if self.api_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("timeout_ms", &self.timeout_ms)
            .field("prompt_version", &self.prompt_version)
            .finish()
    }
}

/// Why the model could not be asked or its answer not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "claim model: {}", self.0)
    }
}

impl std::error::Error for ModelError {}

/// A model that proposes claims for sentences. Synchronous: the pipeline is; an implementation
/// over the network bridges to its own runtime.
pub trait ClaimModel: Send + Sync {
    /// Stable id recorded in provenance: `model/<name>/prompt-v<n>`.
    fn id(&self) -> &str;

    /// Claims the sentences make, in the ontology's predicates. Each claim's `sentence` is the
    /// sentence (one of `sentences`) that states it. Unchecked: the pipeline grounds them.
    /// What answering cost is added to `cost` as it is spent, also when the call then fails
    /// (a request whose answer is unreadable was still made and its tokens still paid).
    fn claims(
        &self,
        ontology: &Ontology,
        sentences: &[&str],
        cost: &mut ModelCost,
    ) -> Result<Vec<Claim>, ModelError>;
}

/// What a claim model spent answering: requests to its endpoint, the sentences they carried,
/// the sentences it answered from its cache instead, and the tokens its endpoint reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelCost {
    /// Requests made to the endpoint (0 when every sentence came from the cache).
    pub requests: u64,
    /// Sentences sent in those requests.
    pub sentences_sent: u64,
    /// Sentences answered from the cache, without a request.
    pub cache_hits: u64,
    /// Prompt tokens the endpoint reported (`usage.prompt_tokens`).
    pub prompt_tokens: u64,
    /// Completion tokens the endpoint reported (`usage.completion_tokens`).
    pub completion_tokens: u64,
    /// Tokens in all (`usage.total_tokens`, else prompt + completion); 0 when the endpoint
    /// reports no usage.
    pub tokens: u64,
}

impl ModelCost {
    /// Adds `other`, saturating (the token counts come from the network).
    pub fn add(&mut self, other: &ModelCost) {
        self.requests = self.requests.saturating_add(other.requests);
        self.sentences_sent = self.sentences_sent.saturating_add(other.sentences_sent);
        self.cache_hits = self.cache_hits.saturating_add(other.cache_hits);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.tokens = self.tokens.saturating_add(other.tokens);
    }
}

/// A [`ModelCost`] counted by many threads at once: the model stage's counters and a claim
/// model's own totals keep what was spent in one of these.
#[derive(Debug, Default)]
pub struct CostCounter {
    requests: AtomicU64,
    sentences_sent: AtomicU64,
    cache_hits: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    tokens: AtomicU64,
}

impl CostCounter {
    /// Adds `cost`.
    pub fn add(&self, cost: &ModelCost) {
        let add = |counter: &AtomicU64, n: u64| counter.fetch_add(n, Ordering::Relaxed);
        add(&self.requests, cost.requests);
        add(&self.sentences_sent, cost.sentences_sent);
        add(&self.cache_hits, cost.cache_hits);
        add(&self.prompt_tokens, cost.prompt_tokens);
        add(&self.completion_tokens, cost.completion_tokens);
        add(&self.tokens, cost.tokens);
    }

    /// What was spent so far.
    pub fn get(&self) -> ModelCost {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ModelCost {
            requests: n(&self.requests),
            sentences_sent: n(&self.sentences_sent),
            cache_hits: n(&self.cache_hits),
            prompt_tokens: n(&self.prompt_tokens),
            completion_tokens: n(&self.completion_tokens),
            tokens: n(&self.tokens),
        }
    }
}

/// Why a proposed triple was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ungrounded {
    /// The predicate is not in the ontology.
    UnknownPredicate(String),
    /// The claim's sentence is none of those sent.
    UnknownSentence,
    /// The sentence asserts no current fact.
    Refused(Refusal),
    /// The subject does not occur in the sentence.
    SubjectAbsent(String),
    /// The object does not occur in the sentence (as a number, for a number predicate).
    ObjectAbsent(String),
    /// The object names the subject itself.
    SelfReference(String),
    /// The subject or object is known to be of a type the predicate does not take.
    WrongType(String),
    /// The predicate has a fixed subject and the sentence says none of its words.
    PredicateUnsaid(String),
}

impl fmt::Display for Ungrounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ungrounded::UnknownPredicate(p) => write!(f, "unknown predicate {p:?}"),
            Ungrounded::UnknownSentence => f.write_str("the sentence was not sent"),
            Ungrounded::Refused(r) => write!(f, "the sentence asserts no current fact ({r:?})"),
            Ungrounded::SubjectAbsent(s) => write!(f, "subject {s:?} is not in the sentence"),
            Ungrounded::ObjectAbsent(o) => write!(f, "object {o:?} is not in the sentence"),
            Ungrounded::SelfReference(o) => write!(f, "object {o:?} names the subject itself"),
            Ungrounded::WrongType(n) => write!(f, "{n:?} is of a type the predicate does not take"),
            Ungrounded::PredicateUnsaid(p) => {
                write!(
                    f,
                    "the sentence says nothing of {p:?} (a fixed-subject predicate)"
                )
            }
        }
    }
}

/// The claim if `sentences` carry it: its sentence one of them, its predicate the ontology's
/// (kind and fixed subject taken from there), its subject and object in the sentence. A number
/// object takes the sentence's spelling of the number.
pub fn ground(
    ontology: &Ontology,
    normaliser: &NameNormaliser,
    sentences: &[&str],
    claim: Claim,
) -> Result<Claim, Ungrounded> {
    let Some(predicate) = ontology.predicate(&claim.predicate) else {
        return Err(Ungrounded::UnknownPredicate(claim.predicate));
    };
    let said = claim.sentence.trim();
    let sentence = sentences
        .iter()
        .map(|s| s.trim())
        .find(|s| *s == said)
        .or_else(|| {
            let lower = said.to_lowercase();
            (lower.len() >= 8)
                .then(|| {
                    sentences
                        .iter()
                        .map(|s| s.trim())
                        .find(|s| s.to_lowercase().contains(&lower))
                })
                .flatten()
        })
        .ok_or(Ungrounded::UnknownSentence)?;
    let rename = predicate.kind == PredicateKind::Rename;
    if let Some(refused) = semantic::refusal(sentence, rename) {
        return Err(Ungrounded::Refused(refused));
    }
    let subject = match &predicate.fixed_subject {
        Some(fixed) => ClaimSubject::Fixed(fixed.clone()),
        None => {
            let name = claim.subject.name().trim();
            if name.is_empty() || !mentions(normaliser, sentence, name) {
                return Err(Ungrounded::SubjectAbsent(name.to_owned()));
            }
            ClaimSubject::Named(name.to_owned())
        }
    };
    let object = if predicate.object_type == "number" && !rename {
        number_in(sentence, &claim.object)
            .ok_or_else(|| Ungrounded::ObjectAbsent(claim.object.clone()))?
    } else {
        let object = claim.object.trim();
        if object.is_empty() || !mentions(normaliser, sentence, object) {
            return Err(Ungrounded::ObjectAbsent(object.to_owned()));
        }
        if normaliser.key(object) == normaliser.key(subject.name()) {
            return Err(Ungrounded::SelfReference(object.to_owned()));
        }
        object.to_owned()
    };
    Ok(Claim {
        predicate: predicate.name.clone(),
        kind: predicate.kind,
        subject,
        object,
        sentence: sentence.to_owned(),
        extractor: claim.extractor,
        confidence: claim.confidence,
    })
}

/// What the pipeline knows beyond the sentence, checked after `ground`: names known to be of a
/// type the predicate does not take are refused (a service "led by" someone), and a predicate
/// with a fixed subject — whose subject the sentence cannot show — needs at least one of its
/// words or unit words in the sentence (a bare number is no evidence of a retention period).
pub(crate) fn typed(
    ontology: &Ontology,
    profiles: &[Profile],
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    claim: &Claim,
) -> Result<(), Ungrounded> {
    let Some(at) = ontology
        .predicates()
        .iter()
        .position(|p| p.name == claim.predicate)
    else {
        return Err(Ungrounded::UnknownPredicate(claim.predicate.clone()));
    };
    let predicate = &ontology.predicates()[at];
    if predicate.kind == PredicateKind::Rename {
        return Ok(());
    }
    let known_types = |name: &str| -> BTreeSet<String> {
        let mut types: BTreeSet<String> = lexicon
            .types_of(normaliser, name)
            .map(std::borrow::Cow::into_owned)
            .unwrap_or_default();
        types.extend(normaliser.type_of(name));
        types
    };
    if predicate.fixed_subject.is_none() && !predicate.subject_types.iter().any(|t| t == "any") {
        let types = known_types(claim.subject.name());
        if !types.is_empty() && !types.iter().any(|t| predicate.subject_types.contains(t)) {
            return Err(Ungrounded::WrongType(claim.subject.name().to_owned()));
        }
    }
    if predicate.object_is_entity() {
        let types = known_types(&claim.object);
        if !types.is_empty() && !types.contains(&predicate.object_type) {
            return Err(Ungrounded::WrongType(claim.object.clone()));
        }
    }
    if predicate.fixed_subject.is_some()
        && let Some(profile) = profiles.get(at)
    {
        let said: BTreeSet<String> = words(&claim.sentence).iter().map(|w| stem(w)).collect();
        let hit = profile
            .words
            .keys()
            .chain(profile.unit.iter())
            .any(|w| said.contains(w));
        if !hit {
            return Err(Ungrounded::PredicateUnsaid(claim.predicate.clone()));
        }
    }
    Ok(())
}

/// How much better another predicate must fit for a model's choice to be dropped, per scorer.
const LEXICAL_MARGIN: f64 = 0.1;
const COSINE_MARGIN: f64 = 0.05;

/// The predicate that fits the grounded `claim`'s sentence clearly better by meaning than the
/// model's choice, among predicates of the same kind and object class (number, entity, text): a
/// neighbouring predicate picked by mistake. `None` when the model's choice stands — also where
/// the scorer knows nothing (every fit zero), and for a rename (its phrasings are checked by
/// grounding). The caller grounds the claim again under the better predicate.
pub(crate) fn better_predicate(
    ontology: &Ontology,
    profiles: &[Profile],
    scorer: &Scorer<'_>,
    claim: &Claim,
) -> Option<String> {
    let own = ontology
        .predicates()
        .iter()
        .position(|p| p.name == claim.predicate)?;
    let class =
        |p: &super::ontology::Predicate| (p.kind, p.object_type == "number", p.object_is_entity());
    let predicates = ontology.predicates();
    if predicates[own].kind == PredicateKind::Rename {
        return None;
    }
    let rivals: Vec<usize> = (0..predicates.len())
        .filter(|i| *i != own && class(&predicates[*i]) == class(&predicates[own]))
        .collect();
    if rivals.is_empty() || profiles.len() != predicates.len() {
        return None;
    }
    let (fits, margin): (Vec<f64>, f64) = match scorer {
        Scorer::Lexical => {
            let content: BTreeSet<String> = words(&claim.sentence)
                .iter()
                .map(|w| stem(w))
                .filter(|w| !STOPWORDS.contains(&w.as_str()))
                .collect();
            (
                profiles
                    .iter()
                    .map(|p| semantic::lexical(p, &content))
                    .collect(),
                LEXICAL_MARGIN,
            )
        }
        Scorer::Encoder {
            encoder,
            prototypes,
        } => match encoder.encode(&[claim.sentence.as_str()]) {
            Ok(vectors) if vectors.len() == 1 => (
                prototypes
                    .iter()
                    .map(|protos| {
                        protos
                            .iter()
                            .map(|p| f64::from(cosine(&vectors[0], p)))
                            .fold(f64::MIN, f64::max)
                    })
                    .collect(),
                COSINE_MARGIN,
            ),
            // Without vectors there is no second opinion: grounding alone decides.
            _ => return None,
        },
    };
    let best = rivals
        .into_iter()
        .max_by(|a, b| fits[*a].total_cmp(&fits[*b]))?;
    (fits[best] > fits[own] + margin).then(|| predicates[best].name.clone())
}

/// Lower-cased words of a text (punctuation left out).
fn words(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| t.text.chars().next().is_some_and(char::is_alphanumeric))
        .map(|t| t.lower)
        .collect()
}

fn contains_run(haystack: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether `sentence` names `name`: its words in a row, or a run of words with the same name key
/// ("Pro plan" in "the Pro tier", "Pro" in "the Pro plan").
fn mentions(normaliser: &NameNormaliser, sentence: &str, name: &str) -> bool {
    let said = words(sentence);
    if contains_run(&said, &words(name)) {
        return true;
    }
    let key = normaliser.key(name);
    if key.is_empty() {
        return false;
    }
    if contains_run(&said, &words(&key)) {
        return true;
    }
    let span = words(&key).len() + 1;
    (0..said.len()).any(|from| {
        (from + 1..=(from + span).min(said.len()))
            .any(|to| normaliser.key(&said[from..to].join(" ")) == key)
    })
}

/// The sentence's spelling of the number `object` gives (`"€49"`, `"49.0"` and `"49"` all find
/// `49`), if the sentence states that number.
pub(crate) fn number_in(sentence: &str, object: &str) -> Option<String> {
    let wanted: f64 = numbers(object).first()?.parse().ok()?;
    numbers(sentence)
        .into_iter()
        .find(|n| n.parse::<f64>().is_ok_and(|v| v == wanted))
}

/// The numbers of a text, as written (thousands commas dropped): digit runs with an inner `.`
/// or `,` between digits.
pub(crate) fn numbers(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut number = String::new();
        while i < chars.len() {
            let c = chars[i];
            let inner = matches!(c, '.' | ',')
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                && !number.is_empty();
            if c.is_ascii_digit() || (inner && c == '.') {
                number.push(c);
            } else if !inner {
                break;
            }
            i += 1;
        }
        out.push(number);
    }
    out
}

/// What the model stage did, counted since start (shared by every ontology one setup compiles).
/// Counters made for a part of the process (`ExtractionSetup::tallied`) also add everything to
/// their parent's, so the process's totals still see it all.
#[derive(Debug, Default)]
pub struct ModelCounters {
    calls: AtomicU64,
    errors: AtomicU64,
    sentences: AtomicU64,
    returned: AtomicU64,
    dropped: AtomicU64,
    kept: AtomicU64,
    corrected: AtomicU64,
    cost: CostCounter,
    parent: Option<Arc<ModelCounters>>,
}

/// A snapshot of [`ModelCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelUsage {
    /// Calls to the model (batches of sentences), answered from its cache or over the network.
    pub calls: u64,
    /// Calls that failed (their sentences stayed unclaimed).
    pub errors: u64,
    /// Sentences handed to the model.
    pub sentences: u64,
    /// Triples the model returned.
    pub returned: u64,
    /// Triples dropped by grounding.
    pub dropped: u64,
    /// Triples kept.
    pub kept: u64,
    /// Of the triples grounded, those regrounded under a better-fitting predicate than the
    /// model's (kept or dropped after).
    pub corrected: u64,
    /// What the calls cost: requests to the endpoint, sentences sent, cache hits, tokens.
    pub cost: ModelCost,
}

impl ModelUsage {
    /// What happened between `earlier` and this snapshot of the same counters.
    pub fn since(&self, earlier: &ModelUsage) -> ModelUsage {
        let d = |now: u64, then: u64| now.saturating_sub(then);
        let (c, e) = (&self.cost, &earlier.cost);
        ModelUsage {
            calls: d(self.calls, earlier.calls),
            errors: d(self.errors, earlier.errors),
            sentences: d(self.sentences, earlier.sentences),
            returned: d(self.returned, earlier.returned),
            dropped: d(self.dropped, earlier.dropped),
            kept: d(self.kept, earlier.kept),
            corrected: d(self.corrected, earlier.corrected),
            cost: ModelCost {
                requests: d(c.requests, e.requests),
                sentences_sent: d(c.sentences_sent, e.sentences_sent),
                cache_hits: d(c.cache_hits, e.cache_hits),
                prompt_tokens: d(c.prompt_tokens, e.prompt_tokens),
                completion_tokens: d(c.completion_tokens, e.completion_tokens),
                tokens: d(c.tokens, e.tokens),
            },
        }
    }
}

impl ModelCounters {
    /// Fresh counters that also add to `parent`'s.
    pub(crate) fn child_of(parent: Arc<ModelCounters>) -> Self {
        Self {
            parent: Some(parent),
            ..Self::default()
        }
    }

    /// Adds `n` to the counter `pick` chooses, here and in every parent.
    fn add(&self, pick: fn(&ModelCounters) -> &AtomicU64, n: u64) {
        if n == 0 {
            return;
        }
        let mut counters = Some(self);
        while let Some(c) = counters {
            pick(c).fetch_add(n, Ordering::Relaxed);
            counters = c.parent.as_deref();
        }
    }

    pub(crate) fn call(&self, sentences: usize) {
        self.add(|c| &c.calls, 1);
        self.add(|c| &c.sentences, sentences as u64);
    }

    pub(crate) fn error(&self) {
        self.add(|c| &c.errors, 1);
    }

    pub(crate) fn corrected(&self) {
        self.add(|c| &c.corrected, 1);
    }

    pub(crate) fn triple(&self, kept: bool) {
        self.add(|c| &c.returned, 1);
        if kept {
            self.add(|c| &c.kept, 1);
        } else {
            self.add(|c| &c.dropped, 1);
        }
    }

    pub(crate) fn paid(&self, cost: &ModelCost) {
        let mut counters = Some(self);
        while let Some(c) = counters {
            c.cost.add(cost);
            counters = c.parent.as_deref();
        }
    }

    /// The counts so far.
    pub fn usage(&self) -> ModelUsage {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ModelUsage {
            calls: n(&self.calls),
            errors: n(&self.errors),
            sentences: n(&self.sentences),
            returned: n(&self.returned),
            dropped: n(&self.dropped),
            kept: n(&self.kept),
            corrected: n(&self.corrected),
            cost: self.cost.get(),
        }
    }
}
