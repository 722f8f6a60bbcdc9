//! World files (`ontoloop.world/v1`): an ontology, drift scenarios with timelines, and questions
//! with the expected answer at every checkpoint, and how an answer grades against one. See
//! `WORLD-FORMAT.md`. Parsing is generic: nothing here knows any particular world. `ontoloop
//! ingest` pushes a world's ontology and first timeline; the benchmarks and system tests replay
//! and grade it.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::events::Event;
use crate::knowledge::Ontology;

/// The format tag this parser reads.
pub const FORMAT: &str = "ontoloop.world/v1";

/// A world file that cannot be used; names the field and, for shape errors, the position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("world file: {path}: {message}{}", position.map(|(l, c)| format!(" (line {l}, column {c})")).unwrap_or_default())]
pub struct WorldError {
    /// Field path, for example `scenarios.Fresh.timeline[3].body`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// Line and column, when the JSON itself is wrong.
    pub position: Option<(usize, usize)>,
}

/// A parsed, validated world.
#[derive(Debug, Clone, Deserialize)]
pub struct World {
    /// `ontoloop.world/v1`.
    pub format: String,
    /// World name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub about: String,
    /// Results published for comparison, if any.
    #[serde(default)]
    pub published_deterministic_results: Option<serde_json::Value>,
    /// The ontology block.
    pub ontology: serde_json::Value,
    /// Scenarios in file order.
    pub scenarios: serde_json::Map<String, serde_json::Value>,
    /// Questions.
    pub questions: Vec<Question>,
    /// Parsed scenarios, in file order.
    #[serde(skip)]
    pub parsed: Vec<Scenario>,
}

/// One drift scenario.
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    /// Name (its key in the file).
    #[serde(skip)]
    pub name: String,
    /// How the pages change, in words.
    #[serde(default)]
    pub pages: String,
    /// Graph policy: `patch-changed-pages`, `system-of-record` or `none`.
    pub graph: String,
    /// Events in order.
    pub timeline: Vec<TimelineEntry>,
}

/// One timeline entry.
#[derive(Debug, Clone, Deserialize)]
pub struct TimelineEntry {
    /// When it happens.
    pub at: DateTime<Utc>,
    /// What happens.
    #[serde(flatten)]
    pub kind: TimelineKind,
}

/// What happens on a timeline.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum TimelineKind {
    /// Ask every ask of this step.
    #[serde(rename = "checkpoint")]
    Checkpoint {
        /// The step.
        step: u32,
    },
    /// A page version.
    #[serde(rename = "doc.upsert")]
    DocUpsert {
        /// Page id.
        doc_id: String,
        /// Title.
        #[serde(default)]
        title: String,
        /// Origin.
        origin: String,
        /// Body.
        body: String,
        /// When this version takes effect, if later than the entry's `at` (an extension): until
        /// then the page keeps its version before.
        #[serde(default)]
        effective_from: Option<DateTime<Utc>>,
    },
    /// A page's deletion (an extension of the shared format: its facts end, it is cited no more).
    #[serde(rename = "doc.delete")]
    DocDelete {
        /// Page id.
        doc_id: String,
    },
    /// A source's full list of pages of one origin: the ones it no longer lists are deleted (an
    /// extension of the shared format).
    #[serde(rename = "source.listing")]
    SourceListing {
        /// Origin.
        origin: String,
        /// Every page id the source holds now.
        doc_ids: Vec<String>,
    },
    /// A system-of-record value.
    #[serde(rename = "record.set")]
    RecordSet {
        /// Record system.
        source: String,
        /// Entity.
        entity: String,
        /// Predicate.
        predicate: String,
        /// Value.
        value: String,
        /// When the value takes effect, if later than the entry's `at` (an extension).
        #[serde(default)]
        effective_from: Option<DateTime<Utc>>,
        /// Where the value holds (`{"region": "EU"}`; an extension); absent: everywhere.
        #[serde(default)]
        scope: crate::knowledge::Scope,
    },
    /// A system-of-record rename.
    #[serde(rename = "record.rename")]
    RecordRename {
        /// Record system.
        source: String,
        /// Old name.
        old: String,
        /// New name.
        new: String,
    },
}

