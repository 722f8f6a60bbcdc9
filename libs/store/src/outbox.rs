//! The intake logs as an outbox: a row accepted by the intake waits here, unpublished, until a
//! publisher (the request's own fast path, or the relay) has the broker's confirm and stamps it.
//! A publisher holds a lease on the rows it publishes (`claimed_until`), so relays of several
//! replicas rarely publish one row twice; on PostgreSQL rows are claimed with
//! `FOR UPDATE SKIP LOCKED`. A row published twice is harmless: consumers deduplicate by
//! message id.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, LockBehavior, LockType};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DatabaseTransaction, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

use crate::entity::{intake_event, signal_intake};
use crate::group::GroupCommit;
use crate::knowledge::intake_state;
use crate::{Store, StoreError};

/// Which intake log a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutboxKind {
    /// `PushEvent`'s intake log; published on the events queue.
    Event,
    /// The signal intake log; published on the signals queue.
    Signal,
}

/// One caller's stamp: which log, its rows, and when they were published.
pub(crate) type Stamp = (OutboxKind, Vec<i64>, DateTime<Utc>);

/// The writer of stamps, shared by every clone of a store: stamps of callers at once share one
/// statement ([`GroupCommit`]).
pub(crate) type Stamps = GroupCommit<Stamp, Result<(), StoreError>>;

/// Stamps waiting for the writer at most; a caller past them waits to join the queue.
const STAMPS_WAITING: usize = 4096;

/// Stamps written in one group at most.
const STAMPS_GROUP: usize = 1024;

/// Starts the stamp writer over `writer` (the store's write connection) on the current runtime.
pub(crate) fn stamps(writer: DatabaseConnection) -> Stamps {
    GroupCommit::spawn(STAMPS_WAITING, STAMPS_GROUP, move |group| {
        let writer = writer.clone();
        async move { stamp_group(&writer, group).await }
    })
}

/// A row waiting to be published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// Which log.
    pub kind: OutboxKind,
    /// The row's key in its table (never shown to a tenant).
    pub row: i64,
    /// Tenant.
    pub tenant: String,
    /// For an event, the tenant's intake number; for a signal, 0.
    pub tenant_seq: i64,
    /// For a signal, its idempotency key; for an event, empty.
    pub idempotency_key: String,
    /// The stored body (for an event, without its sequence number, which the publisher adds).
    pub body: String,
    /// The acknowledged request's W3C trace context (a JSON object), if it carried one.
    pub trace_context: Option<String>,
}

/// Rows still waiting in the outbox, by log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxBacklog {
    /// Events accepted and not yet published.
    pub events: u64,
    /// Signals accepted and not yet published.
    pub signals: u64,
}

impl Store {
    /// Claims up to `limit` unpublished rows of `kind` whose lease (if any) ended before `now`,
    /// holding them until `lease_until`; oldest first. With `ignore_leases` (the start-up pass)
    /// rows leased by a publisher that may have died are taken too.
    pub async fn outbox_claim(
        &self,
        kind: OutboxKind,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u64,
        ignore_leases: bool,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let txn = self.begin_write().await?;
        let claim = Claim {
            now,
            lease_until,
            limit,
            ignore_leases,
            postgres: self.backend() == crate::Backend::Postgres,
        };
        let rows = match kind {
            OutboxKind::Event => claim.rows::<intake_event::Entity>(&txn).await?,
            OutboxKind::Signal => claim.rows::<signal_intake::Entity>(&txn).await?,
        };
        txn.commit().await?;
        Ok(rows)
    }

    /// Stamps rows as published (the broker confirmed them) and ends their lease. Callers
    /// stamping at once share a write (group commit, [`Stamps`]): each returns once its own rows
    /// are stamped.
    pub async fn outbox_published(
        &self,
        kind: OutboxKind,
        rows: &[i64],
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.stamps
            .submit((kind, rows.to_vec(), at))
            .await
            .unwrap_or_else(|| Err(StoreError::interrupted("the stamp of a published row")))
    }

    /// [`Self::outbox_published`] without waiting for the write, for a publisher whose caller
    /// needs only the row itself to be durable (the intake's own fast path): a row whose stamp
    /// is lost to a crash keeps its lease and is published again by the relay, which consumers
    /// take as the redelivery it is. Waits only while the writer's queue is full. A failed write
    /// is logged by the writer.
    pub async fn outbox_published_soon(&self, kind: OutboxKind, rows: &[i64], at: DateTime<Utc>) {
        if !self.stamps.hand_over((kind, rows.to_vec(), at)).await {
            tracing::warn!("the stamp writer is gone; the relay publishes the row again");
        }
    }

