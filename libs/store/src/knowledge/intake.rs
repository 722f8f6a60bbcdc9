//! The intake log: events appended as they are accepted (numbered per tenant, once per
//! idempotency key), read by the analyst and by readers waiting for their own writes, and settled
//! (applied or failed with the reason) by the commit that applies them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, Func, OnConflict};
use sea_orm::{
    ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set, SqlErr,
    TransactionTrait,
};

use crate::entity::intake_event;
use crate::rows::Rows;
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

/// The kinds of intake event that carry pages: what the last ingest of [`IntakeSummary`] counts.
pub const PAGE_KINDS: [&str; 3] = ["doc.upsert", "doc.delete", "source.listing"];

/// Where a tenant's intake stands (see [`Store::intake_summary`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntakeSummary {
    /// Events accepted and not yet settled (applied or failed).
    pub pending: u64,
    /// Events the analyst refused, among the rows retention keeps.
    pub failed: u64,
    /// When the intake received the newest page event ([`PAGE_KINDS`]) that was applied; `None`
    /// when none was (or retention pruned every one).
    pub last_page_applied: Option<DateTime<Utc>>,
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
        self.refuse_while_away()?;
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
        self.refuse_while_away()?;
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

    /// Where the tenant's intake stands: its events pending and failed, and when the newest of
    /// its applied page events was received. Each read goes through the (tenant, state, number)
    /// index, so only the tenant's rows in that state are visited.
    pub async fn intake_summary(&self, tenant: &str) -> Result<IntakeSummary, StoreError> {
        let in_state = |state: &'static str| {
            intake_event::Entity::find()
                .filter(intake_event::Column::Tenant.eq(tenant))
                .filter(intake_event::Column::State.eq(state))
        };
        let pending = in_state(intake_state::PENDING).count(&self.db).await?;
        let failed = in_state(intake_state::FAILED).count(&self.db).await?;
        let last_page_applied: Option<DateTime<Utc>> = in_state(intake_state::APPLIED)
            .filter(intake_event::Column::Kind.is_in(PAGE_KINDS))
            .order_by_desc(intake_event::Column::TenantSeq)
            .select_only()
            .column(intake_event::Column::ReceivedAt)
            .into_tuple()
            .one(&self.db)
            .await?;
        Ok(IntakeSummary {
            pending,
            failed,
            last_page_applied,
        })
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
        pending_before(tenant, seq, limit)
            .rows(&self.db, |row| (row.tenant_seq, row.body))
            .await
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

/// What one request of a group append becomes: a row the log held already, a new row with its
/// number, or the same row as an earlier request of the group with the same key.
enum Append {
    Known(Intake),
    New(i64),
    SameAs(usize),
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

/// The tenant's number of the event pushed with this idempotency key, if any.
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
