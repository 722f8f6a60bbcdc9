//! The loop's durable state: proposed graph updates (review queue and auto-apply log), reviewers'
//! decisions, the supervisor's learned rates (per tenant), and the status of each signal pattern.
//!
//! A decision moves an update out of `pending` with a conditional update in the same transaction
//! that records it, so of two identical decisions only one takes effect; the caller applies an
//! `approved` update to the graph and then marks it `applied`, and anything left `approved` (a
//! crash in between) is found again by [`Store::approved_unapplied`].

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde::{Deserialize, Serialize};

use crate::entity::{pattern_state, proposed_update, review_decision, supervisor_rate};
use crate::rows::Rows;
use crate::{Store, StoreError};

/// Status names of a proposed update.
pub mod update_status {
    /// Waiting for a reviewer.
    pub const PENDING: &str = "pending";
    /// Approved (by a reviewer or automatically) and not yet applied to the graph.
    pub const APPROVED: &str = "approved";
    /// Applied to the graph.
    pub const APPLIED: &str = "applied";
    /// Rejected by a reviewer; never applied.
    pub const REJECTED: &str = "rejected";
}

/// A source an update rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateSource {
    /// Source id (for example `project-record:kite.md`).
    pub source_id: String,
    /// Version read.
    pub version: u64,
    /// Title.
    pub title: String,
}

/// A proposed graph update as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRecord {
    /// Update id (stable: the same proposal made twice is one row).
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Pattern that led to it.
    pub pattern_id: String,
    /// Signal type of the pattern (a learning category dimension).
    pub signal_type: String,
    /// Origin of its sources (a learning category dimension).
    pub source: String,
    /// Domain (a learning category dimension).
    pub domain: String,
    /// Entity concerned.
    pub entity: String,
    /// Predicate concerned.
    pub predicate: String,
    /// Current value; empty when the slot is new.
    pub before: String,
    /// Proposed value.
    pub after: String,
    /// Confidence in the proposed value.
    pub confidence: f64,
    /// Variance of that confidence across sources.
    pub confidence_variance: f64,
    /// Recent queries that touch it.
    pub impact_radius: u32,
    /// Some of those queries.
    pub affected_queries: Vec<String>,
    /// Sources.
    pub sources: Vec<UpdateSource>,
    /// Review priority (higher first).
    pub priority: f64,
    /// Why it is reviewed (`high_variance`, `critical_domain`, `sampled`) or `auto`.
    pub reason: String,
    /// See [`update_status`].
    pub status: String,
    /// The value applied or to apply (the proposal's, or a reviewer's modification).
    pub applied_value: String,
    /// When it was proposed.
    pub created_at: DateTime<Utc>,
    /// When it (re-)entered the queue; age orders equal priorities.
    pub queued_at: DateTime<Utc>,
    /// When it reached the graph.
    pub applied_at: Option<DateTime<Utc>>,
}

/// A reviewer's decision as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord {
    /// Update decided.
    pub update_id: String,
    /// `approve`, `reject`, `modify` or `defer`.
    pub decision: String,
    /// Reviewer principal.
    pub reviewer: String,
    /// New value (modify).
    pub new_value: String,
    /// Free-text note.
    pub note: String,
    /// When.
    pub decided_at: DateTime<Utc>,
}

/// What recording a decision did.
#[derive(Debug, Clone, PartialEq)]
pub enum DecideOutcome {
    /// No such update for the tenant.
    NotFound,
    /// The update had already left the queue (its status now); nothing changed.
    AlreadyDecided(String),
    /// Recorded; the update as it now stands (status `approved` means: apply it).
    Recorded(Box<UpdateRecord>),
}

