//! Applicability: the scope a value holds in (key/value pairs such as `region=EU`,
//! `plan=Pro`; none means everywhere), read from a sentence's scoping phrase ("In the EU, …",
//! "…, for Enterprise customers.") with the scope values an ontology declares, and the decision
//! over values that differ by scope: one value for the scope asked about, or `NeedsScope` with
//! each scope and its value — neither a conflict nor a hedge. Pure: extraction
//! ([`super::pipeline::Extraction::scoped_claims`]), the graph's facts ([`super::graph::Fact::scope`]),
//! answers ([`super::designs`]) and the firewall use it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::words::same_value;

/// Most keys a scope may have.
pub const MAX_SCOPE_KEYS: usize = 8;

/// Longest key or value, in bytes.
pub const MAX_SCOPE_PART_BYTES: usize = 128;

/// Where a value holds: every key must match. The empty scope is everywhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Scope(BTreeMap<String, String>);

/// A scope that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// A part is not `key=value`.
    #[error("scope part {0:?} is not key=value")]
    NotKeyValue(String),
    /// The same key twice with different values.
    #[error("scope key {0:?} is given two values")]
    TwoValues(String),
    /// Too many keys, or a key or value too long.
    #[error(
        "a scope has at most {MAX_SCOPE_KEYS} keys of at most {MAX_SCOPE_PART_BYTES} bytes each"
    )]
    TooLarge,
}

impl Scope {
    /// Everywhere.
    pub fn everywhere() -> Self {
        Scope::default()
    }

