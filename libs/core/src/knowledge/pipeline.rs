//! The extraction pipeline: the stages that turn text into claims, in a configured order.
//!
//! Each stage reads what earlier stages left: `structured` (front matter, tables, `Key: value`),
//! `patterns` (the ontology's exact templates), `semantic` (any phrasing, by meaning), `model` (a
//! language model's proposals, each grounded in its sentence or dropped and counted; off unless
//! configured). Every claim carries the id of the stage that read it and the stage's confidence. The same pipeline serves
//! page ingestion, answer-time evidence, healing sources and the firewall, because it travels
//! with the ontology it was built for.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use super::encoder::{SentenceEncoder, cosine};
use super::extract::{Claim, claims_in_sentence, split_sentences};
use super::model::{
    ClaimModel, LlmSettings, ModelCost, ModelCounters, ModelUsage, better_predicate, ground, typed,
};
use super::names::NameNormaliser;
use super::ontology::{Compiled, Ontology, PredicateKind};
use super::scope::Scope;
use super::semantic::{self, Lexicon, Profiles, Scorer};
use super::structured;
use crate::settings::{InvalidSetting, share};

/// One extraction stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Front matter, `Key: value` lines and Markdown tables.
    Structured,
    /// The ontology's exact sentence patterns.
    Patterns,
    /// Any phrasing, by meaning, refusing non-assertions.
    Semantic,
    /// A language model's proposals, grounded in their sentences.
    Model,
}

impl Stage {
    /// The stage's name in settings.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Structured => "structured",
            Stage::Patterns => "patterns",
            Stage::Semantic => "semantic",
            Stage::Model => "model",
        }
    }
}

/// Confidence each stage gives what it reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageConfidence {
    /// Structured stage.
    pub structured: f64,
    /// Patterns stage.
    pub patterns: f64,
    /// Semantic stage.
    pub semantic: f64,
    /// Model stage.
    pub model: f64,
}

/// The `[extract]` settings: which stages run, in which order, and their confidences.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractSettings {
    /// Stages in the order they run.
    pub stages: Vec<Stage>,
    /// Confidence per stage.
    pub confidence: StageConfidence,
    /// Folder holding the sentence-encoder model (`model.safetensors`, `tokenizer.json`,
    /// `config.json`); empty for the default location.
    #[serde(default)]
    pub model_dir: String,
    /// Vectors the encoder keeps in the store at most (`text_vector`, see
    /// `ontoloop_store::vectors`); 0 keeps none.
    pub vectors_kept: u64,
    /// The model stage's OpenAI-compatible endpoint (`[extract.model]`); used only when
    /// `enabled` and `stages` names `model`.
    pub model: LlmSettings,
    /// Per-tenant pipelines (`[extract.tenants.<tenant>]`): stages and confidences that replace
    /// the defaults above for that tenant.
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantExtract>,
}

/// A tenant's own `[extract.tenants.<tenant>]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantExtract {
    /// Its stages, in order; the default stages when absent.
    #[serde(default)]
    pub stages: Option<Vec<Stage>>,
    /// Its confidences; the default ones when absent.
    #[serde(default)]
    pub confidence: Option<StageConfidence>,
}

/// The `[extract]` section of the embedded defaults (`libs/settings/src/defaults.toml`, the one
/// place a default is written; this crate cannot depend on the settings crate, so it reads the
/// same file): what an ontology reads with until a pipeline is compiled for it, and what tests
/// build from.
impl Default for ExtractSettings {
    fn default() -> Self {
        static DEFAULTS: OnceLock<ExtractSettings> = OnceLock::new();
        DEFAULTS
            .get_or_init(|| {
                // Compiled in, and `ontoloop-settings` tests that it loads and equals its own.
                let file: toml::Table = include_str!("../../../settings/src/defaults.toml")
                    .parse()
                    .expect("the embedded defaults are TOML");
                file.get("extract")
                    .cloned()
                    .expect("the embedded defaults have [extract]")
                    .try_into()
                    .expect("the embedded [extract] defaults load")
            })
            .clone()
    }
}

