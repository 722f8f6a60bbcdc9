//! The gate's rows: the query log (each tenant's recent questions, kept to a bound per tenant,
//! oldest out first) and the changes the gate judged (`gate_change`). The store keeps them and
//! their bounds; what a question or a change means is the analyst's business.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, TransactionTrait,
};

use crate::entity::{gate_change, query_log};
use crate::rows::Rows;
use crate::{Store, StoreError};

/// One question as the query log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedQuestion {
    /// The tenant asked.
    pub tenant: String,
    /// The question's text.
    pub question: String,
    /// The scope the caller asked in (`key=value, …`; empty for everywhere).
    pub scope: String,
    /// Who asked, as the service recorded it (JSON, unchecked here).
    pub caller: String,
    /// When.
    pub asked_at: DateTime<Utc>,
}

/// A change the gate judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRecord {
    /// Id, given by the store.
    pub id: i64,
    /// The tenant.
    pub tenant: String,
    /// What it was: `rebuild`, `repair` or `ontology`.
    pub kind: String,
    /// `held`, `live`, `approved`, `discarded` or `rolled_back`.
    pub status: String,
    /// The event that asked for it (its JSON envelope), applied again when a held change is
    /// approved.
    pub event: String,
    /// Questions replayed against the live graph and the shadow.
    pub replayed: i32,
    /// The answers that differ (JSON, unchecked here).
    pub differences: String,
    /// What the graph held before the change went live (JSON, unchecked here): what a rollback
    /// restores. `None` while held or when discarded.
    pub previous: Option<String>,
    /// When the gate judged it.
    pub created_at: DateTime<Utc>,
    /// When a reviewer decided, or it was rolled back.
    pub decided_at: Option<DateTime<Utc>>,
    /// Who decided (empty when it went live by itself).
    pub decided_by: String,
}

/// A recorded change moved from one status to another, with who and when and, when given, what
/// the graph held before it went live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateMove {
    /// The change.
    pub id: i64,
    /// The status it must be in.
    pub from: String,
    /// The status it moves to.
    pub to: String,
    /// Who moved it.
    pub by: String,
    /// When.
    pub at: DateTime<Utc>,
    /// What the graph held before it (JSON), set when it goes live.
    pub previous: Option<String>,
}

/// What a knowledge commit records of the gate, in its transaction: a change judged, or a
/// recorded one moved on (approved, rolled back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateWrite {
    /// A change the gate judged.
    Record(GateRecord),
    /// A recorded change moved on; the commit fails with [`StoreError::Conflict`] when it is no
    /// longer in the status it must be in.
    Move(GateMove),
}

/// Writes `write` for `tenant` on `db` (a transaction in a commit).
pub(crate) async fn gate_write_in(
    db: &impl ConnectionTrait,
    tenant: &str,
    write: &GateWrite,
) -> Result<(), StoreError> {
    match write {
        GateWrite::Record(record) => {
            gate_record_in(db, record).await?;
            Ok(())
        }
        GateWrite::Move(step) => {
            if gate_move_in(db, tenant, step).await? {
                Ok(())
            } else {
                Err(StoreError::Conflict {
                    tenant: tenant.to_owned(),
                })
            }
        }
    }
}