    /// Ends the lease on rows whose publish failed, so the relay takes them at once.
    pub async fn outbox_release(&self, kind: OutboxKind, rows: &[i64]) -> Result<(), StoreError> {
        for chunk in rows.chunks(500) {
            match kind {
                OutboxKind::Event => release::<intake_event::Entity>(&self.writer, chunk).await?,
                OutboxKind::Signal => release::<signal_intake::Entity>(&self.writer, chunk).await?,
            }
        }
        Ok(())
    }

    /// For a queue that does not outlive the process (the in-process queue): what was published
    /// to it and not yet taken by the analyst (events still pending, signals not delivered) died
    /// with the last process, so it goes back to the outbox. Returns how many rows.
    pub async fn outbox_reset_undelivered(&self) -> Result<u64, StoreError> {
        Ok(
            reset_undelivered::<intake_event::Entity>(&self.writer).await?
                + reset_undelivered::<signal_intake::Entity>(&self.writer).await?,
        )
    }

    /// Stamps a tenant's signals (by idempotency key) as recorded by the analyst.
    pub async fn signals_delivered(
        &self,
        tenant: &str,
        keys: &[String],
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        for chunk in keys.chunks(500) {
            signal_intake::Entity::update_many()
                .col_expr(signal_intake::Column::DeliveredAt, Expr::value(at))
                .filter(signal_intake::Column::Tenant.eq(tenant))
                .filter(signal_intake::Column::IdempotencyKey.is_in(chunk.iter().cloned()))
                .filter(signal_intake::Column::DeliveredAt.is_null())
                .exec(&self.writer)
                .await?;
        }
        Ok(())
    }

    /// How many accepted rows wait to be published.
    pub async fn outbox_backlog(&self) -> Result<OutboxBacklog, StoreError> {
        Ok(OutboxBacklog {
            events: backlog::<intake_event::Entity>(&self.db).await?,
            signals: backlog::<signal_intake::Entity>(&self.db).await?,
        })
    }
}

/// What the outbox needs of an intake log's table: its key, its stamps and which of its rows
/// wait to be published, so one claim, release and count serve both logs.
trait Log: EntityTrait<Model: Sync> {
    /// The row's key, the order rows are published in.
    const KEY: Self::Column;
    /// When the broker confirmed the row (null: waiting).
    const PUBLISHED_AT: Self::Column;
    /// Until when a publisher holds the row.
    const CLAIMED_UNTIL: Self::Column;

    /// Which unpublished rows are to be published: an event still pending, a signal with a
    /// body.
    fn waiting() -> Condition;

    /// Which published rows the analyst has not taken yet: an event still pending, a signal
    /// not delivered.
    fn undelivered() -> Condition;

    /// The row's key.
    fn key(row: &Self::Model) -> i64;

    /// The row as a publisher takes it.
    fn outbox_row(row: Self::Model) -> OutboxRow;
}

impl Log for intake_event::Entity {
    const KEY: Self::Column = intake_event::Column::Seq;
    const PUBLISHED_AT: Self::Column = intake_event::Column::PublishedAt;
    const CLAIMED_UNTIL: Self::Column = intake_event::Column::ClaimedUntil;

    fn waiting() -> Condition {
        Condition::all().add(intake_event::Column::State.eq(intake_state::PENDING))
    }

    fn undelivered() -> Condition {
        Self::waiting()
    }

    fn key(row: &Self::Model) -> i64 {
        row.seq
    }

    fn outbox_row(row: Self::Model) -> OutboxRow {
        OutboxRow {
            kind: OutboxKind::Event,
            row: row.seq,
            tenant: row.tenant,
            tenant_seq: row.tenant_seq,
            idempotency_key: String::new(),
            body: row.body,
            trace_context: row.trace_context,
        }
    }
}

impl Log for signal_intake::Entity {
    const KEY: Self::Column = signal_intake::Column::Id;
    const PUBLISHED_AT: Self::Column = signal_intake::Column::PublishedAt;
    const CLAIMED_UNTIL: Self::Column = signal_intake::Column::ClaimedUntil;

    fn waiting() -> Condition {
        Condition::all().add(signal_intake::Column::Body.is_not_null())
    }

    fn undelivered() -> Condition {
        Condition::all().add(signal_intake::Column::DeliveredAt.is_null())
    }

    fn key(row: &Self::Model) -> i64 {
        row.id
    }

    fn outbox_row(row: Self::Model) -> OutboxRow {
        OutboxRow {
            kind: OutboxKind::Signal,
            row: row.id,
            tenant: row.tenant,
            tenant_seq: 0,
            idempotency_key: row.idempotency_key,
            body: row.body.unwrap_or_default(),
            trace_context: row.trace_context,
        }
    }
}

/// One claim of unpublished rows ([`Store::outbox_claim`]).
struct Claim {
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u64,
    ignore_leases: bool,
    postgres: bool,
}

