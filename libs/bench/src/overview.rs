//! `ontoloop bench overview`: what the communities cost. A tenant of N generated pages, one
//! service each, in domains of [`DOMAIN`] services that depend on and call each other (every
//! domain's first service also feeds the next domain's), is read into a graph and a read model.
//! Then the entity graph is built and its communities found, each timed alone with the memory
//! they hold; and "what are the main themes?" and "how does X relate to Y?" are asked as
//! retrieval answers them (`asking::ask_text`, without the gRPC edge): the first of each after
//! the graph changed (which builds what the read model then keeps), then many more from what it
//! kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use ontoloop_core::Caller;
use ontoloop_core::knowledge::communities::EntityGraph;
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::knowledge::{
    AnswerStatus, ExtractSettings, ExtractionSetup, Graph, Ontology, PageVersion, Scope,
};
use ontoloop_readmodel::Snapshot;
use ontoloop_readmodel::asking::{Answering, Asking, ask_text};
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

use super::scale::{Quantiles, catalog_version, service};

/// The bench's tenant.
const TENANT: &str = "overview";

/// Services per domain: the communities the graph should show.
const DOMAIN: usize = 50;

/// The themes questions asked, in turn.
const THEMES: [&str; 3] = [
    "What are the main themes?",
    "Give me an overview",
    "What are the main topics covered?",
];

/// What the communities cost.
#[derive(Debug, Clone, Serialize)]
pub struct OverviewReport {
    /// Pages in the tenant.
    pub pages: usize,
    /// Entities in the graph.
    pub entities: usize,
    /// Facts in the graph.
    pub facts: usize,
    /// Seconds to build the entity graph.
    pub entity_graph_s: f64,
    /// Seconds to find its communities (Louvain) and summarise them.
    pub communities_s: f64,
    /// Communities found.
    pub communities: usize,
    /// Resident memory the entity graph and its communities hold, MB (the process's growth
    /// while they were built and kept).
    pub memory_mb: f64,
    /// Questions of each kind timed from what the read model kept.
    pub questions: usize,
    /// The first relate question after the graph changed (builds the entity graph), ms.
    pub relate_first_ms: f64,
    /// The first themes question after that (builds the communities on the kept entity
    /// graph), ms.
    pub themes_first_ms: f64,
    /// Relate questions from the kept entity graph, ms.
    pub relate_ms: Quantiles,
    /// Themes questions from the kept communities, ms.
    pub themes_ms: Quantiles,
    /// Of the relate questions, those answered with a chain of facts.
    pub relate_answered: usize,
    /// Of the themes questions, those answered with communities.
    pub themes_answered: usize,
}

impl OverviewReport {
    /// The printed table.
    pub fn to_text(&self) -> String {
        format!(
            "overview: communities over the entity graph, and the questions they answer\n\
             pages                 {}\n\
             entities / facts      {} / {}\n\
             entity graph build    {:.3} s\n\
             communities (Louvain) {:.3} s ({} found)\n\
             memory                {:.1} MB (entity graph and communities)\n\
             relate, first         {:.1} ms (builds the entity graph)\n\
             themes, first         {:.1} ms (builds the communities on it)\n\
             relate, kept          p50 {:.2} ms  p99 {:.2} ms ({} of {} answered)\n\
             themes, kept          p50 {:.2} ms  p99 {:.2} ms ({} of {} answered)\n",
            self.pages,
            self.entities,
            self.facts,
            self.entity_graph_s,
            self.communities_s,
            self.communities,
            self.memory_mb,
            self.relate_first_ms,
            self.themes_first_ms,
            self.relate_ms.p50,
            self.relate_ms.p99,
            self.relate_answered,
            self.questions,
            self.themes_ms.p50,
            self.themes_ms.p99,
            self.themes_answered,
            self.questions,
        )
    }
}