    /// `key=value` pairs separated by commas or semicolons (`region=EU, plan=Pro`); keys are
    /// lower-cased, values kept as written; the empty text is everywhere.
    pub fn parse(text: &str) -> Result<Self, ScopeError> {
        let mut scope: BTreeMap<String, String> = BTreeMap::new();
        for part in text
            .split([',', ';'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (key, value) = part
                .split_once('=')
                .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .ok_or_else(|| ScopeError::NotKeyValue(part.to_string()))?;
            if key.len() > MAX_SCOPE_PART_BYTES || value.len() > MAX_SCOPE_PART_BYTES {
                return Err(ScopeError::TooLarge);
            }
            match scope.get(&key) {
                Some(held) if !same_value(held, &value) => return Err(ScopeError::TwoValues(key)),
                Some(_) => {}
                None => {
                    scope.insert(key, value);
                }
            }
        }
        let scope = Scope(scope);
        scope.check()?;
        Ok(scope)
    }

    /// Whether the scope is within its bounds and every key and value is one `parse` reads
    /// back (a scope deserialised from an event is checked with this).
    pub fn check(&self) -> Result<(), ScopeError> {
        if self.0.len() > MAX_SCOPE_KEYS {
            return Err(ScopeError::TooLarge);
        }
        for (key, value) in &self.0 {
            if key.len() > MAX_SCOPE_PART_BYTES || value.len() > MAX_SCOPE_PART_BYTES {
                return Err(ScopeError::TooLarge);
            }
            let plain = |part: &str| plain_part(part) && part.trim() == part;
            if !plain(key) || !plain(value) || key.to_lowercase() != *key {
                return Err(ScopeError::NotKeyValue(format!("{key}={value}")));
            }
        }
        Ok(())
    }

    /// The scope as [`Scope::parse`] reads it back: `key=value` pairs joined by `, `, the empty
    /// text for everywhere (how the store and the wire keep it).
    pub fn encode(&self) -> String {
        if self.0.is_empty() {
            String::new()
        } else {
            self.to_string()
        }
    }

    /// This scope inside `wider`: every key of both, this one's value where both name a key (a
    /// sentence's own phrase narrows or overrides its page's front matter).
    pub fn inside(&self, wider: &Scope) -> Scope {
        let mut merged = wider.0.clone();
        merged.extend(self.0.iter().map(|(k, v)| (k.clone(), v.clone())));
        Scope(merged)
    }

    /// Whether this is everywhere.
    pub fn is_everywhere(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`, if the scope sets it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Whether a value held in `self` answers a question about `asked`: every key of `self` is
    /// set to the same value in `asked` (case aside).
    pub fn within(&self, asked: &Scope) -> bool {
        self.0
            .iter()
            .all(|(key, value)| asked.get(key).is_some_and(|v| same_value(v, value)))
    }

    /// Whether no key of `self` is set to another value in `asked`: `self` may hold for part of
    /// what `asked` covers.
    pub fn meets(&self, asked: &Scope) -> bool {
        self.0
            .iter()
            .all(|(key, value)| asked.get(key).is_none_or(|v| same_value(v, value)))
    }

    /// Whether `self` sets every key `other` sets, to the same value, and more.
    pub fn narrower_than(&self, other: &Scope) -> bool {
        other.within(self) && self.0.len() > other.0.len()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("everywhere");
        }
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(", "))
    }
}

/// Whether `part` (trimmed) can be a scope's key or value: non-empty, at most
/// [`MAX_SCOPE_PART_BYTES`] bytes, without `=`, `,`, `;` or control characters. The ontology's
/// declared dimensions and values and every scope parsed or received are held to it.
pub fn plain_part(part: &str) -> bool {
    let part = part.trim();
    !part.is_empty()
        && part.len() <= MAX_SCOPE_PART_BYTES
        && !part.contains(['=', ',', ';'])
        && !part.contains(char::is_control)
}

/// The scope values an ontology declares, dimension by dimension (`region`: EU, US; `plan`:
/// Free, Pro). Only declared values scope a sentence: an unknown place name stays text.
#[derive(Debug, Clone, Default)]
pub struct ScopeVocabulary {
    /// (dimension, value as declared), longest value first so "North America" is found before
    /// "America".
    values: Vec<(String, String)>,
}

/// Words that open a scoping phrase.
const SCOPE_PREPOSITIONS: [&str; 9] = [
    "in",
    "for",
    "on",
    "under",
    "within",
    "across",
    "at",
    "throughout",
    "outside",
];

/// Longest scoping phrase, in words.
const MAX_PHRASE_WORDS: usize = 8;

impl ScopeVocabulary {
    /// A vocabulary of `dimension -> values`.
    pub fn new<'a>(dimensions: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) -> Self {
        let mut values: Vec<(String, String)> = dimensions
            .into_iter()
            .flat_map(|(dimension, values)| {
                values
                    .into_iter()
                    .map(move |v| (dimension.to_lowercase(), v.trim().to_string()))
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.cmp(b)));
        ScopeVocabulary { values }
    }

    /// Whether the ontology declares no scope value (nothing is ever scoped).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The scope a page's front matter (a `---` block on its first line) gives everything the
    /// page says: each `key: value` line whose key is a declared dimension and whose value one of
    /// its declared values (`region: EU`), and a `scope: region=EU, plan=Pro` line read the same
    /// way pair by pair. Anything else in the block is not a scope (it may be a fact the
    /// structured stage reads). Everywhere without front matter.
    pub fn front_matter_scope(&self, text: &str) -> Scope {
        let mut lines = text.trim_start().lines();
        if lines.next().map(str::trim) != Some("---") {
            return Scope::everywhere();
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut closed = false;
        for line in lines {
            if line.trim() == "---" {
                closed = true;
                break;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let key = key.trim().to_lowercase();
            if key == "scope" {
                pairs.extend(value.split([',', ';']).filter_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    Some((k.trim().to_lowercase(), v.trim().to_owned()))
                }));
            } else {
                pairs.push((key, value.trim().trim_matches(['"', '\'']).to_owned()));
            }
        }
        if !closed {
            return Scope::everywhere();
        }
        let mut scope = BTreeMap::new();
        for (dimension, value) in pairs {
            if let Some((_, declared)) = self
                .values
                .iter()
                .find(|(d, v)| *d == dimension && v.eq_ignore_ascii_case(&value))
            {
                scope.insert(dimension, declared.clone());
            }
        }
        Scope(scope)
    }

    /// The scope a sentence states in a phrase of its own — leading and closed by a comma ("In
    /// the EU, refunds take 14 days.") or trailing, after a comma or at the very end ("Refunds
    /// take 14 days in the EU.") — opened by a preposition, at most eight words, naming declared
    /// values; with the sentence without that phrase. `None` when it states none: the sentence
    /// is read as it is. A caller should read the shortened sentence first and fall back to the
    /// whole one, since a trailing "in the EU" may be the value itself.
    pub fn scope_of(&self, sentence: &str) -> Option<(Scope, String)> {
        let trimmed = sentence.trim();
        let (body, stop) = match trimmed.char_indices().last() {
            Some((at, '.' | '!' | '?')) => (&trimmed[..at], &trimmed[at..]),
            _ => (trimmed, ""),
        };
        if let Some((phrase, rest)) = body.split_once(',')
            && let Some(scope) = self.phrase_scope(phrase, true)
            && !rest.trim().is_empty()
        {
            return Some((scope, format!("{}{stop}", capitalise(rest.trim()))));
        }
        if let Some((rest, phrase)) = body.rsplit_once(',')
            && let Some(scope) = self.phrase_scope(phrase, true)
            && !rest.trim().is_empty()
        {
            return Some((scope, format!("{}{stop}", rest.trim())));
        }
        // A trailing phrase without a comma: the last preposition that opens one.
        let words: Vec<(usize, &str)> = body
            .split_whitespace()
            .map(|w| (w.as_ptr() as usize - body.as_ptr() as usize, w))
            .collect();
        let first = words.len().saturating_sub(MAX_PHRASE_WORDS).max(1);
        for at in (first..words.len()).rev() {
            let (offset, word) = words[at];
            if !SCOPE_PREPOSITIONS.contains(&word.to_lowercase().as_str()) {
                continue;
            }
            if let Some(scope) = self.phrase_scope(&body[offset..], false) {
                return Some((scope, format!("{}{stop}", body[..offset].trim_end())));
            }
        }
        None
    }

    /// The scope a phrase states: it opens with a preposition, is short, and every declared
    /// value it names sets its dimension (two values of one dimension: no scope). A phrase
    /// that is not closed off by a comma must end at its value or one word after it ("in the
    /// EU", "for Pro customers"), so "for Pro customers take 30 days" is not taken for one.
    fn phrase_scope(&self, phrase: &str, closed: bool) -> Option<Scope> {
        let words: Vec<&str> = phrase
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .collect();
        let opens = words
            .first()
            .is_some_and(|w| SCOPE_PREPOSITIONS.contains(&w.to_lowercase().as_str()));
        if !opens || words.len() > MAX_PHRASE_WORDS {
            return None;
        }
        let mut taken = vec![false; words.len()];
        let mut last_end = 0;
        let mut scope = BTreeMap::new();
        for (dimension, value) in &self.values {
            let value_words: Vec<&str> = value.split_whitespace().collect();
            let Some(at) = (1..words.len())
                .filter(|at| at + value_words.len() <= words.len())
                .find(|&at| {
                    value_words
                        .iter()
                        .enumerate()
                        .all(|(i, v)| !taken[at + i] && value_word_matches(v, words[at + i]))
                })
            else {
                continue;
            };
            if scope.contains_key(dimension) {
                return None;
            }
            scope.insert(dimension.clone(), value.clone());
            taken[at..at + value_words.len()].fill(true);
            last_end = last_end.max(at + value_words.len());
        }
        if scope.is_empty() || (!closed && words.len() > last_end + 1) {
            return None;
        }
        Some(Scope(scope))
    }
}

/// Whether a phrase's word is a declared value's word: an acronym as declared ("US", not the
/// pronoun "us"), any other word case aside.
fn value_word_matches(declared: &str, word: &str) -> bool {
    let acronym = declared.chars().filter(|c| c.is_alphabetic()).count() > 1
        && declared
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
    if acronym {
        declared == word
    } else {
        same_value(declared, word)
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The answer for one slot once scopes are weighed.
#[derive(Debug, Clone, PartialEq)]
pub enum Applicable<V> {
    /// Nothing holds in the scope asked about.
    Nothing,
    /// One value holds throughout the scope asked about.
    One(V),
    /// Within the scope asked about the value differs by a narrower scope: each scope with its
    /// value, the widest first (its value holds where no narrower one does).
    NeedsScope(Vec<(Scope, V)>),
}

/// Weighs candidates that each hold in a scope, for a question about `asked` (everywhere when
/// the question names no scope). A candidate whose scope sets a key to another value than
/// `asked` does not hold there. Of those that hold throughout `asked`, the narrowest scopes win
/// ("in the EU" over a general statement, for a question about the EU); `decide` picks the value
/// of a group of candidates (the authority-then-recency policy). When candidates narrower than
/// `asked` give values other than the one that holds throughout, the answer needs a scope: each
/// scope with its value, none when they all agree.
pub fn by_scope<C, V>(
    candidates: Vec<(Scope, C)>,
    asked: &Scope,
    decide: impl Fn(Vec<C>) -> Option<V>,
    same: impl Fn(&V, &V) -> bool,
) -> Applicable<V> {
    let mut groups: BTreeMap<Scope, Vec<C>> = BTreeMap::new();
    for (scope, candidate) in candidates {
        if scope.meets(asked) {
            groups.entry(scope).or_default().push(candidate);
        }
    }
    let (throughout, narrower): (Vec<_>, Vec<_>) = groups
        .into_iter()
        .partition(|(scope, _)| scope.within(asked));
    // What holds throughout: the narrowest such statements, a wider one overridden (two that
    // are not nested are weighed together by the policy).
    let holding: Vec<&Scope> = throughout
        .iter()
        .map(|(scope, _)| scope)
        .filter(|s| !throughout.iter().any(|(other, _)| other.narrower_than(s)))
        .collect();
    let base_scope = holding
        .iter()
        .max_by_key(|s| s.0.len())
        .map(|s| (*s).clone());
    let holding: Vec<Scope> = holding.into_iter().cloned().collect();
    let base_candidates: Vec<C> = throughout
        .into_iter()
        .filter(|(scope, _)| holding.contains(scope))
        .flat_map(|(_, candidates)| candidates)
        .collect();
    let base = if base_candidates.is_empty() {
        None
    } else {
        decide(base_candidates)
    };
    let mut split: Vec<(Scope, V)> = narrower
        .into_iter()
        .filter_map(|(scope, candidates)| decide(candidates).map(|value| (scope, value)))
        .collect();
    let differs = split
        .iter()
        .any(|(_, v)| base.as_ref().is_none_or(|b| !same(b, v)));
    match (base, base_scope) {
        (Some(value), _) if !differs => Applicable::One(value),
        (None, _) if split.is_empty() => Applicable::Nothing,
        (base, base_scope) => {
            split.sort_by(|a, b| a.0.0.len().cmp(&b.0.0.len()).then(a.0.cmp(&b.0)));
            let mut listed: Vec<(Scope, V)> = base_scope.zip(base).into_iter().collect();
            listed.extend(split);
            Applicable::NeedsScope(listed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> ScopeVocabulary {
        ScopeVocabulary::new([
            ("region", vec!["EU", "US", "North America", "America"]),
            ("plan", vec!["Free", "Pro", "Enterprise"]),
        ])
    }

    fn scope(text: &str) -> Scope {
        Scope::parse(text).unwrap()
    }

    #[test]
    fn a_pages_front_matter_scopes_what_it_says_and_a_sentence_narrows_it() {
        let v = vocabulary();
        let page = "---\ntitle: Pricing\nregion: us\nowner: Billing\n---\n# Pricing\n";
        assert_eq!(v.front_matter_scope(page), scope("region=US"));
        let both = "---\nscope: region=EU, plan=pro, colour=red\n---\nText.";
        assert_eq!(v.front_matter_scope(both), scope("plan=Pro, region=EU"));
        // Undeclared values, no block, an unclosed block: everywhere.
        assert!(
            v.front_matter_scope("---\nregion: Mars\n---\n")
                .is_everywhere()
        );
        assert!(v.front_matter_scope("region: EU\nText.").is_everywhere());
        assert!(
            v.front_matter_scope("---\nregion: EU\nText.")
                .is_everywhere()
        );
        // A sentence's own phrase narrows or overrides the page's scope.
        assert_eq!(
            scope("plan=Pro").inside(&scope("region=US")),
            scope("plan=Pro, region=US")
        );
        assert_eq!(
            scope("region=EU").inside(&scope("region=US")),
            scope("region=EU")
        );
    }

    #[test]
    fn a_scope_is_read_from_key_value_pairs_and_refused_with_the_reason() {
        assert_eq!(
            scope("Region=EU; plan = Pro").to_string(),
            "plan=Pro, region=EU"
        );
        assert!(scope("").is_everywhere());
        assert_eq!(Scope::everywhere().to_string(), "everywhere");
        assert_eq!(
            Scope::parse("region"),
            Err(ScopeError::NotKeyValue("region".into()))
        );
        assert_eq!(
            Scope::parse("region=EU, region=US"),
            Err(ScopeError::TwoValues("region".into()))
        );
        assert_eq!(scope("region=EU, region=eu"), scope("region=EU"));
        let many: Vec<String> = (0..9).map(|i| format!("k{i}=v")).collect();
        assert_eq!(Scope::parse(&many.join(",")), Err(ScopeError::TooLarge));
        assert_eq!(
            Scope::parse(&format!("k={}", "v".repeat(200))),
            Err(ScopeError::TooLarge)
        );
    }

    #[test]
    fn within_meets_and_narrower_compare_scopes_key_by_key() {
        let eu = scope("region=EU");
        let eu_pro = scope("region=EU, plan=Pro");
        let us = scope("region=US");
        assert!(Scope::everywhere().within(&eu));
        assert!(eu.within(&eu_pro) && !eu_pro.within(&eu));
        assert!(eu_pro.meets(&eu) && !us.meets(&eu));
        assert!(eu_pro.narrower_than(&eu) && !eu.narrower_than(&eu));
        assert!(eu.narrower_than(&Scope::everywhere()));
    }

    #[test]
    fn a_sentence_states_its_scope_in_a_leading_or_trailing_phrase() {
        let vocabulary = vocabulary();
        let read = |s: &str| {
            vocabulary
                .scope_of(s)
                .map(|(scope, rest)| (scope.to_string(), rest))
        };
        assert_eq!(
            read("In the EU, refunds take 14 days."),
            Some(("region=EU".into(), "Refunds take 14 days.".into()))
        );
        assert_eq!(
            read("Refunds take 30 days, for Enterprise customers."),
            Some(("plan=Enterprise".into(), "Refunds take 30 days.".into()))
        );
        assert_eq!(
            read("The Pro plan costs €59 per month in North America."),
            Some((
                "region=North America".into(),
                "The Pro plan costs €59 per month.".into()
            ))
        );
        assert_eq!(
            read("For Pro customers in the EU, support answers within 4 hours."),
            Some((
                "plan=Pro, region=EU".into(),
                "Support answers within 4 hours.".into()
            ))
        );
        // Not a scope: no declared value, no opening preposition, two values of one dimension,
        // or a phrase too long to be one.
        assert_eq!(read("In the summer, refunds take 14 days."), None);
        assert_eq!(read("EU refunds take 14 days."), None);
        assert_eq!(read("In the EU and the US, refunds take 14 days."), None);
        assert_eq!(read("Refunds take 14 days."), None);
        assert_eq!(
            read("In a country that is part of the great and wide EU, refunds take 14 days."),
            None
        );
        // A value is a whole word: "Professional" is not "Pro"; an acronym only in capitals.
        assert_eq!(read("For Professional services, the fee is 10%."), None);
        assert_eq!(read("For us, the fee is 10%."), None);
        // A phrase without a comma ends at its value: this one runs on into the claim.
        assert_eq!(read("Refunds for Pro customers take 30 days."), None);
        assert_eq!(
            read("Refunds take 30 days for Pro customers."),
            Some(("plan=Pro".into(), "Refunds take 30 days.".into()))
        );
    }

    fn decide(values: Vec<&'static str>) -> Option<&'static str> {
        values.into_iter().next()
    }

    fn same(a: &&str, b: &&str) -> bool {
        a == b
    }

    #[test]
    fn values_that_differ_by_scope_need_a_scope_unless_the_question_names_one() {
        let facts = || {
            vec![
                (Scope::everywhere(), "30 days"),
                (scope("region=EU"), "14 days"),
                (scope("region=US"), "30 days"),
            ]
        };
        assert_eq!(
            by_scope(facts(), &Scope::everywhere(), decide, same),
            Applicable::NeedsScope(vec![
                (Scope::everywhere(), "30 days"),
                (scope("region=EU"), "14 days"),
                (scope("region=US"), "30 days"),
            ])
        );
        assert_eq!(
            by_scope(facts(), &scope("region=EU"), decide, same),
            Applicable::One("14 days")
        );
        // No statement for Asia: the general one holds there.
        assert_eq!(
            by_scope(facts(), &scope("region=Asia"), decide, same),
            Applicable::One("30 days")
        );
        // A narrower scope inside the one asked about splits it.
        let plans = vec![
            (scope("region=EU"), "14 days"),
            (scope("region=EU, plan=Enterprise"), "30 days"),
        ];
        assert_eq!(
            by_scope(plans, &scope("region=EU"), decide, same),
            Applicable::NeedsScope(vec![
                (scope("region=EU"), "14 days"),
                (scope("plan=Enterprise, region=EU"), "30 days"),
            ])
        );
    }

    #[test]
    fn scopes_that_agree_are_one_value_and_nothing_holding_is_nothing() {
        let agreeing = vec![(Scope::everywhere(), "49"), (scope("region=EU"), "49")];
        assert_eq!(
            by_scope(agreeing, &Scope::everywhere(), decide, same),
            Applicable::One("49")
        );
        let only_us = vec![(scope("region=US"), "30 days")];
        assert_eq!(
            by_scope(only_us.clone(), &scope("region=EU"), decide, same),
            Applicable::Nothing
        );
        // Asked everywhere, only one region speaks: it is said with its scope.
        assert_eq!(
            by_scope(only_us, &Scope::everywhere(), decide, same),
            Applicable::NeedsScope(vec![(scope("region=US"), "30 days")])
        );
        assert_eq!(
            by_scope(
                Vec::<(Scope, &str)>::new(),
                &Scope::everywhere(),
                decide,
                same
            ),
            Applicable::Nothing
        );
    }
}