impl ExtractSettings {
    /// Checks the `[extract]` section once, at start-up.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        self.validate_pipeline()?;
        for tenant in self.tenants.keys() {
            self.for_tenant(tenant)
                .validate_pipeline()
                .map_err(|err| InvalidSetting::new("tenants", format!("{tenant}: {err}")))?;
        }
        Ok(())
    }

    /// The settings `tenant` extracts with: its own stages and confidences where it has them.
    pub fn for_tenant(&self, tenant: &str) -> ExtractSettings {
        let mut own = ExtractSettings {
            tenants: BTreeMap::new(),
            ..self.clone()
        };
        if let Some(overrides) = self.tenants.get(tenant) {
            if let Some(stages) = &overrides.stages {
                own.stages.clone_from(stages);
            }
            if let Some(confidence) = &overrides.confidence {
                own.confidence = confidence.clone();
            }
        }
        own
    }

    /// Whether any tenant's pipeline (the default one included) runs `stage`.
    pub fn any_runs(&self, stage: Stage) -> bool {
        self.stages.contains(&stage)
            || self
                .tenants
                .values()
                .any(|t| t.stages.as_ref().is_some_and(|s| s.contains(&stage)))
    }

    fn validate_pipeline(&self) -> Result<(), InvalidSetting> {
        if self.stages.is_empty() {
            return Err(InvalidSetting::new("stages", "needs at least one stage"));
        }
        let unique: BTreeSet<_> = self.stages.iter().collect();
        if unique.len() != self.stages.len() {
            return Err(InvalidSetting::new("stages", "names a stage twice"));
        }
        share("confidence.structured", self.confidence.structured)?;
        share("confidence.patterns", self.confidence.patterns)?;
        share("confidence.semantic", self.confidence.semantic)?;
        share("confidence.model", self.confidence.model)?;
        if self.model.enabled {
            if !self.model.base_url.trim().starts_with("http://") {
                return Err(InvalidSetting::new(
                    "model.base_url",
                    "must be an http:// URL",
                ));
            }
            if self.model.model.trim().is_empty() {
                return Err(InvalidSetting::new("model.model", "names no model"));
            }
            if self.model.timeout_ms == 0 {
                return Err(InvalidSetting::new(
                    "model.timeout_ms",
                    "must be greater than zero",
                ));
            }
            if self.model.prompt_version.trim().is_empty() {
                return Err(InvalidSetting::new("model.prompt_version", "is empty"));
            }
        }
        Ok(())
    }

    /// Whether the model stage runs: enabled and named among the stages.
    pub fn model_wanted(&self) -> bool {
        self.model.enabled && self.stages.contains(&Stage::Model)
    }

    /// Only the exact patterns (the study's extractor).
    pub fn patterns_only() -> Self {
        Self {
            stages: vec![Stage::Patterns],
            ..Self::default()
        }
    }
}

/// What a process reads text with: the `[extract]` settings and, when one is loaded, the
/// sentence encoder. Every ontology the process parses is compiled with it, so ingestion,
/// answers, healing and the firewall read alike.
#[derive(Clone, Default)]
pub struct ExtractionSetup {
    settings: ExtractSettings,
    encoder: Option<Arc<dyn SentenceEncoder>>,
    model: Option<Arc<dyn ClaimModel>>,
    counters: Arc<ModelCounters>,
}

impl fmt::Debug for ExtractionSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtractionSetup")
            .field("stages", &self.settings.stages)
            .field("encoder", &self.encoder.as_ref().map(|e| e.id().to_owned()))
            .field("model", &self.model.as_ref().map(|m| m.id().to_owned()))
            .finish()
    }
}

