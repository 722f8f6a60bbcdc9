//! Grouping failure signals into patterns: the same missing entity asked repeatedly (across
//! spellings), a stale sector, a missing relationship type (the same relation asked of different
//! entities, clustered by meaning), a contradiction. Pure: the caller passes the signals of the
//! window, the thresholds and the sentence encoder if one is loaded.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::knowledge::encoder::{SentenceEncoder, cosine};
use crate::knowledge::words::{is_stop_word, stem};
use crate::signal::{Severity, SeverityThresholds, SignalType, severity};

/// Cosine similarity (by the sentence encoder) at which two relations a failed question asks
/// are one: "pets" and "dogs", "job" and "work", "research" and "studies" (0.78 to 0.84 by
/// all-MiniLM-L6-v2), not "activities" and "hobbies" (0.65) nor "job" and "career" (0.68).
pub const RELATION_MIN_SIMILARITY: f32 = 0.75;

/// Words of a question that name neither an entity nor the relation asked: pronouns,
/// possessives, amounts and auxiliaries ("how *many* children does *her* son *have*").
/// General English, not any ontology's words.
#[rustfmt::skip]
const NOT_RELATION_WORDS: &[&str] = &[
    "he", "she", "him", "her", "his", "hers", "them", "my", "your", "me", "you", "us", "i", "we",
    "our", "their", "it", "its", "they", "this", "that", "these", "those", "there", "many",
    "much", "long", "often", "old", "far", "kind", "kinds", "sort", "sorts", "type", "types",
    "ever", "also", "still", "usually", "recently", "currently", "any", "some", "all", "been",
    "being", "were", "will", "would", "could", "has", "have", "had", "do", "does", "did",
];

/// One signal as the analyst recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedSignal {
    /// Its type.
    pub kind: SignalType,
    /// What it concerns: entity, relationship or sector, as reported.
    pub subject: String,
    /// The agent that reported it.
    pub agent: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The question that failed, as asked (its names are written capitalised); empty when
    /// unknown.
    pub query: String,
}

/// What a pattern is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PatternKind {
    /// An entity the graph lacks (entity_missing, query_pattern).
    MissingEntity,
    /// A region whose answers go stale (temporal_stale).
    StaleSector,
    /// A relationship the graph lacks (relationship_unknown).
    MissingRelationshipType,
    /// Sources that contradict each other (confidence_drop).
    Contradiction,
}

impl PatternKind {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            PatternKind::MissingEntity => "missing_entity",
            PatternKind::StaleSector => "stale_sector",
            PatternKind::MissingRelationshipType => "missing_relationship_type",
            PatternKind::Contradiction => "contradiction",
        }
    }

    /// The pattern a signal type feeds.
    pub fn of(kind: SignalType) -> Self {
        match kind {
            SignalType::EntityMissing | SignalType::QueryPattern => PatternKind::MissingEntity,
            SignalType::TemporalStale => PatternKind::StaleSector,
            SignalType::RelationshipUnknown => PatternKind::MissingRelationshipType,
            SignalType::ConfidenceDrop => PatternKind::Contradiction,
        }
    }
}

/// A group of signals with one cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// Kind.
    pub kind: PatternKind,
    /// The folded subject every spelling shares.
    pub key: String,
    /// Signals in it.
    pub signals: u64,
    /// Distinct agents.
    pub agents: u64,
    /// Severity from frequency and spread.
    pub severity: Severity,
    /// First signal.
    pub first_seen: DateTime<Utc>,
    /// Latest signal.
    pub last_seen: DateTime<Utc>,
    /// The distinct questions its signals report as failed, oldest first, at most
    /// [`MAX_PATTERN_QUERIES`]: what relationship discovery reads for a missing relationship
    /// type.
    pub queries: Vec<String>,
}

/// Questions a pattern keeps, at most.
pub const MAX_PATTERN_QUERIES: usize = 100;

/// Folds spellings of one subject together: case, punctuation, spacing and a leading "the".
pub fn fold(subject: &str) -> String {
    let words: Vec<String> = subject
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let start = usize::from(words.len() > 1 && words[0] == "the");
    words[start..].join(" ")
}