impl Scenario {
    /// The scenario's page versions in timeline order: `(doc_id, origin, body)`.
    pub fn pages(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.timeline.iter().filter_map(|entry| match &entry.kind {
            TimelineKind::DocUpsert {
                doc_id,
                origin,
                body,
                ..
            } => Some((doc_id.as_str(), origin.as_str(), body.as_str())),
            _ => None,
        })
    }
}

impl TimelineKind {
    /// The event this entry pushes; `hold` leaves a page unread until maintenance.
    pub fn event(&self, hold: bool) -> Option<Event> {
        match self {
            TimelineKind::Checkpoint { .. } => None,
            TimelineKind::DocUpsert {
                doc_id,
                title,
                origin,
                body,
                effective_from,
            } => Some(Event::DocUpsert {
                doc_id: doc_id.clone(),
                title: title.clone(),
                origin: origin.clone(),
                body: body.clone(),
                acl: Vec::new(),
                hold,
                confidence: None,
                effective_from: *effective_from,
            }),
            TimelineKind::DocDelete { doc_id } => Some(Event::DocDelete {
                doc_id: doc_id.clone(),
            }),
            TimelineKind::SourceListing { origin, doc_ids } => Some(Event::SourceListing {
                origin: origin.clone(),
                doc_ids: doc_ids.clone(),
            }),
            TimelineKind::RecordSet {
                source,
                entity,
                predicate,
                value,
                effective_from,
                scope,
            } => Some(Event::RecordSet {
                source: source.clone(),
                entity: entity.clone(),
                predicate: predicate.clone(),
                value: value.clone(),
                effective_from: *effective_from,
                scope: scope.clone(),
            }),
            TimelineKind::RecordRename { source, old, new } => Some(Event::RecordRename {
                source: source.clone(),
                old: old.clone(),
                new: new.clone(),
            }),
        }
    }
}

/// A question asked at every checkpoint.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// Question id.
    pub id: String,
    /// The drift event it is about, if any.
    #[serde(default)]
    pub event: Option<u32>,
    /// Predicate path; empty for a question no slot answers (every ask names its `passage`).
    pub hops: Vec<String>,
    /// One ask per step.
    pub asks: Vec<Ask>,
}

/// One ask of a question.
#[derive(Debug, Clone, Deserialize)]
pub struct Ask {
    /// Checkpoint step.
    pub step: u32,
    /// Natural-language text.
    pub text: String,
    /// Structured entity (empty for a passage ask).
    #[serde(default)]
    pub entity: String,
    /// Expected answer (empty for a passage ask).
    #[serde(default)]
    pub expected: String,
    /// Whether the answer changed through drift.
    #[serde(default)]
    pub drifted: bool,
    /// The passage that answers a question no slot answers (an extension of the shared format).
    #[serde(default)]
    pub passage: Option<ExpectedPassage>,
    /// A value announced to take effect after this ask's checkpoint, which the answer must note
    /// beside `expected` (an extension of the shared format).
    #[serde(default)]
    pub upcoming: Option<String>,
    /// Where the ask wants the answer to hold (`region=EU`), given as the request's scope; the
    /// answer must then be `expected` (an extension of the shared format).
    #[serde(default)]
    pub scope: Option<String>,
    /// The values differ by scope and the ask names none: the answer must be NEEDS_SCOPE
    /// listing exactly these scopes (`""` for everywhere, else `key=value` pairs) with these
    /// values (an extension of the shared format; `expected` stays empty).
    #[serde(default)]
    pub needs_scope: Option<std::collections::BTreeMap<String, String>>,
    /// The right outcome is no value: `abstain` (nothing the system may know answers it) or
    /// `needs_scope` (the question must name a scope). A value given is wrong. `expected`
    /// stays empty (an extension of the shared format).
    #[serde(default)]
    pub expect: Option<Outcome>,
}

/// An ask's right outcome when it is not a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No value: an abstention.
    Abstain,
    /// No value: a request for scope (`NEEDS_SCOPE`).
    NeedsScope,
}