impl ExtractionSetup {
    /// Settings and an optional encoder (wrap a model in `CachedEncoder`).
    pub fn new(settings: ExtractSettings, encoder: Option<Arc<dyn SentenceEncoder>>) -> Self {
        Self {
            settings,
            encoder,
            model: None,
            counters: Arc::default(),
        }
    }

    /// The same setup with a claim model for the `model` stage (without one the stage reads
    /// nothing).
    pub fn with_model(mut self, model: Arc<dyn ClaimModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// The same setup with model-stage counters of its own, which also add to this setup's: a
    /// part of the process that needs its own share (the analyst, per maintenance run) compiles
    /// with it, and the process's totals still see everything.
    pub fn tallied(&self) -> Self {
        Self {
            counters: Arc::new(ModelCounters::child_of(Arc::clone(&self.counters))),
            ..self.clone()
        }
    }

    /// The ontology with this setup's pipeline.
    pub fn compile(&self, ontology: Ontology) -> Ontology {
        self.compile_with(self.settings.clone(), ontology)
    }

    /// `tenant`'s ontology with its own pipeline (`[extract.tenants.<tenant>]`, else the
    /// default).
    pub fn compile_for(&self, tenant: &str, ontology: Ontology) -> Ontology {
        self.compile_with(self.settings.for_tenant(tenant), ontology)
    }

    fn compile_with(&self, settings: ExtractSettings, ontology: Ontology) -> Ontology {
        let mut extraction = Extraction::new(&ontology, settings, self.encoder.clone());
        extraction.model = self.model.clone();
        extraction.counters = Arc::clone(&self.counters);
        ontology.with_compiled_extraction(extraction)
    }

    /// What the model stage did in every ontology this setup compiled.
    pub fn model_usage(&self) -> ModelUsage {
        self.counters.usage()
    }

    /// The loaded sentence encoder, if any: retrieval's dense passage search embeds with the
    /// same model the semantic stage reads with.
    pub fn encoder(&self) -> Option<&Arc<dyn SentenceEncoder>> {
        self.encoder.as_ref()
    }

    /// The settings.
    pub fn settings(&self) -> &ExtractSettings {
        &self.settings
    }

    /// One line for start-up logs and `ontoloop status`: the stages and how the semantic stage
    /// scores.
    pub fn describe(&self) -> String {
        let stages: Vec<&str> = self.settings.stages.iter().map(|s| s.name()).collect();
        let semantic = match (
            &self.encoder,
            self.settings.stages.contains(&Stage::Semantic),
        ) {
            (_, false) => "off".to_owned(),
            (Some(encoder), true) => format!("model {}", encoder.id()),
            (None, true) => "lexical fallback (no model loaded)".to_owned(),
        };
        let model = match (&self.model, self.settings.stages.contains(&Stage::Model)) {
            (_, false) => String::new(),
            (Some(model), true) => format!("; model: {}", model.id()),
            (None, true) => "; model: off (no [extract.model] endpoint enabled)".to_owned(),
        };
        format!("stages {}; semantic: {semantic}{model}", stages.join(" → "))
    }
}

/// The reading of an ontology, set by this layer (the model below does not know its type).
impl Ontology {
    /// The same ontology with its extraction pipeline built from `settings`, scoring the
    /// semantic stage with `encoder` when one is loaded.
    pub fn with_extraction(
        self,
        settings: ExtractSettings,
        encoder: Option<Arc<dyn SentenceEncoder>>,
    ) -> Self {
        let extraction = Extraction::new(&self, settings, encoder);
        self.with_compiled_extraction(extraction)
    }

    /// The same ontology read by `extraction`, a pipeline compiled for it.
    pub(crate) fn with_compiled_extraction(mut self, extraction: Extraction) -> Self {
        self.reading = Compiled(OnceLock::from(
            Arc::new(extraction) as Arc<dyn std::any::Any + Send + Sync>
        ));
        self
    }

