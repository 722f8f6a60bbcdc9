//! A tenant's organisation as the store keeps it: HR records (people, teams), product facts by
//! documentation file, work items with their ACL, and the org version with the log of changes
//! behind it.
//!
//! The analyst writes one event as one atomic [`Store::commit_org`], guarded by the tenant's org
//! version (compare-and-set), so two writers never interleave; generated worlds are bulk loaded
//! with [`Store::replace_org`]. Readers of the ephemeral graphs poll [`Store::org_versions`] and
//! catch up with [`Store::org_changes`] (an HR event can be patched in), or reload everything
//! with [`Store::load_org_snapshot`].

use chrono::{DateTime, Utc};
use ontoloop_org::hr::{OrgRecords, Person, Team};
use ontoloop_org::items::{Scope, Severity, Source, WorkItem};
use ontoloop_org::product::Fact;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, TransactionTrait,
};

use crate::entity::{org_change, org_person, org_state, org_team, product_fact, work_item};
use crate::rows::{Batch, Rows};
use crate::{Backend, Store, StoreError};

/// Kinds of org change, as recorded in the change log.
pub mod change_kind {
    /// An HR event; the body is the event (`ontoloop_org::HrEvent` JSON).
    pub const HR: &str = "hr";
    /// Documentation files changed; the body lists them (`{"files":[...]}`).
    pub const DOCS: &str = "docs";
    /// A work item was created or replaced; the body is the item (`WorkItem` JSON).
    pub const ITEM: &str = "item";
    /// Everything was replaced (a bulk load); readers reload.
    pub const LOAD: &str = "load";
}

/// Rows inserted per statement in bulk writes: far below every backend's parameter limit.
const CHUNK: usize = 1000;

/// Where a tenant's organisation stands: its version and when that version was committed.
/// Both together identify one state of one store, so a writer can tell whether a copy of the
/// records it kept is still current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrgHead {
    /// Org version (0 for a tenant with nothing yet).
    pub version: i64,
    /// When that version was committed; `None` at version 0.
    pub committed_at: Option<DateTime<Utc>>,
}

/// A tenant's HR records at one org version.
#[derive(Debug, Clone, Default)]
pub struct OrgRows {
    /// Org version (0 for a tenant with nothing yet).
    pub version: i64,
    /// When that version was committed; `None` at version 0.
    pub committed_at: Option<DateTime<Utc>>,
    /// People, by id.
    pub people: Vec<Person>,
    /// Teams, by id.
    pub teams: Vec<Team>,
}

/// Everything of a tenant's organisation at one org version, read in one transaction.
#[derive(Debug, Clone, Default)]
pub struct OrgSnapshot {
    /// HR records and the version.
    pub org: OrgRows,
    /// Product facts, by file then position.
    pub facts: Vec<Fact>,
    /// Work items, by id.
    pub items: Vec<WorkItem>,
}

/// One entry of the change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgChange {
    /// The org version this change produced.
    pub version: i64,
    /// One of [`change_kind`].
    pub kind: String,
    /// What changed (see [`change_kind`]).
    pub body: String,
    /// When it was committed.
    pub at: DateTime<Utc>,
}

/// Everything one analyst step writes to the organisation, committed atomically.
#[derive(Debug, Clone, Default)]
pub struct OrgCommit {
    /// People to insert or replace.
    pub people: Vec<Person>,
    /// People removed.
    pub removed_people: Vec<String>,
    /// Teams to insert or replace.
    pub teams: Vec<Team>,
    /// Teams removed.
    pub removed_teams: Vec<String>,
    /// Documentation files whose facts are replaced by these (none: the file was deleted).
    pub files: Vec<(String, Vec<Fact>)>,
    /// Work items to insert or replace.
    pub items: Vec<WorkItem>,
    /// The change-log entry: kind and body.
    pub change: (String, String),
    /// Intake events settled by this step: sequence, and the failure reason if refused.
    pub settled: Vec<(i64, Option<String>)>,
    /// The queue message this step processed (queue, message id, body), recorded in the inbox in
    /// the same transaction so a redelivered message has no second effect.
    pub message: Option<(String, String, String)>,
}

impl Store {
    /// The tenant's org version (0 when it has none).
    pub async fn org_version(&self, tenant: &str) -> Result<i64, StoreError> {
        Ok(org_state::Entity::find_by_id(tenant.to_owned())
            .one(&self.db)
            .await?
            .map_or(0, |row| row.version))
    }

    /// The tenant's org version and when it was committed.
    pub async fn org_head(&self, tenant: &str) -> Result<OrgHead, StoreError> {
        Ok(org_state::Entity::find_by_id(tenant.to_owned())
            .one(&self.db)
            .await?
            .map_or_else(OrgHead::default, |row| OrgHead {
                version: row.version,
                committed_at: Some(row.updated_at),
            }))
    }

