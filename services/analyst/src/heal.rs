//! Healing: what the analyst does about a pattern of failure signals.
//!
//! A missing entity severe enough to heal at once (`analyst.heal_at`) is looked for in the
//! tenant's connected sources, and what is found is read into the graph as page versions with
//! their own origin, so answers carry provenance pointing at the source. One at or above
//! `analyst.propose_at` but below that becomes proposed graph updates, one per slot the sources
//! state, which the statistical supervisor routes to a reviewer or applies automatically. A stale
//! sector severe enough to heal at once re-extracts every page changed since the graph read it
//! (a repair run); a contradiction that severe rebuilds the graph from every current page. A
//! missing relationship type is an ontology change: when its cluster reaches
//! `analyst.propose_at`, relationship discovery drafts an ontology proposal from the tenant's
//! pages for its failed questions ([`Healer::discover`]), which always goes to a human. Each
//! pattern is acted on at most once per stage in a process, and its status is recorded in the
//! store for the patterns page.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::patterns::{ObservedSignal, PatternKind, fold};
use ontoloop_core::proposals::{FoundDoc, draft_updates};
use ontoloop_core::{During, Lru, Severity};
use ontoloop_runtime::Context;
use ontoloop_store::{PatternStatus, StoreError, UpdateRecord, UpdateSource, update_status};
use tokio::sync::Mutex;

use crate::grow::Trigger;
use crate::knowledge::KnowledgeWriter;
use crate::refusal::Refusal;
use crate::review::{ReviewError, Reviews};
use crate::routing::{record_heal, update_id};

/// A connected source of truth the analyst can search for a missing entity.
#[async_trait::async_trait]
pub trait SourceAdapter: Send + Sync {
    /// Origin given to what it provides (decides authority through the ontology).
    fn origin(&self) -> &str;
    /// Documents of `tenant` that mention `name` (folded: case, punctuation and spacing aside).
    async fn find(&self, tenant: &str, name: &str) -> std::io::Result<Vec<FoundDoc>>;
}

/// A directory of project records: `ROOT/TENANT/*.md` or `*.txt`, one record per file. A
/// record's id is `ORIGIN:FILE`, the form a record source takes, so an update applied from it
/// and the page read from it carry the same provenance.
pub struct DirectoryAdapter {
    root: PathBuf,
    origin: String,
}

impl DirectoryAdapter {
    /// An adapter over `root`, giving its documents `origin`.
    pub fn new(root: impl Into<PathBuf>, origin: impl Into<String>) -> Self {
        Self {
            root: root.into(),
            origin: origin.into(),
        }
    }
}

#[async_trait::async_trait]
impl SourceAdapter for DirectoryAdapter {
    fn origin(&self) -> &str {
        &self.origin
    }

    async fn find(&self, tenant: &str, name: &str) -> std::io::Result<Vec<FoundDoc>> {
        // A tenant name that could leave the root is never a directory of its records.
        if tenant.contains(['/', '\\']) || tenant.starts_with('.') {
            return Ok(Vec::new());
        }
        let dir = self.root.join(tenant);
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let wanted = fold(name);
        let mut found = Vec::new();
        while let Some(entry) = entries.next_entry().await? {
            let path = entry.path();
            let text_file = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e == "md" || e == "txt");
            if !text_file {
                continue;
            }
            let body = tokio::fs::read_to_string(&path).await?;
            if !format!(" {} ", fold(&body)).contains(&format!(" {wanted} ")) {
                continue;
            }
            let file = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let title = body
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches('#')
                .trim()
                .to_owned();
            found.push(FoundDoc {
                id: format!("{}:{file}", self.origin),
                title,
                body,
            });
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(found)
    }
}

/// Why a pattern could not be acted on yet; a later signal of the pattern tries again.
#[derive(Debug, thiserror::Error)]
enum HealError {
    /// The graph could not be read, or what was found not applied to it.
    #[error(transparent)]
    Graph(#[from] Refusal),
    /// Updates are drafted against the tenant's knowledge, of which nothing is stored yet.
    #[error("tenant {0} has no knowledge yet")]
    NoKnowledge(String),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] During<StoreError>),
    /// A drafted update could not be routed.
    #[error(transparent)]
    Review(#[from] ReviewError),
}