/// Builds the tenant of `pages` pages and times the communities and `questions` questions of
/// each kind.
pub fn run(
    pages: usize,
    questions: usize,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<OverviewReport> {
    anyhow::ensure!(pages >= 2, "--pages must be at least 2");
    anyhow::ensure!(questions > 0, "--questions must be at least 1");
    // The lexical scorer reads the pages: the patterns state every fact, and the encoder's
    // cost is the passages benchmark's.
    let setup = ExtractionSetup::new(ExtractSettings::default(), None);
    let ontology = Arc::new(setup.compile_for(TENANT, Ontology::from_value(ontology())?));
    let written = Utc::now() - chrono::Duration::hours(1);
    let versions: Vec<PageVersion> = (0..pages)
        .map(|k| catalog_version(k, body(k, pages), written))
        .collect();
    progress(&format!("reading {pages} pages into a graph"));
    let mut graph = Graph::new(&ontology);
    for page in &versions {
        graph.apply_page(&ontology, page, written);
    }
    let (entities, facts) = (graph.entities().count(), graph.facts().len());
    let log: BTreeMap<String, u64> = versions.iter().map(|p| (p.source_id.clone(), 1)).collect();

    progress("building the entity graph and its communities");
    let before = rss_kb();
    let started = Instant::now();
    let entity_graph = EntityGraph::of(&graph);
    let entity_graph_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let communities = entity_graph.communities();
    let communities_s = started.elapsed().as_secs_f64();
    let memory_mb = rss_kb().saturating_sub(before) as f64 / 1024.0;
    let found = communities.len();
    drop((entity_graph, communities));

    progress("building the read model");
    let snapshot = Snapshot::from_parts(1, ontology, graph, versions, log, None)?;
    let caller = Caller::new(TENANT, "agent")?;
    let answering = Answering::from(&ontoloop_settings::Settings::defaults().retrieval);
    let ask = |text: &str| -> anyhow::Result<(Duration, bool)> {
        let asking = Asking {
            text,
            scope: Scope::everywhere(),
            design: Design::Ontoloop,
            as_of: Utc::now(),
            ranking: None,
        };
        let started = Instant::now();
        let (asked, _) = ask_text(&snapshot, answering, &caller, asking)?;
        let took = started.elapsed();
        let answered =
            asked.answer.status == AnswerStatus::Answered && !asked.answer.hops.is_empty();
        Ok((took, answered))
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(40);
    let mut relate_question = || {
        let from = rng.random_range(0..pages);
        // Most pairs share a domain; one in four is a domain or two apart.
        let to = if rng.random_bool(0.75) {
            let domain = from / DOMAIN * DOMAIN;
            domain + rng.random_range(0..domain_size(from / DOMAIN, pages))
        } else {
            (from + DOMAIN * rng.random_range(1..=2)) % pages
        };
        let to = if to == from { (from + 1) % pages } else { to };
        format!("How does {} relate to {}?", service(from), service(to))
    };
    progress(&format!("asking {questions} relate and themes questions"));
    let (relate_first, _) = ask(&relate_question())?;
    let (themes_first, _) = ask(THEMES[0])?;
    let mut relate = Vec::with_capacity(questions);
    let mut themes = Vec::with_capacity(questions);
    let (mut relate_answered, mut themes_answered) = (0, 0);
    for i in 0..questions {
        let (took, answered) = ask(&relate_question())?;
        relate.push(took);
        relate_answered += usize::from(answered);
        let (took, answered) = ask(THEMES[i % THEMES.len()])?;
        themes.push(took);
        themes_answered += usize::from(answered);
    }
    Ok(OverviewReport {
        pages,
        entities,
        facts,
        entity_graph_s,
        communities_s,
        communities: found,
        memory_mb,
        questions,
        relate_first_ms: relate_first.as_secs_f64() * 1000.0,
        themes_first_ms: themes_first.as_secs_f64() * 1000.0,
        relate_ms: Quantiles::of(relate),
        themes_ms: Quantiles::of(themes),
        relate_answered,
        themes_answered,
    })
}

/// The generated ontology: services that depend on, call and feed each other.
fn ontology() -> serde_json::Value {
    serde_json::json!({
        "predicates": [
            {"name": "depends_on", "subject_type": "service", "object_type": "service",
             "patterns": ["{s} depends on {o}."]},
            {"name": "calls", "subject_type": "service", "object_type": "service",
             "patterns": ["{s} calls {o}."]},
            {"name": "feeds", "subject_type": "service", "object_type": "service",
             "patterns": ["{s} feeds {o}."]}
        ],
        "authority": {"default": 2}
    })
}

/// Services in domain `domain` of a tenant of `pages` (the last may be short).
fn domain_size(domain: usize, pages: usize) -> usize {
    DOMAIN.min(pages - domain * DOMAIN)
}

/// Page `k`: its service depends on the next in its domain and calls another; a domain's
/// first service feeds the next domain's; a paragraph that states nothing the ontology knows.
fn body(k: usize, pages: usize) -> String {
    let (domain, at) = (k / DOMAIN, k % DOMAIN);
    let size = domain_size(domain, pages);
    let member = |i: usize| service(domain * DOMAIN + i % size);
    let name = service(k);
    let mut text = format!("# {name}\n\n");
    if size > 1 {
        let called = if (at * 7 + 3) % size == at {
            at + 2
        } else {
            at * 7 + 3
        };
        text.push_str(&format!(
            "{name} depends on {}. {name} calls {}. ",
            member(at + 1),
            member(called)
        ));
    }
    let domains = pages.div_ceil(DOMAIN);
    if at == 0 && domains > 1 {
        text.push_str(&format!(
            "{name} feeds {}. ",
            service((domain + 1) % domains * DOMAIN)
        ));
    }
    text.push_str(
        "\n\nDeployments go out during working hours after review. Alerts page the on-call \
         engineer, and runbooks describe how to restart workers.\n",
    );
    text
}

/// The process's resident memory, kB (0 when unknown).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_tenant_has_its_domains_as_communities_and_answers_both_questions() {
        let report = run(200, 5, &mut |_| {}).expect("bench");
        assert_eq!(report.entities, 200);
        // Four domains of 50, tied in a ring by one fact each: Louvain may split a domain,
        // and it never makes one community of everything.
        assert!((2..=8).contains(&report.communities), "{report:?}");
        assert_eq!(report.themes_answered, 5, "{report:?}");
        assert_eq!(report.relate_answered, 5, "{report:?}");
    }
}