/// The words of a failed question that name the relation it asks, in order: its subject's
/// words (the question's key words, or a predicate's name) less the words `query` writes as names
/// (capitalised past a sentence's start, or holding a digit: "Melanie", "KEP-12"), stop words
/// and [`NOT_RELATION_WORDS`]. "activities melanie done her family" of "What activities has
/// Melanie done with her family?" asks `activities done family`. Without a query, only the
/// subject's own words are left out that way.
pub fn relation_words(subject: &str, query: &str) -> Vec<String> {
    let names = named_words(query);
    subject
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| {
            !names.contains(w)
                && !w.chars().any(|c| c.is_ascii_digit())
                && !is_stop_word(w)
                && !NOT_RELATION_WORDS.contains(&w.as_str())
        })
        .collect()
}

/// Words a text writes as names, lower-cased: capitalised (or holding a capital) anywhere but at
/// a sentence's start, or holding a digit.
fn named_words(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut starts_sentence = true;
    for word in text.split_whitespace() {
        for part in word
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
        {
            let capital = !starts_sentence && part.chars().any(char::is_uppercase);
            if capital || part.chars().any(|c| c.is_ascii_digit()) {
                named.push(part.to_lowercase());
            }
        }
        if word.chars().any(char::is_alphanumeric) {
            starts_sentence = word.ends_with(['.', '?', '!', ':']);
        }
    }
    named
}

/// Groups the signals into patterns, most severe first, then most frequent. A missing
/// relationship type is keyed by the relation its question asks, not the whole question: its
/// first relation word ([`relation_words`]), the same stem for every spelling ("activity",
/// "activities"), and with `encoder` one group for relations that mean the same
/// ([`RELATION_MIN_SIMILARITY`]: "pets" and "dogs"). So the questions that ask one relation of
/// many entities form one pattern, and its severity counts all of them. A question with no
/// relation word left keeps its whole subject as key.
pub fn cluster(
    signals: &[ObservedSignal],
    thresholds: &SeverityThresholds,
    encoder: Option<&dyn SentenceEncoder>,
) -> Vec<Pattern> {
    let mut groups: BTreeMap<(PatternKind, String), Vec<&ObservedSignal>> = BTreeMap::new();
    let mut relations: Vec<&ObservedSignal> = Vec::new();
    for signal in signals {
        let kind = PatternKind::of(signal.kind);
        if kind == PatternKind::MissingRelationshipType
            && !relation_words(&signal.subject, &signal.query).is_empty()
        {
            relations.push(signal);
            continue;
        }
        let key = fold(&signal.subject);
        if key.is_empty() {
            continue;
        }
        groups.entry((kind, key)).or_default().push(signal);
    }
    for (key, members) in relation_groups(&relations, encoder) {
        groups
            .entry((PatternKind::MissingRelationshipType, key))
            .or_default()
            .extend(members);
    }
    let mut patterns: Vec<Pattern> = groups
        .into_iter()
        .map(|((kind, key), members)| {
            let mut agents: Vec<&str> = members.iter().map(|s| s.agent.as_str()).collect();
            agents.sort_unstable();
            agents.dedup();
            let (signals, agents) = (members.len() as u64, agents.len() as u64);
            let mut by_time: Vec<&&ObservedSignal> = members.iter().collect();
            by_time.sort_by_key(|s| s.at);
            let mut queries: Vec<String> = Vec::new();
            for signal in by_time {
                let query = signal.query.trim();
                if !query.is_empty()
                    && queries.len() < MAX_PATTERN_QUERIES
                    && !queries.iter().any(|q| q == query)
                {
                    queries.push(query.to_owned());
                }
            }
            Pattern {
                kind,
                key,
                signals,
                agents,
                severity: severity(signals, agents, thresholds),
                first_seen: members.iter().map(|s| s.at).min().unwrap_or_default(),
                last_seen: members.iter().map(|s| s.at).max().unwrap_or_default(),
                queries,
            }
        })
        .collect();
    patterns.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.signals.cmp(&a.signals))
            .then(a.key.cmp(&b.key))
    });
    patterns
}

