//! Word that the analyst committed, so a reader waiting for an intake event to settle
//! (read-your-writes) wakes when it happens instead of asking the database every few
//! milliseconds.
//!
//! Every analyst commit (knowledge or org, each settling its intake events), an organisation
//! replaced whole and every event marked failed moves this process's feed once it is durable. On PostgreSQL the same commit
//! sends `NOTIFY ontoloop_settled` with its tenant, and each process listens on its own
//! connection, so a waiter in a retrieval replica wakes for an analyst in another process. A
//! waiter still reads the database after it wakes (the feed carries no state), and reads it
//! anyway every [`SAFETY_POLL`]: a notification lost while the listener reconnects, or a commit
//! by another process on one SQLite file, costs at most that long, never a wrong answer.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{ConnectionTrait as _, DatabaseConnection, DbBackend, Statement};
use tokio::sync::watch;

/// How often a waiter reads the database even without word from the feed.
pub const SAFETY_POLL: Duration = Duration::from_millis(50);

/// The PostgreSQL channel commits that settle intake events notify on.
const CHANNEL: &str = "ontoloop_settled";

/// Longest pause between attempts to listen again after the listener's connection failed.
const LISTEN_RETRY_MAX: Duration = Duration::from_secs(5);

/// This process's word of settled intake events: a counter that moves on each one.
#[derive(Debug)]
pub(crate) struct Feed {
    moved: Arc<watch::Sender<u64>>,
    /// The PostgreSQL listener, stopped when the last handle to the store goes.
    listener: Option<tokio::task::AbortHandle>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Feed {
    /// A feed for `db`; on PostgreSQL it also listens for other processes' commits, on a
    /// connection of its own to `url` (not one of the pool's).
    pub(crate) fn new(db: &DatabaseConnection, url: &str) -> Self {
        let moved = Arc::new(watch::Sender::new(0u64));
        let listener = (db.get_database_backend() == DbBackend::Postgres)
            .then(|| tokio::spawn(listen(url.to_owned(), Arc::clone(&moved))).abort_handle());
        Self { moved, listener }
    }

    /// Stops listening (the store was closed).
    pub(crate) fn stop(&self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
    }

    /// Says that something was settled.
    pub(crate) fn announce(&self) {
        self.moved.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver whose `changed()` completes at the next announcement after this call.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.moved.subscribe()
    }
}

/// Inside a transaction that settles intake events of `tenant`: on PostgreSQL, notify every
/// listening process when it commits (nothing is sent if it rolls back).
pub(crate) async fn notify_in(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
) -> Result<(), sea_orm::DbErr> {
    if txn.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    txn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_notify($1, $2)",
        [CHANNEL.into(), tenant.into()],
    ))
    .await?;
    Ok(())
}

/// Listens on [`CHANNEL`] for as long as the store lives, moving `moved` on each notification and
/// whenever the connection was lost (what came meanwhile is unknown: waiters read again).
async fn listen(url: String, moved: Arc<watch::Sender<u64>>) {
    use sea_orm::sqlx::postgres::PgListener;
    let bump = || moved.send_modify(|n| *n = n.wrapping_add(1));
    let mut pause = Duration::from_millis(100);
    loop {
        let listener = match PgListener::connect(&url).await {
            Ok(mut listener) => match listener.listen(CHANNEL).await {
                Ok(()) => Some(listener),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot listen for settled events; polling");
                    None
                }
            },
            Err(err) => {
                tracing::warn!(error = %err, "cannot connect to listen for settled events; polling");
                None
            }
        };
        if let Some(mut listener) = listener {
            pause = Duration::from_millis(100);
            bump();
            loop {
                // `None`: the connection was lost and opened again.
                match listener.try_recv().await {
                    Ok(Some(_)) | Ok(None) => bump(),
                    Err(err) => {
                        tracing::warn!(error = %err, "listening for settled events failed; polling");
                        break;
                    }
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LISTEN_RETRY_MAX);
    }
}