/// The span of one signal's pattern work: a child of the trace its message carries (the
/// reporting request's), so each signal of a batch is followed in its own trace, ReportSignal →
/// queue → pattern → heal.
pub fn signal_span(message: &ontoloop_queue::Message) -> tracing::Span {
    let span = tracing::info_span!(
        "on_signal",
        service = "analyst",
        messaging.message.id = %message.id,
        tenant = tracing::field::Empty,
        pattern.kind = tracing::field::Empty,
        pattern.key = tracing::field::Empty,
        stage = tracing::field::Empty,
        status = tracing::field::Empty,
        trace_id = tracing::field::Empty,
    );
    ontoloop_observability::trace::follow(&span, &message.headers);
    span
}

/// How far a pattern has been acted on in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    /// Proposed updates were drafted (or the sources were searched for them).
    Proposed,
    /// Healed at once (or the sources were searched for it).
    Healed,
}

impl Stage {
    /// Its name on a span.
    fn name(self) -> &'static str {
        match self {
            Stage::Proposed => "propose",
            Stage::Healed => "heal",
        }
    }

    /// The stage a recorded pattern status shows was reached (an `open` one shows none: acting
    /// on it again searches the sources again, which changes nothing they do not state).
    fn from_status(status: &str) -> Option<Stage> {
        match status {
            "healed" => Some(Stage::Healed),
            "proposed" => Some(Stage::Proposed),
            _ => None,
        }
    }
}

/// How far each (tenant, kind, key) pattern has been acted on, under `[cache.heal_stages]`. An
/// evicted pattern's stage is read back from the status the store recorded for it.
type Stages = Lru<Stage>;

/// The key of a pattern in [`Stages`].
fn stage_key(tenant: &str, kind: PatternKind, key: &str) -> String {
    format!("{tenant}\n{}\n{key}", kind.name())
}

/// Heals patterns as signals arrive.
#[derive(Clone)]
pub struct Healer {
    ctx: Context,
    writer: KnowledgeWriter,
    reviews: Reviews,
    adapters: Arc<Vec<Box<dyn SourceAdapter>>>,
    heal_at: Severity,
    propose_at: Severity,
    stages: Arc<Mutex<Stages>>,
}

impl Healer {
    /// A healer over the adapters the settings name.
    pub fn new(ctx: Context, writer: KnowledgeWriter, reviews: Reviews) -> Self {
        let settings = &ctx.settings.analyst;
        let mut adapters: Vec<Box<dyn SourceAdapter>> = Vec::new();
        if !settings.sources_dir.trim().is_empty() {
            adapters.push(Box::new(DirectoryAdapter::new(
                settings.sources_dir.clone(),
                settings.source_origin.clone(),
            )));
        }
        let (heal_at, propose_at) = (settings.heal_at, settings.propose_at);
        let stages = Lru::new(ctx.settings.cache.heal_stages);
        Self {
            ctx,
            writer,
            reviews,
            adapters: Arc::new(adapters),
            heal_at,
            propose_at,
            stages: Arc::new(Mutex::new(stages)),
        }
    }

    /// Looks at a recorded signal and acts on its pattern when its severity (computed by the
    /// intake) calls for it. Failures are logged: a signal is never refused because healing did
    /// not work. What it acted on is recorded on the current span when that declares the fields
    /// (`tenant`, `pattern.kind`, `pattern.key`, `stage`, `status`; see [`signal_span`]).
    ///
    /// A missing relationship type's severity is its cluster's, not the signal's: its tenant is
    /// returned, for [`Self::discover`] to look at once per batch of signals.
    pub async fn on_signal(&self, body: &[u8]) -> Option<String> {
        let (tenant, signal, severity) = match crate::patterns::parse_signal(body) {
            Ok(parsed) => parsed,
            Err(err) => {
                tracing::warn!(error = %err, "cannot act on a message of the signals queue");
                return None;
            }
        };
        ontoloop_observability::metrics::global().add(
            "ontoloop_analyst_signals_total",
            "Failure signals the analyst recorded, by type and severity.",
            &[("type", signal.kind.name()), ("severity", severity.name())],
            1.0,
        );
        let kind = PatternKind::of(signal.kind);
        if kind == PatternKind::MissingRelationshipType {
            // Patterns of these cluster by meaning across subjects: the cluster's severity
            // decides, and what it triggers is an ontology change for a human.
            return Some(tenant);
        }
        let stage = if severity >= self.heal_at {
            Stage::Healed
        } else if severity >= self.propose_at && kind == PatternKind::MissingEntity {
            Stage::Proposed
        } else {
            return None;
        };
        let key = fold(&signal.subject);
        let slot = stage_key(&tenant, kind, &key);
        let span = tracing::Span::current();
        span.record("tenant", tenant.as_str());
        span.record("pattern.kind", kind.name());
        span.record("pattern.key", key.as_str());
        span.record("stage", stage.name());
        if !self.claim(&tenant, kind, &key, stage).await {
            return None;
        }
        let outcome = match (kind, stage) {
            (PatternKind::StaleSector | PatternKind::Contradiction, _) => {
                self.maintain(&tenant, kind, &key).await
            }
            (_, Stage::Healed) => self.heal(&tenant, &signal, &key).await,
            (_, Stage::Proposed) => self.propose(&tenant, &signal, &key).await,
        };
        match outcome {
            Ok(status) => {
                span.record("status", status.status.as_str());
                if let Err(err) = self
                    .ctx
                    .store
                    .set_pattern_status(&tenant, &status, Utc::now())
                    .await
                {
                    tracing::warn!(error = %err, "cannot record a pattern's status");
                }
            }
            Err(reason) => {
                tracing::warn!(tenant = %tenant, pattern = %key, reason = %reason, "cannot act on a pattern yet");
                // Let a later signal try again.
                self.stages.lock().await.remove(&slot);
            }
        }
        None
    }

