//! Bringing one read model forward: the pages a commit changed are staged in the indexes beside
//! readers ([`Snapshot::stage`], under a read guard), then published with the maps patched
//! ([`Snapshot::apply`], under the write lock); announced versions come into effect on time
//! ([`Snapshot::advance`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use ontoloop_core::knowledge::PageVersion;
use ontoloop_store::KnowledgeChanges;
use tokio::sync::OwnedRwLockReadGuard;

use crate::search::Staged;

use super::{Snapshot, SnapshotError, index_chunks, text_bytes};

impl Snapshot {
    /// Indexes, beside readers, the pages among `pages` (read from the store's changes) current
    /// at `now` ([`PageIndex::stage`]): the costly part of [`Snapshot::apply`], done under a
    /// read guard so readers go on answering while it runs. Apply the changes with the same
    /// `now` next.
    pub(super) fn stage(
        &self,
        pages: &[PageVersion],
        now: chrono::DateTime<chrono::Utc>,
    ) -> StagedPages {
        let due: Vec<&PageVersion> = pages
            .iter()
            .filter(|page| page.effective_at() <= now)
            .collect();
        self.stage_moves(due)
    }

    /// Stages in the page and passage indexes what making each of `pages` current would move.
    fn stage_moves<'a>(&self, pages: impl IntoIterator<Item = &'a PageVersion>) -> StagedPages {
        // Each moved page's version before the changes (none for a new page) and its newest, as
        // `bring_in` will move them.
        let mut moves: BTreeMap<&str, (Option<&PageVersion>, &PageVersion)> = BTreeMap::new();
        for page in pages {
            let held = moves
                .get(page.source_id.as_str())
                .map(|(_, newest)| *newest)
                .or_else(|| self.current.get(&page.source_id));
            if held.is_none_or(|held| page.version > held.version) {
                let before = self.current.get(&page.source_id);
                moves
                    .entry(&page.source_id)
                    .and_modify(|(_, newest)| *newest = page)
                    .or_insert((before, page));
            }
        }
        let pairs = || moves.values().copied();
        let index = self.index.stage(pairs());
        let passages = match self.passages.get() {
            Some(Some(passages)) => Some(passages.stage(pairs())),
            _ => None,
        };
        StagedPages { index, passages }
    }

    /// Brings this model to `changes.version` with what the commits since its version wrote,
    /// its pages indexed already by `staged` ([`Snapshot::stage`] with the same `now`) or here.
    pub(super) fn apply(
        &mut self,
        changes: KnowledgeChanges,
        now: chrono::DateTime<chrono::Utc>,
        staged: Option<StagedPages>,
    ) -> Result<(), SnapshotError> {
        let held = self.versions.len();
        let mut due = Vec::new();
        for page in changes.pages {
            self.restricted |= !page.acl.is_empty();
            if page.effective_at() > now {
                self.scheduled.push(page.clone());
            } else {
                due.push(page.clone());
            }
            self.version_bytes += text_bytes(&page);
            self.versions.push(page);
        }
        self.scheduled
            .sort_by_key(|p| (p.effective_at(), p.version));
        self.bring_in(due, staged)?;
        if let Some(index) = self.chunk_index.get_mut() {
            index_chunks(index, &self.versions, held);
        }
        self.log.extend(changes.extraction_log);
        self.restricted |= changes.facts.iter().any(|f| !f.acl.is_empty());
        self.overviews.graph_changed();
        // Readers hold the lock, not the graph or the pages: they are shared only while a reader
        // answers, so this changes them in place (a copy only if a reader kept them past its
        // guard, as the firewall does across a model call).
        Arc::make_mut(&mut self.graph).patch(
            &changes.removed_entities,
            changes.entities,
            changes.facts,
        );
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.claims.graph_changed();
        self.version = changes.version;
        Ok(())
    }

    /// Makes every announced version whose time has come by `now` its page's current one.
    pub(super) fn advance(
        &mut self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), SnapshotError> {
        let due_count = self.scheduled.partition_point(|p| p.effective_at() <= now);
        let due: Vec<PageVersion> = self.scheduled.drain(..due_count).collect();
        self.bring_in(due, None)?;
        // Who may read a page is decided by its version in effect.
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.overviews.graph_changed();
        Ok(())
    }

    /// Makes each of `pages` (versions in effect) its page's current version where newer than
    /// the one held, and patches the page, passage and dense indexes with the moves: publishes
    /// `staged` (the same pages staged against this model as it is), or stages them here.
    fn bring_in(
        &mut self,
        pages: Vec<PageVersion>,
        staged: Option<StagedPages>,
    ) -> Result<(), SnapshotError> {
        let staged = match staged {
            Some(staged) => staged,
            None => self.stage_moves(&pages),
        };
        // Each moved page's version before the changes (none for a new page), by page id.
        let mut moved: BTreeMap<String, Option<PageVersion>> = BTreeMap::new();
        let current = Arc::make_mut(&mut self.current);
        for page in pages {
            self.latest_change = self.latest_change.max(page.effective_at());
            let newer = current
                .get(&page.source_id)
                .is_none_or(|held| page.version > held.version);
            if newer {
                let id = page.source_id.clone();
                self.current_bytes += text_bytes(&page);
                let before = current.insert(id.clone(), page);
                self.current_bytes -= before.as_ref().map_or(0, text_bytes);
                moved.entry(id).or_insert(before);
            }
        }
        let pairs = || {
            moved
                .iter()
                .filter_map(|(id, before)| Some((before.as_ref(), current.get(id)?)))
        };
        self.index.publish(staged.index?)?;
        if let Some(Some(passages)) = self.passages.get_mut() {
            match staged.passages {
                Some(passage_update) => passages.publish(passage_update?)?,
                // Built by a reader after the pages were staged, from the pages before them.
                None => passages.update(pairs())?,
            }
        }
        self.dense.update(pairs().map(|(_, page)| page));
        // Built as pages arrive, in the background, not at the first question that wants it.
        self.dense.warm(&self.current);
        Ok(())
    }
}

/// Stages `pages`, just read from the store, against the model `reading` on the blocking pool
/// ([`Snapshot::stage`]), at the "now" read once they were read: every page a commit made by
/// then is in effect by it. Gives the pages back with the staged update, or none when the task
/// failed.
pub(super) async fn stage_read(
    reading: OwnedRwLockReadGuard<Snapshot>,
    pages: Vec<PageVersion>,
) -> (
    Vec<PageVersion>,
    Result<(chrono::DateTime<chrono::Utc>, StagedPages), tokio::task::JoinError>,
) {
    let now = chrono::Utc::now();
    let staging = tokio::task::spawn_blocking(move || {
        let staged = reading.stage(&pages, now);
        (pages, staged)
    });
    match staging.await {
        Ok((pages, staged)) => (pages, Ok((now, staged))),
        Err(err) => (Vec::new(), Err(err)),
    }
}

/// What [`Snapshot::stage_moves`] wrote: the page index's update and the passage index's when
/// it was built, each to publish or, failed, to report.
pub(super) struct StagedPages {
    index: tantivy::Result<Staged>,
    passages: Option<tantivy::Result<Staged>>,
}
