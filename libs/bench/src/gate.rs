//! `ontoloop bench gate`: what the gate costs before a rebuild goes live. A tenant of N
//! generated pages (the scale benchmark's ontology and pages) is read into a graph; a rebuild of
//! it is built in a shadow; then Q recent questions (distinct, as the query log keeps them) are
//! replayed against the live graph and the shadow through the analyst's own replay
//! (`ontoloop_analyst::gate::replay`), each answered as retrieval answers it. Prints the shadow's
//! build time, the replay time and the answers that differ (none: the rebuild is clean).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, Utc};
use ontoloop_analyst::gate;
use ontoloop_core::knowledge::{ExtractSettings, Graph, Ontology, PageVersion};
use ontoloop_readmodel::Snapshot;
use ontoloop_readmodel::asking::Answering;
use ontoloop_store::LoggedQuestion;
use serde::Serialize;

use super::scale::{catalog_body, catalog_version, ontology, service};

/// The bench's tenant.
const TENANT: &str = "gate";

/// What the gate cost.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// Pages in the tenant.
    pub pages: usize,
    /// Facts in the live graph.
    pub facts: usize,
    /// Whether the sentence encoder read the pages (else the lexical scorer).
    pub encoder: bool,
    /// Seconds to read every page into the shadow (the rebuild itself).
    pub shadow_build_s: f64,
    /// Seconds to build the two read models the replay answers from.
    pub read_models_s: f64,
    /// Distinct questions replayed.
    pub replayed: usize,
    /// Seconds the replay took (both graphs).
    pub replay_s: f64,
    /// Milliseconds per question (both graphs).
    pub per_question_ms: f64,
    /// Answers that differ.
    pub differing: usize,
}

impl GateReport {
    /// The printed table.
    pub fn to_text(&self) -> String {
        format!(
            "gate: a rebuild in a shadow, recent questions replayed against live and shadow\n\
             pages            {}\n\
             facts            {}\n\
             encoder          {}\n\
             shadow build     {:.2} s\n\
             read models      {:.2} s\n\
             questions        {}\n\
             replay           {:.2} s ({:.2} ms a question, both graphs)\n\
             answers differ   {}\n",
            self.pages,
            self.facts,
            if self.encoder {
                "all-MiniLM-L6-v2"
            } else {
                "lexical (no model)"
            },
            self.shadow_build_s,
            self.read_models_s,
            self.replayed,
            self.replay_s,
            self.per_question_ms,
            self.differing,
        )
    }
}

/// Builds the tenant of `pages` pages, its rebuild in a shadow and replays `questions`.
pub fn run(
    pages: usize,
    questions: usize,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<GateReport> {
    anyhow::ensure!(pages > 0, "--pages must be at least 1");
    let (setup, _) = ontoloop_embed::extraction_setup(ExtractSettings::default(), None);
    let encoder = setup.encoder().is_some();
    let ontology = Arc::new(setup.compile_for(TENANT, Ontology::from_value(ontology())?));
    let written = Utc::now() - Duration::hours(1);
    let versions: Vec<PageVersion> = (0..pages)
        .map(|k| catalog_version(k, catalog_body(k, (k * 7) % pages.max(1)), written))
        .collect();
    progress(&format!("reading {pages} pages into the live graph"));
    let mut live = Graph::new(&ontology);
    for page in &versions {
        live.apply_page(&ontology, page, written);
    }
    let log: BTreeMap<String, u64> = versions.iter().map(|p| (p.source_id.clone(), 1)).collect();
    progress("rebuilding it in a shadow");
    let started = Instant::now();
    let mut shadow = live.clone();
    let rebuilt = Utc::now();
    shadow.retire_page_facts(rebuilt);
    for page in &versions {
        shadow.apply_page(&ontology, page, rebuilt);
    }
    let shadow_build_s = started.elapsed().as_secs_f64();
    let facts = live.facts().len();
    let started = Instant::now();
    let live = Snapshot::from_parts(
        1,
        Arc::clone(&ontology),
        live,
        versions.clone(),
        log.clone(),
        None,
    )?;
    let shadow = Snapshot::from_parts(2, ontology, shadow, versions, log, None)?;
    let read_models_s = started.elapsed().as_secs_f64();
    let asker = serde_json::to_string(&ontoloop_readmodel::Asker {
        principal: "agent".to_owned(),
        groups: Vec::new(),
    })?;
    let templates = [
        "Who owns {}?",
        "What is {} written in?",
        "Where does {} run?",
    ];
    let logged: Vec<LoggedQuestion> = (0..questions)
        .map(|i| LoggedQuestion {
            tenant: TENANT.to_owned(),
            question: templates[i % templates.len()]
                .replace("{}", &service((i / templates.len()) % pages)),
            scope: String::new(),
            caller: asker.clone(),
            asked_at: rebuilt,
        })
        .collect();
    let answering = Answering::from(&ontoloop_settings::Settings::defaults().retrieval);
    progress(&format!("replaying {questions} questions against both"));
    let started = Instant::now();
    let replay = gate::replay(&live, &shadow, &logged, answering, Utc::now());
    let replay_s = started.elapsed().as_secs_f64();
    Ok(GateReport {
        pages,
        facts,
        encoder,
        shadow_build_s,
        read_models_s,
        replayed: replay.replayed,
        replay_s,
        per_question_ms: replay_s * 1000.0 / replay.replayed.max(1) as f64,
        differing: replay.unexplained + replay.explained,
    })
}
