//! The signal intake log: accepted failure signals, deduplicated by idempotency key, counted per
//! subject over a window to compute severity.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, Func, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, TransactionTrait,
};

use crate::entity::signal_intake;
use crate::{Store, StoreError};

/// One accepted signal.
#[derive(Debug, Clone)]
pub struct SignalRecord<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// Idempotency key.
    pub idempotency_key: &'a str,
    /// Signal type name.
    pub signal_type: &'a str,
    /// What it concerns (entity, relationship or sector).
    pub subject: &'a str,
    /// Reporting agent.
    pub agent_id: &'a str,
    /// The failed query.
    pub query: &'a str,
    /// When it was received.
    pub at: DateTime<Utc>,
    /// The reporting request's W3C trace context (a JSON object), kept for a later publish.
    pub trace_context: Option<&'a str>,
}

/// How often a subject failed within the window, and for how many agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frequency {
    /// Signals.
    pub occurrences: u64,
    /// Distinct agents.
    pub agents: u64,
}

/// One signal of a tenant's window ([`Store::signals_in_window`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowSignal {
    /// Signal type name.
    pub signal_type: String,
    /// What it concerns, folded (entity, else relationship, else sector).
    pub subject: String,
    /// Reporting agent.
    pub agent_id: String,
    /// When it was received.
    pub received_at: DateTime<Utc>,
    /// The message announcing it (JSON), as published; `None` for a row recorded before the
    /// intake kept messages.
    pub body: Option<String>,
}

/// What became of a signal taken into the intake log ([`Store::accept_signal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalAccepted {
    /// The row's key (for the outbox).
    pub row: i64,
    /// First time this idempotency key was seen for the tenant.
    pub fresh: bool,
    /// Frequency of its subject over the window, counted with it.
    pub frequency: Frequency,
    /// The message to publish, while it waits in the outbox (unpublished); `None` once
    /// published, or for a row recorded before the outbox kept bodies.
    pub pending_body: Option<String>,
}

impl Store {
    /// Records a signal and the message that announces it, unpublished (the outbox,
    /// `crate::outbox`), in one transaction: the one write that makes it acknowledged. The
    /// frequency of its subject since `since` is counted in the same transaction, and `body`
    /// builds the message from it. `lease_until` claims the new row for the caller's own
    /// publish. A key already seen for the tenant changes nothing and answers the earlier row.
    pub async fn accept_signal(
        &self,
        signal: &SignalRecord<'_>,
        since: DateTime<Utc>,
        lease_until: Option<DateTime<Utc>>,
        body: impl FnOnce(Frequency) -> String,
    ) -> Result<SignalAccepted, StoreError> {
        self.refuse_while_away()?;
        let txn = self.begin_noted().await?;
        let row = signal_intake::ActiveModel {
            body: Set(None),
            published_at: Set(None),
            claimed_until: Set(lease_until),
            delivered_at: Set(None),
            trace_context: Set(signal.trace_context.map(str::to_owned)),
            ..signal_row(signal)
        };
        let inserted = insert_once(row).exec_without_returning(&txn).await?;
        let stored = signal_intake::Entity::find()
            .filter(signal_intake::Column::Tenant.eq(signal.tenant))
            .filter(signal_intake::Column::IdempotencyKey.eq(signal.idempotency_key))
            .one(&txn)
            .await?
            .ok_or_else(|| {
                StoreError::Db(sea_orm::DbErr::RecordNotFound(
                    "the signal just recorded".to_owned(),
                ))
            })?;
        let frequency = frequency(
            &txn,
            signal.tenant,
            &stored.signal_type,
            &stored.subject,
            since,
        )
        .await?;
        let fresh = inserted > 0;
        let pending_body = if fresh {
            let text = body(frequency);
            signal_intake::Entity::update_many()
                .col_expr(signal_intake::Column::Body, Expr::value(text.clone()))
                .filter(signal_intake::Column::Id.eq(stored.id))
                .exec(&txn)
                .await?;
            Some(text)
        } else if stored.published_at.is_none() {
            stored.body
        } else {
            None
        };
        txn.commit().await?;
        Ok(SignalAccepted {
            row: stored.id,
            fresh,
            frequency,
            pending_body,
        })
    }

