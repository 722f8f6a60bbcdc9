//! Graph maintenance modes and what each run costs.

use std::collections::BTreeMap;

use super::graph::PageVersion;
use super::model::ModelUsage;

/// How the graph is brought up to date with the pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceMode {
    /// Re-read only pages whose version is newer than the extraction log (after each change).
    Patch,
    /// Re-read every current page from scratch.
    Rebuild,
    /// Patch after missed events: the same join against the extraction log, run once.
    Repair,
    /// A system-of-record value applied straight to its slot; no page is read.
    RecordPatch,
    /// The graph as it was before the last change the gate let go live (a rebuild, a large
    /// repair or an ontology change), restored; no page is read.
    Rollback,
    /// An ontology proposed from the tenant's pages and failed questions, queued for a human's
    /// review; the graph is not touched.
    ProposeOntology,
}

impl MaintenanceMode {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            MaintenanceMode::Patch => "patch",
            MaintenanceMode::Rebuild => "rebuild",
            MaintenanceMode::Repair => "repair",
            MaintenanceMode::RecordPatch => "record-patch",
            MaintenanceMode::Rollback => "rollback",
            MaintenanceMode::ProposeOntology => "propose-ontology",
        }
    }

    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Patch,
            Self::Rebuild,
            Self::Repair,
            Self::RecordPatch,
            Self::Rollback,
            Self::ProposeOntology,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// The cost of one maintenance run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MaintenanceReport {
    /// Pages read.
    pub pages_read: u64,
    /// Pages that exist (current versions).
    pub pages_total: u64,
    /// Estimated extraction tokens: characters read / 4. An estimate, not a measurement.
    pub est_tokens: u64,
    /// Graph writes.
    pub graph_writes: u64,
    /// What the extraction pipeline's `model` stage did during the run: requests, sentences
    /// sent, cache hits, tokens, triples dropped by grounding (all zero without the stage).
    pub model: ModelUsage,
}

/// Estimated tokens to extract `text`: characters / 4.
pub fn estimate_tokens(text: &str) -> u64 {
    text.chars().count() as u64 / 4
}

/// The pages a run in `mode` must read: every current page for a rebuild; for patch and repair
/// only those whose current version is newer than the version the extraction log recorded.
pub fn pages_to_read<'a>(
    mode: MaintenanceMode,
    current: &'a [PageVersion],
    log: &BTreeMap<String, u64>,
) -> Vec<&'a PageVersion> {
    match mode {
        MaintenanceMode::Rebuild => current.iter().collect(),
        MaintenanceMode::Patch | MaintenanceMode::Repair => current
            .iter()
            .filter(|page| {
                log.get(&page.source_id)
                    .is_none_or(|read| *read < page.version)
            })
            .collect(),
        MaintenanceMode::RecordPatch
        | MaintenanceMode::Rollback
        | MaintenanceMode::ProposeOntology => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn page(id: &str, version: u64) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version,
            title: String::new(),
            origin: "faq".into(),
            body: "abcdefgh".into(),
            updated_at: Utc::now(),
            acl: Vec::new(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    #[test]
    fn patch_reads_only_pages_newer_than_the_log() {
        let current = vec![page("a", 2), page("b", 1), page("c", 1)];
        let log = BTreeMap::from([("a".to_owned(), 1), ("b".to_owned(), 1)]);
        let ids: Vec<_> = pages_to_read(MaintenanceMode::Patch, &current, &log)
            .iter()
            .map(|p| p.source_id.as_str())
            .collect();
        assert_eq!(ids, vec!["a", "c"]);
        assert_eq!(
            pages_to_read(MaintenanceMode::Rebuild, &current, &log).len(),
            3
        );
        assert!(pages_to_read(MaintenanceMode::RecordPatch, &current, &log).is_empty());
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(
            MaintenanceMode::from_name("repair"),
            Some(MaintenanceMode::Repair)
        );
    }
}