/// The stem a relation word is grouped by: the knowledge model's light stem, a plural in -ies
/// first made singular ("activities" meets "activity").
fn relation_stem(word: &str) -> String {
    match word.strip_suffix("ies") {
        Some(base) if base.len() > 2 => stem(&format!("{base}y")),
        _ => stem(word),
    }
}

/// Missing-relationship signals grouped by the relation their questions ask: by the stem of
/// their first relation word, then (with `encoder`) each group joins the first larger one whose
/// relation word means the same. Each group is keyed by its relation word as most often written.
fn relation_groups<'a>(
    signals: &[&'a ObservedSignal],
    encoder: Option<&dyn SentenceEncoder>,
) -> Vec<(String, Vec<&'a ObservedSignal>)> {
    // Stem → (spellings with their counts, members).
    let mut by_stem: BTreeMap<String, (BTreeMap<String, usize>, Vec<&'a ObservedSignal>)> =
        BTreeMap::new();
    for signal in signals {
        let Some(head) = relation_words(&signal.subject, &signal.query)
            .into_iter()
            .next()
        else {
            continue;
        };
        let group = by_stem.entry(relation_stem(&head)).or_default();
        *group.0.entry(head).or_default() += 1;
        group.1.push(signal);
    }
    let mut groups: Vec<(String, Vec<&'a ObservedSignal>)> = by_stem
        .into_values()
        .map(|(spellings, members)| {
            let word = spellings
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(word, _)| word)
                .unwrap_or_default();
            (word, members)
        })
        .collect();
    // Largest first: a group joins one at least as large.
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let words: Vec<&str> = groups.iter().map(|(word, _)| word.as_str()).collect();
    let Some(vectors) = encoder
        .and_then(|e| e.encode(&words).ok())
        .filter(|v| v.len() == words.len())
    else {
        return groups;
    };
    let mut leaders: Vec<usize> = Vec::new();
    let mut joined: Vec<(String, Vec<&'a ObservedSignal>)> = Vec::new();
    for (at, (word, members)) in groups.into_iter().enumerate() {
        let leader = leaders
            .iter()
            .position(|&l| cosine(&vectors[l], &vectors[at]) >= RELATION_MIN_SIMILARITY);
        match leader {
            Some(place) => joined[place].1.extend(members),
            None => {
                leaders.push(at);
                joined.push((word, members));
            }
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::signal::tests::thresholds as t;

    fn s(kind: SignalType, subject: &str, agent: &str) -> ObservedSignal {
        ObservedSignal {
            kind,
            subject: subject.into(),
            agent: agent.into(),
            at: Utc::now(),
            query: String::new(),
        }
    }

    /// A failed question answered by passages, as retrieval reports it: its key words as
    /// subject.
    fn asked(query: &str, agent: &str) -> ObservedSignal {
        ObservedSignal {
            query: query.into(),
            ..s(
                SignalType::RelationshipUnknown,
                &crate::knowledge::ask::key_words(query).join(" "),
                agent,
            )
        }
    }

    /// An encoder that knows a few words' meanings: each word's vector is its meaning's axis.
    struct Meanings(&'static [(&'static str, usize)]);

    impl SentenceEncoder for Meanings {
        fn id(&self) -> &str {
            "meanings"
        }

        fn encode(
            &self,
            texts: &[&str],
        ) -> Result<Vec<Vec<f32>>, crate::knowledge::encoder::EncodeError> {
            Ok(texts
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let axis = self
                        .0
                        .iter()
                        .find(|(word, _)| word == text)
                        .map_or(100 + i, |(_, axis)| *axis);
                    let mut v = vec![0.0; 200];
                    v[axis] = 1.0;
                    v
                })
                .collect())
        }
    }

    #[test]
    fn the_relation_words_of_a_question_leave_its_names_out() {
        let words =
            |q: &str| relation_words(&crate::knowledge::ask::key_words(q).join(" "), q).join(" ");
        assert_eq!(
            words("What activities has Melanie done with her family?"),
            "activities done family"
        );
        assert_eq!(
            words("What activities does Nate do with his turtles?"),
            "activities turtles"
        );
        assert_eq!(words("How many children does Caroline have?"), "children");
        assert_eq!(words("Who wrote KEP-12?"), "wrote");
        // Without the question, the subject's own words.
        assert_eq!(relation_words("owned_by", ""), ["owned"]);
    }

    #[test]
    fn questions_asking_one_relation_of_many_entities_form_one_pattern() {
        let signals = vec![
            asked("What activities has Melanie done with her family?", "a1"),
            asked("What activities does Melanie partake in?", "a2"),
            asked("What activities does Nate do with his turtles?", "a3"),
            asked(
                "What activity does Audrey's dog like at the dog park?",
                "a4",
            ),
            asked("What pets does Nate have?", "a5"),
            asked("What dogs does Audrey have?", "a1"),
            asked("What research has Caroline done?", "a2"),
            s(SignalType::EntityMissing, "Project Kite", "a1"),
        ];
        let keys = |patterns: &[Pattern]| {
            patterns
                .iter()
                .map(|p| (p.kind.name(), p.key.clone(), p.signals, p.agents))
                .collect::<Vec<_>>()
        };
        // By stems: "activity" meets "activities"; "pets" and "dogs" stay apart.
        let by_stems = cluster(&signals, &t(), None);
        assert_eq!(
            keys(&by_stems),
            [
                ("missing_relationship_type", "activities".to_owned(), 4, 4),
                ("missing_relationship_type", "dogs".to_owned(), 1, 1),
                ("missing_relationship_type", "pets".to_owned(), 1, 1),
                ("missing_entity", "project kite".to_owned(), 1, 1),
                ("missing_relationship_type", "research".to_owned(), 1, 1),
            ]
        );
        // Severity counts the whole cluster: four signals of four agents, where each question
        // alone is one signal of one agent.
        assert_eq!(by_stems[0].severity, Severity::High);
        // Its questions, each once, for relationship discovery to read.
        assert_eq!(
            by_stems[0].queries,
            signals[..4]
                .iter()
                .map(|s| s.query.clone())
                .collect::<Vec<_>>()
        );
        assert!(by_stems[3].queries.is_empty(), "no question reported");
        for one in &signals[..4] {
            let alone = cluster(std::slice::from_ref(one), &t(), None);
            assert_eq!(alone[0].severity, Severity::Low);
        }
        // By meaning: "dogs" joins "pets".
        let encoder = Meanings(&[("pets", 1), ("dogs", 1), ("activities", 2), ("research", 3)]);
        let by_meaning = cluster(&signals, &t(), Some(&encoder));
        let pets = by_meaning
            .iter()
            .find(|p| p.kind == PatternKind::MissingRelationshipType && p.signals == 2)
            .expect("pets and dogs");
        assert!(["pets", "dogs"].contains(&pets.key.as_str()), "{pets:?}");
        assert_eq!(pets.agents, 2);
        assert_eq!(by_meaning.len(), 4, "{:?}", keys(&by_meaning));
    }

    #[test]
    fn spellings_of_one_missing_entity_form_one_pattern() {
        let mut signals: Vec<ObservedSignal> = (0..11)
            .map(|i| {
                s(
                    SignalType::EntityMissing,
                    ["Project Kite", "project kite", "the Project-Kite"][i % 3],
                    &format!("agent-{i}"),
                )
            })
            .collect();
        signals.push(s(SignalType::QueryPattern, "PROJECT KITE", "agent-0"));
        signals.push(s(SignalType::TemporalStale, "pricing", "agent-1"));
        let patterns = cluster(&signals, &t(), None);
        assert_eq!(patterns.len(), 2);
        assert_eq!(
            (patterns[0].kind, patterns[0].key.as_str()),
            (PatternKind::MissingEntity, "project kite")
        );
        assert_eq!(
            (
                patterns[0].signals,
                patterns[0].agents,
                patterns[0].severity
            ),
            (12, 11, Severity::Critical)
        );
        assert_eq!(
            (patterns[1].kind, patterns[1].severity),
            (PatternKind::StaleSector, Severity::Low)
        );
    }

    #[test]
    fn empty_subjects_are_not_patterns() {
        assert!(cluster(&[s(SignalType::EntityMissing, " ?! ", "a")], &t(), None).is_empty());
    }
}