    /// The extraction pipeline every reader of text uses with this ontology: the one compiled
    /// for it, else (first use) the default pipeline without an encoder.
    pub fn extraction(&self) -> &Extraction {
        let compiled = self.reading.0.get_or_init(|| {
            Arc::new(Extraction::new(self, ExtractSettings::default(), None))
                as Arc<dyn std::any::Any + Send + Sync>
        });
        compiled
            .downcast_ref::<Extraction>()
            .unwrap_or_else(|| default_extraction())
    }
}

/// A pipeline for an ontology of no predicates: never used, since only this module sets an
/// ontology's reading and it sets an `Extraction`; here so a reading of another type could
/// not panic a reader.
fn default_extraction() -> &'static Extraction {
    static EMPTY: OnceLock<Extraction> = OnceLock::new();
    EMPTY.get_or_init(|| Extraction::new(&Ontology::empty(), ExtractSettings::default(), None))
}

/// Sentences sent to the model in one call.
const MODEL_BATCH: usize = 24;

/// A configured pipeline, compiled for one ontology.
pub struct Extraction {
    settings: ExtractSettings,
    encoder: Option<Arc<dyn SentenceEncoder>>,
    profiles: Profiles,
    /// Each predicate's own words, which a record's field keys are compared with by meaning.
    terms: Vec<Vec<String>>,
    normaliser: NameNormaliser,
    prototypes: OnceLock<Option<Vec<Vec<Vec<f32>>>>>,
    model: Option<Arc<dyn ClaimModel>>,
    counters: Arc<ModelCounters>,
}

impl fmt::Debug for Extraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extraction")
            .field("stages", &self.settings.stages)
            .field("semantic", &self.semantic_id())
            .finish()
    }
}

impl Extraction {
    /// Compiles `settings` for `ontology`, with an encoder for the semantic stage if one is
    /// loaded (else the stage scores lexically).
    pub fn new(
        ontology: &Ontology,
        settings: ExtractSettings,
        encoder: Option<Arc<dyn SentenceEncoder>>,
    ) -> Self {
        Self {
            settings,
            encoder,
            profiles: semantic::profiles(ontology),
            terms: ontology
                .predicates()
                .iter()
                .map(super::ontology::relation_terms)
                .collect(),
            normaliser: NameNormaliser::new(ontology.type_nouns()),
            prototypes: OnceLock::new(),
            model: None,
            counters: Arc::default(),
        }
    }