    /// Claims `stage` of the pattern for this call: `false` when it (or a later stage) was
    /// reached already, in this process or as the store recorded it.
    async fn claim(&self, tenant: &str, kind: PatternKind, key: &str, stage: Stage) -> bool {
        let slot = stage_key(tenant, kind, key);
        // The store is read without the stages' lock held (it serves every tenant's signals);
        // what another signal recorded meanwhile is taken into account after.
        let cached = self.stages.lock().await.get(&slot).copied();
        let recorded = match cached {
            Some(done) => Some(done),
            None => self.recorded_stage(tenant, kind, key).await,
        };
        let mut stages = self.stages.lock().await;
        let done = recorded.max(stages.peek(&slot).copied());
        if done.is_some_and(|done| done >= stage) {
            if stages.peek(&slot).is_none()
                && let Some(done) = done
            {
                stages.insert(&slot, done, slot.len());
            }
            return false;
        }
        stages.insert(&slot, stage, slot.len());
        crate::metrics::cache_entries("analyst_heal_stages", stages.len());
        true
    }

    /// Relationship discovery: each missing relationship type pattern of the tenant whose
    /// severity (its whole cluster's) reaches `analyst.propose_at`, and that was not acted on,
    /// drafts an ontology proposal from the tenant's pages for its failed questions (only the
    /// predicates that answer one of them), which the supervisor sends to a human. A pattern
    /// whose pages relate nothing its questions ask stays open. Failures are logged; the next
    /// signal of the pattern tries again.
    pub async fn discover(&self, tenant: &str) {
        let kind = PatternKind::MissingRelationshipType;
        let found = match crate::patterns::patterns(&self.ctx, tenant, Utc::now()).await {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(tenant, error = %err, "cannot read the patterns to discover relationships");
                return;
            }
        };
        for pattern in found
            .into_iter()
            .filter(|p| p.kind == kind && p.severity >= self.propose_at)
        {
            if !self
                .claim(tenant, kind, &pattern.key, Stage::Proposed)
                .await
            {
                continue;
            }
            let pattern_id = format!("{}:{}", kind.name(), pattern.key);
            let asked = pattern.queries.len();
            let outcome = self
                .writer
                .propose_ontology(tenant, Trigger::Pattern(pattern_id), pattern.queries)
                .await;
            let (status, action) = match outcome {
                Ok(Some(proposed)) => (
                    "proposed",
                    format!(
                        "drafted an ontology change ({}) answering {} of its {asked} question(s): \
                         update {}",
                        proposed.update.predicate,
                        proposed.update.impact_radius,
                        proposed.update.id
                    ),
                ),
                Ok(None) => (
                    "open",
                    "no page relates what its questions ask: no relationship to propose".to_owned(),
                ),
                Err(reason) => {
                    tracing::warn!(tenant, pattern = %pattern.key, %reason, "cannot discover a missing relationship type yet");
                    self.stages
                        .lock()
                        .await
                        .remove(&stage_key(tenant, kind, &pattern.key));
                    continue;
                }
            };
            tracing::info!(tenant, pattern = %pattern.key, status, %action, "relationship discovery");
            let status = PatternStatus {
                kind: kind.name().to_owned(),
                key: pattern.key.clone(),
                status: status.to_owned(),
                action,
                signal_to_heal_ms: None,
            };
            if let Err(err) = self
                .ctx
                .store
                .set_pattern_status(tenant, &status, Utc::now())
                .await
            {
                tracing::warn!(error = %err, "cannot record a pattern's status");
            }
        }
    }

    /// The stage the store's recorded status of the pattern shows (none when unreadable: the
    /// pattern is then acted on, as a first signal would be).
    async fn recorded_stage(&self, tenant: &str, kind: PatternKind, key: &str) -> Option<Stage> {
        match self.ctx.store.pattern_statuses(tenant).await {
            Ok(statuses) => statuses
                .iter()
                .find(|s| s.kind == kind.name() && s.key == key)
                .and_then(|s| Stage::from_status(&s.status)),
            Err(err) => {
                tracing::debug!(error = %err, "cannot read recorded pattern statuses");
                None
            }
        }
    }

    /// When the pattern's first signal in the window arrived (now when unknown).
    async fn first_seen(&self, tenant: &str, key: &str) -> DateTime<Utc> {
        let window = self.ctx.settings.signals.window();
        let now = Utc::now();
        self.ctx
            .store
            .signal_first_seen(tenant, key, now - window)
            .await
            .ok()
            .flatten()
            .unwrap_or(now)
    }

    async fn find(&self, tenant: &str, name: &str) -> Vec<(String, FoundDoc)> {
        let mut found = Vec::new();
        for adapter in self.adapters.iter() {
            match adapter.find(tenant, name).await {
                Ok(docs) => {
                    found.extend(docs.into_iter().map(|d| (adapter.origin().to_owned(), d)))
                }
                Err(err) => {
                    tracing::warn!(error = %err, origin = adapter.origin(), "source adapter failed")
                }
            }
        }
        found
    }

    /// Reads every record the sources hold about the entity into the graph.
    async fn heal(
        &self,
        tenant: &str,
        signal: &ObservedSignal,
        key: &str,
    ) -> Result<PatternStatus, HealError> {
        let now = Utc::now();
        let mut read = 0;
        let mut origins = Vec::new();
        for (origin, doc) in self.find(tenant, &signal.subject).await {
            let envelope = EventEnvelope {
                tenant: tenant.to_owned(),
                seq: None,
                at: now,
                accepted: None,
                event: Event::DocUpsert {
                    doc_id: doc.id.clone(),
                    title: doc.title,
                    origin: origin.clone(),
                    body: doc.body,
                    acl: Vec::new(),
                    hold: false,
                    confidence: None,
                    effective_from: None,
                },
            };
            self.writer.apply_own(&envelope).await?;
            read += 1;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        let kind = PatternKind::MissingEntity.name().to_owned();
        if read == 0 {
            return Ok(PatternStatus {
                kind,
                key: key.to_owned(),
                status: "open".to_owned(),
                action: "no connected source knows it".to_owned(),
                signal_to_heal_ms: None,
            });
        }
        let latency_ms = (Utc::now() - self.first_seen(tenant, key).await).num_milliseconds();
        record_heal(&kind, latency_ms);
        tracing::info!(tenant = %tenant, entity = %key, records = read, signal_to_heal_ms = latency_ms, "healed a missing entity from a connected source");
        Ok(PatternStatus {
            kind,
            key: key.to_owned(),
            status: "healed".to_owned(),
            action: format!("read {read} record(s) from {}", origins.join(", ")),
            signal_to_heal_ms: Some(latency_ms),
        })
    }

    /// Drafts one proposed update per slot the sources state about the entity.
    async fn propose(
        &self,
        tenant: &str,
        signal: &ObservedSignal,
        key: &str,
    ) -> Result<PatternStatus, HealError> {
        let found = self.find(tenant, &signal.subject).await;
        let kind = PatternKind::MissingEntity.name().to_owned();
        let pattern_id = format!("{kind}:{key}");
        let docs: Vec<FoundDoc> = found.iter().map(|(_, doc)| doc.clone()).collect();
        let now = Utc::now();
        let domains = self.ctx.settings.analyst.domains.clone();
        let drafts = self
            .writer
            .read(tenant, |ontology, graph, _| {
                draft_updates(ontology, graph, key, &docs, &domains, now)
            })
            .await?
            .ok_or_else(|| HealError::NoKnowledge(tenant.to_owned()))?;
        let window = self.ctx.settings.signals.window();
        let (radius, queries) = self
            .ctx
            .store
            .signal_queries(tenant, key, now - window, 10)
            .await
            .map_err(|err| During::new("read the affected queries", err))?;
        let mut proposed = 0;
        for draft in drafts {
            let origin = found
                .iter()
                .find(|(_, d)| draft.sources.contains(&d.id))
                .map_or_else(String::new, |(origin, _)| origin.clone());
            let sources = draft
                .sources
                .iter()
                .map(|id| UpdateSource {
                    source_id: id.clone(),
                    version: 1,
                    title: found
                        .iter()
                        .find(|(_, d)| &d.id == id)
                        .map_or_else(String::new, |(_, d)| d.title.clone()),
                })
                .collect();
            let update = UpdateRecord {
                id: update_id(tenant, &draft.entity, &draft.predicate, &draft.after),
                tenant: tenant.to_owned(),
                pattern_id: pattern_id.clone(),
                signal_type: signal.kind.name().to_owned(),
                source: origin,
                domain: draft.domain,
                entity: draft.entity,
                predicate: draft.predicate,
                before: draft.before,
                after: draft.after,
                confidence: draft.confidence,
                confidence_variance: draft.confidence_variance,
                impact_radius: u32::try_from(radius).unwrap_or(u32::MAX),
                affected_queries: queries.clone(),
                sources,
                priority: 0.0,
                reason: String::new(),
                status: update_status::PENDING.to_owned(),
                applied_value: String::new(),
                created_at: now,
                queued_at: now,
                applied_at: None,
            };
            if self.reviews.submit(update).await? {
                proposed += 1;
            }
        }
        Ok(PatternStatus {
            kind,
            key: key.to_owned(),
            status: if proposed > 0 { "proposed" } else { "open" }.to_owned(),
            action: if found.is_empty() {
                "no connected source knows it".to_owned()
            } else {
                format!(
                    "proposed {proposed} update(s) from {} record(s)",
                    found.len()
                )
            },
            signal_to_heal_ms: None,
        })
    }

    /// Re-reads a region from its pages: a stale sector re-extracts every page changed since the
    /// graph read it (a repair run); a contradiction rebuilds from every current page, so
    /// extraction from scratch settles what the sources say now.
    async fn maintain(
        &self,
        tenant: &str,
        kind: PatternKind,
        key: &str,
    ) -> Result<PatternStatus, HealError> {
        let (mode, action) = if kind == PatternKind::Contradiction {
            ("rebuild", "rebuilt the graph from every current page")
        } else {
            (
                "repair",
                "re-extracted the pages changed since the graph read them",
            )
        };
        let envelope = EventEnvelope {
            tenant: tenant.to_owned(),
            seq: None,
            at: Utc::now(),
            accepted: None,
            event: Event::GraphMaintain {
                mode: mode.to_owned(),
            },
        };
        self.writer.apply_own(&envelope).await?;
        let kind = kind.name().to_owned();
        let latency_ms = (Utc::now() - self.first_seen(tenant, key).await).num_milliseconds();
        record_heal(&kind, latency_ms);
        Ok(PatternStatus {
            kind,
            key: key.to_owned(),
            status: "healed".to_owned(),
            action: action.to_owned(),
            signal_to_heal_ms: Some(latency_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_directory_adapter_finds_records_that_mention_a_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tenant = dir.path().join("acme");
        std::fs::create_dir_all(&tenant).expect("mkdir");
        std::fs::write(
            tenant.join("kite.md"),
            "# Project Kite\nProject Kite is owned by the Atlas team.",
        )
        .expect("write");
        std::fs::write(
            tenant.join("wren.md"),
            "# Project Wren\nNothing about kites.",
        )
        .expect("write");
        std::fs::write(tenant.join("notes.bin"), "Project Kite").expect("write");
        let adapter = DirectoryAdapter::new(dir.path(), "project-record");
        let found = adapter.find("acme", "project  KITE").await.expect("reads");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].id.as_str(), found[0].title.as_str()),
            ("project-record:kite.md", "Project Kite")
        );
        assert!(
            adapter
                .find("globex", "Project Kite")
                .await
                .expect("no dir")
                .is_empty()
        );
        assert!(
            adapter
                .find("../acme", "Project Kite")
                .await
                .expect("refused")
                .is_empty()
        );
    }
}