/// A learned sampling rate: one tenant's, for one category.
#[derive(Debug, Clone, PartialEq)]
pub struct RateRecord {
    /// Tenant whose reviewers taught it.
    pub tenant: String,
    /// Signal type.
    pub signal_type: String,
    /// Source origin.
    pub source: String,
    /// Domain.
    pub domain: String,
    /// Sampling rate.
    pub rate: f64,
    /// Approvals learned from.
    pub approvals: i64,
    /// Rejections learned from.
    pub rejections: i64,
}

/// A pattern's recorded status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternStatus {
    /// Kind name.
    pub kind: String,
    /// Folded key.
    pub key: String,
    /// `healed`, `proposed` or `unhealed`.
    pub status: String,
    /// What was done, in words.
    pub action: String,
    /// Milliseconds from the pattern's first signal to the heal, when healed.
    pub signal_to_heal_ms: Option<i64>,
}

/// Counts of updates by status and by reason, for metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    /// Waiting for a reviewer.
    pub pending: u64,
    /// Applied without a human.
    pub auto_applied: u64,
    /// Applied after a reviewer approved or modified them.
    pub reviewed_applied: u64,
    /// Rejected.
    pub rejected: u64,
}

fn to_record(row: proposed_update::Model) -> UpdateRecord {
    UpdateRecord {
        affected_queries: serde_json::from_str(&row.affected_queries).unwrap_or_default(),
        sources: serde_json::from_str(&row.sources).unwrap_or_default(),
        impact_radius: u32::try_from(row.impact_radius).unwrap_or_default(),
        id: row.id,
        tenant: row.tenant,
        pattern_id: row.pattern_id,
        signal_type: row.signal_type,
        source: row.source,
        domain: row.domain,
        entity: row.entity,
        predicate: row.predicate,
        before: row.before,
        after: row.after,
        confidence: row.confidence,
        confidence_variance: row.confidence_variance,
        priority: row.priority,
        reason: row.reason,
        status: row.status,
        applied_value: row.applied_value,
        created_at: row.created_at,
        queued_at: row.queued_at,
        applied_at: row.applied_at,
    }
}

/// The tenant's pending updates in review order: priority (highest first), then age in the
/// queue (oldest first).
fn pending_in_review_order(tenant: &str) -> sea_orm::Select<proposed_update::Entity> {
    proposed_update::Entity::find()
        .filter(proposed_update::Column::Tenant.eq(tenant))
        .filter(proposed_update::Column::Status.eq(update_status::PENDING))
        .order_by_desc(proposed_update::Column::Priority)
        .order_by_asc(proposed_update::Column::QueuedAt)
        .order_by_asc(proposed_update::Column::Id)
}

