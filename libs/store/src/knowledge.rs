//! Persistent knowledge: the intake log, page versions, the extraction log, entities, facts,
//! per-tenant state and maintenance runs (with what the extraction pipeline's `model` stage did
//! in each: requests, sentences sent, cache hits, tokens, failed calls, triples dropped by
//! grounding; the rest of `ModelUsage` is not stored and reads as 0). The analyst commits each
//! step in one transaction, guarded by the tenant's knowledge version so two writers can never
//! interleave.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::{
    Entity, Fact, MaintenanceReport, ModelCost, ModelUsage, PageVersion, Scope, SourceRef,
};
use sea_orm::sea_query::{Expr, Func, OnConflict};
use sea_orm::{
    ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set, SqlErr,
    TransactionTrait,
};

use crate::entity::{
    entity_row, extraction_log, fact, intake_event, knowledge_commit, maintenance_run,
    page_version, tenant_state,
};
use crate::{Store, StoreError};

/// How often [`Store::intake_append`] tries for the tenant's next number. An attempt is lost
/// only to another append of the same tenant that succeeded, so this many concurrent appends of
/// one tenant always all get a number.
const APPEND_ATTEMPTS: usize = 64;

/// States of an intake event.
pub mod intake_state {
    /// Accepted, not yet applied.
    pub const PENDING: &str = "pending";
    /// Applied to the knowledge graph.
    pub const APPLIED: &str = "applied";
    /// Refused by the analyst; the detail says why.
    pub const FAILED: &str = "failed";
}

/// An event to append to the intake log (see [`Store::intake_accept_many`]).
#[derive(Debug, Clone)]
pub struct IntakeRequest {
    /// Its tenant.
    pub tenant: String,
    /// The caller's idempotency key, if it gave one.
    pub idempotency_key: Option<String>,
    /// The event's kind.
    pub kind: String,
    /// The event as stored (JSON).
    pub body: String,
    /// When the intake received it.
    pub received_at: DateTime<Utc>,
    /// The accepter's lease on publishing it (the relay leaves it alone until then).
    pub lease_until: Option<DateTime<Utc>>,
    /// The request's W3C trace context, kept for a later publish.
    pub trace_context: Option<String>,
}

/// An event taken into the intake log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intake {
    /// The row's key (for the outbox; never shown to a tenant).
    pub row: i64,
    /// The tenant's intake number.
    pub seq: i64,
    /// The idempotency key was seen before: this is the earlier event.
    pub duplicate: bool,
    /// Still waiting in the outbox (unpublished and not yet settled).
    pub pending: bool,
}

/// What became of an intake event a reader waited for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Applied to the knowledge graph.
    Applied,
    /// Refused, with the reason.
    Failed(String),
    /// Still pending when the wait ran out.
    Pending,
    /// No such sequence number.
    Unknown,
}

/// A tenant's stored knowledge, as loaded by the analyst and retrieval.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeRows {
    /// The tenant's ontology document, if one was set.
    pub ontology: Option<String>,
    /// Knowledge version (0 for a tenant with nothing yet).
    pub version: i64,
    /// Every page version, oldest first per page.
    pub pages: Vec<PageVersion>,
    /// Extraction log: page id to the version the graph last read.
    pub extraction_log: BTreeMap<String, u64>,
    /// Entities.
    pub entities: Vec<Entity>,
    /// Facts, current and superseded.
    pub facts: Vec<Fact>,
}

/// What changed in a tenant's knowledge between two versions
/// ([`Store::knowledge_changes_since`]): the rows the commits in between wrote, as they are at
/// `version`.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeChanges {
    /// The version they bring a reader to.
    pub version: i64,
    /// New page versions, oldest first per page.
    pub pages: Vec<PageVersion>,
    /// Extraction log entries written.
    pub extraction_log: Vec<(String, u64)>,
    /// Entities inserted or replaced.
    pub entities: Vec<Entity>,
    /// Entities merged away.
    pub removed_entities: Vec<String>,
    /// Facts inserted or replaced (new ones, superseded ones, renamed ones).
    pub facts: Vec<Fact>,
}

/// One maintenance run to record.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Intake sequence number that caused it.
    pub seq: i64,
    /// Mode name.
    pub mode: String,
    /// Its cost.
    pub report: MaintenanceReport,
    /// When it ran.
    pub at: DateTime<Utc>,
}

/// A stored maintenance run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// Intake sequence number that caused it.
    pub seq: i64,
    /// Mode name.
    pub mode: String,
    /// Its cost.
    pub report: MaintenanceReport,
}

/// Everything one analyst step writes, committed atomically.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeCommit {
    /// Replaces the tenant's ontology.
    pub ontology: Option<String>,
    /// New page versions.
    pub pages: Vec<PageVersion>,
    /// Entities to insert or replace.
    pub entities: Vec<Entity>,
    /// Entities merged away.
    pub removed_entities: Vec<String>,
    /// Facts to insert or replace.
    pub facts: Vec<Fact>,
    /// Extraction log entries: page, version read, when.
    pub extraction_log: Vec<(String, u64, DateTime<Utc>)>,
    /// Maintenance runs.
    pub runs: Vec<RunRecord>,
    /// Intake events settled by this step: sequence, and the failure reason if refused.
    pub settled: Vec<(i64, Option<String>)>,
    /// The queue messages this commit processed (queue, message id, body), recorded in the inbox
    /// in the same transaction so a redelivered message is recognised and has no second effect.
    pub messages: Vec<(String, String, String)>,
    /// What the gate records of this step: a change it judged (held or live), or one moved on
    /// (approved, rolled back); in the same transaction, so a change is never applied without
    /// its record nor recorded without being applied.
    pub gate: Option<crate::gate::GateWrite>,
}