/// The passage an ask of a question no slot answers must be offered among the first three.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedPassage {
    /// The page it is on.
    pub doc_id: String,
    /// Words it holds (compared lower-cased, spacing normalised).
    pub contains: String,
}

impl ExpectedPassage {
    /// Whether a passage of `doc_id` with `text` is this one.
    pub fn matches(&self, doc_id: &str, text: &str) -> bool {
        let norm = |s: &str| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        doc_id == self.doc_id && norm(text).contains(&norm(&self.contains))
    }
}

impl Question {
    /// Whether no slot answers it: its asks are graded by the passages offered.
    pub fn wants_passages(&self) -> bool {
        self.hops.is_empty()
    }
}

/// Graph policies a scenario may name.
pub const GRAPH_POLICIES: [&str; 3] = ["patch-changed-pages", "system-of-record", "none"];

impl World {
    /// Parses and validates a world file.
    pub fn parse(text: &str) -> Result<Self, WorldError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let mut world: World =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
                let path = err.path().to_string();
                let inner = err.into_inner();
                WorldError {
                    path,
                    message: crate::error::without_position(&inner),
                    position: Some((inner.line(), inner.column())),
                }
            })?;
        let fail = |path: String, message: String| WorldError {
            path,
            message,
            position: None,
        };
        if world.format != FORMAT {
            return Err(fail(
                "format".into(),
                format!("{:?} is not {FORMAT:?}", world.format),
            ));
        }
        let ontology = Ontology::from_value(world.ontology.clone())
            .map_err(|err| fail("ontology".into(), err.to_string()))?;
        for (name, value) in &world.scenarios {
            let mut scenario: Scenario =
                serde_path_to_error::deserialize(value.clone()).map_err(|err| {
                    fail(
                        format!("scenarios.{name}.{}", err.path()),
                        err.into_inner().to_string(),
                    )
                })?;
            scenario.name = name.clone();
            if !GRAPH_POLICIES.contains(&scenario.graph.as_str()) {
                return Err(fail(
                    format!("scenarios.{name}.graph"),
                    format!("{:?} is not one of {GRAPH_POLICIES:?}", scenario.graph),
                ));
            }
            for (i, entry) in scenario.timeline.iter().enumerate() {
                if let Some(event) = entry.kind.event(false) {
                    event.validate().map_err(|err| {
                        fail(format!("scenarios.{name}.timeline[{i}]"), err.to_string())
                    })?;
                    if let Event::RecordSet { predicate, .. } = &event
                        && ontology.predicate(predicate).is_none()
                    {
                        return Err(fail(
                            format!("scenarios.{name}.timeline[{i}].predicate"),
                            format!("{predicate:?} is not in the ontology"),
                        ));
                    }
                }
            }
            world.parsed.push(scenario);
        }
        let steps: BTreeSet<u32> = world
            .parsed
            .iter()
            .flat_map(|s| s.timeline.iter())
            .filter_map(|e| match e.kind {
                TimelineKind::Checkpoint { step } => Some(step),
                _ => None,
            })
            .collect();
        for (i, question) in world.questions.iter().enumerate() {
            for (j, ask) in question.asks.iter().enumerate() {
                if question.wants_passages() != ask.passage.is_some() {
                    return Err(fail(
                        format!("questions[{i}].asks[{j}]"),
                        "a question needs at least one predicate, or no hops and a `passage` \
                         in every ask"
                            .into(),
                    ));
                }
                if !question.wants_passages()
                    && ask.expected.trim().is_empty()
                    && ask.needs_scope.is_none()
                    && ask.expect.is_none()
                {
                    return Err(fail(
                        format!("questions[{i}].asks[{j}].expected"),
                        "an ask of a predicate path needs its expected value (or `needs_scope`, \
                         or `expect`)"
                            .into(),
                    ));
                }
                if ask.expect.is_some() && !ask.expected.trim().is_empty() {
                    return Err(fail(
                        format!("questions[{i}].asks[{j}].expect"),
                        "an ask that expects no value names no `expected` value".into(),
                    ));
                }
                let scopes = ask
                    .scope
                    .iter()
                    .chain(ask.needs_scope.iter().flat_map(|m| m.keys()));
                for scope in scopes {
                    if let Err(err) = crate::knowledge::Scope::parse(scope) {
                        return Err(fail(format!("questions[{i}].asks[{j}]"), err.to_string()));
                    }
                }
            }
            for (j, hop) in question.hops.iter().enumerate() {
                if ontology.predicate(hop).is_none() {
                    return Err(fail(
                        format!("questions[{i}].hops[{j}]"),
                        format!("{hop:?} is not in the ontology"),
                    ));
                }
            }
            for (j, ask) in question.asks.iter().enumerate() {
                if !steps.contains(&ask.step) {
                    return Err(fail(
                        format!("questions[{i}].asks[{j}].step"),
                        format!("no checkpoint has step {}", ask.step),
                    ));
                }
            }
        }
        Ok(world)
    }

    /// Whether any scenario deletes a page (`doc.delete` or `source.listing`).
    pub fn deletes_pages(&self) -> bool {
        self.parsed.iter().flat_map(|s| &s.timeline).any(|e| {
            matches!(
                e.kind,
                TimelineKind::DocDelete { .. } | TimelineKind::SourceListing { .. }
            )
        })
    }

    /// The ontology.
    pub fn ontology(&self) -> Result<Ontology, WorldError> {
        Ontology::from_value(self.ontology.clone()).map_err(|err| WorldError {
            path: "ontology".into(),
            message: err.to_string(),
            position: None,
        })
    }

    /// The study's published (all %, drifted %) for a design and scenario, when the file has it.
    pub fn published(&self, design: &str, scenario: &str) -> Option<(f64, f64)> {
        let cell = self
            .published_deterministic_results
            .as_ref()?
            .get(design)?
            .get(scenario)?
            .as_array()?;
        Some((cell.first()?.as_f64()?, cell.get(1)?.as_f64()?))
    }
}