impl Store {
    /// Stores a proposed update once; `false` when an update with its id exists already.
    pub async fn propose_update(&self, update: &UpdateRecord) -> Result<bool, StoreError> {
        let row = proposed_update::ActiveModel {
            id: Set(update.id.clone()),
            tenant: Set(update.tenant.clone()),
            pattern_id: Set(update.pattern_id.clone()),
            signal_type: Set(update.signal_type.clone()),
            source: Set(update.source.clone()),
            domain: Set(update.domain.clone()),
            entity: Set(update.entity.clone()),
            predicate: Set(update.predicate.clone()),
            before: Set(update.before.clone()),
            after: Set(update.after.clone()),
            confidence: Set(update.confidence),
            confidence_variance: Set(update.confidence_variance),
            impact_radius: Set(i32::try_from(update.impact_radius).unwrap_or(i32::MAX)),
            affected_queries: Set(to_json(&update.affected_queries)),
            sources: Set(to_json(&update.sources)),
            priority: Set(update.priority),
            reason: Set(update.reason.clone()),
            status: Set(update.status.clone()),
            applied_value: Set(update.applied_value.clone()),
            created_at: Set(update.created_at),
            queued_at: Set(update.queued_at),
            applied_at: Set(update.applied_at),
        };
        let inserted = proposed_update::Entity::insert(row)
            .on_conflict(
                OnConflict::column(proposed_update::Column::Id)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(&self.writer)
            .await?;
        Ok(inserted > 0)
    }

    /// One update of the tenant.
    pub async fn update(&self, tenant: &str, id: &str) -> Result<Option<UpdateRecord>, StoreError> {
        Ok(proposed_update::Entity::find_by_id(id.to_owned())
            .filter(proposed_update::Column::Tenant.eq(tenant))
            .one(&self.db)
            .await?
            .map(to_record))
    }

    /// The next pending update for a reviewer: one in their expertise domains first, then by
    /// priority (highest first), then by age in the queue (oldest first).
    pub async fn next_review(
        &self,
        tenant: &str,
        expertise: &[String],
    ) -> Result<Option<UpdateRecord>, StoreError> {
        let domains: Vec<String> = expertise.iter().map(|d| d.trim().to_lowercase()).collect();
        if !domains.is_empty()
            && let Some(row) = pending_in_review_order(tenant)
                .filter(proposed_update::Column::Domain.is_in(domains))
                .one(&self.db)
                .await?
        {
            return Ok(Some(to_record(row)));
        }
        Ok(pending_in_review_order(tenant)
            .one(&self.db)
            .await?
            .map(to_record))
    }

    /// The tenant's pending updates in review order (priority, then age), at most `limit`.
    pub async fn review_queue(
        &self,
        tenant: &str,
        limit: u64,
    ) -> Result<Vec<UpdateRecord>, StoreError> {
        pending_in_review_order(tenant)
            .limit(limit)
            .rows(&self.db, to_record)
            .await
    }

    /// Every update of the tenant, newest first, at most `limit` (the auto-apply log included).
    pub async fn updates(&self, tenant: &str, limit: u64) -> Result<Vec<UpdateRecord>, StoreError> {
        proposed_update::Entity::find()
            .filter(proposed_update::Column::Tenant.eq(tenant))
            .order_by_desc(proposed_update::Column::CreatedAt)
            .order_by_asc(proposed_update::Column::Id)
            .limit(limit)
            .rows(&self.db, to_record)
            .await
    }

    /// Records a decision on a pending update. `approve` and `modify` move it to `approved` with
    /// the value to apply, `reject` to `rejected`, `defer` puts it at the back of the queue. Only
    /// a pending update changes: a second decision finds it decided and has no effect.
    pub async fn decide(
        &self,
        tenant: &str,
        update_id: &str,
        decision: &DecisionRecord,
    ) -> Result<DecideOutcome, StoreError> {
        use proposed_update::Column;
        let txn = self.begin_write().await?;
        let Some(current) = proposed_update::Entity::find_by_id(update_id.to_owned())
            .filter(Column::Tenant.eq(tenant))
            .one(&txn)
            .await?
        else {
            return Ok(DecideOutcome::NotFound);
        };
        let mut change = proposed_update::Entity::update_many()
            .filter(Column::Id.eq(update_id))
            .filter(Column::Tenant.eq(tenant))
            .filter(Column::Status.eq(update_status::PENDING));
        change = match decision.decision.as_str() {
            "approve" => change
                .col_expr(Column::Status, Expr::value(update_status::APPROVED))
                .col_expr(Column::AppliedValue, Expr::value(current.after.clone())),
            "modify" => change
                .col_expr(Column::Status, Expr::value(update_status::APPROVED))
                .col_expr(
                    Column::AppliedValue,
                    Expr::value(decision.new_value.clone()),
                ),
            "reject" => change.col_expr(Column::Status, Expr::value(update_status::REJECTED)),
            _ => change.col_expr(Column::QueuedAt, Expr::value(decision.decided_at)),
        };
        let changed = change.exec(&txn).await?.rows_affected;
        if changed == 0 {
            return Ok(DecideOutcome::AlreadyDecided(current.status));
        }
        review_decision::Entity::insert(review_decision::ActiveModel {
            tenant: Set(tenant.to_owned()),
            update_id: Set(update_id.to_owned()),
            decision: Set(decision.decision.clone()),
            reviewer: Set(decision.reviewer.clone()),
            new_value: Set(decision.new_value.clone()),
            note: Set(decision.note.clone()),
            decided_at: Set(decision.decided_at),
            ..Default::default()
        })
        .exec_without_returning(&txn)
        .await?;
        let now = proposed_update::Entity::find_by_id(update_id.to_owned())
            .one(&txn)
            .await?
            .map(to_record);
        txn.commit().await?;
        Ok(now.map_or(DecideOutcome::NotFound, |u| {
            DecideOutcome::Recorded(Box::new(u))
        }))
    }

    /// Marks an approved update applied; `false` when it was not (or no longer) `approved`.
    pub async fn mark_applied(&self, id: &str, at: DateTime<Utc>) -> Result<bool, StoreError> {
        use proposed_update::Column;
        let changed = proposed_update::Entity::update_many()
            .filter(Column::Id.eq(id))
            .filter(Column::Status.eq(update_status::APPROVED))
            .col_expr(Column::Status, Expr::value(update_status::APPLIED))
            .col_expr(Column::AppliedAt, Expr::value(Some(at)))
            .exec(&self.writer)
            .await?
            .rows_affected;
        Ok(changed > 0)
    }

    /// Approved updates not yet applied (left over by a crash between decision and apply).
    pub async fn approved_unapplied(&self, limit: u64) -> Result<Vec<UpdateRecord>, StoreError> {
        proposed_update::Entity::find()
            .filter(proposed_update::Column::Status.eq(update_status::APPROVED))
            .order_by_asc(proposed_update::Column::CreatedAt)
            .limit(limit)
            .rows(&self.db, to_record)
            .await
    }

    /// The tenant's decisions, newest first, at most `limit`.
    pub async fn decisions(
        &self,
        tenant: &str,
        limit: u64,
    ) -> Result<Vec<DecisionRecord>, StoreError> {
        review_decision::Entity::find()
            .filter(review_decision::Column::Tenant.eq(tenant))
            .order_by_desc(review_decision::Column::Id)
            .limit(limit)
            .rows(&self.db, |row| DecisionRecord {
                update_id: row.update_id,
                decision: row.decision,
                reviewer: row.reviewer,
                new_value: row.new_value,
                note: row.note,
                decided_at: row.decided_at,
            })
            .await
    }

    /// Update counts over every tenant, for metrics.
    pub async fn update_counts(&self) -> Result<UpdateCounts, StoreError> {
        use proposed_update::Column;
        let count = |status: &'static str, auto: Option<bool>| {
            let mut query = proposed_update::Entity::find().filter(Column::Status.eq(status));
            query = match auto {
                Some(true) => query.filter(Column::Reason.eq("auto")),
                Some(false) => query.filter(Column::Reason.ne("auto")),
                None => query,
            };
            query.count(&self.db)
        };
        Ok(UpdateCounts {
            pending: count(update_status::PENDING, None).await?,
            auto_applied: count(update_status::APPLIED, Some(true)).await?,
            reviewed_applied: count(update_status::APPLIED, Some(false)).await?,
            rejected: count(update_status::REJECTED, None).await?,
        })
    }