impl Store {
    /// Appends an accepted event to the intake log and returns its sequence number, counted per
    /// tenant (1, 2, 3, … for each tenant, so a number says nothing of other tenants' events).
    /// With an idempotency key already seen for the tenant, returns the earlier number and `true`.
    pub async fn intake_append(
        &self,
        tenant: &str,
        idempotency_key: Option<&str>,
        kind: &str,
        body: &str,
        received_at: DateTime<Utc>,
    ) -> Result<(i64, bool), StoreError> {
        let intake = self
            .intake_accept(tenant, idempotency_key, kind, body, received_at, None, None)
            .await?;
        Ok((intake.seq, intake.duplicate))
    }

    /// Appends an accepted event to the intake log, unpublished (the outbox, `crate::outbox`):
    /// the one write that makes the event acknowledged. `lease_until` claims the new row for the
    /// caller's own publish until then, so the relay leaves it alone meanwhile. Numbers are
    /// counted per tenant; with an idempotency key already seen for the tenant, returns the
    /// earlier row, marked duplicate, with whether it was published yet. `trace_context` is the
    /// request's W3C trace context (a JSON object), kept for a later publish by the relay.
    #[allow(clippy::too_many_arguments)]
    pub async fn intake_accept(
        &self,
        tenant: &str,
        idempotency_key: Option<&str>,
        kind: &str,
        body: &str,
        received_at: DateTime<Utc>,
        lease_until: Option<DateTime<Utc>>,
        trace_context: Option<&str>,
    ) -> Result<Intake, StoreError> {
        self.intake_accept_request(&IntakeRequest {
            tenant: tenant.to_owned(),
            idempotency_key: idempotency_key.map(str::to_owned),
            kind: kind.to_owned(),
            body: body.to_owned(),
            received_at,
            lease_until,
            trace_context: trace_context.map(str::to_owned),
        })
        .await
    }

