//! The ontology: predicates with their sentence patterns, subject and object types, rename
//! predicates, and an authority rank per source origin. Loaded from configuration (a world
//! file's `ontology` block is one such document); nothing here knows any particular world.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Deserialize;

use super::pattern::{Pattern, PatternError};
use super::scope::{MAX_SCOPE_PART_BYTES, ScopeVocabulary, plain_part};
use super::words::{STOPWORDS, content_words, words_plain};

/// An ontology document that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OntologyError {
    /// The JSON does not parse or has the wrong shape; names the field path and position.
    #[error("ontology: {path}: {message} (line {line}, column {column})")]
    Shape {
        /// Field path, for example `predicates[2].patterns`.
        path: String,
        /// What is wrong.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A field has a value that cannot work.
    #[error("ontology: {path}: {message}")]
    Invalid {
        /// Field path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// What kind of statement a predicate makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredicateKind {
    /// An ordinary slot: subject, predicate, object.
    Slot,
    /// `{s}` is the current name of what was called `{o}`.
    Rename,
}

/// One predicate.
#[derive(Debug, Clone)]
pub struct Predicate {
    /// Name, for example `price`.
    pub name: String,
    /// Subject types it applies to (`product|service` gives two).
    pub subject_types: Vec<String>,
    /// Object type: `number`, `text`, or an entity type such as `team`.
    pub object_type: String,
    /// Unit of a numeric object, if any.
    pub unit: Option<String>,
    /// The fixed subject of a predicate whose patterns have no `{s}`.
    pub fixed_subject: Option<String>,
    /// Slot or rename.
    pub kind: PredicateKind,
    /// Compiled patterns.
    pub patterns: Vec<Pattern>,
}

impl Predicate {
    /// Whether the object names another entity (so a question can hop through it).
    pub fn object_is_entity(&self) -> bool {
        !matches!(self.object_type.as_str(), "number" | "text" | "any")
    }

    /// Whether `entity_type` can be this predicate's subject.
    pub fn applies_to(&self, entity_type: &str) -> bool {
        self.subject_types
            .iter()
            .any(|t| t == entity_type || t == "any")
    }
}

/// A loaded, validated ontology, with the extraction pipeline compiled for it (the default
/// pipeline until `with_extraction` configures another).
#[derive(Debug, Clone)]
pub struct Ontology {
    predicates: Vec<Predicate>,
    authority: BTreeMap<String, i32>,
    default_authority: i32,
    scopes: ScopeVocabulary,
    /// The extraction pipeline compiled for it, which the reading layer above sets and reads
    /// (`pipeline`: `Ontology::extraction`); the model does not know its type.
    pub(crate) reading: Compiled,
}

/// What an ontology is read with, compiled for it: set once (on first use, the default pipeline)
/// and replaced whole by a reconfiguration.
#[derive(Clone, Default)]
pub(crate) struct Compiled(pub(crate) std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>);

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Compiled"
        } else {
            "Compiled(not yet)"
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOntology {
    predicates: Vec<RawPredicate>,
    authority: BTreeMap<String, i32>,
    /// Scope dimensions and their values (`{"region": ["EU", "US"]}`): only these scope a
    /// sentence ("In the EU, ...").
    #[serde(default)]
    scopes: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPredicate {
    name: String,
    subject_type: String,
    object_type: String,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    patterns: Vec<String>,
}

/// Most predicates an ontology may define. Every page and every answer text is matched against
/// every pattern, so the ontology's size bounds the work each read does.
pub const MAX_PREDICATES: usize = 500;

/// Most patterns one predicate may have.
pub const MAX_PATTERNS_PER_PREDICATE: usize = 50;

/// Longest pattern, in characters.
pub const MAX_PATTERN_CHARS: usize = 500;

/// Most scope dimensions an ontology may declare.
pub const MAX_SCOPE_DIMENSIONS: usize = 16;

/// Most values one scope dimension may declare.
pub const MAX_SCOPE_VALUES: usize = 256;

/// The origin name whose authority applies to origins the map does not list.
pub const DEFAULT_ORIGIN: &str = "default";

/// The authority of every origin under [`Ontology::empty`].
const EMPTY_AUTHORITY: i32 = 1;

impl Ontology {
    /// Parses and validates an ontology document.
    pub fn from_json(text: &str) -> Result<Self, OntologyError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let raw: RawOntology =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
                let path = err.path().to_string();
                let inner = err.into_inner();
                OntologyError::Shape {
                    path,
                    message: crate::error::without_position(&inner),
                    line: inner.line(),
                    column: inner.column(),
                }
            })?;
        Self::from_raw(raw)
    }

    /// Validates an ontology given as a JSON value (for example the `ontology` block of a world).
    pub fn from_value(value: serde_json::Value) -> Result<Self, OntologyError> {
        let raw: RawOntology =
            serde_path_to_error::deserialize(value).map_err(|err| OntologyError::Invalid {
                path: err.path().to_string(),
                message: err.into_inner().to_string(),
            })?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: RawOntology) -> Result<Self, OntologyError> {
        let invalid = |path: String, message: String| OntologyError::Invalid { path, message };
        let default_authority = *raw.authority.get(DEFAULT_ORIGIN).ok_or_else(|| {
            invalid(
                "authority".into(),
                format!("needs a {DEFAULT_ORIGIN:?} entry for unlisted origins"),
            )
        })?;
        if raw.predicates.len() > MAX_PREDICATES {
            return Err(invalid(
                "predicates".into(),
                format!(
                    "has {} predicates; at most {MAX_PREDICATES} are accepted (MAX_PREDICATES)",
                    raw.predicates.len()
                ),
            ));
        }
        let mut names = BTreeSet::new();
        let mut predicates = Vec::new();
        for (i, p) in raw.predicates.into_iter().enumerate() {
            let path = |field: &str| format!("predicates[{i}].{field}");
            if p.name.trim().is_empty() {
                return Err(invalid(path("name"), "must not be empty".into()));
            }
            if !names.insert(p.name.clone()) {
                return Err(invalid(
                    path("name"),
                    format!("{:?} is defined twice", p.name),
                ));
            }
            let kind = match p.kind.as_deref() {
                None | Some("slot") => PredicateKind::Slot,
                Some("rename") => PredicateKind::Rename,
                Some(other) => {
                    return Err(invalid(
                        path("kind"),
                        format!("unknown kind {other:?} (use rename)"),
                    ));
                }
            };
            if p.patterns.is_empty() {
                return Err(invalid(
                    path("patterns"),
                    "needs at least one pattern".into(),
                ));
            }
            if p.patterns.len() > MAX_PATTERNS_PER_PREDICATE {
                return Err(invalid(
                    path("patterns"),
                    format!(
                        "has {} patterns; at most {MAX_PATTERNS_PER_PREDICATE} per predicate are \
                         accepted (MAX_PATTERNS_PER_PREDICATE)",
                        p.patterns.len()
                    ),
                ));
            }
            let mut patterns = Vec::new();
            for (j, source) in p.patterns.iter().enumerate() {
                let chars = source.chars().count();
                if chars > MAX_PATTERN_CHARS {
                    return Err(invalid(
                        format!("predicates[{i}].patterns[{j}]"),
                        format!(
                            "is {chars} characters; at most {MAX_PATTERN_CHARS} are accepted \
                             (MAX_PATTERN_CHARS)"
                        ),
                    ));
                }
                let pattern = Pattern::compile(source).map_err(|err: PatternError| {
                    invalid(format!("predicates[{i}].patterns[{j}]"), err.to_string())
                })?;
                let fixed = p.subject.is_some();
                if pattern.has_subject() == fixed {
                    let why = if fixed {
                        "has a fixed subject, so its patterns must not use {s}"
                    } else {
                        "has no fixed subject, so its patterns need {s}"
                    };
                    return Err(invalid(
                        format!("predicates[{i}].patterns[{j}]"),
                        format!("predicate {:?} {why}", p.name),
                    ));
                }
                patterns.push(pattern);
            }
            if kind == PredicateKind::Rename && p.subject.is_some() {
                return Err(invalid(
                    path("subject"),
                    "a rename predicate cannot have a fixed subject".into(),
                ));
            }
            predicates.push(Predicate {
                name: p.name,
                subject_types: p
                    .subject_type
                    .split('|')
                    .map(|t| t.trim().to_lowercase())
                    .filter(|t| !t.is_empty())
                    .collect(),
                object_type: p.object_type.trim().to_lowercase(),
                unit: p.unit,
                fixed_subject: p.subject,
                kind,
                patterns,
            });
        }
        if predicates.is_empty() {
            return Err(invalid(
                "predicates".into(),
                "needs at least one predicate".into(),
            ));
        }
        if raw.scopes.len() > MAX_SCOPE_DIMENSIONS {
            return Err(invalid(
                "scopes".into(),
                format!(
                    "has {} dimensions; at most {MAX_SCOPE_DIMENSIONS} are accepted \
                     (MAX_SCOPE_DIMENSIONS)",
                    raw.scopes.len()
                ),
            ));
        }
        let mut scopes = BTreeMap::new();
        for (dimension, values) in raw.scopes {
            let key = dimension.trim().to_lowercase();
            let path = format!("scopes.{dimension}");
            if !plain_part(&key) {
                return Err(invalid(
                    path,
                    format!(
                        "a dimension is a word of at most {MAX_SCOPE_PART_BYTES} bytes without = , ; \
                         or control characters"
                    ),
                ));
            }
            if values.is_empty() || values.len() > MAX_SCOPE_VALUES {
                return Err(invalid(
                    path,
                    format!("needs 1 to {MAX_SCOPE_VALUES} values (MAX_SCOPE_VALUES)"),
                ));
            }
            for (j, value) in values.iter().enumerate() {
                if !plain_part(value) {
                    return Err(invalid(
                        format!("scopes.{dimension}[{j}]"),
                        format!(
                            "a value is non-empty text of at most {MAX_SCOPE_PART_BYTES} bytes \
                             without = , ; or control characters"
                        ),
                    ));
                }
            }
            scopes.insert(key, values);
        }
        let scopes = ScopeVocabulary::new(scopes.iter().map(|(dimension, values)| {
            (
                dimension.as_str(),
                values.iter().map(String::as_str).collect(),
            )
        }));
        Ok(Self {
            predicates,
            authority: raw.authority,
            default_authority,
            scopes,
            reading: Compiled::default(),
        })
    }

    /// The ontology of a tenant that has set none: no predicates, every origin at the default
    /// authority (1). Its pages are still stored, indexed and read (the structured stage names
    /// entities from titles and record subjects), so passages and "what do we know about X?"
    /// answer before any ontology is set. Not a document an `ontology.set` may send: that needs
    /// at least one predicate.
    pub fn empty() -> Self {
        Self {
            predicates: Vec::new(),
            authority: BTreeMap::from([(DEFAULT_ORIGIN.to_owned(), EMPTY_AUTHORITY)]),
            default_authority: EMPTY_AUTHORITY,
            scopes: ScopeVocabulary::new(std::iter::empty()),
            reading: Compiled::default(),
        }
    }

    /// Whether this ontology defines no predicate ([`Ontology::empty`]).
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty()
    }

    /// The scope values the ontology declares, dimension by dimension: what scopes a sentence.
    pub fn scope_vocabulary(&self) -> &ScopeVocabulary {
        &self.scopes
    }

    /// Every predicate, in document order.
    pub fn predicates(&self) -> &[Predicate] {
        &self.predicates
    }

    /// A predicate by name.
    pub fn predicate(&self, name: &str) -> Option<&Predicate> {
        self.predicates.iter().find(|p| p.name == name)
    }

    /// Authority rank of an origin; unlisted origins get the `default` rank.
    pub fn authority(&self, origin: &str) -> i32 {
        self.authority
            .get(origin)
            .copied()
            .unwrap_or(self.default_authority)
    }

    /// The entity type nouns the ontology uses (`plan`, `team`, ...), for name normalisation.
    pub fn type_nouns(&self) -> Vec<String> {
        let mut nouns = BTreeSet::new();
        for p in &self.predicates {
            for t in p
                .subject_types
                .iter()
                .chain(std::iter::once(&p.object_type))
            {
                if !matches!(t.as_str(), "any" | "text" | "number" | "") {
                    nouns.insert(t.clone());
                }
            }
        }
        nouns.into_iter().collect()
    }
}