    /// The stages, in order.
    pub fn stages(&self) -> &[Stage] {
        &self.settings.stages
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &ExtractSettings {
        &self.settings
    }

    /// The semantic stage's extractor id: `semantic/<model>/v1`, or the lexical scorer's.
    pub fn semantic_id(&self) -> String {
        match &self.encoder {
            Some(encoder) => format!("semantic/{}/v1", encoder.id()),
            None => semantic::LEXICAL_ID.to_owned(),
        }
    }

    /// What the model stage did (shared with the setup that compiled this pipeline).
    pub fn model_usage(&self) -> ModelUsage {
        self.counters.usage()
    }

    /// For each word, for each group of terms, the encoder's highest similarity between the word
    /// and a term of the group; `None` without an encoder (or when it fails), so a caller falls
    /// back to exact words. Vectors are cached by the encoder, so a predicate's terms are encoded
    /// once per process.
    pub(crate) fn word_similarities(
        &self,
        words: &[&str],
        terms: &[Vec<String>],
    ) -> Option<Vec<Vec<f64>>> {
        let encoder = self.encoder.as_ref()?;
        if words.is_empty() {
            return Some(Vec::new());
        }
        let word_vectors = encoder.encode(words).ok()?;
        let flat: Vec<&str> = terms.iter().flatten().map(String::as_str).collect();
        let term_vectors = encoder.encode(&flat).ok()?;
        if word_vectors.len() != words.len() || term_vectors.len() != flat.len() {
            return None;
        }
        Some(
            word_vectors
                .iter()
                .map(|word| {
                    let mut at = 0;
                    terms
                        .iter()
                        .map(|group| {
                            let best = term_vectors[at..at + group.len()]
                                .iter()
                                .map(|term| f64::from(cosine(word, term)))
                                .fold(0.0, f64::max);
                            at += group.len();
                            best
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// Every claim in `text` with the scope it holds in: a sentence whose own phrase names
    /// scope values the ontology declares ("In the EU, refunds take 14 days.") is read without
    /// that phrase and its claims hold in that scope; when the shortened sentence says nothing,
    /// the whole one is read as usual (a trailing "in the EU" may be the value itself). Every
    /// other claim holds everywhere — or, when the page's front matter names declared scope
    /// values (`region: EU`, `scope: region=EU`), there, and a sentence's own phrase narrows that
    /// ([`super::scope::ScopeVocabulary::front_matter_scope`]). Same stages, bounds and order as
    /// [`Extraction::claims`].
    pub fn scoped_claims(
        &self,
        ontology: &Ontology,
        text: &str,
        known: &Lexicon,
    ) -> Vec<(Scope, Claim)> {
        let vocabulary = ontology.scope_vocabulary();
        if vocabulary.is_empty() {
            return self
                .claims(ontology, text, known)
                .into_iter()
                .map(|c| (Scope::everywhere(), c))
                .collect();
        }
        let page = vocabulary.front_matter_scope(text);
        let mut scoped = Vec::new();
        let mut rest = text.to_owned();
        for sentence in split_sentences(text) {
            let Some((scope, shortened)) = vocabulary.scope_of(sentence) else {
                continue;
            };
            let found = self.claims(ontology, &shortened, known);
            if found.is_empty() {
                continue;
            }
            rest = rest.replacen(sentence, "", 1);
            let scope = scope.inside(&page);
            scoped.extend(found.into_iter().map(|mut claim| {
                claim.sentence = sentence.to_owned();
                (scope.clone(), claim)
            }));
        }
        let mut claims: Vec<(Scope, Claim)> = self
            .claims(ontology, &rest, known)
            .into_iter()
            .map(|c| (page.clone(), c))
            .collect();
        claims.extend(scoped);
        claims
    }

    /// Every claim in `text`, in stage order. `known` are names the caller knows (the graph's
    /// entities and aliases), with their types.
    pub fn claims(&self, ontology: &Ontology, text: &str, known: &Lexicon) -> Vec<Claim> {
        let mut claims: Vec<Claim> = Vec::new();
        let mut claimed: BTreeSet<String> = BTreeSet::new();
        let mut rest = text.to_owned();
        let confidence = &self.settings.confidence;
        let mut lexicon = known.clone();
        for predicate in ontology.predicates() {
            if let Some(fixed) = &predicate.fixed_subject {
                lexicon.insert(
                    &self.normaliser,
                    fixed,
                    predicate.subject_types.first().map(String::as_str),
                );
            }
        }
        for stage in &self.settings.stages {
            match stage {
                Stage::Structured => {
                    let similarity = |keys: &[&str]| self.word_similarities(keys, &self.terms);
                    let read = structured::read(
                        ontology,
                        &self.profiles,
                        &lexicon,
                        &self.normaliser,
                        &similarity,
                        &rest,
                    );
                    claims.extend(read.claims.into_iter().map(|mut c| {
                        c.confidence = confidence.structured;
                        c
                    }));
                    claimed.extend(read.claimed);
                    rest = read.rest;
                }
                Stage::Patterns => {
                    for sentence in split_sentences(&rest) {
                        if claimed.contains(sentence) {
                            continue;
                        }
                        let found = claims_in_sentence(ontology, sentence);
                        if !found.is_empty() {
                            claimed.insert(sentence.to_owned());
                        }
                        claims.extend(found.into_iter().map(|mut c| {
                            c.confidence = confidence.patterns;
                            c
                        }));
                    }
                }
                Stage::Semantic => {
                    self.learn_names(ontology, &claims, &mut lexicon);
                    let id = self.semantic_id();
                    let scorer = self.scorer();
                    let read = |claimed: &BTreeSet<String>, sentence: &str| {
                        !claimed.contains(sentence)
                            && sentence.len() <= super::extract::MAX_SENTENCE_CHARS
                    };
                    self.encode_ahead(ontology, &scorer, &lexicon, &rest, |sentence| {
                        read(&claimed, sentence)
                    });
                    for sentence in split_sentences(&rest) {
                        if !read(&claimed, sentence) {
                            continue;
                        }
                        let found = semantic::claims_by_meaning(
                            ontology,
                            &self.profiles,
                            &scorer,
                            &lexicon,
                            &self.normaliser,
                            sentence,
                        );
                        if !found.is_empty() {
                            claimed.insert(sentence.to_owned());
                        }
                        for (mut claim, typed) in found {
                            // A claim whose every slot was typed in its own sentence types its
                            // names for the page's later sentences ("the Ledger system" makes a
                            // later bare "Ledger" a system); a guess from an untyped name does not.
                            if typed {
                                self.learn_names(
                                    ontology,
                                    std::slice::from_ref(&claim),
                                    &mut lexicon,
                                );
                            }
                            claim.extractor = id.clone();
                            claim.confidence = confidence.semantic;
                            claims.push(claim);
                        }
                    }
                }
                Stage::Model => {
                    let Some(model) = &self.model else {
                        continue;
                    };
                    let pending: Vec<&str> = split_sentences(&rest)
                        .into_iter()
                        .filter(|s| {
                            !claimed.contains(*s)
                                && s.len() <= super::extract::MAX_SENTENCE_CHARS
                                && s.chars().any(char::is_alphabetic)
                        })
                        .collect();
                    self.learn_names(ontology, &claims, &mut lexicon);
                    let scorer = self.scorer();
                    for batch in pending.chunks(MODEL_BATCH) {
                        self.counters.call(batch.len());
                        let mut cost = ModelCost::default();
                        let answered = model.claims(ontology, batch, &mut cost);
                        self.counters.paid(&cost);
                        // A failed call leaves its sentences unclaimed (counted, never fatal).
                        let Ok(proposed) = answered else {
                            self.counters.error();
                            continue;
                        };
                        for claim in proposed {
                            // The model's own subject, should a better predicate need it
                            // (grounding puts a fixed subject in its place).
                            let proposed = claim.clone();
                            let grounded = ground(ontology, &self.normaliser, batch, claim)
                                .and_then(|claim| {
                                    match better_predicate(
                                        ontology,
                                        &self.profiles,
                                        &scorer,
                                        &claim,
                                    ) {
                                        None => Ok(claim),
                                        Some(better) => {
                                            self.counters.corrected();
                                            let claim = Claim {
                                                predicate: better,
                                                ..proposed
                                            };
                                            ground(ontology, &self.normaliser, batch, claim)
                                        }
                                    }
                                });
                            let grounded = grounded.and_then(|claim| {
                                typed(ontology, &self.profiles, &lexicon, &self.normaliser, &claim)
                                    .map(|()| claim)
                            });
                            let Ok(mut claim) = grounded else {
                                self.counters.triple(false);
                                continue;
                            };
                            self.counters.triple(true);
                            claim.extractor = model.id().to_owned();
                            claim.confidence = confidence.model;
                            let duplicate = claims.iter().any(|c| {
                                c.sentence == claim.sentence
                                    && c.predicate == claim.predicate
                                    && c.subject == claim.subject
                                    && c.object == claim.object
                            });
                            if !duplicate {
                                claimed.insert(claim.sentence.clone());
                                claims.push(claim);
                            }
                        }
                    }
                }
            }
        }
        self.fields_first(claims)
    }

    /// A slot a page states in a field (its header, its front matter, a record) is the page's
    /// own word on it: what its prose seems to say of the same subject and predicate is dropped,
    /// so one version never disagrees with itself.
    fn fields_first(&self, claims: Vec<Claim>) -> Vec<Claim> {
        let fielded: BTreeSet<(String, &str)> = claims
            .iter()
            .filter(|c| c.extractor == structured::STRUCTURED_ID && c.kind == PredicateKind::Slot)
            .map(|c| (self.normaliser.key(c.subject.name()), c.predicate.as_str()))
            .collect();
        if fielded.is_empty() {
            return claims;
        }
        let keep: Vec<bool> = claims
            .iter()
            .map(|c| {
                c.extractor == structured::STRUCTURED_ID
                    || c.kind != PredicateKind::Slot
                    || !fielded
                        .contains(&(self.normaliser.key(c.subject.name()), c.predicate.as_str()))
            })
            .collect();
        claims
            .into_iter()
            .zip(keep)
            .filter_map(|(c, k)| k.then_some(c))
            .collect()
    }

    /// Names earlier stages stated, with the types their predicates give them.
    fn learn_names(&self, ontology: &Ontology, claims: &[Claim], lexicon: &mut Lexicon) {
        for claim in claims {
            let Some(predicate) = ontology.predicate(&claim.predicate) else {
                continue;
            };
            if predicate.kind == PredicateKind::Rename {
                lexicon.insert(&self.normaliser, claim.subject.name(), None);
                lexicon.insert(&self.normaliser, &claim.object, None);
                continue;
            }
            let subject_type = (predicate.subject_types.len() == 1
                && predicate.subject_types[0] != "any")
                .then(|| predicate.subject_types[0].as_str());
            lexicon.insert(&self.normaliser, claim.subject.name(), subject_type);
            if predicate.object_is_entity() {
                lexicon.insert(
                    &self.normaliser,
                    &claim.object,
                    Some(&predicate.object_type),
                );
            }
        }
    }

    /// Encodes, in one call, the texts of every sentence of `text` that `unclaimed` admits and
    /// some predicate could take ([`semantic::reading`]): the model runs on batches of like
    /// length, and the sentence-by-sentence reading after finds them in the encoder's cache.
    /// A sentence read differently by then (a name it learned earlier in the page) is encoded
    /// on its own; a failure here is left to that reading.
    fn encode_ahead(
        &self,
        ontology: &Ontology,
        scorer: &Scorer<'_>,
        lexicon: &Lexicon,
        text: &str,
        unclaimed: impl Fn(&str) -> bool,
    ) {
        let Scorer::Encoder { encoder, .. } = scorer else {
            return;
        };
        if !encoder.keeps_vectors() {
            return;
        }
        let texts: Vec<String> = split_sentences(text)
            .into_iter()
            .filter(|sentence| unclaimed(sentence))
            .filter_map(|sentence| {
                semantic::reading(
                    ontology,
                    &self.profiles,
                    scorer,
                    lexicon,
                    &self.normaliser,
                    sentence,
                )
            })
            .flat_map(|read| read.encoded_texts())
            .collect();
        if texts.len() > 2 {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let _warmed = encoder.encode(&texts);
        }
    }

    fn scorer(&self) -> Scorer<'_> {
        let Some(encoder) = &self.encoder else {
            return Scorer::Lexical;
        };
        let prototypes = self.prototypes.get_or_init(|| {
            let mut all = Vec::new();
            for profile in self.profiles.iter() {
                let texts: Vec<&str> = profile.prototypes.iter().map(String::as_str).collect();
                all.push(encoder.encode(&texts).ok()?);
            }
            Some(all)
        });
        match prototypes {
            Some(prototypes) => Scorer::Encoder {
                encoder: encoder.as_ref(),
                prototypes,
            },
            None => Scorer::Lexical,
        }
    }
}

#[cfg(test)]
mod model_tests;

#[cfg(test)]
pub(crate) mod tests;