    /// Every tenant's org version, by tenant; one cheap query for a watcher to poll.
    pub async fn org_versions(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(org_state::Entity::find()
            .select_only()
            .column(org_state::Column::Tenant)
            .column(org_state::Column::Version)
            .order_by_asc(org_state::Column::Tenant)
            .into_tuple::<(String, i64)>()
            .all(&self.db)
            .await?)
    }

    /// The tenant's HR records and the version they are at.
    pub async fn load_org(&self, tenant: &str) -> Result<OrgRows, StoreError> {
        let txn = self.begin_snapshot().await?;
        let rows = read_org(&txn, tenant).await?;
        txn.commit().await?;
        Ok(rows)
    }

    /// The tenant's product facts, by file then position.
    pub async fn load_product_facts(&self, tenant: &str) -> Result<Vec<Fact>, StoreError> {
        read_facts(&self.db, tenant).await
    }

    /// Everything of the tenant's organisation at one version.
    pub async fn load_org_snapshot(&self, tenant: &str) -> Result<OrgSnapshot, StoreError> {
        let txn = self.begin_snapshot().await?;
        let org = read_org(&txn, tenant).await?;
        let facts = read_facts(&txn, tenant).await?;
        let items = work_item::Entity::find()
            .filter(work_item::Column::Tenant.eq(tenant))
            .order_by_asc(work_item::Column::Id)
            .all(&txn)
            .await?
            .into_iter()
            .map(item_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        txn.commit().await?;
        Ok(OrgSnapshot { org, facts, items })
    }

    /// Change-log entries of the tenant after version `after`, oldest first, at most `limit`.
    pub async fn org_changes(
        &self,
        tenant: &str,
        after: i64,
        limit: u64,
    ) -> Result<Vec<OrgChange>, StoreError> {
        org_change::Entity::find()
            .filter(org_change::Column::Tenant.eq(tenant))
            .filter(org_change::Column::Version.gt(after))
            .order_by_asc(org_change::Column::Version)
            .limit(limit)
            .rows(&self.db, |row| OrgChange {
                version: row.version,
                kind: row.kind,
                body: row.body,
                at: row.at,
            })
            .await
    }

    /// Commits one analyst step atomically if the tenant is still at `expected_version`;
    /// returns the new head, or [`StoreError::Conflict`] when another writer got there first.
    pub async fn commit_org(
        &self,
        tenant: &str,
        expected_version: i64,
        commit: OrgCommit,
    ) -> Result<OrgHead, StoreError> {
        let txn = self.writer.begin().await?;
        let now = commit_time();
        let next = claim_version(&txn, tenant, expected_version, now).await?;
        record_change(&txn, tenant, next, &commit.change, now).await?;
        if !commit.removed_people.is_empty() {
            org_person::Entity::delete_many()
                .filter(org_person::Column::Tenant.eq(tenant))
                .filter(org_person::Column::Id.is_in(commit.removed_people.clone()))
                .exec(&txn)
                .await?;
        }
        upsert_people(&txn, tenant, &commit.people).await?;
        if !commit.removed_teams.is_empty() {
            org_team::Entity::delete_many()
                .filter(org_team::Column::Tenant.eq(tenant))
                .filter(org_team::Column::Id.is_in(commit.removed_teams.clone()))
                .exec(&txn)
                .await?;
        }
        upsert_teams(&txn, tenant, &commit.teams).await?;
        for (file, facts) in &commit.files {
            product_fact::Entity::delete_many()
                .filter(product_fact::Column::Tenant.eq(tenant))
                .filter(product_fact::Column::File.eq(file.as_str()))
                .exec(&txn)
                .await?;
            insert_facts(&txn, tenant, file, facts).await?;
        }
        upsert_items(&txn, tenant, &commit.items).await?;
        crate::knowledge::settle_in(
            &txn,
            tenant,
            commit.message.as_slice(),
            &commit.settled,
            now,
        )
        .await?;
        txn.commit().await?;
        self.feed.announce();
        Ok(OrgHead {
            version: next,
            committed_at: Some(now),
        })
    }

    /// Replaces the tenant's whole organisation (HR records, the product facts of `facts_file`
    /// and every work item) in one transaction with chunked bulk inserts, and moves the org
    /// version on with a `load` change so readers reload. For generated worlds and imports.
    pub async fn replace_org(
        &self,
        tenant: &str,
        records: &OrgRecords,
        facts_file: &str,
        facts: &[Fact],
        items: &[WorkItem],
    ) -> Result<i64, StoreError> {
        if let Some(foreign) = items.iter().find(|item| item.tenant != tenant) {
            return Err(StoreError::Db(DbErr::Custom(format!(
                "work item {:?} belongs to tenant {:?}, not {tenant:?}",
                foreign.id, foreign.tenant
            ))));
        }
        let txn = self.begin_write().await?;
        let now = commit_time();
        let current = org_state::Entity::find_by_id(tenant.to_owned())
            .one(&txn)
            .await?
            .map_or(0, |row| row.version);
        let next = claim_version(&txn, tenant, current, now).await?;
        let body = serde_json::json!({
            "people": records.people().len(),
            "teams": records.teams().len(),
            "facts": facts.len(),
            "items": items.len(),
        })
        .to_string();
        record_change(
            &txn,
            tenant,
            next,
            &(change_kind::LOAD.to_owned(), body),
            now,
        )
        .await?;
        org_person::Entity::delete_many()
            .filter(org_person::Column::Tenant.eq(tenant))
            .exec(&txn)
            .await?;
        org_team::Entity::delete_many()
            .filter(org_team::Column::Tenant.eq(tenant))
            .exec(&txn)
            .await?;
        product_fact::Entity::delete_many()
            .filter(product_fact::Column::Tenant.eq(tenant))
            .exec(&txn)
            .await?;
        work_item::Entity::delete_many()
            .filter(work_item::Column::Tenant.eq(tenant))
            .exec(&txn)
            .await?;
        let people: Vec<Person> = records.people().cloned().collect();
        let teams: Vec<Team> = records.teams().cloned().collect();
        upsert_people(&txn, tenant, &people).await?;
        upsert_teams(&txn, tenant, &teams).await?;
        insert_facts(&txn, tenant, facts_file, facts).await?;
        upsert_items(&txn, tenant, items).await?;
        crate::feed::notify_in(&txn, tenant).await?;
        txn.commit().await?;
        self.feed.announce();
        Ok(next)
    }

    /// A read transaction that sees one committed state throughout (PostgreSQL needs repeatable
    /// read for that; a SQLite read transaction already does).
    async fn begin_snapshot(&self) -> Result<DatabaseTransaction, StoreError> {
        Ok(match self.backend() {
            Backend::Postgres => {
                self.db
                    .begin_with_config(Some(sea_orm::IsolationLevel::RepeatableRead), None)
                    .await?
            }
            Backend::Sqlite => self.db.begin().await?,
        })
    }
}

/// Now, to the microsecond: the precision both backends store, so a head read back equals the
/// head a commit returned.
fn commit_time() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// Moves the tenant's org version from `expected` to `expected + 1`, or reports a conflict.
async fn claim_version(
    txn: &DatabaseTransaction,
    tenant: &str,
    expected: i64,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let next = expected + 1;
    let claimed = if expected == 0 {
        let row = org_state::ActiveModel {
            tenant: Set(tenant.to_owned()),
            version: Set(next),
            updated_at: Set(now),
        };
        org_state::Entity::insert(row)
            .on_conflict(
                OnConflict::column(org_state::Column::Tenant)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(txn)
            .await?
    } else {
        org_state::Entity::update_many()
            .col_expr(org_state::Column::Version, Expr::value(next))
            .col_expr(org_state::Column::UpdatedAt, Expr::value(now))
            .filter(org_state::Column::Tenant.eq(tenant))
            .filter(org_state::Column::Version.eq(expected))
            .exec(txn)
            .await?
            .rows_affected
    };
    if claimed != 1 {
        return Err(StoreError::Conflict {
            tenant: tenant.to_owned(),
        });
    }
    Ok(next)
}

async fn record_change(
    txn: &DatabaseTransaction,
    tenant: &str,
    version: i64,
    (kind, body): &(String, String),
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let row = org_change::ActiveModel {
        tenant: Set(tenant.to_owned()),
        version: Set(version),
        kind: Set(kind.clone()),
        body: Set(body.clone()),
        at: Set(now),
    };
    org_change::Entity::insert(row)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

async fn read_org(db: &impl ConnectionTrait, tenant: &str) -> Result<OrgRows, StoreError> {
    let state = org_state::Entity::find_by_id(tenant.to_owned())
        .one(db)
        .await?;
    let (version, committed_at) =
        state.map_or((0, None), |row| (row.version, Some(row.updated_at)));
    let people = org_person::Entity::find()
        .filter(org_person::Column::Tenant.eq(tenant))
        .order_by_asc(org_person::Column::Id)
        .rows(db, |row| Person {
            id: row.id,
            name: row.name,
            team: row.team,
            role: row.role,
            manager: row.manager,
        })
        .await?;
    let teams = org_team::Entity::find()
        .filter(org_team::Column::Tenant.eq(tenant))
        .order_by_asc(org_team::Column::Id)
        .rows(db, |row| Team {
            id: row.id,
            name: row.name,
            parent: row.parent,
        })
        .await?;
    Ok(OrgRows {
        version,
        committed_at,
        people,
        teams,
    })
}

async fn read_facts(db: &impl ConnectionTrait, tenant: &str) -> Result<Vec<Fact>, StoreError> {
    product_fact::Entity::find()
        .filter(product_fact::Column::Tenant.eq(tenant))
        .order_by_asc(product_fact::Column::File)
        .order_by_asc(product_fact::Column::Position)
        .rows(db, |row| Fact {
            subject: row.subject,
            predicate: row.predicate,
            object: row.object,
        })
        .await
}

async fn upsert_people(
    txn: &DatabaseTransaction,
    tenant: &str,
    people: &[Person],
) -> Result<(), StoreError> {
    use org_person::Column;
    let batch = Batch {
        chunk: CHUNK,
        key: &[Column::Tenant, Column::Id],
        update: &[Column::Name, Column::Team, Column::Role, Column::Manager],
    };
    batch
        .write(txn, people, |p| org_person::ActiveModel {
            tenant: Set(tenant.to_owned()),
            id: Set(p.id.clone()),
            name: Set(p.name.clone()),
            team: Set(p.team.clone()),
            role: Set(p.role.clone()),
            manager: Set(p.manager.clone()),
        })
        .await
}

async fn upsert_teams(
    txn: &DatabaseTransaction,
    tenant: &str,
    teams: &[Team],
) -> Result<(), StoreError> {
    use org_team::Column;
    let batch = Batch {
        chunk: CHUNK,
        key: &[Column::Tenant, Column::Id],
        update: &[Column::Name, Column::Parent],
    };
    batch
        .write(txn, teams, |t| org_team::ActiveModel {
            tenant: Set(tenant.to_owned()),
            id: Set(t.id.clone()),
            name: Set(t.name.clone()),
            parent: Set(t.parent.clone()),
        })
        .await
}

async fn insert_facts(
    txn: &DatabaseTransaction,
    tenant: &str,
    file: &str,
    facts: &[Fact],
) -> Result<(), StoreError> {
    let positioned: Vec<(i32, &Fact)> = facts
        .iter()
        .enumerate()
        .map(|(i, fact)| (i32::try_from(i).unwrap_or(i32::MAX), fact))
        .collect();
    let batch = Batch {
        chunk: CHUNK,
        key: &[],
        update: &[],
    };
    batch
        .write(txn, &positioned, |(position, f)| {
            product_fact::ActiveModel {
                tenant: Set(tenant.to_owned()),
                file: Set(file.to_owned()),
                position: Set(*position),
                subject: Set(f.subject.clone()),
                predicate: Set(f.predicate.clone()),
                object: Set(f.object.clone()),
                ..Default::default()
            }
        })
        .await
}

async fn upsert_items(
    txn: &DatabaseTransaction,
    tenant: &str,
    items: &[WorkItem],
) -> Result<(), StoreError> {
    use work_item::Column;
    let batch = Batch {
        chunk: CHUNK,
        key: &[Column::Tenant, Column::Id],
        update: &[
            Column::Title,
            Column::Assignee,
            Column::Service,
            Column::Severity,
            Column::Scope,
            Column::Source,
            Column::CreatedAt,
            Column::Acl,
        ],
    };
    batch
        .write(txn, items, |item| work_item::ActiveModel {
            tenant: Set(tenant.to_owned()),
            id: Set(item.id.clone()),
            title: Set(item.title.clone()),
            assignee: Set(item.assignee.clone()),
            service: Set(item.service.clone()),
            severity: Set(item.severity.name().to_owned()),
            scope: Set(item.scope.as_str().to_owned()),
            source: Set(item.source.as_str().to_owned()),
            created_at: Set(item.created_at),
            acl: Set(serde_json::to_string(&item.acl).unwrap_or_else(|_| "[]".to_owned())),
        })
        .await
}

/// A stored item; a severity, scope or ACL the schema cannot hold is reported, never guessed.
fn item_from_row(row: work_item::Model) -> Result<WorkItem, StoreError> {
    let corrupt = |what: &str, value: &str| {
        StoreError::Db(DbErr::Custom(format!(
            "work item {:?} of tenant {:?} has an unreadable {what}: {value:?}",
            row.id, row.tenant
        )))
    };
    let severity = Severity::ALL
        .into_iter()
        .find(|s| s.name() == row.severity)
        .ok_or_else(|| corrupt("severity", &row.severity))?;
    let scope = Scope::ALL
        .into_iter()
        .find(|s| s.as_str() == row.scope)
        .ok_or_else(|| corrupt("scope", &row.scope))?;
    let acl: Vec<String> = serde_json::from_str(&row.acl).map_err(|_| corrupt("acl", &row.acl))?;
    Ok(WorkItem {
        source: Source::from(row.source.as_str()),
        id: row.id,
        tenant: row.tenant,
        title: row.title,
        assignee: row.assignee,
        service: row.service,
        severity,
        scope,
        created_at: row.created_at,
        acl,
    })
}