    /// The tenant's learned sampling rates (never another tenant's).
    pub async fn supervisor_rates(&self, tenant: &str) -> Result<Vec<RateRecord>, StoreError> {
        supervisor_rate::Entity::find()
            .filter(supervisor_rate::Column::Tenant.eq(tenant))
            .rows(&self.db, rate_record)
            .await
    }

    /// Stores a tenant's learned rate of a category and counts one more approval or rejection.
    pub async fn save_rate(
        &self,
        rate: &RateRecord,
        approved: bool,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        use supervisor_rate::Column;
        let (approvals, rejections) = if approved { (1, 0) } else { (0, 1) };
        let row = supervisor_rate::ActiveModel {
            tenant: Set(rate.tenant.clone()),
            signal_type: Set(rate.signal_type.clone()),
            source: Set(rate.source.clone()),
            domain: Set(rate.domain.clone()),
            rate: Set(rate.rate),
            approvals: Set(approvals),
            rejections: Set(rejections),
            updated_at: Set(at),
        };
        supervisor_rate::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([
                    Column::Tenant,
                    Column::SignalType,
                    Column::Source,
                    Column::Domain,
                ])
                .update_columns([Column::Rate, Column::UpdatedAt])
                .value(
                    Column::Approvals,
                    Expr::col((supervisor_rate::Entity, Column::Approvals)).add(approvals),
                )
                .value(
                    Column::Rejections,
                    Expr::col((supervisor_rate::Entity, Column::Rejections)).add(rejections),
                )
                .to_owned(),
            )
            .exec_without_returning(&self.writer)
            .await?;
        Ok(())
    }

    /// Records a pattern's status (the last word wins).
    pub async fn set_pattern_status(
        &self,
        tenant: &str,
        status: &PatternStatus,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        use pattern_state::Column;
        let row = pattern_state::ActiveModel {
            tenant: Set(tenant.to_owned()),
            kind: Set(status.kind.clone()),
            key: Set(status.key.clone()),
            status: Set(status.status.clone()),
            action: Set(status.action.clone()),
            signal_to_heal_ms: Set(status.signal_to_heal_ms),
            updated_at: Set(at),
        };
        pattern_state::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([Column::Tenant, Column::Kind, Column::Key])
                    .update_columns([
                        Column::Status,
                        Column::Action,
                        Column::SignalToHealMs,
                        Column::UpdatedAt,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(&self.writer)
            .await?;
        Ok(())
    }

    /// How many patterns of each of `tenants` the healer recorded in each status, as (tenant,
    /// status, count): one grouped read per 500 tenants (for gauges), not one per tenant.
    pub async fn pattern_status_counts(
        &self,
        tenants: &[String],
    ) -> Result<Vec<(String, String, u64)>, StoreError> {
        let mut counts = Vec::new();
        for chunk in tenants.chunks(500) {
            let rows = pattern_state::Entity::find()
                .select_only()
                .column(pattern_state::Column::Tenant)
                .column(pattern_state::Column::Status)
                .column_as(
                    Expr::expr(sea_orm::sea_query::Func::count(Expr::col(
                        pattern_state::Column::Key,
                    ))),
                    "count",
                )
                .filter(pattern_state::Column::Tenant.is_in(chunk.iter().cloned()))
                .group_by(pattern_state::Column::Tenant)
                .group_by(pattern_state::Column::Status)
                .into_tuple::<(String, String, i64)>()
                .all(&self.db)
                .await?;
            counts.extend(rows.into_iter().map(|(tenant, status, count)| {
                (tenant, status, u64::try_from(count).unwrap_or_default())
            }));
        }
        Ok(counts)
    }

    /// The tenant's recorded pattern statuses.
    pub async fn pattern_statuses(&self, tenant: &str) -> Result<Vec<PatternStatus>, StoreError> {
        pattern_state::Entity::find()
            .filter(pattern_state::Column::Tenant.eq(tenant))
            .rows(&self.db, |row| PatternStatus {
                kind: row.kind,
                key: row.key,
                status: row.status,
                action: row.action,
                signal_to_heal_ms: row.signal_to_heal_ms,
            })
            .await
    }
}

/// JSON text of a value the store keeps as JSON (vectors of strings and plain structs, which
/// always serialise).
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".to_owned())
}

fn rate_record(row: supervisor_rate::Model) -> RateRecord {
    RateRecord {
        tenant: row.tenant,
        signal_type: row.signal_type,
        source: row.source,
        domain: row.domain,
        rate: row.rate,
        approvals: row.approvals,
        rejections: row.rejections,
    }
}
