//! The extraction benchmark: sentences per second of each stage of the pipeline on a world's
//! pages (each stage alone reading every sentence), then two full rebuilds of a graph from every
//! current page with the configured pipeline — the second finds every sentence's vector in the
//! encoder's cache and calls the model for none. In process, no services.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use ontoloop_core::knowledge::encoder::{CachedEncoder, SentenceEncoder};
use ontoloop_core::knowledge::{
    ExtractSettings, ExtractionSetup, Graph, Lexicon, Ontology, PageVersion, Stage, split_sentences,
};
use ontoloop_core::world::World;
use serde::Serialize;

/// One stage's throughput.
#[derive(Debug, Clone, Serialize)]
pub struct StageRate {
    /// The stage (and scorer, for the semantic stage).
    pub stage: String,
    /// Sentences read.
    pub sentences: u64,
    /// Claims made.
    pub claims: u64,
    /// Sentences per second.
    pub per_sec: f64,
}

/// One full rebuild.
#[derive(Debug, Clone, Serialize)]
pub struct Rebuild {
    /// Pages read.
    pub pages: u64,
    /// Facts in the graph after it.
    pub facts: u64,
    /// Wall time in milliseconds.
    pub ms: f64,
    /// Sentences sent to the model (cache misses).
    pub model_texts: u64,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Each stage alone over every sentence of every page version.
    pub stages: Vec<StageRate>,
    /// A full rebuild with the pipeline, then a second with the encoder's cache warm.
    pub rebuilds: Vec<Rebuild>,
    /// Whether the model was loaded (else the semantic stage scores lexically).
    pub model: bool,
}

/// Runs the benchmark on every distinct page version of the world's scenarios.
pub fn run(world: &World, model_dir: Option<&std::path::Path>) -> anyhow::Result<Report> {
    let ontology = world.ontology()?;
    let mut bodies: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut current: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (doc_id, origin, body) in world.parsed.iter().flat_map(|s| s.pages()) {
        bodies.insert(body.to_owned(), (doc_id.to_owned(), origin.to_owned()));
        current.insert(doc_id.to_owned(), (origin.to_owned(), body.to_owned()));
    }
    let embedder = ontoloop_embed::Embedder::load_default(model_dir).ok();
    let model = embedder.is_some();
    let encoder = embedder.map(|e| Arc::new(CachedEncoder::new(Box::new(e))));
    let dyn_encoder = || encoder.clone().map(|e| e as Arc<dyn SentenceEncoder>);
    let only = |stage: Stage| ExtractSettings {
        stages: vec![stage],
        ..ExtractSettings::default()
    };
    let mut stages = vec![structure_rate(bodies.keys())];
    let mut runs: Vec<(String, Ontology)> = vec![
        (
            "structured".to_owned(),
            ExtractionSetup::new(only(Stage::Structured), None).compile(ontology.clone()),
        ),
        (
            "patterns".to_owned(),
            ExtractionSetup::new(only(Stage::Patterns), None).compile(ontology.clone()),
        ),
        (
            "semantic (lexical)".to_owned(),
            ExtractionSetup::new(only(Stage::Semantic), None).compile(ontology.clone()),
        ),
    ];
    // The stage's own rate is measured on a cache of its own, cold.
    if let Ok(own) = ontoloop_embed::Embedder::load_default(model_dir) {
        let own: Arc<dyn SentenceEncoder> = Arc::new(CachedEncoder::new(Box::new(own)));
        runs.push((
            "semantic (model)".to_owned(),
            ExtractionSetup::new(only(Stage::Semantic), Some(own)).compile(ontology.clone()),
        ));
    }
    for (name, compiled) in &runs {
        stages.push(rate(name, compiled, bodies.keys()));
    }
    let pipeline =
        ExtractionSetup::new(ExtractSettings::default(), dyn_encoder()).compile(ontology.clone());
    let mut rebuilds = Vec::new();
    for _ in 0..2 {
        let before = encoder.as_ref().map_or(0, |e| e.model_texts());
        let started = Instant::now();
        let mut graph = Graph::new(&pipeline);
        for (version, (doc_id, (origin, body))) in current.iter().enumerate() {
            let page = PageVersion {
                source_id: doc_id.clone(),
                version: version as u64 + 1,
                title: doc_id.clone(),
                origin: origin.clone(),
                body: body.clone(),
                updated_at: Utc::now(),
                acl: Vec::new(),
                confidence: 1.0,
                deleted: false,
                effective_from: None,
            };
            graph.apply_page(&pipeline, &page, Utc::now());
        }
        rebuilds.push(Rebuild {
            pages: current.len() as u64,
            facts: graph.facts().len() as u64,
            ms: started.elapsed().as_secs_f64() * 1e3,
            model_texts: encoder.as_ref().map_or(0, |e| e.model_texts()) - before,
        });
    }
    Ok(Report {
        stages,
        rebuilds,
        model,
    })
}

/// The structure parser alone (`knowledge::document`): every page parsed into its records and
/// prose, no claim read; its claims column counts the fields found.
fn structure_rate<'a>(bodies: impl Iterator<Item = &'a String>) -> StageRate {
    timed("structure parser (fields)", bodies, |body| {
        let doc = ontoloop_core::knowledge::document::parse(body);
        doc.records.iter().map(|r| r.fields.len() as u64).sum()
    })
}

fn rate<'a>(
    name: &str,
    ontology: &Ontology,
    bodies: impl Iterator<Item = &'a String>,
) -> StageRate {
    timed(name, bodies, |body| {
        ontology
            .extraction()
            .claims(ontology, body, &Lexicon::default())
            .len() as u64
    })
}

/// Stage `stage` timed over every one of `bodies`: `claims` reads one and counts what it made.
fn timed<'a>(
    stage: &str,
    bodies: impl Iterator<Item = &'a String>,
    claims: impl Fn(&str) -> u64,
) -> StageRate {
    let bodies: Vec<&String> = bodies.collect();
    let sentences: u64 = bodies.iter().map(|b| split_sentences(b).len() as u64).sum();
    let started = Instant::now();
    let claims: u64 = bodies.iter().map(|b| claims(b)).sum();
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    StageRate {
        stage: stage.to_owned(),
        sentences,
        claims,
        per_sec: sentences as f64 / secs,
    }
}

impl Report {
    /// The tables.
    pub fn to_text(&self, world: &World) -> String {
        let mut out = format!(
            "extraction benchmark · world {}{}\n\n{:<30} {:>9} {:>7} {:>12}\n",
            world.name,
            if self.model {
                ""
            } else {
                " · no model loaded (run `make model`)"
            },
            "stage (alone)",
            "sentences",
            "claims",
            "sentences/s"
        );
        for s in &self.stages {
            out.push_str(&format!(
                "{:<30} {:>9} {:>7} {:>12.0}\n",
                s.stage, s.sentences, s.claims, s.per_sec
            ));
        }
        out.push_str(&format!(
            "\n{:<30} {:>9} {:>7} {:>12} {:>12}\n",
            "full rebuild, every stage", "pages", "facts", "ms", "model texts"
        ));
        for (i, r) in self.rebuilds.iter().enumerate() {
            let label = if i == 0 {
                "first (cold cache)"
            } else {
                "second (warm cache)"
            };
            out.push_str(&format!(
                "{:<30} {:>9} {:>7} {:>12.1} {:>12}\n",
                label, r.pages, r.facts, r.ms, r.model_texts
            ));
        }
        out
    }
}
