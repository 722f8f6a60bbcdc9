//! The analyst's writer of the organisation: HR events applied to the tenant's HR records, the
//! facts of changed documentation files to its product facts, and work-item upserts, each as one
//! atomic commit guarded by the tenant's org version (so replicas never interleave).
//!
//! It shares the knowledge writer's queue discipline: a redelivered event has no second effect
//! (its intake sequence number is settled, or its message id is in the inbox, in the same commit
//! that applied it), a refused event (unknown person or team, a reporting loop, ...) settles its
//! intake entry as failed with the reason and goes to the dead-letter queue, and a store hiccup
//! or a concurrent writer puts it back for another try.
//!
//! Applying an HR event needs the tenant's whole HR records (a transfer must not close a
//! reporting loop). Reading ten thousand people per event would cost more than the rest of the
//! path together, so the records each commit leaves are kept by the [`OrgWriter`], stamped with
//! the org head the commit returned, and reused only while the store's head still carries that
//! stamp: another writer, another store or a bulk load changes the head and the records are read
//! afresh.

use std::sync::Arc;

use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::{CacheBudget, Lru};
use ontoloop_org::docs::facts_from_doc;
use ontoloop_org::hr::{self, OrgRecords};
use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::{OrgCommit, OrgHead, Store, StoreError, change_kind};
use tokio::sync::Mutex;

use crate::refusal::{Refusal, already_applied, settle};

/// HR records by tenant, with the head they are current at (module docs), under
/// `[cache.hr_records]`: the records are the store's, so an evicted tenant's are read again on
/// its next HR event.
type Kept = Lru<(OrgHead, OrgRecords)>;

/// Estimated bytes a person or team takes in the records.
const RECORD_BYTES: usize = 256;

/// The analyst's writer of the organisation, with the HR records its commits left (module docs).
#[derive(Clone)]
pub struct OrgWriter {
    store: Store,
    records: Arc<Mutex<Kept>>,
}

impl OrgWriter {
    /// A writer over `store`, holding no records yet and keeping them under `budget`
    /// (`[cache.hr_records]`).
    pub fn new(store: Store, budget: CacheBudget) -> Self {
        Self {
            store,
            records: Arc::new(Mutex::new(Lru::new(budget))),
        }
    }

    /// Keeps a tenant's records under the budget and reports the cache's size.
    async fn keep(&self, tenant: &str, head: OrgHead, records: OrgRecords) {
        let bytes = (records.people().count() + records.teams().count()) * RECORD_BYTES;
        let mut kept = self.records.lock().await;
        kept.insert(tenant, (head, records), bytes);
        crate::metrics::cache_entries("analyst_hr_records", kept.len());
    }

