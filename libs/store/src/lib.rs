//! The ontoloop store on sea-orm: SQLite embedded, PostgreSQL at scale.
//!
//! Owns the connection (with retry and backoff), the schema through `ontoloop-migrations`, and
//! every read and write of persistent state behind typed methods. It never talks to the queue and
//! never decides domain policy; callers pass domain values in and get domain values out.

mod entity;
mod feed;
pub mod gate;
pub mod group;
pub mod knowledge;
pub mod model_cache;
pub mod org;
pub mod outbox;
mod reach;
pub mod retention;
pub mod review;
mod rows;
pub mod signals;
pub mod vectors;

pub use knowledge::{
    Intake, IntakeRequest, IntakeSummary, KnowledgeChanges, KnowledgeCommit, KnowledgeRows,
    RunRecord, Settled, StoredRun, content_hash, intake_state,
};

pub use gate::{GateMove, GateRecord, GateWrite, LoggedQuestion};
pub use model_cache::CachedAnswer;
pub use org::{OrgChange, OrgCommit, OrgHead, OrgRows, OrgSnapshot, change_kind};
pub use outbox::{OutboxBacklog, OutboxKind, OutboxRow};
pub use retention::Retained;
pub use review::{
    DecideOutcome, DecisionRecord, PatternStatus, RateRecord, UpdateCounts, UpdateRecord,
    UpdateSource, update_status,
};
pub use signals::{Frequency, MAX_WINDOW_SIGNALS, SignalAccepted, SignalRecord, WindowSignal};
pub use vectors::VectorReader;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ontoloop_core::Backoff;
use ontoloop_migrations::{Migrator, MigratorTrait};
use ontoloop_settings::StoreSettings;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ColumnTrait, ConnectOptions, Database, DatabaseConnection, DbBackend, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};

use crate::rows::Batch;

/// How long a write waits for the embedded database's one writing connection before it fails
/// (and is retried by its caller), milliseconds.
const WRITE_WAIT_MS: u64 = 30_000;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached after every attempt.
    #[error("database at {url} unreachable after {attempts} attempts: {source}")]
    Unreachable {
        /// The URL with any password removed.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last error.
        source: DbErr,
    },
    /// The embedded database's directory could not be created.
    #[error("create directory {path} for the embedded database: {source}")]
    DataDir {
        /// The directory.
        path: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Another writer changed the tenant's knowledge first; reload and retry.
    #[error("knowledge of tenant {tenant} changed concurrently")]
    Conflict {
        /// The tenant.
        tenant: String,
    },
    /// A write found the database unreachable a moment ago ([`reach::HOLD_OFF`]): refused
    /// without trying, so the caller hears of the outage at once and retries.
    #[error("the database is unreachable (for {for_ms} ms so far): {reason}; retry shortly")]
    Away {
        /// How long since a write first found it away.
        for_ms: u64,
        /// The last failure.
        reason: String,
    },
    /// A query or migration failed.
    #[error("database operation failed: {0}")]
    Db(#[from] DbErr),
}

impl ontoloop_core::ServiceError for StoreError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            // A concurrent writer won: reloading and retrying succeeds, like an outage passing.
            StoreError::Unreachable { .. }
            | StoreError::Away { .. }
            | StoreError::DataDir { .. }
            | StoreError::Conflict { .. }
            | StoreError::Db(_) => ontoloop_core::ErrorCode::Unavailable,
        }
    }
}

impl StoreError {
    /// Whether the database could not be reached (or was found away a moment ago): the kind of
    /// failure that passes by itself, after which a caller may answer from what it holds.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. }
                | StoreError::Away { .. }
                | StoreError::Db(DbErr::ConnectionAcquire(_) | DbErr::Conn(_))
        )
    }

    /// An operation that never reported back (its task was cancelled or failed), for callers
    /// that run store operations on tasks of their own.
    pub fn interrupted(what: &str) -> Self {
        StoreError::Db(DbErr::Custom(format!("{what} was interrupted")))
    }

    /// The database refused the data itself (PostgreSQL's data exceptions: a NUL byte in text,
    /// an invalid byte sequence, a value too long; and a value too large for an index row, as a
    /// name of many kilobytes is for a B-tree): trying again can never succeed.
    pub fn is_invalid_data(&self) -> bool {
        let StoreError::Db(err) = self else {
            return false;
        };
        let text = err.to_string();
        [
            "invalid byte sequence",
            "untranslatable character",
            "value too long",
            "null character not permitted",
            // PostgreSQL's program_limit_exceeded for an indexed value too large (B-tree, GIN).
            "index row size",
            "index row requires",
        ]
        .iter()
        .any(|needle| text.contains(needle))
    }
}