/// A predicate's vocabulary: the stemmed content words of its name, unit and patterns.
pub(crate) fn vocabulary(predicate: &Predicate) -> BTreeSet<String> {
    let mut text = predicate.name.replace('_', " ");
    if let Some(unit) = &predicate.unit {
        text.push(' ');
        text.push_str(unit);
    }
    for pattern in &predicate.patterns {
        text.push(' ');
        text.push_str(&pattern.literal_text());
    }
    let mut words = content_words(&text);
    words.extend(acronym(&predicate.name));
    words
}

/// The initials of a name of three or more words, as people shorten it (`end_of_life` is
/// written `EOL`, `time_to_live` `TTL`).
pub(crate) fn acronym(name: &str) -> Option<String> {
    let words: Vec<&str> = name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    (words.len() >= 3 && words.iter().all(|w| w.starts_with(char::is_alphabetic))).then(|| {
        words
            .iter()
            .filter_map(|w| w.chars().next())
            .flat_map(char::to_lowercase)
            .collect()
    })
}

/// A predicate's own words as written (its name's and its patterns'), for an encoder to compare
/// a question's words with.
pub(crate) fn relation_terms(predicate: &Predicate) -> Vec<String> {
    let mut text = predicate.name.replace('_', " ");
    for pattern in &predicate.patterns {
        text.push(' ');
        text.push_str(&pattern.literal_text());
    }
    let mut terms: Vec<String> = words_plain(&text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && w.chars().any(char::is_alphabetic))
        .collect();
    terms.push(predicate.name.replace('_', " "));
    terms.sort();
    terms.dedup();
    terms
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const SAMPLE: &str = r#"{
      "predicates": [
        {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR",
         "patterns": ["The {s} plan costs €{o:number} per user per month."]},
        {"name": "refund_days", "subject_type": "policy", "object_type": "number", "subject": "Refund policy",
         "patterns": ["Customers can request a refund within {o:number} days of purchase."]},
        {"name": "owned_by", "subject_type": "product|service", "object_type": "team",
         "patterns": ["{s} is owned by the {o} team."]},
        {"name": "led_by", "subject_type": "team", "object_type": "person",
         "patterns": ["The {s} team is led by {o}."]},
        {"name": "included_in", "subject_type": "product", "object_type": "plan",
         "patterns": ["{s} is included in the {o} plan."]},
        {"name": "does", "subject_type": "product", "object_type": "text", "patterns": ["{s} is our {o}."]},
        {"name": "formerly", "kind": "rename", "subject_type": "any", "object_type": "any",
         "patterns": ["{s} was formerly called {o}."]}
      ],
      "authority": {"record": 4, "pricing-page": 3, "meeting-notes": 1, "default": 2}
    }"#;

    #[test]
    fn a_long_name_is_also_known_by_its_initials() {
        assert_eq!(acronym("end_of_life").as_deref(), Some("eol"));
        assert_eq!(acronym("time to live").as_deref(), Some("ttl"));
        assert_eq!(acronym("lts_start"), None);
        assert_eq!(acronym("price"), None);
        let ontology = Ontology::from_value(serde_json::json!({
            "predicates": [{"name": "end_of_life", "subject_type": "line", "object_type": "date",
                            "patterns": ["Support for {s} ends on {o}."]}],
            "authority": {"default": 1}
        }))
        .expect("ontology");
        assert!(vocabulary(&ontology.predicates()[0]).contains("eol"));
    }

    pub(crate) fn sample() -> Ontology {
        Ontology::from_json(SAMPLE).expect("sample ontology is valid")
    }

    /// The sample with scope values declared: regions EU and US, the Enterprise segment.
    pub(crate) fn scoped_sample() -> Ontology {
        let mut doc: serde_json::Value = serde_json::from_str(SAMPLE).expect("sample is JSON");
        doc["scopes"] = serde_json::json!({"region": ["EU", "US"], "segment": ["Enterprise"]});
        Ontology::from_value(doc).expect("scoped sample is valid")
    }

    #[test]
    fn scope_values_are_declared_per_dimension_and_refused_with_the_path() {
        let vocabulary = scoped_sample();
        let (scope, rest) = vocabulary
            .scope_vocabulary()
            .scope_of("In the EU, the Pro plan costs €59 per user per month.")
            .expect("a scoping phrase");
        assert_eq!(
            (scope.to_string(), rest.as_str()),
            (
                "region=EU".to_owned(),
                "The Pro plan costs €59 per user per month."
            )
        );
        assert!(sample().scope_vocabulary().is_empty());
        let mut doc: serde_json::Value = serde_json::from_str(SAMPLE).expect("sample is JSON");
        for (scopes, path) in [
            (serde_json::json!({"region": []}), "scopes.region"),
            (serde_json::json!({"re=gion": ["EU"]}), "scopes.re=gion"),
            (
                serde_json::json!({"region": ["EU", "U,S"]}),
                "scopes.region[1]",
            ),
        ] {
            doc["scopes"] = scopes;
            match Ontology::from_value(doc.clone()) {
                Err(OntologyError::Invalid { path: at, .. }) => assert_eq!(at, path),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn loads_predicates_and_authority() {
        let ontology = sample();
        assert_eq!(ontology.predicates().len(), 7);
        assert_eq!(ontology.authority("pricing-page"), 3);
        assert_eq!(ontology.authority("wiki"), 2);
        assert_eq!(
            ontology.predicate("formerly").map(|p| p.kind),
            Some(PredicateKind::Rename)
        );
        assert!(
            ontology
                .predicate("owned_by")
                .is_some_and(|p| p.applies_to("service") && p.object_is_entity())
        );
        assert_eq!(
            ontology.type_nouns(),
            vec!["person", "plan", "policy", "product", "service", "team"]
        );
    }

    #[test]
    fn the_empty_ontology_has_no_predicate_and_reads_titles_as_names() {
        let empty = Ontology::empty();
        assert!(empty.is_empty() && empty.predicates().is_empty());
        assert_eq!(empty.authority("wiki"), 1);
        assert!(empty.type_nouns().is_empty() && empty.scope_vocabulary().is_empty());
        assert!(!sample().is_empty());
        // A document can never say so: an ontology.set needs a predicate.
        let err = Ontology::from_value(
            serde_json::json!({"predicates": [], "authority": {"default": 1}}),
        )
        .expect_err("no predicate");
        assert!(err.to_string().contains("at least one predicate"), "{err}");
        // Its pipeline still names a titled page's subject: no slot claim, one alias.
        let claims = empty.extraction().claims(
            &empty,
            "# KEP-12: Pod Spread\n\nPods spread across zones.",
            &super::super::names::Lexicon::default(),
        );
        let read: Vec<(&str, &str, &str)> = claims
            .iter()
            .map(|c| (c.predicate.as_str(), c.subject.name(), c.object.as_str()))
            .collect();
        assert_eq!(read, vec![("alias", "KEP-12", "Pod Spread")]);
    }

    #[test]
    fn shape_errors_name_the_field_and_position() {
        let err = Ontology::from_json(r#"{"predicates": [{"name": "x", "subject_type": "a", "object_type": 3, "patterns": []}], "authority": {"default": 1}}"#)
            .expect_err("object_type is a number");
        match err {
            OntologyError::Shape {
                path, line, column, ..
            } => {
                assert_eq!(path, "predicates[0].object_type");
                assert_eq!(line, 1);
                assert!(column > 40);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn pattern_count_and_size_are_bounded() {
        let doc = |predicates: usize, patterns: usize, chars: usize| {
            let pattern = format!("{{s}} is {}{{o}}.", "x".repeat(chars.saturating_sub(11)));
            let list: Vec<serde_json::Value> = (0..predicates)
                .map(|n| {
                    serde_json::json!({"name": format!("p{n}"), "subject_type": "a",
                        "object_type": "text", "patterns": vec![pattern.clone(); patterns]})
                })
                .collect();
            serde_json::json!({"predicates": list, "authority": {"default": 1}})
        };
        assert!(Ontology::from_value(doc(MAX_PREDICATES, 1, 20)).is_ok());
        assert!(
            Ontology::from_value(doc(1, MAX_PATTERNS_PER_PREDICATE, MAX_PATTERN_CHARS)).is_ok()
        );
        for (doc, limit) in [
            (doc(MAX_PREDICATES + 1, 1, 20), "MAX_PREDICATES"),
            (
                doc(1, MAX_PATTERNS_PER_PREDICATE + 1, 20),
                "MAX_PATTERNS_PER_PREDICATE",
            ),
            (doc(1, 1, MAX_PATTERN_CHARS + 1), "MAX_PATTERN_CHARS"),
        ] {
            let err = Ontology::from_value(doc).expect_err("over the limit");
            assert!(err.to_string().contains(limit), "{err}");
        }
    }

    #[test]
    fn invalid_values_name_the_field() {
        let err = Ontology::from_json(r#"{"predicates": [{"name": "x", "subject_type": "a", "object_type": "b", "patterns": ["{o} only."]}], "authority": {"default": 1}}"#)
            .expect_err("no subject slot");
        assert!(
            err.to_string().contains("predicates[0].patterns[0]"),
            "{err}"
        );
        let err = Ontology::from_json(r#"{"predicates": [{"name": "x", "subject_type": "a", "object_type": "b", "patterns": ["{s} is {o}."]}], "authority": {"record": 1}}"#)
            .expect_err("no default authority");
        assert!(err.to_string().contains("authority"), "{err}");
    }
}