    /// [`Self::intake_accept`] of a request as [`Self::intake_accept_many`] takes them.
    pub async fn intake_accept_request(
        &self,
        request: &IntakeRequest,
    ) -> Result<Intake, StoreError> {
        let (tenant, idempotency_key) =
            (request.tenant.as_str(), request.idempotency_key.as_deref());
        // The next number is one above the tenant's highest, read and taken in one transaction
        // that holds the tenant's append lock (SQLite's write lock; on PostgreSQL a transaction
        // advisory lock on the tenant), so concurrent appends of one tenant queue instead of
        // racing: without it, sixteen pushes in flight for one tenant lost the race to each
        // other often enough that one in a few hundred ran out of attempts. The unique index on
        // (tenant, tenant_seq) still guards the number; a loser reads again and takes the next,
        // or finds its idempotency key taken by the winner.
        for _ in 0..APPEND_ATTEMPTS {
            let txn = self.begin_write().await?;
            if self.backend() == crate::Backend::Postgres {
                use sea_orm::ConnectionTrait;
                txn.execute_raw(sea_orm::Statement::from_sql_and_values(
                    sea_orm::DbBackend::Postgres,
                    "SELECT pg_advisory_xact_lock(hashtext($1))",
                    [format!("ontoloop.intake.{tenant}").into()],
                ))
                .await?;
            }
            if let Some(known) = intake_by_key(&txn, tenant, idempotency_key).await? {
                txn.commit().await?;
                return Ok(known);
            }
            let next = last_intake_seq(&txn, tenant).await? + 1;
            let row = intake_row(request, next);
            match intake_event::Entity::insert(row).exec(&txn).await {
                Ok(inserted) => {
                    txn.commit().await?;
                    return Ok(Intake {
                        row: inserted.last_insert_id,
                        seq: next,
                        duplicate: false,
                        pending: true,
                    });
                }
                Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                    txn.rollback().await?;
                }
                Err(err) => return Err(err.into()),
            }
        }
        Err(StoreError::Conflict {
            tenant: tenant.to_owned(),
        })
    }

    /// Appends several accepted events to the intake log in one transaction (one write, one
    /// sync), each as [`Store::intake_accept`] appends one: numbers counted per tenant in the
    /// order given, an idempotency key already seen (in the log or earlier in `requests`) giving
    /// the earlier row marked duplicate. All or nothing: on any error nothing is appended, and
    /// the caller may append them one by one instead.
    pub async fn intake_accept_many(
        &self,
        requests: &[IntakeRequest],
    ) -> Result<Vec<Intake>, StoreError> {
        let txn = self.begin_write().await?;
        if self.backend() == crate::Backend::Postgres {
            use sea_orm::ConnectionTrait;
            // Each tenant's append lock, in one order, so two batches never wait on each other.
            let tenants: std::collections::BTreeSet<&str> =
                requests.iter().map(|r| r.tenant.as_str()).collect();
            for tenant in tenants {
                txn.execute_raw(sea_orm::Statement::from_sql_and_values(
                    sea_orm::DbBackend::Postgres,
                    "SELECT pg_advisory_xact_lock(hashtext($1))",
                    [format!("ontoloop.intake.{tenant}").into()],
                ))
                .await?;
            }
        }
        // The keys already in the log, read a tenant at a time rather than one per event.
        let mut keyed: HashMap<(&str, &str), Intake> = HashMap::new();
        let mut keys: HashMap<&str, Vec<&str>> = HashMap::new();
        for request in requests {
            if let Some(key) = request.idempotency_key.as_deref() {
                keys.entry(request.tenant.as_str()).or_default().push(key);
            }
        }
        for (tenant, keys) in &keys {
            for chunk in keys.chunks(500) {
                let known = intake_event::Entity::find()
                    .filter(intake_event::Column::Tenant.eq(*tenant))
                    .filter(intake_event::Column::IdempotencyKey.is_in(chunk.iter().copied()))
                    .all(&txn)
                    .await?;
                for row in known {
                    let Some(key) = chunk
                        .iter()
                        .find(|k| Some(**k) == row.idempotency_key.as_deref())
                    else {
                        continue;
                    };
                    keyed.insert((tenant, key), known_intake(&row));
                }
            }
        }
        // Numbered in the order given, then written a few hundred rows a statement.
        let mut next: HashMap<&str, i64> = HashMap::new();
        let mut plan: Vec<Append> = Vec::with_capacity(requests.len());
        let mut new_keys: HashMap<(&str, &str), usize> = HashMap::new();
        for (at, request) in requests.iter().enumerate() {
            let tenant = request.tenant.as_str();
            let key = request.idempotency_key.as_deref();
            if let Some(key) = key {
                if let Some(known) = keyed.get(&(tenant, key)) {
                    plan.push(Append::Known(*known));
                    continue;
                }
                if let Some(&first) = new_keys.get(&(tenant, key)) {
                    plan.push(Append::SameAs(first));
                    continue;
                }
                new_keys.insert((tenant, key), at);
            }
            let seq = match next.get(tenant) {
                Some(last) => *last + 1,
                None => last_intake_seq(&txn, tenant).await? + 1,
            };
            next.insert(tenant, seq);
            plan.push(Append::New(seq));
        }
        let written: Vec<(usize, i64)> = plan
            .iter()
            .enumerate()
            .filter_map(|(at, append)| match append {
                Append::New(seq) => Some((at, *seq)),
                _ => None,
            })
            .collect();
        for chunk in written.chunks(200) {
            let rows = chunk
                .iter()
                .map(|(at, seq)| intake_row(&requests[*at], *seq));
            intake_event::Entity::insert_many(rows)
                .exec_without_returning(&txn)
                .await?;
        }
        // Each new row's key in the log, read back by its tenant's numbers (whatever order a
        // multi-row insert gives its keys in).
        let mut rows: HashMap<(&str, i64), i64> = HashMap::new();
        for (tenant, last) in &next {
            let first = written
                .iter()
                .filter(|(at, _)| requests[*at].tenant == *tenant)
                .map(|(_, seq)| *seq)
                .min()
                .unwrap_or(*last);
            let found: Vec<(i64, i64)> = intake_event::Entity::find()
                .select_only()
                .column(intake_event::Column::Seq)
                .column(intake_event::Column::TenantSeq)
                .filter(intake_event::Column::Tenant.eq(*tenant))
                .filter(intake_event::Column::TenantSeq.between(first, *last))
                .into_tuple()
                .all(&txn)
                .await?;
            for (row, seq) in found {
                rows.insert((tenant, seq), row);
            }
        }
        let mut accepted: Vec<Intake> = Vec::with_capacity(requests.len());
        for (at, append) in plan.iter().enumerate() {
            let intake = match append {
                Append::Known(known) => *known,
                Append::New(seq) => Intake {
                    row: rows
                        .get(&(requests[at].tenant.as_str(), *seq))
                        .copied()
                        .ok_or_else(|| StoreError::interrupted("reading back an appended event"))?,
                    seq: *seq,
                    duplicate: false,
                    pending: true,
                },
                // An earlier request of this group; its outcome is already in `accepted`.
                Append::SameAs(first) => Intake {
                    duplicate: true,
                    ..accepted[*first]
                },
            };
            accepted.push(intake);
        }
        txn.commit().await?;
        Ok(accepted)
    }

    /// The state of the tenant's intake event `seq` (`pending`, `applied`, `failed`) and its
    /// detail. Sequence numbers are scoped to their tenant: another tenant's number is `None`,
    /// exactly like a number that never existed.
    pub async fn intake_state(
        &self,
        tenant: &str,
        seq: i64,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        Ok(intake_event::Entity::find()
            .filter(intake_event::Column::Tenant.eq(tenant))
            .filter(intake_event::Column::TenantSeq.eq(seq))
            .one(&self.db)
            .await?
            .map(|row| (row.state, row.detail)))
    }

    /// The states of several of the tenant's intake events, by number; a number that is not one
    /// of the tenant's events is absent. One query for a run of events instead of one each.
    pub async fn intake_states(
        &self,
        tenant: &str,
        seqs: &[i64],
    ) -> Result<HashMap<i64, String>, StoreError> {
        let mut states = HashMap::with_capacity(seqs.len());
        for chunk in seqs.chunks(500) {
            // `kind` is read too, though unused: with only the number and the state, SQLite
            // (no statistics) reads them off the (tenant, state, number) index, which covers
            // them, by scanning every row of the tenant; with a column that index lacks it
            // looks each number up by the (tenant, number) key. At 100,000 events that was
            // 10 ms a call instead of a fraction of one.
            let found: Vec<(i64, String, String)> = intake_event::Entity::find()
                .select_only()
                .column(intake_event::Column::TenantSeq)
                .column(intake_event::Column::State)
                .column(intake_event::Column::Kind)
                .filter(intake_event::Column::Tenant.eq(tenant))
                .filter(intake_event::Column::TenantSeq.is_in(chunk.iter().copied()))
                .into_tuple()
                .all(&self.db)
                .await?;
            states.extend(found.into_iter().map(|(seq, state, _)| (seq, state)));
        }
        Ok(states)
    }

    /// The stored body of the tenant's intake event `seq` (as recorded, without its number).
    pub async fn intake_body(&self, tenant: &str, seq: i64) -> Result<Option<String>, StoreError> {
        Ok(intake_event::Entity::find()
            .filter(intake_event::Column::Tenant.eq(tenant))
            .filter(intake_event::Column::TenantSeq.eq(seq))
            .one(&self.db)
            .await?
            .map(|row| row.body))
    }

    /// The tenant's intake events still pending with a number below `seq`, lowest first, at most
    /// `limit` of them: number and stored body. Read through the (tenant, state, number) index,
    /// so only the tenant's pending rows are visited.
    pub async fn intake_pending_before(
        &self,
        tenant: &str,
        seq: i64,
        limit: u64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        Ok(pending_before(tenant, seq, limit)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| (row.tenant_seq, row.body))
            .collect())
    }

    /// The numbers of the tenant's intake events still pending below `seq`, lowest first, at
    /// most `limit`: [`Self::intake_pending_before`] without reading their bodies.
    pub async fn intake_pending_numbers_before(
        &self,
        tenant: &str,
        seq: i64,
        limit: u64,
    ) -> Result<Vec<i64>, StoreError> {
        Ok(pending_before(tenant, seq, limit)
            .select_only()
            .column(intake_event::Column::TenantSeq)
            .into_tuple::<i64>()
            .all(&self.db)
            .await?)
    }

    /// Waits until the tenant's intake event `seq` is settled (read-your-writes) for at most
    /// `timeout`: read again at each word of a settlement (see [`crate::feed`]) and at least every
    /// [`crate::feed::SAFETY_POLL`]. Another tenant's number is [`Settled::Unknown`] at once.
    pub async fn wait_settled(
        &self,
        tenant: &str,
        seq: i64,
        timeout: std::time::Duration,
    ) -> Result<Settled, StoreError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Taken before the first read: a settlement after it wakes the wait below.
        let mut settled = self.commits();
        loop {
            match self.intake_state(tenant, seq).await? {
                Some((state, _)) if state == intake_state::APPLIED => return Ok(Settled::Applied),
                Some((state, detail)) if state == intake_state::FAILED => {
                    return Ok(Settled::Failed(detail.unwrap_or_default()));
                }
                // Settled long ago and pruned by retention: its outcome is gone, not its effect.
                None if self.intake_pruned(tenant, seq).await? => return Ok(Settled::Applied),
                None => return Ok(Settled::Unknown),
                Some(_) => {}
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(Settled::Pending);
            }
            // Woken by word of a settlement, or by the safety poll, whichever comes first.
            let poll = (now + crate::feed::SAFETY_POLL).min(deadline);
            tokio::select! {
                moved = settled.changed() => {
                    if moved.is_err() {
                        tokio::time::sleep_until(poll).await;
                    }
                }
                () = tokio::time::sleep_until(poll) => {}
            }
        }
    }

    /// Word of analyst commits: `changed()` completes after the next commit of knowledge or of an
    /// organisation (an org replaced whole too), or an intake event marked failed, by this process or (on PostgreSQL) any
    /// other (see [`crate::feed`]). Word may be lost while a listener reconnects: a waiter also
    /// reads the store on a slow timer of its own.
    pub fn commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.feed.subscribe()
    }

    /// Marks the tenant's intake event `seq` failed outside a knowledge commit (a body that never
    /// parsed, a publish that failed). Another tenant's number, or an event settled already (a
    /// replica applied it meanwhile), changes nothing.
    pub async fn intake_fail(
        &self,
        tenant: &str,
        seq: i64,
        reason: &str,
    ) -> Result<(), StoreError> {
        // The mark and the word of it in one transaction: a waiter that hears it reads it.
        let txn = self.writer.begin().await?;
        intake_event::Entity::update_many()
            .col_expr(
                intake_event::Column::State,
                Expr::value(intake_state::FAILED),
            )
            .col_expr(intake_event::Column::Detail, Expr::value(reason.to_owned()))
            .filter(intake_event::Column::Tenant.eq(tenant))
            .filter(intake_event::Column::TenantSeq.eq(seq))
            .filter(intake_event::Column::State.eq(intake_state::PENDING))
            .exec(&txn)
            .await?;
        crate::feed::notify_in(&txn, tenant).await?;
        txn.commit().await?;
        self.feed.announce();
        Ok(())
    }

    /// The tenant's knowledge version (0 when it has none).
    pub async fn knowledge_version(&self, tenant: &str) -> Result<i64, StoreError> {
        Ok(tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&self.db)
            .await?
            .map_or(0, |row| row.knowledge_version))
    }

    /// The knowledge version of each of `tenants` (0 for one that never committed), read a few
    /// hundred tenants a statement.
    pub async fn knowledge_versions(
        &self,
        tenants: &[String],
    ) -> Result<HashMap<String, i64>, StoreError> {
        let mut versions: HashMap<String, i64> =
            tenants.iter().map(|tenant| (tenant.clone(), 0)).collect();
        for some in tenants.chunks(500) {
            let rows = tenant_state::Entity::find()
                .filter(tenant_state::Column::Tenant.is_in(some.iter().cloned()))
                .all(&self.db)
                .await?;
            for row in rows {
                versions.insert(row.tenant, row.knowledge_version);
            }
        }
        Ok(versions)
    }

    /// A tenant's whole knowledge, read in one transaction: every row of one knowledge version,
    /// never a commit half-seen.
    pub async fn load_knowledge(&self, tenant: &str) -> Result<KnowledgeRows, StoreError> {
        let txn = self.begin_read().await?;
        let state = tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&txn)
            .await?;
        let pages = page_rows(&txn, tenant, None).await?;
        let other = other_rows(&txn, tenant, None).await?;
        txn.commit().await?;
        Ok(KnowledgeRows {
            ontology: state.as_ref().and_then(|s| s.ontology.clone()),
            version: state.map_or(0, |s| s.knowledge_version),
            pages,
            extraction_log: other.extraction_log.into_iter().collect(),
            entities: other.entities,
            facts: other.facts,
        })
    }

    /// What changed in a tenant's knowledge after version `since`, read in one transaction:
    /// `None` when a reader must load the tenant whole instead — a commit in the range replaced
    /// the ontology, or a version in it has no `knowledge_commit` row (written before versions
    /// were kept, or pruned) — and an empty change set at `since` itself.
    pub async fn knowledge_changes_since(
        &self,
        tenant: &str,
        since: i64,
    ) -> Result<Option<KnowledgeChanges>, StoreError> {
        let changes = self
            .knowledge_changes_since_with(tenant, since, |pages| async { (pages, ()) })
            .await?;
        Ok(changes.map(|(changes, ())| changes))
    }

    /// [`Store::knowledge_changes_since`], handing the changed pages to `with_pages` as soon as
    /// they are read: its future runs while the rest (entities, facts) is read in the same
    /// transaction, and gives the pages back with what it made of them. A read model indexes
    /// the pages of a long range meanwhile (at 100,000 pages its facts take seconds to read).
    /// `with_pages` is not called when the answer is `None`; its future is awaited to the end
    /// even when the rest fails to read.
    pub async fn knowledge_changes_since_with<T, F, Fut>(
        &self,
        tenant: &str,
        since: i64,
        with_pages: F,
    ) -> Result<Option<(KnowledgeChanges, T)>, StoreError>
    where
        F: FnOnce(Vec<PageVersion>) -> Fut,
        Fut: Future<Output = (Vec<PageVersion>, T)>,
    {
        let txn = self.begin_read().await?;
        let version = tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&txn)
            .await?
            .map_or(0, |s| s.knowledge_version);
        if version < since {
            txn.commit().await?;
            return Ok(None);
        }
        let commits = knowledge_commit::Entity::find()
            .filter(knowledge_commit::Column::Tenant.eq(tenant))
            .filter(knowledge_commit::Column::Version.gt(since))
            .filter(knowledge_commit::Column::Version.lte(version))
            .order_by_asc(knowledge_commit::Column::Version)
            .all(&txn)
            .await?;
        let complete = commits.len() as i64 == version - since;
        if !complete || commits.iter().any(|c| c.ontology_changed) {
            txn.commit().await?;
            return Ok(None);
        }
        let removed_entities = commits
            .iter()
            .flat_map(|c| decode_list(&c.removed_entities))
            .collect();
        let pages = page_rows(&txn, tenant, Some(since)).await?;
        let (other, (pages, made)) =
            tokio::join!(other_rows(&txn, tenant, Some(since)), with_pages(pages));
        let other = other?;
        txn.commit().await?;
        Ok(Some((
            KnowledgeChanges {
                version,
                pages,
                extraction_log: other.extraction_log,
                entities: other.entities,
                removed_entities,
                facts: other.facts,
            },
            made,
        )))
    }

    /// Maintenance runs of a tenant, oldest first.
    pub async fn maintenance_runs(&self, tenant: &str) -> Result<Vec<StoredRun>, StoreError> {
        Ok(maintenance_run::Entity::find()
            .filter(maintenance_run::Column::Tenant.eq(tenant))
            .order_by_asc(maintenance_run::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| StoredRun {
                seq: row.seq,
                mode: row.mode,
                report: MaintenanceReport {
                    pages_read: to_u64(row.pages_read),
                    pages_total: to_u64(row.pages_total),
                    est_tokens: to_u64(row.est_tokens),
                    graph_writes: to_u64(row.graph_writes),
                    model: ModelUsage {
                        dropped: to_u64(row.model_dropped),
                        errors: to_u64(row.model_errors),
                        cost: ModelCost {
                            requests: to_u64(row.model_requests),
                            sentences_sent: to_u64(row.model_sentences),
                            cache_hits: to_u64(row.model_cache_hits),
                            prompt_tokens: to_u64(row.model_prompt_tokens),
                            completion_tokens: to_u64(row.model_completion_tokens),
                            tokens: to_u64(row.model_tokens),
                        },
                        ..ModelUsage::default()
                    },
                },
            })
            .collect())
    }

    /// Commits one analyst step atomically if the tenant is still at `expected_version`;
    /// returns the new version, or [`StoreError::Conflict`] when another writer got there first.
    pub async fn commit_knowledge(
        &self,
        tenant: &str,
        expected_version: i64,
        mut commit: KnowledgeCommit,
    ) -> Result<i64, StoreError> {
        // A commit of several events may write one fact or entity more than once; its last write
        // is what holds (and an upsert may touch a row only once per statement on PostgreSQL).
        last_write_wins(&mut commit.facts, |fact| fact.id);
        last_write_wins(&mut commit.entities, |entity| entity.id.clone());
        last_write_wins(&mut commit.extraction_log, |(doc_id, ..)| doc_id.clone());
        let txn = self.writer.begin().await?;
        let now = Utc::now();
        let next = expected_version + 1;
        let claimed = if expected_version == 0 {
            let row = tenant_state::ActiveModel {
                tenant: Set(tenant.to_owned()),
                ontology: Set(commit.ontology.clone()),
                knowledge_version: Set(next),
                updated_at: Set(now),
            };
            tenant_state::Entity::insert(row)
                .on_conflict(
                    OnConflict::column(tenant_state::Column::Tenant)
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?
        } else {
            let mut update = tenant_state::Entity::update_many()
                .col_expr(tenant_state::Column::KnowledgeVersion, Expr::value(next))
                .col_expr(tenant_state::Column::UpdatedAt, Expr::value(now));
            if let Some(ontology) = &commit.ontology {
                update = update.col_expr(
                    tenant_state::Column::Ontology,
                    Expr::value(ontology.clone()),
                );
            }
            update
                .filter(tenant_state::Column::Tenant.eq(tenant))
                .filter(tenant_state::Column::KnowledgeVersion.eq(expected_version))
                .exec(&txn)
                .await?
                .rows_affected
        };
        if claimed != 1 {
            txn.rollback().await?;
            return Err(StoreError::Conflict {
                tenant: tenant.to_owned(),
            });
        }
        if !commit.pages.is_empty() {
            let rows = commit.pages.iter().map(|page| page_version::ActiveModel {
                tenant: Set(tenant.to_owned()),
                doc_id: Set(page.source_id.clone()),
                version: Set(to_i64(page.version)),
                title: Set(page.title.clone()),
                origin: Set(page.origin.clone()),
                body: Set(page.body.clone()),
                content_hash: Set(content_hash(&page.body)),
                updated_at: Set(page.updated_at),
                acl: Set(encode_list(&page.acl)),
                confidence: Set(page.confidence),
                changed_in: Set(next),
                deleted: Set(page.deleted),
                effective_from: Set(page.effective_from),
                ..Default::default()
            });
            page_version::Entity::insert_many(rows)
                .exec_without_returning(&txn)
                .await?;
        }
        if !commit.removed_entities.is_empty() {
            entity_row::Entity::delete_many()
                .filter(entity_row::Column::Tenant.eq(tenant))
                .filter(entity_row::Column::Id.is_in(commit.removed_entities.clone()))
                .exec(&txn)
                .await?;
        }
        for chunk in commit.entities.chunks(200) {
            let rows = chunk.iter().map(|e| entity_row::ActiveModel {
                tenant: Set(tenant.to_owned()),
                id: Set(e.id.clone()),
                name: Set(e.name.clone()),
                entity_type: Set(e.entity_type.clone()),
                aliases: Set(encode_list(&e.aliases.iter().cloned().collect::<Vec<_>>())),
                changed_in: Set(next),
            });
            entity_row::Entity::insert_many(rows)
                .on_conflict(
                    OnConflict::columns([entity_row::Column::Tenant, entity_row::Column::Id])
                        .update_columns([
                            entity_row::Column::Name,
                            entity_row::Column::EntityType,
                            entity_row::Column::Aliases,
                            entity_row::Column::ChangedIn,
                        ])
                        .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?;
        }
        for chunk in commit.facts.chunks(200) {
            let rows = chunk.iter().map(|f| fact::ActiveModel {
                tenant: Set(tenant.to_owned()),
                id: Set(to_i64(f.id)),
                entity: Set(f.entity.clone()),
                predicate: Set(f.predicate.clone()),
                object: Set(f.object.clone()),
                source_id: Set(f.source.source_id.clone()),
                source_version: Set(to_i64(f.source.version)),
                seen_version: Set(to_i64(f.seen_version)),
                origin: Set(f.source.origin.clone()),
                authority: Set(f.authority),
                extracted_at: Set(f.extracted_at),
                valid_from: Set(f.valid_from),
                valid_to: Set(f.valid_to),
                extractor: Set(f.extractor.clone()),
                confidence: Set(f.confidence),
                acl: Set(encode_list(&f.acl)),
                changed_in: Set(next),
                scope: Set(f.scope.encode()),
            });
            fact::Entity::insert_many(rows)
                .on_conflict(
                    OnConflict::columns([fact::Column::Tenant, fact::Column::Id])
                        .update_columns([
                            fact::Column::Entity,
                            fact::Column::SeenVersion,
                            fact::Column::ValidTo,
                            fact::Column::ChangedIn,
                        ])
                        .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?;
        }
        for chunk in commit.extraction_log.chunks(200) {
            let rows = chunk
                .iter()
                .map(|(doc_id, version, at)| extraction_log::ActiveModel {
                    tenant: Set(tenant.to_owned()),
                    doc_id: Set(doc_id.clone()),
                    version: Set(to_i64(*version)),
                    extracted_at: Set(*at),
                    changed_in: Set(next),
                });
            extraction_log::Entity::insert_many(rows)
                .on_conflict(
                    OnConflict::columns([
                        extraction_log::Column::Tenant,
                        extraction_log::Column::DocId,
                    ])
                    .update_columns([
                        extraction_log::Column::Version,
                        extraction_log::Column::ExtractedAt,
                        extraction_log::Column::ChangedIn,
                    ])
                    .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?;
        }
        for run in &commit.runs {
            let model = &run.report.model;
            let row = maintenance_run::ActiveModel {
                tenant: Set(tenant.to_owned()),
                seq: Set(run.seq),
                mode: Set(run.mode.clone()),
                pages_read: Set(to_i64(run.report.pages_read)),
                pages_total: Set(to_i64(run.report.pages_total)),
                est_tokens: Set(to_i64(run.report.est_tokens)),
                graph_writes: Set(to_i64(run.report.graph_writes)),
                model_requests: Set(to_i64(model.cost.requests)),
                model_sentences: Set(to_i64(model.cost.sentences_sent)),
                model_cache_hits: Set(to_i64(model.cost.cache_hits)),
                model_prompt_tokens: Set(to_i64(model.cost.prompt_tokens)),
                model_completion_tokens: Set(to_i64(model.cost.completion_tokens)),
                model_tokens: Set(to_i64(model.cost.tokens)),
                model_dropped: Set(to_i64(model.dropped)),
                model_errors: Set(to_i64(model.errors)),
                at: Set(run.at),
                ..Default::default()
            };
            maintenance_run::Entity::insert(row)
                .exec_without_returning(&txn)
                .await?;
        }
        // What the rows cannot say, so a reader can catch up from the version before.
        knowledge_commit::Entity::insert(knowledge_commit::ActiveModel {
            tenant: Set(tenant.to_owned()),
            version: Set(next),
            ontology_changed: Set(commit.ontology.is_some()),
            removed_entities: Set(encode_list(&commit.removed_entities)),
        })
        .exec_without_returning(&txn)
        .await?;
        if let Some(gate) = &commit.gate
            && let Err(err) = crate::gate::gate_write_in(&txn, tenant, gate).await
        {
            txn.rollback().await?;
            return Err(err);
        }
        settle_in(&txn, tenant, &commit.messages, &commit.settled, now).await?;
        txn.commit().await?;
        self.feed.announce();
        Ok(next)
    }
}

/// The end of every analyst commit, inside its transaction: records the queue messages that caused
/// it (so a redelivery is recognised) and settles its intake events, applied or failed with the
/// reason. Only the committing tenant's events are settled: a sequence number of another tenant
/// changes nothing. A run's messages go in a few statements, not one each: the applied events in
/// one update, the failed ones each with its reason.
///
/// Each event is settled once: a commit whose event is settled already, or whose message is
/// recorded already, fails with [`StoreError::Conflict`] and writes nothing. Two replicas may
/// both find an event pending and apply it; the one that commits second built its change on a
/// version that already held the first's (its version guard passes), and without this check its
/// page version would be a second copy of the same text.
pub(crate) async fn settle_in(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    messages: &[(String, String, String)],
    settled: &[(i64, Option<String>)],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    use crate::entity::inbox_message;
    let settled_again = || StoreError::Conflict {
        tenant: tenant.to_owned(),
    };
    for chunk in messages.chunks(200) {
        let rows = chunk
            .iter()
            .map(|(queue, message_id, body)| inbox_message::ActiveModel {
                queue: Set(queue.clone()),
                message_id: Set(message_id.clone()),
                body: Set(body.clone()),
                received_at: Set(now),
                ..Default::default()
            });
        let recorded = inbox_message::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::columns([
                    inbox_message::Column::Queue,
                    inbox_message::Column::MessageId,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_without_returning(txn)
            .await?;
        // A message recorded before, or twice in this commit, is not inserted again.
        if usize::try_from(recorded).ok() != Some(chunk.len()) {
            return Err(settled_again());
        }
    }
    crate::feed::notify_in(txn, tenant).await?;
    let mut applied: Vec<i64> = settled
        .iter()
        .filter(|(_, failure)| failure.is_none())
        .map(|(seq, _)| *seq)
        .collect();
    applied.sort_unstable();
    applied.dedup();
    for chunk in applied.chunks(500) {
        let moved = intake_event::Entity::update_many()
            .col_expr(
                intake_event::Column::State,
                Expr::value(intake_state::APPLIED),
            )
            .col_expr(
                intake_event::Column::Detail,
                Expr::value(Option::<String>::None),
            )
            .filter(intake_event::Column::Tenant.eq(tenant))
            .filter(intake_event::Column::TenantSeq.is_in(chunk.iter().copied()))
            .filter(intake_event::Column::State.eq(intake_state::PENDING))
            .exec(txn)
            .await?
            .rows_affected;
        if settled_before(txn, tenant, chunk, moved).await? {
            return Err(settled_again());
        }
    }
    for (seq, failure) in settled {
        let Some(failure) = failure else { continue };
        let moved = intake_event::Entity::update_many()
            .col_expr(
                intake_event::Column::State,
                Expr::value(intake_state::FAILED),
            )
            .col_expr(intake_event::Column::Detail, Expr::value(failure.clone()))
            .filter(intake_event::Column::Tenant.eq(tenant))
            .filter(intake_event::Column::TenantSeq.eq(*seq))
            .filter(intake_event::Column::State.eq(intake_state::PENDING))
            .exec(txn)
            .await?
            .rows_affected;
        if settled_before(txn, tenant, std::slice::from_ref(seq), moved).await? {
            return Err(settled_again());
        }
    }
    Ok(())
}

/// Whether some of `seqs` are events of `tenant` settled before this commit, given that `moved`
/// of them were just moved from pending: fewer moved than the tenant has. A number that is not
/// the tenant's is not counted (settling it changes nothing, as [`settle_in`] says).
async fn settled_before(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    seqs: &[i64],
    moved: u64,
) -> Result<bool, StoreError> {
    if usize::try_from(moved).ok() == Some(seqs.len()) {
        return Ok(false);
    }
    let held = intake_event::Entity::find()
        .filter(intake_event::Column::Tenant.eq(tenant))
        .filter(intake_event::Column::TenantSeq.is_in(seqs.iter().copied()))
        .count(txn)
        .await?;
    Ok(moved < held)
}

/// Keeps only the last of the items that share a key, in the order of those last writes.
fn last_write_wins<T, K: Eq + std::hash::Hash>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut kept: Vec<T> = items
        .drain(..)
        .rev()
        .filter(|item| seen.insert(key(item)))
        .collect();
    kept.reverse();
    *items = kept;
}

/// What one request of a group append becomes: a row the log held already, a new row with its
/// number, or the same row as an earlier request of the group with the same key.
enum Append {
    Known(Intake),
    New(i64),
    SameAs(usize),
}

/// Hex SHA-256 of a page body; an unchanged body is not a new version.
pub fn content_hash(body: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// A tenant's knowledge rows, read by `page_rows` and `other_rows`: all of them, or with `since`
// those a commit after that version wrote. Pages oldest first per page; entities in id order
// (where two claim one name, the graph gives it to the later id, the same on every backend);
// facts in id order.

/// A tenant's knowledge rows but its pages.
struct OtherRows {
    extraction_log: Vec<(String, u64)>,
    entities: Vec<Entity>,
    facts: Vec<Fact>,
}

/// The tenant's pending intake events numbered below `seq`, lowest first, at most `limit`.
fn pending_before(tenant: &str, seq: i64, limit: u64) -> sea_orm::Select<intake_event::Entity> {
    intake_event::Entity::find()
        .filter(intake_event::Column::Tenant.eq(tenant))
        .filter(intake_event::Column::State.eq(intake_state::PENDING))
        .filter(intake_event::Column::TenantSeq.lt(seq))
        .order_by_asc(intake_event::Column::TenantSeq)
        .limit(limit)
}

// Each read is ordered here, not by its query: with `since` the rows come through the
// (tenant, changed_in) index, and SQLite sorts them in a temporary B-tree, spilled to disk for
// a large range (the pages of a whole load).

/// The page versions of `tenant`, read in `txn`.
async fn page_rows(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    since: Option<i64>,
) -> Result<Vec<PageVersion>, StoreError> {
    use sea_orm::QueryTrait;
    let mut pages: Vec<PageVersion> = page_version::Entity::find()
        .filter(page_version::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| {
            q.filter(page_version::Column::ChangedIn.gt(v))
        })
        .all(txn)
        .await?
        .into_iter()
        .map(page_from)
        .collect();
    pages.sort_unstable_by(|a, b| (&a.source_id, a.version).cmp(&(&b.source_id, b.version)));
    Ok(pages)
}

/// The rest of `tenant`'s knowledge rows ([`OtherRows`]), read in `txn`.
async fn other_rows(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    since: Option<i64>,
) -> Result<OtherRows, StoreError> {
    use sea_orm::QueryTrait;
    let extraction_log = extraction_log::Entity::find()
        .filter(extraction_log::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| {
            q.filter(extraction_log::Column::ChangedIn.gt(v))
        })
        .all(txn)
        .await?
        .into_iter()
        .map(|row| (row.doc_id, to_u64(row.version)))
        .collect();
    let mut entities: Vec<Entity> = entity_row::Entity::find()
        .filter(entity_row::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| q.filter(entity_row::Column::ChangedIn.gt(v)))
        .all(txn)
        .await?
        .into_iter()
        .map(entity_from)
        .collect();
    entities.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    let mut facts: Vec<Fact> = fact::Entity::find()
        .filter(fact::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| q.filter(fact::Column::ChangedIn.gt(v)))
        .all(txn)
        .await?
        .into_iter()
        .map(fact_from)
        .collect();
    facts.sort_unstable_by_key(|f| f.id);
    Ok(OtherRows {
        extraction_log,
        entities,
        facts,
    })
}

fn page_from(row: page_version::Model) -> PageVersion {
    PageVersion {
        source_id: row.doc_id,
        version: to_u64(row.version),
        title: row.title,
        origin: row.origin,
        body: row.body,
        updated_at: row.updated_at,
        acl: decode_list(&row.acl),
        confidence: row.confidence,
        deleted: row.deleted,
        effective_from: row.effective_from,
    }
}

fn entity_from(row: entity_row::Model) -> Entity {
    Entity {
        id: row.id,
        name: row.name,
        entity_type: row.entity_type,
        aliases: decode_list(&row.aliases)
            .into_iter()
            .collect::<BTreeSet<_>>(),
    }
}

fn fact_from(row: fact::Model) -> Fact {
    Fact {
        id: to_u64(row.id),
        entity: row.entity,
        predicate: row.predicate,
        object: row.object,
        source: SourceRef {
            source_id: row.source_id,
            version: to_u64(row.source_version),
            origin: row.origin,
        },
        seen_version: to_u64(row.seen_version),
        authority: row.authority,
        extracted_at: row.extracted_at,
        valid_from: row.valid_from,
        valid_to: row.valid_to,
        extractor: row.extractor,
        confidence: row.confidence,
        acl: decode_list(&row.acl),
        // Written by `Scope::encode`; a row that cannot be read back holds everywhere.
        scope: Scope::parse(&row.scope).unwrap_or_default(),
    }
}

fn encode_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

fn decode_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The tenant's number of the event pushed with this idempotency key, if any.
/// The tenant's highest intake number (0 before its first event).
async fn last_intake_seq(
    conn: &impl sea_orm::ConnectionTrait,
    tenant: &str,
) -> Result<i64, StoreError> {
    Ok(intake_event::Entity::find()
        .filter(intake_event::Column::Tenant.eq(tenant))
        .select_only()
        .column_as(
            Expr::expr(Func::max(Expr::col(intake_event::Column::TenantSeq))),
            "last",
        )
        .into_tuple::<Option<i64>>()
        .one(conn)
        .await?
        .flatten()
        .unwrap_or(0))
}

/// A new intake row: pending, unpublished, leased to its accepter until `lease_until`.
fn intake_row(request: &IntakeRequest, seq: i64) -> intake_event::ActiveModel {
    intake_event::ActiveModel {
        tenant: Set(request.tenant.clone()),
        tenant_seq: Set(seq),
        idempotency_key: Set(request.idempotency_key.clone()),
        kind: Set(request.kind.clone()),
        body: Set(request.body.clone()),
        received_at: Set(request.received_at),
        state: Set(intake_state::PENDING.to_owned()),
        detail: Set(None),
        published_at: Set(None),
        claimed_until: Set(request.lease_until),
        trace_context: Set(request.trace_context.clone()),
        ..Default::default()
    }
}

async fn intake_by_key(
    conn: &impl sea_orm::ConnectionTrait,
    tenant: &str,
    idempotency_key: Option<&str>,
) -> Result<Option<Intake>, StoreError> {
    let Some(key) = idempotency_key else {
        return Ok(None);
    };
    Ok(intake_event::Entity::find()
        .filter(intake_event::Column::Tenant.eq(tenant))
        .filter(intake_event::Column::IdempotencyKey.eq(key))
        .one(conn)
        .await?
        .as_ref()
        .map(known_intake))
}

/// An event the log already holds, as a push with its key is told of it: a duplicate, pending
/// while unpublished and unsettled.
fn known_intake(row: &intake_event::Model) -> Intake {
    Intake {
        row: row.seq,
        seq: row.tenant_seq,
        duplicate: true,
        pending: row.published_at.is_none() && row.state == intake_state::PENDING,
    }
}

#[cfg(test)]
mod tests {
    use super::last_write_wins;

    #[test]
    fn an_item_written_twice_in_one_commit_keeps_its_last_write() {
        let mut writes = vec![(1, "a"), (2, "b"), (1, "c"), (3, "d"), (2, "e")];
        last_write_wins(&mut writes, |(id, _)| *id);
        assert_eq!(writes, [(1, "c"), (3, "d"), (2, "e")]);
    }
}