/// Which database the store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A message the analyst recorded from the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessage {
    /// Store id, increasing in arrival order.
    pub id: i64,
    /// Queue the message came from.
    pub queue: String,
    /// The message's id on the queue.
    pub message_id: String,
    /// The message body (UTF-8 JSON).
    pub body: String,
    /// When the analyst recorded it.
    pub received_at: DateTime<Utc>,
}

/// Handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    db: DatabaseConnection,
    /// What writes go through. On SQLite a pool of one connection of its own: the process's
    /// writers queue for it in order instead of meeting on the database's lock, where SQLite's
    /// busy handler would put each loser to sleep for 1, 2, 5, … 100 ms (reads stay on `db`; in
    /// WAL mode they never wait for a writer). On PostgreSQL the same pool as `db`.
    writer: DatabaseConnection,
    /// Word of settled intake events (see [`feed`]), shared by every clone.
    feed: std::sync::Arc<feed::Feed>,
    /// The writer of published outbox rows' stamps (group commit), shared by every clone.
    stamps: std::sync::Arc<outbox::Stamps>,
    /// Whether PostgreSQL answered the last write, shared by every clone.
    reach: std::sync::Arc<reach::Reach>,
}

impl Store {
    /// Connects, retrying with backoff while the database is unreachable. Each failed attempt is
    /// logged with its number; the final error names the URL (without its password).
    pub async fn connect(settings: &StoreSettings) -> Result<Self, StoreError> {
        prepare_sqlite_dir(&settings.url)?;
        let backoff = Backoff::new(
            Duration::from_millis(settings.backoff_initial_ms),
            Duration::from_millis(settings.backoff_max_ms),
            settings.connect_attempts,
        );
        let mut attempt = 1;
        loop {
            let options = connect_options(
                settings,
                settings.max_connections,
                settings.connect_timeout_ms,
            );
            match Database::connect(options).await {
                Ok(db) => {
                    let feed = std::sync::Arc::new(feed::Feed::new(&db, &settings.url));
                    let mut writer = db.clone();
                    if db.get_database_backend() == DbBackend::Sqlite {
                        tune_sqlite(&db).await?;
                        let mut options = connect_options(settings, 1, WRITE_WAIT_MS);
                        options.min_connections(1);
                        writer = Database::connect(options).await?;
                    }
                    let stamps = std::sync::Arc::new(outbox::stamps(writer.clone()));
                    return Ok(Self {
                        db,
                        writer,
                        feed,
                        stamps,
                        reach: std::sync::Arc::default(),
                    });
                }
                Err(err) => match backoff.delay_after(attempt) {
                    Some(wait) => {
                        tracing::warn!(
                            attempt,
                            wait_ms = wait.as_millis() as u64,
                            url = %redact(&settings.url),
                            error = %err,
                            "database unreachable, retrying"
                        );
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => {
                        return Err(StoreError::Unreachable {
                            url: redact(&settings.url),
                            attempts: attempt,
                            source: err,
                        });
                    }
                },
            }
        }
    }

    /// Connects and brings the schema up to date.
    pub async fn open(settings: &StoreSettings) -> Result<Self, StoreError> {
        let store = Self::connect(settings).await?;
        store.migrate_up().await?;
        Ok(store)
    }

    /// The database in use.
    pub fn backend(&self) -> Backend {
        match self.db.get_database_backend() {
            DbBackend::Sqlite => Backend::Sqlite,
            // The settings only admit sqlite:// and postgres:// URLs.
            _ => Backend::Postgres,
        }
    }

    /// Applies every pending migration. On PostgreSQL they run in one transaction holding an
    /// advisory lock, so processes starting together on one database (replicas, every service
    /// of a deployment) take turns: the first applies them, the others then find nothing to do,
    /// instead of creating the same tables at once and failing on each other's.
    /// What was applied is logged at debug (sea-orm-migration's own lines are at info, and the
    /// default `log.filter` leaves them out): start-up stays quiet.
    pub async fn migrate_up(&self) -> Result<(), StoreError> {
        if self.backend() == Backend::Sqlite {
            let pending = pending_migrations(&self.db).await?;
            Migrator::up(&self.db, None).await?;
            log_applied(&pending);
            return Ok(());
        }
        use sea_orm::{ConnectionTrait as _, TransactionTrait as _};
        let txn = self.db.begin().await?;
        txn.execute_raw(sea_orm::Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            ["ontoloop.migrations".into()],
        ))
        .await?;
        let pending = pending_migrations(&txn).await?;
        Migrator::up(&txn, None).await?;
        txn.commit().await?;
        log_applied(&pending);
        Ok(())
    }