/// How an answer grades against the expected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// The expected value appears in the answer as a whole token sequence.
    Correct,
    /// A value that is not the expected one.
    Wrong,
    /// No value.
    Abstain,
}

/// Grades an answer as WORLD-FORMAT.md says: lower case; `€`, `%` and a trailing `.` removed;
/// correct when the expected value appears as a whole token sequence.
pub fn grade(expected: &str, answer: Option<&str>) -> Grade {
    let Some(answer) = answer.filter(|a| !a.trim().is_empty()) else {
        return Grade::Abstain;
    };
    let norm = |s: &str| {
        s.to_lowercase()
            .replace(['€', '%'], "")
            .trim()
            .trim_end_matches('.')
            .trim()
            .to_owned()
    };
    let (expected, answer) = (norm(expected), norm(answer));
    if expected.is_empty() {
        return Grade::Wrong;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(i) = answer[from..].find(&expected) {
        let start = from + i;
        let end = start + expected.len();
        if !word(answer[..start].chars().last()) && !word(answer[end..].chars().next()) {
            return Grade::Correct;
        }
        from = start + expected.chars().next().map_or(1, char::len_utf8);
    }
    Grade::Wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grading_matches_whole_tokens() {
        assert_eq!(grade("49", Some("€49")), Grade::Correct);
        assert_eq!(grade("99.9", Some("99.9%")), Grade::Correct);
        assert_eq!(grade("9", Some("99")), Grade::Wrong);
        assert_eq!(grade("Helix", Some("the Helix team.")), Grade::Correct);
        assert_eq!(
            grade(
                "real-time shipment tracking app",
                Some("Real-time shipment tracking app")
            ),
            Grade::Correct
        );
        assert_eq!(grade("49", None), Grade::Abstain);
        assert_eq!(grade("49", Some("  ")), Grade::Abstain);
    }

    const TINY: &str = r#"{"format":"ontoloop.world/v1","name":"tiny",
      "ontology":{"predicates":[{"name":"capital","subject_type":"country","object_type":"city","patterns":["The capital of {s} is {o}."]}],
                  "authority":{"atlas":3,"default":2}},
      "scenarios":{"Moves":{"graph":"patch-changed-pages","timeline":[
        {"type":"doc.upsert","at":"2026-01-01T00:00:00Z","doc_id":"a","title":"A","origin":"atlas","body":"The capital of Narnia is Cair."},
        {"type":"checkpoint","at":"2026-01-02T00:00:00Z","step":0}]}},
      "questions":[{"id":"Q","hops":["capital"],"asks":[{"step":0,"text":"What is the capital of Narnia?","entity":"Narnia","expected":"Cair"}]}]}"#;

    #[test]
    fn parses_a_world() {
        let world = World::parse(TINY).expect("valid world");
        assert_eq!(world.parsed.len(), 1);
        assert_eq!(world.parsed[0].timeline.len(), 2);
        assert!(world.ontology().is_ok());
    }

    #[test]
    fn the_example_of_the_format_doc_parses_and_the_extensions_are_events() {
        let doc = include_str!("../../../WORLD-FORMAT.md");
        let start = doc.find("```json\n").expect("an example") + "```json\n".len();
        let end = start + doc[start..].find("```").expect("its end");
        let world = World::parse(&doc[start..end]).expect("the documented example parses");
        assert!(world.ontology().is_ok());
        let extended = TINY.replace(
            r#"{"type":"checkpoint""#,
            r#"{"type":"doc.delete","at":"2026-01-01T01:00:00Z","doc_id":"a"},
               {"type":"source.listing","at":"2026-01-01T02:00:00Z","origin":"atlas","doc_ids":[]},
               {"type":"checkpoint""#,
        );
        let world = World::parse(&extended).expect("extended world");
        let events: Vec<&'static str> = world.parsed[0]
            .timeline
            .iter()
            .filter_map(|entry| entry.kind.event(false))
            .map(|event| event.kind())
            .collect();
        assert_eq!(events, ["doc.upsert", "doc.delete", "source.listing"]);
    }

    #[test]
    fn a_question_no_slot_answers_names_its_passage_in_every_ask() {
        let question = r#"{"id":"R","hops":[],"asks":[{"step":0,"text":"Where is Cair?","passage":{"doc_id":"a","contains":"capital of  Narnia"}}]}"#;
        let with = TINY.replace(r#""questions":["#, &format!(r#""questions":[{question},"#));
        let world = World::parse(&with).expect("a passage question");
        let asked = &world.questions[0];
        assert!(asked.wants_passages() && !world.questions[1].wants_passages());
        let passage = asked.asks[0].passage.as_ref().expect("its passage");
        assert!(passage.matches("a", "The capital of\nNarnia is Cair."));
        assert!(!passage.matches("b", "The capital of Narnia is Cair."));
        let missing = with.replace(
            r#","passage":{"doc_id":"a","contains":"capital of  Narnia"}"#,
            "",
        );
        assert_eq!(
            World::parse(&missing).expect_err("no passage").path,
            "questions[0].asks[0]"
        );
        let no_value = TINY.replace(r#","expected":"Cair""#, "");
        assert_eq!(
            World::parse(&no_value).expect_err("no expected value").path,
            "questions[0].asks[0].expected"
        );
    }

    #[test]
    fn errors_name_the_field_and_position() {
        let broken = TINY.replace(r#""graph":"patch-changed-pages""#, r#""graph":"sometimes""#);
        let err = World::parse(&broken).expect_err("bad policy");
        assert_eq!(err.path, "scenarios.Moves.graph");
        let broken = TINY.replace(r#""step":0}]}}"#, r#""step":"zero"}]}}"#);
        let err = World::parse(&broken).expect_err("bad step");
        assert!(err.path.starts_with("scenarios.Moves.timeline[1]"), "{err}");
        let broken = TINY.replace(r#""hops":["capital"]"#, r#""hops":["mayor"]"#);
        assert_eq!(
            World::parse(&broken).expect_err("bad hop").path,
            "questions[0].hops[0]"
        );
        let err = World::parse("{\"format\": 3}").expect_err("shape");
        assert!(err.position.is_some(), "{err}");
        let broken = TINY.replace(
            r#""body":"The capital of Narnia is Cair."}"#,
            r#""body":"x","doc_id":""}"#,
        );
        assert!(World::parse(&broken).is_err());
    }
}
