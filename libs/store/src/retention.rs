//! Retention: deleting rows that only serve for a while, oldest first, in bounded batches. The
//! analyst runs a pass periodically (`[retention]`); each table's rule of what may never go is
//! here, repeated in the `DELETE` itself so a row that changed between the look-up and the delete
//! (an outbox row reset to unpublished at start-up) stays:
//!
//! - the inbox: any row older than the cutoff;
//! - the signal intake: only published rows (the outbox keeps the unpublished);
//! - the event intake: only settled (applied or failed) and published rows, and never a tenant's
//!   newest, since its next intake number counts on from it;
//! - the org change log: any row older than the cutoff (a reader behind it rebuilds).
//!
//! Every look-up reads an index on the table's time column (migration m20261201_090000).

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use crate::entity::{inbox_message, intake_event, org_change, signal_intake};
use crate::knowledge::intake_state;
use crate::{Store, StoreError};

/// A table the retention pass prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retained {
    /// The analyst's inbox of recorded queue messages.
    Inbox,
    /// The signal intake log.
    SignalIntake,
    /// The event intake log.
    IntakeEvent,
    /// The org change log.
    OrgChange,
}

impl Retained {
    /// Every pruned table.
    pub const ALL: [Retained; 4] = [
        Retained::Inbox,
        Retained::SignalIntake,
        Retained::IntakeEvent,
        Retained::OrgChange,
    ];

    /// The table's name (a metric label and a log field).
    pub fn name(self) -> &'static str {
        match self {
            Retained::Inbox => "inbox_message",
            Retained::SignalIntake => "signal_intake",
            Retained::IntakeEvent => "intake_event",
            Retained::OrgChange => "org_change",
        }
    }
}

/// Rows deleted per statement: small enough that one delete holds its locks briefly and stays
/// far below every backend's parameter limit.
const BATCH: u64 = 500;

/// A tenant's newest intake event has no later one of the same tenant.
const HAS_NEWER_EVENT: &str = "EXISTS (SELECT 1 FROM intake_event AS newer \
     WHERE newer.tenant = intake_event.tenant AND newer.tenant_seq > intake_event.tenant_seq)";

/// A table keyed by one integer column, pruned by [`Store::prune_keyed`]: its key, its time
/// column and its rule of which rows may go.
trait Keyed: EntityTrait {
    /// The key.
    const KEY: Self::Column;
    /// The time rows are pruned by, oldest first.
    const TIME: Self::Column;
    /// The rows older than `before` that may go.
    fn due(before: DateTime<Utc>) -> Condition;
}

impl Keyed for inbox_message::Entity {
    const KEY: Self::Column = inbox_message::Column::Id;
    const TIME: Self::Column = inbox_message::Column::ReceivedAt;

    fn due(before: DateTime<Utc>) -> Condition {
        Condition::all().add(Self::TIME.lt(before))
    }
}

impl Keyed for signal_intake::Entity {
    const KEY: Self::Column = signal_intake::Column::Id;
    const TIME: Self::Column = signal_intake::Column::ReceivedAt;

    fn due(before: DateTime<Utc>) -> Condition {
        Condition::all()
            .add(Self::TIME.lt(before))
            .add(signal_intake::Column::PublishedAt.is_not_null())
    }
}

impl Keyed for intake_event::Entity {
    const KEY: Self::Column = intake_event::Column::Seq;
    const TIME: Self::Column = intake_event::Column::ReceivedAt;

    fn due(before: DateTime<Utc>) -> Condition {
        Condition::all()
            .add(Self::TIME.lt(before))
            .add(intake_event::Column::State.ne(intake_state::PENDING))
            .add(intake_event::Column::PublishedAt.is_not_null())
            .add(Expr::cust(HAS_NEWER_EVENT))
    }
}

impl Store {
    /// Deletes rows of `table` older than `before` that its rule lets go (see the module
    /// header), oldest first, at most `max_rows`. Returns how many were deleted; fewer than
    /// `max_rows` means nothing more is due.
    pub async fn prune(
        &self,
        table: Retained,
        before: DateTime<Utc>,
        max_rows: u64,
    ) -> Result<u64, StoreError> {
        let mut pruned = 0;
        while pruned < max_rows {
            let take = BATCH.min(max_rows - pruned);
            let (found, deleted) = match table {
                Retained::Inbox => {
                    self.prune_keyed::<inbox_message::Entity>(before, take)
                        .await?
                }
                Retained::SignalIntake => {
                    self.prune_keyed::<signal_intake::Entity>(before, take)
                        .await?
                }
                Retained::IntakeEvent => {
                    self.prune_keyed::<intake_event::Entity>(before, take)
                        .await?
                }
                Retained::OrgChange => self.prune_org_changes(before, take).await?,
            };
            pruned += deleted;
            // A short batch was the last one due; a batch deleting nothing (every row found
            // changed meanwhile) leaves the rest to the next pass rather than spinning.
            if found < take || deleted == 0 {
                break;
            }
        }
        Ok(pruned)
    }

    /// Whether the tenant's intake number `seq` was taken and its row pruned: a tenant's newest
    /// row is never pruned and numbers count on from it, so a missing number below it was
    /// settled (only settled rows are pruned).
    pub async fn intake_pruned(&self, tenant: &str, seq: i64) -> Result<bool, StoreError> {
        use intake_event::{Column, Entity};
        let later = Entity::find()
            .filter(Column::Tenant.eq(tenant))
            .filter(Column::TenantSeq.gt(seq))
            .select_only()
            .column(Column::Seq)
            .limit(1)
            .into_tuple::<i64>()
            .one(&self.db)
            .await?;
        Ok(seq > 0 && later.is_some())
    }

    /// One batch of a table keyed by one integer column: the oldest `take` rows due before
    /// `before`, deleted if still due when the delete runs: (rows found, rows deleted).
    async fn prune_keyed<E: Keyed>(
        &self,
        before: DateTime<Utc>,
        take: u64,
    ) -> Result<(u64, u64), StoreError> {
        let keys: Vec<i64> = E::find()
            .select_only()
            .column(E::KEY)
            .filter(E::due(before))
            .order_by_asc(E::TIME)
            .limit(take)
            .into_tuple()
            .all(&self.db)
            .await?;
        let found = keys.len() as u64;
        if keys.is_empty() {
            return Ok((0, 0));
        }
        let deleted = E::delete_many()
            .filter(E::KEY.is_in(keys))
            .filter(E::due(before))
            .exec(&self.writer)
            .await?;
        Ok((found, deleted.rows_affected))
    }

    async fn prune_org_changes(
        &self,
        before: DateTime<Utc>,
        take: u64,
    ) -> Result<(u64, u64), StoreError> {
        use org_change::{Column, Entity};
        let keys: Vec<(String, i64)> = Entity::find()
            .select_only()
            .column(Column::Tenant)
            .column(Column::Version)
            .filter(Column::At.lt(before))
            .order_by_asc(Column::At)
            .limit(take)
            .into_tuple()
            .all(&self.db)
            .await?;
        let found = keys.len() as u64;
        let mut by_tenant: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
        for (tenant, version) in keys {
            by_tenant.entry(tenant).or_default().push(version);
        }
        let mut deleted = 0;
        for (tenant, versions) in by_tenant {
            deleted += Entity::delete_many()
                .filter(Column::Tenant.eq(tenant))
                .filter(Column::Version.is_in(versions))
                .filter(Column::At.lt(before))
                .exec(&self.writer)
                .await?
                .rows_affected;
        }
        Ok((found, deleted))
    }
}