    /// Handles an org event (HR, docs push, work item); `None` for any other event, which the
    /// knowledge writer applies.
    pub async fn handle(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Option<Handled> {
        if !envelope.event.is_org() {
            return None;
        }
        let started = std::time::Instant::now();
        let applied = self.apply(envelope, message).await;
        crate::metrics::event_applied("org", envelope, started.elapsed(), applied.is_ok());
        let handled = settle(&self.store, &envelope.tenant, envelope.seq, applied).await;
        if let Handled::Reject(reason) = &handled {
            tracing::warn!(
                tenant = envelope.tenant,
                kind = envelope.event.kind(),
                reason,
                "org event refused"
            );
        }
        Some(handled)
    }

    /// Loads the HR records of every tenant whose org version moved without this writer (a bulk
    /// load, another replica), so the next event applies without first reading the whole
    /// organisation. A copy loaded while an event is applied may be older than the store; the
    /// head check in [`Self::current_records`] then reads the store again, so warming never makes
    /// an apply wrong.
    pub async fn warm(&self) {
        let versions = match self.store.org_versions().await {
            Ok(versions) => versions,
            Err(err) => {
                tracing::debug!(error = %err, "cannot read org versions to warm the HR records");
                return;
            }
        };
        for (tenant, version) in versions {
            // Held tenants are kept current; others only while there is room, so warming never
            // evicts one tenant to load another (and churns the budget every round).
            let stale = {
                let kept = self.records.lock().await;
                match kept.peek(&tenant) {
                    Some((head, _)) => head.version != version,
                    None => kept.has_room(),
                }
            };
            if stale {
                match self.current_records(&tenant).await {
                    Ok((head, records)) => self.keep(&tenant, head, records).await,
                    Err(reason) => {
                        tracing::debug!(tenant = %tenant, reason = %reason, "cannot warm HR records");
                    }
                }
            }
        }
    }

    async fn apply(
        &self,
        envelope: &EventEnvelope,
        message: Option<&Message>,
    ) -> Result<(), Refusal> {
        let store = &self.store;
        let tenant = envelope.tenant.as_str();
        if already_applied(store, tenant, envelope.seq, message).await? {
            return Ok(());
        }
        let mut commit = OrgCommit::default();
        let mut next_records = None;
        let expected = match &envelope.event {
            Event::DocsPush {
                changed_files,
                contents,
            } => {
                let mut stated = 0;
                for file in changed_files {
                    let facts = contents
                        .get(file)
                        .map(|body| facts_from_doc(body))
                        .unwrap_or_default();
                    stated += facts.len();
                    commit.files.push((file.clone(), facts));
                }
                commit.change = (
                    change_kind::DOCS.to_owned(),
                    serde_json::json!({ "files": changed_files, "facts": stated }).to_string(),
                );
                store.org_version(tenant).await?
            }
            Event::ItemUpsert(upsert) => {
                let item = upsert.to_item(tenant, envelope.at);
                let body = serde_json::to_string(&item)
                    .map_err(|err| Refusal::Invalid(format!("cannot encode the item: {err}")))?;
                commit.items.push(item);
                commit.change = (change_kind::ITEM.to_owned(), body);
                store.org_version(tenant).await?
            }
            event => {
                let Some(event) = event.hr_event() else {
                    return Err(Refusal::Invalid(format!(
                        "{} is not an organisation event",
                        event.kind()
                    )));
                };
                let (head, mut records) = self.current_records(tenant).await?;
                let affected = hr::apply(&mut records, event)
                    .map_err(|err| Refusal::Invalid(format!("{}: {err}", event.type_name())))?;
                for id in &affected.people {
                    match records.person(id) {
                        Some(person) => commit.people.push(person.clone()),
                        None => commit.removed_people.push(id.clone()),
                    }
                }
                for id in &affected.teams {
                    match records.team(id) {
                        Some(team) => commit.teams.push(team.clone()),
                        None => commit.removed_teams.push(id.clone()),
                    }
                }
                let body = serde_json::to_string(event)
                    .map_err(|err| Refusal::Invalid(format!("cannot encode the event: {err}")))?;
                commit.change = (change_kind::HR.to_owned(), body);
                next_records = Some(records);
                head.version
            }
        };
        if let Some(seq) = envelope.seq {
            commit.settled.push((seq, None));
        }
        commit.message = message.map(|message| crate::inbox::inbox_record(tenant, message));
        let head = store
            .commit_org(tenant, expected, commit)
            .await
            .map_err(|err| match err {
                StoreError::Conflict { tenant } => Refusal::Passing(format!(
                    "organisation of tenant {tenant} changed concurrently; retrying"
                )),
                other => other.into(),
            })?;
        if let Some(records) = next_records {
            self.keep(tenant, head, records).await;
        }
        tracing::debug!(
            tenant,
            version = head.version,
            kind = envelope.event.kind(),
            "org event applied"
        );
        Ok(())
    }

    /// The tenant's HR records as the store holds them now, and the head they are at: the kept copy
    /// when the head still matches, else read from the store. The copy is taken out while an event
    /// is applied, so a failed step never leaves a half-applied copy behind.
    async fn current_records(&self, tenant: &str) -> Result<(OrgHead, OrgRecords), Refusal> {
        let kept = self.records.lock().await.remove(tenant);
        let head = self.store.org_head(tenant).await?;
        if let Some((stamp, records)) = kept
            && stamp == head
        {
            return Ok((head, records));
        }
        let rows = self.store.load_org(tenant).await?;
        let records = OrgRecords::new(rows.people, rows.teams).map_err(|err| {
            Refusal::Invalid(format!(
                "stored HR records of tenant {tenant} are inconsistent: {err}"
            ))
        })?;
        Ok((
            OrgHead {
                version: rows.version,
                committed_at: rows.committed_at,
            },
            records,
        ))
    }
}