    /// Rolls every migration back (used by tests and by `ontoloop` maintenance).
    pub async fn migrate_down(&self) -> Result<(), StoreError> {
        Migrator::down(&self.db, None).await?;
        Ok(())
    }

    /// Names of the applied migrations, oldest first.
    pub async fn applied_migrations(&self) -> Result<Vec<String>, StoreError> {
        let applied = Migrator::get_applied_migrations(&self.db).await?;
        Ok(applied.iter().map(|m| m.name().to_owned()).collect())
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.db.ping().await?;
        Ok(())
    }

    /// Records a queue message once. Returns `false` when the same (queue, message id) was
    /// already recorded, so a redelivered message has no second effect.
    pub async fn record_inbox(
        &self,
        queue: &str,
        message_id: &str,
        body: &str,
        received_at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        use entity::inbox_message::{Column, Entity};
        let inserted = Entity::insert(inbox_row(queue, message_id, body, received_at))
            .on_conflict(
                OnConflict::columns([Column::Queue, Column::MessageId])
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(&self.writer)
            .await?;
        Ok(inserted > 0)
    }

    /// Records a batch of queue messages `(message id, body)` in one transaction; a message
    /// already recorded is skipped. Returns the ids that were new (so their effect runs once).
    pub async fn record_inbox_batch(
        &self,
        queue: &str,
        messages: &[(String, String)],
        received_at: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        use entity::inbox_message::{Column, Entity};
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = messages.iter().map(|(id, _)| id.clone()).collect();
        let txn = self.begin_write().await?;
        let mut known: std::collections::HashSet<String> = std::collections::HashSet::new();
        // Bounded IN lists keep every backend's parameter limit far away.
        for chunk in ids.chunks(500) {
            known.extend(
                Entity::find()
                    .select_only()
                    .column(Column::MessageId)
                    .filter(Column::Queue.eq(queue))
                    .filter(Column::MessageId.is_in(chunk.iter().cloned()))
                    .into_tuple::<String>()
                    .all(&txn)
                    .await?,
            );
        }
        let new: Vec<&(String, String)> = messages
            .iter()
            .filter(|(id, _)| known.insert(id.clone()))
            .collect();
        let inbox = Batch {
            chunk: 200,
            key: &[Column::Queue, Column::MessageId],
            update: &[],
        };
        inbox
            .write(&txn, &new, |(id, body)| {
                inbox_row(queue, id, body, received_at)
            })
            .await?;
        txn.commit().await?;
        Ok(new.into_iter().map(|(id, _)| id.clone()).collect())
    }

    /// How many messages of `queue` were recorded.
    pub async fn inbox_count(&self, queue: &str) -> Result<u64, StoreError> {
        use entity::inbox_message::{Column, Entity};
        use sea_orm::PaginatorTrait;
        Ok(Entity::find()
            .filter(Column::Queue.eq(queue))
            .count(&self.db)
            .await?)
    }

    /// Whether a message of `queue` was already recorded (processed) under `message_id`.
    pub async fn inbox_contains(&self, queue: &str, message_id: &str) -> Result<bool, StoreError> {
        use entity::inbox_message::{Column, Entity};
        use sea_orm::PaginatorTrait;
        let found = Entity::find()
            .filter(Column::Queue.eq(queue))
            .filter(Column::MessageId.eq(message_id))
            .count(&self.db)
            .await?;
        Ok(found > 0)
    }

    /// Whether any of the messages of one queue was recorded: one query for a run of messages.
    pub async fn inbox_contains_any(
        &self,
        queue: &str,
        message_ids: &[String],
    ) -> Result<bool, StoreError> {
        use entity::inbox_message::{Column, Entity};
        use sea_orm::PaginatorTrait;
        for chunk in message_ids.chunks(500) {
            let found = Entity::find()
                .filter(Column::Queue.eq(queue))
                .filter(Column::MessageId.is_in(chunk.iter().map(String::as_str)))
                .count(&self.db)
                .await?;
            if found > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// At most `limit` messages of one queue recorded at or after `since` with a store id above
    /// `after_id`, in arrival order: a page, so a caller reads any number of large bodies in
    /// bounded memory (the next page starts after the last id of this one).
    pub async fn inbox_since(
        &self,
        queue: &str,
        since: DateTime<Utc>,
        after_id: i64,
        limit: u64,
    ) -> Result<Vec<InboxMessage>, StoreError> {
        use entity::inbox_message::{Column, Entity};
        let rows = Entity::find()
            .filter(Column::Queue.eq(queue))
            .filter(Column::ReceivedAt.gte(since))
            .filter(Column::Id.gt(after_id))
            .order_by_asc(Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?;
        Ok(rows.into_iter().map(inbox_message).collect())
    }

    /// Recorded messages of one queue, in arrival order.
    pub async fn inbox(&self, queue: &str, limit: u64) -> Result<Vec<InboxMessage>, StoreError> {
        use entity::inbox_message::{Column, Entity};
        let rows = Entity::find()
            .filter(Column::Queue.eq(queue))
            .order_by_asc(Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?;
        Ok(rows.into_iter().map(inbox_message).collect())
    }

    /// Closes the pool and stops listening for other processes' commits.
    pub async fn close(self) -> Result<(), StoreError> {
        self.feed.stop();
        if self.backend() == Backend::Sqlite {
            self.writer.close().await?;
        }
        self.db.close().await?;
        Ok(())
    }

    /// A transaction on the writer, whether PostgreSQL answered noted for [`reach`].
    pub(crate) async fn begin_noted(&self) -> Result<sea_orm::DatabaseTransaction, DbErr> {
        use sea_orm::TransactionTrait;
        self.noted(self.writer.begin().await)
    }

    /// `result`, whether PostgreSQL answered noted for [`reach`].
    pub(crate) fn noted<T>(&self, result: Result<T, DbErr>) -> Result<T, DbErr> {
        if self.backend() == Backend::Postgres {
            self.reach.note(&result);
        }
        result
    }

    /// Refused at once while a call found PostgreSQL away a moment ago ([`reach::HOLD_OFF`]);
    /// what acknowledges a push (an intake append, a signal) asks this first, and so does the
    /// knowledge version a read model is checked against (its caller answers from the model as
    /// it stands).
    pub(crate) fn refuse_while_away(&self) -> Result<(), StoreError> {
        self.reach.check()
    }

    /// `StoreError::Away` while PostgreSQL is away and no call may try it yet, for a caller
    /// about to queue for a store call (telemetry's group of appends): refused at once instead
    /// of waiting behind the one call trying. Never makes its caller that call.
    pub fn check_reach(&self) -> Result<(), StoreError> {
        self.reach.peek()
    }

    /// A transaction that will write after it reads. On SQLite it takes the write lock up front
    /// (a write that changes nothing, as `BEGIN IMMEDIATE` would): a transaction that reads
    /// first and writes later cannot wait for the lock (in WAL mode its snapshot may be stale by
    /// then) and fails with "database is locked" at once whenever another connection wrote
    /// meanwhile — under a busy intake that failed every retry of a signal batch until the
    /// consumer dead-lettered it. Taken first, the lock is waited for (the busy timeout).
    /// PostgreSQL needs nothing: its row locks and constraints already serialise the writers.
    pub(crate) async fn begin_write(&self) -> Result<sea_orm::DatabaseTransaction, StoreError> {
        use sea_orm::ConnectionTrait;
        let txn = self.begin_noted().await?;
        if self.backend() == Backend::Sqlite {
            txn.execute_unprepared(
                "UPDATE tenant_state SET knowledge_version = knowledge_version WHERE 0",
            )
            .await?;
        }
        Ok(txn)
    }

    /// A transaction that only reads, and sees one state of the store throughout: REPEATABLE
    /// READ on PostgreSQL; on SQLite (WAL) a read transaction keeps the snapshot its first read
    /// took. Several reads in it never see a commit half.
    /// While PostgreSQL is away it is refused at once, as an intake append is
    /// ([`Store::refuse_while_away`]): a read model's catch-up fails fast and its caller answers
    /// from the model as it stands.
    pub(crate) async fn begin_read(&self) -> Result<sea_orm::DatabaseTransaction, StoreError> {
        use sea_orm::{AccessMode, IsolationLevel, TransactionTrait};
        Ok(match self.backend() {
            Backend::Sqlite => self.db.begin().await?,
            Backend::Postgres => {
                self.refuse_while_away()?;
                let txn = self
                    .db
                    .begin_with_config(
                        Some(IsolationLevel::RepeatableRead),
                        Some(AccessMode::ReadOnly),
                    )
                    .await;
                self.noted(txn)?
            }
        })
    }
}

/// A pool of at most `max` connections to the store `settings` name, each acquired within
/// `acquire_ms`, without sqlx's statement log.
pub(crate) fn connect_options(
    settings: &StoreSettings,
    max: u32,
    acquire_ms: u64,
) -> ConnectOptions {
    let mut options = ConnectOptions::new(settings.url.clone());
    options
        .max_connections(max)
        .connect_timeout(Duration::from_millis(settings.connect_timeout_ms))
        .acquire_timeout(Duration::from_millis(acquire_ms))
        .sqlx_logging(false);
    options
}

/// WAL lets readers proceed while the analyst writes; the busy timeout turns lock contention
/// between pooled connections into a short wait instead of an error.
pub(crate) async fn tune_sqlite(db: &DatabaseConnection) -> Result<(), StoreError> {
    use sea_orm::ConnectionTrait;
    db.execute_unprepared("PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;")
        .await?;
    Ok(())
}

pub use ontoloop_core::redact_url as redact;

/// The row recording queue message `message_id` of `queue`, received at `received_at`.
fn inbox_row(
    queue: &str,
    message_id: &str,
    body: &str,
    received_at: DateTime<Utc>,
) -> entity::inbox_message::ActiveModel {
    entity::inbox_message::ActiveModel {
        queue: Set(queue.to_owned()),
        message_id: Set(message_id.to_owned()),
        body: Set(body.to_owned()),
        received_at: Set(received_at),
        ..Default::default()
    }
}

fn inbox_message(row: entity::inbox_message::Model) -> InboxMessage {
    InboxMessage {
        id: row.id,
        queue: row.queue,
        message_id: row.message_id,
        body: row.body,
        received_at: row.received_at,
    }
}

/// SQLite creates the file but not its directory; create `./data` and friends up front.
fn prepare_sqlite_dir(url: &str) -> Result<(), StoreError> {
    let Some(rest) = url.strip_prefix("sqlite://") else {
        return Ok(());
    };
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    if let Some(dir) = Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::DataDir {
            path: dir.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// The names of the migrations `db` has not applied yet, oldest first.
async fn pending_migrations(db: &impl sea_orm::ConnectionTrait) -> Result<Vec<String>, StoreError> {
    let pending = Migrator::get_pending_migrations(db).await?;
    Ok(pending.iter().map(|m| m.name().to_owned()).collect())
}

/// One debug line naming the migrations just applied; none when there were none.
fn log_applied(applied: &[String]) {
    if !applied.is_empty() {
        tracing::debug!(count = applied.len(), migrations = ?applied, "applied migrations");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_no_retry_can_store_is_invalid_data() {
        let refused = |text: &str| StoreError::Db(DbErr::Custom(text.to_owned())).is_invalid_data();
        assert!(refused("null character not permitted"));
        assert!(refused(
            "error returned from database: index row size 3736 exceeds btree version 4 maximum 2704 for index \"entity_pkey\""
        ));
        assert!(refused(
            "error returned from database: index row requires 17208 bytes, maximum size is 8191"
        ));
        assert!(!refused("connection refused"));
        assert!(!StoreError::Conflict { tenant: "t".into() }.is_invalid_data());
    }
}