    /// Records a signal once; `false` when its idempotency key was already seen for the tenant.
    pub async fn record_signal(&self, signal: &SignalRecord<'_>) -> Result<bool, StoreError> {
        let inserted = insert_once(signal_row(signal))
            .exec_without_returning(&self.writer)
            .await?;
        Ok(inserted > 0)
    }

    /// The tenant's signals received at or after `since`, oldest first: one tenant's window,
    /// read through the (tenant, received_at) index, never other tenants' rows. At most the
    /// newest `limit` of them ([`MAX_WINDOW_SIGNALS`] for the patterns of the loop), so a tenant
    /// that floods its window cannot make one read hold all of it.
    pub async fn signals_in_window(
        &self,
        tenant: &str,
        since: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<WindowSignal>, StoreError> {
        let mut rows = window_query(tenant, since)
            .limit(limit)
            .into_tuple::<(String, String, String, DateTime<Utc>, Option<String>)>()
            .all(&self.db)
            .await?;
        rows.reverse();
        Ok(rows
            .into_iter()
            .map(
                |(signal_type, subject, agent_id, received_at, body)| WindowSignal {
                    signal_type,
                    subject,
                    agent_id,
                    received_at,
                    body,
                },
            )
            .collect())
    }

    /// The database's plan of [`Store::signals_in_window`], one line per step (SQLite's
    /// `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN`). On PostgreSQL sequential scans are
    /// disabled for it, so the plan says whether an index can serve the query at all, whatever
    /// the table's size; for tests and diagnostics.
    pub async fn signals_in_window_plan(
        &self,
        tenant: &str,
        since: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        use sea_orm::{DbBackend, QueryTrait, Statement};
        let backend = self.db.get_database_backend();
        let query = window_query(tenant, since).build(backend);
        let (prefix, column) = match backend {
            DbBackend::Sqlite => ("EXPLAIN QUERY PLAN ", "detail"),
            _ => ("EXPLAIN ", "QUERY PLAN"),
        };
        let explain = Statement {
            sql: format!("{prefix}{}", query.sql),
            ..query
        };
        let txn = self.db.begin().await?;
        if backend == DbBackend::Postgres {
            txn.execute_unprepared("SET LOCAL enable_seqscan = off")
                .await?;
        }
        let rows = txn.query_all_raw(explain).await?;
        txn.commit().await?;
        Ok(rows
            .iter()
            .filter_map(|row| row.try_get::<String>("", column).ok())
            .collect())
    }

    /// Occurrences and distinct agents of signals of one type about one subject since `since`.
    pub async fn signal_frequency(
        &self,
        tenant: &str,
        signal_type: &str,
        subject: &str,
        since: DateTime<Utc>,
    ) -> Result<Frequency, StoreError> {
        frequency(&self.db, tenant, signal_type, subject, since).await
    }

    /// Distinct queries of signals about `subject` since `since` (any type), most recent first,
    /// at most `limit`, and how many distinct queries there were in all.
    pub async fn signal_queries(
        &self,
        tenant: &str,
        subject: &str,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<(u64, Vec<String>), StoreError> {
        let rows = signal_intake::Entity::find()
            .filter(signal_intake::Column::Tenant.eq(tenant))
            .filter(signal_intake::Column::Subject.eq(subject))
            .filter(signal_intake::Column::ReceivedAt.gte(since))
            .order_by_desc(signal_intake::Column::ReceivedAt)
            .select_only()
            .column(signal_intake::Column::Query)
            .into_tuple::<String>()
            .all(&self.db)
            .await?;
        let mut seen = std::collections::HashSet::new();
        let distinct: Vec<String> = rows
            .into_iter()
            .filter(|q| !q.trim().is_empty() && seen.insert(q.clone()))
            .collect();
        let total = distinct.len() as u64;
        Ok((total, distinct.into_iter().take(limit).collect()))
    }

    /// When the first signal about `subject` (any type) since `since` arrived.
    pub async fn signal_first_seen(
        &self,
        tenant: &str,
        subject: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(signal_intake::Entity::find()
            .filter(signal_intake::Column::Tenant.eq(tenant))
            .filter(signal_intake::Column::Subject.eq(subject))
            .filter(signal_intake::Column::ReceivedAt.gte(since))
            .order_by_asc(signal_intake::Column::ReceivedAt)
            .one(&self.db)
            .await?
            .map(|row| row.received_at))
    }
}

/// The columns of one tenant's signals since `since`, oldest first.
/// The most signals one read of a tenant's window returns (the newest ones): what the patterns
/// of the loop are clustered from when a tenant reports more than this within the window.
pub const MAX_WINDOW_SIGNALS: u64 = 100_000;

fn window_query(tenant: &str, since: DateTime<Utc>) -> sea_orm::Select<signal_intake::Entity> {
    signal_intake::Entity::find()
        .select_only()
        .column(signal_intake::Column::SignalType)
        .column(signal_intake::Column::Subject)
        .column(signal_intake::Column::AgentId)
        .column(signal_intake::Column::ReceivedAt)
        .column(signal_intake::Column::Body)
        .filter(signal_intake::Column::Tenant.eq(tenant))
        .filter(signal_intake::Column::ReceivedAt.gte(since))
        .order_by_desc(signal_intake::Column::ReceivedAt)
}

/// Occurrences and distinct agents of signals of one type about one subject since `since`, on
/// a connection or inside a transaction.
async fn frequency<C: ConnectionTrait>(
    db: &C,
    tenant: &str,
    signal_type: &str,
    subject: &str,
    since: DateTime<Utc>,
) -> Result<Frequency, StoreError> {
    let matching = || {
        signal_intake::Entity::find()
            .filter(signal_intake::Column::Tenant.eq(tenant))
            .filter(signal_intake::Column::SignalType.eq(signal_type))
            .filter(signal_intake::Column::Subject.eq(subject))
            .filter(signal_intake::Column::ReceivedAt.gte(since))
    };
    let occurrences = matching().count(db).await?;
    // Counted by the database, not by fetching every agent id of the window.
    let agents = matching()
        .select_only()
        .column_as(
            Expr::expr(Func::count_distinct(Expr::col(
                signal_intake::Column::AgentId,
            ))),
            "agents",
        )
        .into_tuple::<i64>()
        .one(db)
        .await?
        .map_or(0, |n| u64::try_from(n).unwrap_or_default());
    Ok(Frequency {
        occurrences,
        agents,
    })
}

/// The row of a signal as it is received: what the signal says, the rest of the row unset.
fn signal_row(signal: &SignalRecord<'_>) -> signal_intake::ActiveModel {
    signal_intake::ActiveModel {
        tenant: Set(signal.tenant.to_owned()),
        idempotency_key: Set(signal.idempotency_key.to_owned()),
        signal_type: Set(signal.signal_type.to_owned()),
        subject: Set(signal.subject.to_owned()),
        agent_id: Set(signal.agent_id.to_owned()),
        query: Set(signal.query.to_owned()),
        received_at: Set(signal.at),
        ..Default::default()
    }
}

/// The insert of a signal row that keeps the first row of a tenant's idempotency key (a retry
/// inserts nothing).
fn insert_once(row: signal_intake::ActiveModel) -> sea_orm::Insert<signal_intake::ActiveModel> {
    signal_intake::Entity::insert(row).on_conflict(
        OnConflict::columns([
            signal_intake::Column::Tenant,
            signal_intake::Column::IdempotencyKey,
        ])
        .do_nothing()
        .to_owned(),
    )
}