impl Claim {
    /// Claims the rows of log `L` in `txn`: selects them (skipping rows other replicas locked,
    /// on PostgreSQL), then leases them.
    async fn rows<L: Log>(&self, txn: &DatabaseTransaction) -> Result<Vec<OutboxRow>, StoreError> {
        let mut query = L::find()
            .filter(L::PUBLISHED_AT.is_null())
            .filter(L::waiting());
        if !self.ignore_leases {
            query = query.filter(
                Condition::any()
                    .add(L::CLAIMED_UNTIL.is_null())
                    .add(L::CLAIMED_UNTIL.lt(self.now)),
            );
        }
        let mut query = query.order_by_asc(L::KEY).limit(self.limit);
        if self.postgres {
            QuerySelect::query(&mut query)
                .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
        }
        let found = query.all(txn).await?;
        let keys: Vec<i64> = found.iter().map(L::key).collect();
        if !keys.is_empty() {
            L::update_many()
                .col_expr(L::CLAIMED_UNTIL, Expr::value(self.lease_until))
                .filter(L::KEY.is_in(keys))
                .exec(txn)
                .await?;
        }
        Ok(found.into_iter().map(L::outbox_row).collect())
    }
}

/// Ends the lease on `rows` of log `L` not published yet.
async fn release<L: Log>(writer: &DatabaseConnection, rows: &[i64]) -> Result<(), StoreError> {
    L::update_many()
        .col_expr(L::CLAIMED_UNTIL, Expr::value(Option::<DateTime<Utc>>::None))
        .filter(L::KEY.is_in(rows.iter().copied()))
        .filter(L::PUBLISHED_AT.is_null())
        .exec(writer)
        .await?;
    Ok(())
}

/// Stamps `rows` of log `L` published at `at` and ends their lease.
async fn stamp<L: Log>(
    writer: &DatabaseConnection,
    rows: &[i64],
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    L::update_many()
        .col_expr(L::PUBLISHED_AT, Expr::value(at))
        .col_expr(L::CLAIMED_UNTIL, Expr::value(Option::<DateTime<Utc>>::None))
        .filter(L::KEY.is_in(rows.iter().copied()))
        .exec(writer)
        .await?;
    Ok(())
}

/// Puts the published rows of log `L` the analyst has not taken back in the outbox: how many.
async fn reset_undelivered<L: Log>(writer: &DatabaseConnection) -> Result<u64, StoreError> {
    let none = || Expr::value(Option::<DateTime<Utc>>::None);
    let reset = L::update_many()
        .col_expr(L::PUBLISHED_AT, none())
        .col_expr(L::CLAIMED_UNTIL, none())
        .filter(L::undelivered())
        .filter(L::PUBLISHED_AT.is_not_null())
        .exec(writer)
        .await?;
    Ok(reset.rows_affected)
}

/// How many rows of log `L` wait to be published.
async fn backlog<L: Log>(db: &DatabaseConnection) -> Result<u64, StoreError> {
    Ok(L::find()
        .filter(L::PUBLISHED_AT.is_null())
        .filter(L::waiting())
        .count(db)
        .await?)
}

/// Writes a group of stamps: each kind's rows in one statement (stamped with the group's latest
/// time), else each caller's alone; each caller's outcome, in order. A failure is logged here
/// too, for callers that do not wait for it.
async fn stamp_group(
    writer: &DatabaseConnection,
    group: Vec<Stamp>,
) -> Vec<Result<(), StoreError>> {
    if group.len() > 1 {
        let latest = group
            .iter()
            .map(|(_, _, at)| *at)
            .max()
            .unwrap_or_else(Utc::now);
        let mut written = Ok(());
        for kind in [OutboxKind::Event, OutboxKind::Signal] {
            let rows: Vec<i64> = group
                .iter()
                .filter(|(k, ..)| *k == kind)
                .flat_map(|(_, rows, _)| rows.iter().copied())
                .collect();
            if !rows.is_empty() && written.is_ok() {
                written = stamp_rows(writer, kind, &rows, latest).await;
            }
        }
        if written.is_ok() {
            return group.iter().map(|_| Ok(())).collect();
        }
    }
    let mut outcomes = Vec::with_capacity(group.len());
    for (kind, rows, at) in group {
        let outcome = stamp_rows(writer, kind, &rows, at).await;
        if let Err(err) = &outcome {
            tracing::warn!(error = %err, rows = rows.len(), "cannot stamp published rows; the relay publishes them again");
        }
        outcomes.push(outcome);
    }
    outcomes
}

async fn stamp_rows(
    writer: &DatabaseConnection,
    kind: OutboxKind,
    rows: &[i64],
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    for chunk in rows.chunks(500) {
        match kind {
            OutboxKind::Event => stamp::<intake_event::Entity>(writer, chunk, at).await?,
            OutboxKind::Signal => stamp::<signal_intake::Entity>(writer, chunk, at).await?,
        }
    }
    Ok(())
}
