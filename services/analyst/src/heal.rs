//! Healing missing entities: when the signals about one unknown name form a pattern severe
//! enough to heal at once, the analyst looks for it in the tenant's connected sources and reads
//! what it finds into the graph, as page versions with their own origin (so answers carry
//! provenance pointing at the source). Patterns below that severity are left for the review
//! queue, which is not built yet.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use ontoloop_core::Severity;
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::patterns::{PatternKind, fold};
use ontoloop_queue::Message;
use ontoloop_runtime::Context;
use tokio::sync::Mutex;

use crate::knowledge::KnowledgeWriter;

/// A document a source holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceDoc {
    /// Stable id within the source.
    pub id: String,
    /// Title.
    pub title: String,
    /// Body text.
    pub body: String,
}

/// A connected source of truth the analyst can search for a missing entity.
#[async_trait::async_trait]
pub trait SourceAdapter: Send + Sync {
    /// Origin given to what it provides (decides authority through the ontology).
    fn origin(&self) -> &str;
    /// Documents of `tenant` that mention `name` (folded: case, punctuation and spacing aside).
    async fn find(&self, tenant: &str, name: &str) -> std::io::Result<Vec<SourceDoc>>;
}

/// A directory of project records: `ROOT/TENANT/*.md` or `*.txt`, one record per file.
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

    async fn find(&self, tenant: &str, name: &str) -> std::io::Result<Vec<SourceDoc>> {
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
            found.push(SourceDoc {
                id: format!("{}/{file}", self.origin),
                title,
                body,
            });
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(found)
    }
}

/// Heals patterns as signals arrive.
#[derive(Clone)]
pub struct Healer {
    ctx: Context,
    writer: KnowledgeWriter,
    adapters: Arc<Vec<Box<dyn SourceAdapter>>>,
    heal_at: Severity,
    healed: Arc<Mutex<HashSet<(String, String)>>>,
}

impl Healer {
    /// A healer over the adapters the settings name.
    pub fn new(ctx: Context, writer: KnowledgeWriter) -> Self {
        let settings = &ctx.settings.analyst;
        let mut adapters: Vec<Box<dyn SourceAdapter>> = Vec::new();
        if !settings.sources_dir.trim().is_empty() {
            adapters.push(Box::new(DirectoryAdapter::new(
                settings.sources_dir.clone(),
                settings.source_origin.clone(),
            )));
        }
        let heal_at = match settings.heal_at.as_str() {
            "low" => Severity::Low,
            "medium" => Severity::Medium,
            "high" => Severity::High,
            _ => Severity::Critical,
        };
        Self {
            ctx,
            writer,
            adapters: Arc::new(adapters),
            heal_at,
            healed: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Looks at a recorded signal; heals its pattern when it is a missing entity severe enough.
    /// Failures are logged: a signal is never refused because healing did not work.
    pub async fn on_signal(&self, message: &Message) {
        if self.adapters.is_empty() {
            return;
        }
        let Some((tenant, signal)) = crate::patterns::parse_signal(&message.body) else {
            return;
        };
        if PatternKind::of(signal.kind) != PatternKind::MissingEntity {
            return;
        }
        let key = fold(&signal.subject);
        if self
            .healed
            .lock()
            .await
            .contains(&(tenant.clone(), key.clone()))
        {
            return;
        }
        let now = Utc::now();
        let patterns = match crate::patterns::patterns(&self.ctx, &tenant, now).await {
            Ok(patterns) => patterns,
            Err(err) => {
                tracing::warn!(error = %err, "cannot read signals for healing");
                return;
            }
        };
        let Some(pattern) = patterns
            .iter()
            .find(|p| p.kind == PatternKind::MissingEntity && p.key == key)
        else {
            return;
        };
        if pattern.severity < self.heal_at {
            return;
        }
        let mut read = 0;
        for adapter in self.adapters.iter() {
            let docs = match adapter.find(&tenant, &signal.subject).await {
                Ok(docs) => docs,
                Err(err) => {
                    tracing::warn!(error = %err, origin = adapter.origin(), "source adapter failed");
                    continue;
                }
            };
            for doc in docs {
                let envelope = EventEnvelope {
                    tenant: tenant.clone(),
                    seq: None,
                    at: now,
                    event: Event::DocUpsert {
                        doc_id: doc.id.clone(),
                        title: doc.title,
                        origin: adapter.origin().to_owned(),
                        body: doc.body,
                        acl: Vec::new(),
                        hold: false,
                        confidence: None,
                    },
                };
                match self.writer.apply_own(&envelope).await {
                    Ok(()) => read += 1,
                    Err(reason) => {
                        tracing::warn!(doc = %doc.id, reason = %reason, "cannot read a discovered record")
                    }
                }
            }
        }
        if read > 0 {
            self.healed
                .lock()
                .await
                .insert((tenant.clone(), key.clone()));
            let latency_ms = (Utc::now() - pattern.first_seen).num_milliseconds();
            tracing::info!(tenant = %tenant, entity = %key, records = read, signal_to_heal_ms = latency_ms, "healed a missing entity from a connected source");
        }
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
            ("project-record/kite.md", "Project Kite")
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