async fn gate_record_in(db: &impl ConnectionTrait, record: &GateRecord) -> Result<i64, StoreError> {
    let row = gate_change::ActiveModel {
        tenant: Set(record.tenant.clone()),
        kind: Set(record.kind.clone()),
        status: Set(record.status.clone()),
        event: Set(record.event.clone()),
        replayed: Set(record.replayed),
        differences: Set(record.differences.clone()),
        previous: Set(record.previous.clone()),
        created_at: Set(record.created_at),
        decided_at: Set(record.decided_at),
        decided_by: Set(record.decided_by.clone()),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(row.id)
}

async fn gate_move_in(
    db: &impl ConnectionTrait,
    tenant: &str,
    step: &GateMove,
) -> Result<bool, StoreError> {
    let mut update = gate_change::Entity::update_many()
        .col_expr(gate_change::Column::Status, Expr::value(step.to.clone()))
        .col_expr(gate_change::Column::DecidedBy, Expr::value(step.by.clone()))
        .col_expr(gate_change::Column::DecidedAt, Expr::value(step.at));
    if let Some(previous) = &step.previous {
        update = update.col_expr(gate_change::Column::Previous, Expr::value(previous.clone()));
    }
    let done = update
        .filter(gate_change::Column::Tenant.eq(tenant))
        .filter(gate_change::Column::Id.eq(step.id))
        .filter(gate_change::Column::Status.eq(step.from.as_str()))
        .exec(db)
        .await?;
    Ok(done.rows_affected == 1)
}

impl From<gate_change::Model> for GateRecord {
    fn from(row: gate_change::Model) -> Self {
        Self {
            id: row.id,
            tenant: row.tenant,
            kind: row.kind,
            status: row.status,
            event: row.event,
            replayed: row.replayed,
            differences: row.differences,
            previous: row.previous,
            created_at: row.created_at,
            decided_at: row.decided_at,
            decided_by: row.decided_by,
        }
    }
}

impl Store {
    /// Appends `questions` to the query log, then keeps at most `keep` of each of their tenants,
    /// the newest; one transaction.
    pub async fn query_log_append(
        &self,
        questions: &[LoggedQuestion],
        keep: u64,
    ) -> Result<(), StoreError> {
        if questions.is_empty() {
            return Ok(());
        }
        let txn = self.writer.begin().await?;
        let rows = questions.iter().map(|q| query_log::ActiveModel {
            tenant: Set(q.tenant.clone()),
            question: Set(q.question.clone()),
            scope: Set(q.scope.clone()),
            caller: Set(q.caller.clone()),
            asked_at: Set(q.asked_at),
            ..Default::default()
        });
        query_log::Entity::insert_many(rows).exec(&txn).await?;
        let mut tenants: Vec<&str> = questions.iter().map(|q| q.tenant.as_str()).collect();
        tenants.sort_unstable();
        tenants.dedup();
        for tenant in tenants {
            // The id of the oldest row kept; everything older goes.
            let oldest_kept: Option<i64> = query_log::Entity::find()
                .select_only()
                .column(query_log::Column::Id)
                .filter(query_log::Column::Tenant.eq(tenant))
                .order_by_desc(query_log::Column::Id)
                .offset(keep.saturating_sub(1))
                .limit(1)
                .into_tuple()
                .one(&txn)
                .await?;
            if let Some(oldest_kept) = oldest_kept {
                query_log::Entity::delete_many()
                    .filter(query_log::Column::Tenant.eq(tenant))
                    .filter(query_log::Column::Id.lt(oldest_kept))
                    .exec(&txn)
                    .await?;
            }
        }
        txn.commit().await?;
        Ok(())
    }

    /// The tenant's newest `limit` questions, newest first.
    pub async fn recent_questions(
        &self,
        tenant: &str,
        limit: u64,
    ) -> Result<Vec<LoggedQuestion>, StoreError> {
        query_log::Entity::find()
            .filter(query_log::Column::Tenant.eq(tenant))
            .order_by_desc(query_log::Column::Id)
            .limit(limit)
            .rows(&self.db, |row| LoggedQuestion {
                tenant: row.tenant,
                question: row.question,
                scope: row.scope,
                caller: row.caller,
                asked_at: row.asked_at,
            })
            .await
    }

    /// Records a change the gate judged; returns its id.
    pub async fn gate_record(&self, record: &GateRecord) -> Result<i64, StoreError> {
        gate_record_in(&self.writer, record).await
    }

    /// The tenant's changes, newest first, at most `limit`.
    pub async fn gate_changes(
        &self,
        tenant: &str,
        limit: u64,
    ) -> Result<Vec<GateRecord>, StoreError> {
        gate_change::Entity::find()
            .filter(gate_change::Column::Tenant.eq(tenant))
            .order_by_desc(gate_change::Column::Id)
            .limit(limit)
            .rows(&self.db, GateRecord::from)
            .await
    }

    /// One change of the tenant's.
    pub async fn gate_change(
        &self,
        tenant: &str,
        id: i64,
    ) -> Result<Option<GateRecord>, StoreError> {
        Ok(gate_change::Entity::find_by_id(id)
            .filter(gate_change::Column::Tenant.eq(tenant))
            .one(&self.db)
            .await?
            .map(GateRecord::from))
    }

    /// Moves the tenant's change `id` from status `from` to `to` (see [`GateMove`]). `false`
    /// when the change is not (or no longer) in `from`: two reviewers deciding at once settle
    /// it once.
    pub async fn gate_decide(&self, tenant: &str, step: &GateMove) -> Result<bool, StoreError> {
        gate_move_in(&self.writer, tenant, step).await
    }

    /// The tenant's newest change that went live (by itself or approved) and was not rolled
    /// back: what a rollback undoes.
    pub async fn gate_last_live(&self, tenant: &str) -> Result<Option<GateRecord>, StoreError> {
        Ok(gate_change::Entity::find()
            .filter(gate_change::Column::Tenant.eq(tenant))
            .filter(gate_change::Column::Status.is_in(["live", "approved"]))
            .filter(gate_change::Column::Previous.is_not_null())
            .order_by_desc(gate_change::Column::Id)
            .one(&self.db)
            .await?
            .map(GateRecord::from))
    }
}
