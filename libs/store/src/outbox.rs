//! The intake logs as an outbox: a row accepted by the intake waits here, unpublished, until a
//! publisher (the request's own fast path, or the relay) has the broker's confirm and stamps it.
//! A publisher holds a lease on the rows it publishes (`claimed_until`), so relays of several
//! replicas rarely publish one row twice; on PostgreSQL rows are claimed with
//! `FOR UPDATE SKIP LOCKED`. A row published twice is harmless: consumers deduplicate by
//! message id.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, LockBehavior, LockType};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
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
        let postgres = self.backend() == crate::Backend::Postgres;
        let rows = match kind {
            OutboxKind::Event => {
                let mut query = intake_event::Entity::find()
                    .filter(intake_event::Column::PublishedAt.is_null())
                    .filter(intake_event::Column::State.eq(intake_state::PENDING));
                if !ignore_leases {
                    query = query.filter(
                        Condition::any()
                            .add(intake_event::Column::ClaimedUntil.is_null())
                            .add(intake_event::Column::ClaimedUntil.lt(now)),
                    );
                }
                let mut query = query.order_by_asc(intake_event::Column::Seq).limit(limit);
                if postgres {
                    QuerySelect::query(&mut query)
                        .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
                }
                let found = query.all(&txn).await?;
                let keys: Vec<i64> = found.iter().map(|row| row.seq).collect();
                if !keys.is_empty() {
                    intake_event::Entity::update_many()
                        .col_expr(intake_event::Column::ClaimedUntil, Expr::value(lease_until))
                        .filter(intake_event::Column::Seq.is_in(keys))
                        .exec(&txn)
                        .await?;
                }
                found
                    .into_iter()
                    .map(|row| OutboxRow {
                        kind,
                        row: row.seq,
                        tenant: row.tenant,
                        tenant_seq: row.tenant_seq,
                        idempotency_key: String::new(),
                        body: row.body,
                        trace_context: row.trace_context,
                    })
                    .collect()
            }
            OutboxKind::Signal => {
                let mut query = signal_intake::Entity::find()
                    .filter(signal_intake::Column::PublishedAt.is_null())
                    .filter(signal_intake::Column::Body.is_not_null());
                if !ignore_leases {
                    query = query.filter(
                        Condition::any()
                            .add(signal_intake::Column::ClaimedUntil.is_null())
                            .add(signal_intake::Column::ClaimedUntil.lt(now)),
                    );
                }
                let mut query = query.order_by_asc(signal_intake::Column::Id).limit(limit);
                if postgres {
                    QuerySelect::query(&mut query)
                        .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
                }
                let found = query.all(&txn).await?;
                let keys: Vec<i64> = found.iter().map(|row| row.id).collect();
                if !keys.is_empty() {
                    signal_intake::Entity::update_many()
                        .col_expr(
                            signal_intake::Column::ClaimedUntil,
                            Expr::value(lease_until),
                        )
                        .filter(signal_intake::Column::Id.is_in(keys))
                        .exec(&txn)
                        .await?;
                }
                found
                    .into_iter()
                    .map(|row| OutboxRow {
                        kind,
                        row: row.id,
                        tenant: row.tenant,
                        tenant_seq: 0,
                        idempotency_key: row.idempotency_key,
                        body: row.body.unwrap_or_default(),
                        trace_context: row.trace_context,
                    })
                    .collect()
            }
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
                OutboxKind::Event => {
                    intake_event::Entity::update_many()
                        .col_expr(
                            intake_event::Column::ClaimedUntil,
                            Expr::value(Option::<DateTime<Utc>>::None),
                        )
                        .filter(intake_event::Column::Seq.is_in(chunk.iter().copied()))
                        .filter(intake_event::Column::PublishedAt.is_null())
                        .exec(&self.writer)
                        .await?;
                }
                OutboxKind::Signal => {
                    signal_intake::Entity::update_many()
                        .col_expr(
                            signal_intake::Column::ClaimedUntil,
                            Expr::value(Option::<DateTime<Utc>>::None),
                        )
                        .filter(signal_intake::Column::Id.is_in(chunk.iter().copied()))
                        .filter(signal_intake::Column::PublishedAt.is_null())
                        .exec(&self.writer)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// For a queue that does not outlive the process (the in-process queue): what was published
    /// to it and not yet taken by the analyst (events still pending, signals not delivered) died
    /// with the last process, so it goes back to the outbox. Returns how many rows.
    pub async fn outbox_reset_undelivered(&self) -> Result<u64, StoreError> {
        let events = intake_event::Entity::update_many()
            .col_expr(
                intake_event::Column::PublishedAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(
                intake_event::Column::ClaimedUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(intake_event::Column::State.eq(intake_state::PENDING))
            .filter(intake_event::Column::PublishedAt.is_not_null())
            .exec(&self.writer)
            .await?;
        let signals = signal_intake::Entity::update_many()
            .col_expr(
                signal_intake::Column::PublishedAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(
                signal_intake::Column::ClaimedUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(signal_intake::Column::DeliveredAt.is_null())
            .filter(signal_intake::Column::PublishedAt.is_not_null())
            .exec(&self.writer)
            .await?;
        Ok(events.rows_affected + signals.rows_affected)
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
        let events = intake_event::Entity::find()
            .filter(intake_event::Column::PublishedAt.is_null())
            .filter(intake_event::Column::State.eq(intake_state::PENDING))
            .count(&self.db)
            .await?;
        let signals = signal_intake::Entity::find()
            .filter(signal_intake::Column::PublishedAt.is_null())
            .filter(signal_intake::Column::Body.is_not_null())
            .count(&self.db)
            .await?;
        Ok(OutboxBacklog { events, signals })
    }
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
            OutboxKind::Event => {
                intake_event::Entity::update_many()
                    .col_expr(intake_event::Column::PublishedAt, Expr::value(at))
                    .col_expr(
                        intake_event::Column::ClaimedUntil,
                        Expr::value(Option::<DateTime<Utc>>::None),
                    )
                    .filter(intake_event::Column::Seq.is_in(chunk.iter().copied()))
                    .exec(writer)
                    .await?;
            }
            OutboxKind::Signal => {
                signal_intake::Entity::update_many()
                    .col_expr(signal_intake::Column::PublishedAt, Expr::value(at))
                    .col_expr(
                        signal_intake::Column::ClaimedUntil,
                        Expr::value(Option::<DateTime<Utc>>::None),
                    )
                    .filter(signal_intake::Column::Id.is_in(chunk.iter().copied()))
                    .exec(writer)
                    .await?;
            }
        }
    }
    Ok(())
}
