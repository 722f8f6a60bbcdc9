//! The machine's servers for tests that need real ones: PostgreSQL (a fresh database per test,
//! dropped by [`PgDatabase::drop_now`]), RabbitMQ (a queue namespace per test) and free loopback
//! ports. The URLs come from `ONTOLOOP_TEST_DATABASE_URL` and `ONTOLOOP_TEST_AMQP_URL`, with the
//! local defaults `.ci/run` starts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sea_orm::{ConnectionTrait, Database, DbErr};

/// The machine's PostgreSQL, as an administrator connection URL (`ONTOLOOP_TEST_DATABASE_URL`).
pub fn pg_admin_url() -> String {
    std::env::var("ONTOLOOP_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// The machine's RabbitMQ (`ONTOLOOP_TEST_AMQP_URL`).
pub fn amqp_url() -> String {
    std::env::var("ONTOLOOP_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// A queue-name prefix no other test or system uses, so tests sharing RabbitMQ never take each
/// other's messages (`queue.namespace`).
pub fn amqp_namespace(test: &str) -> String {
    format!("test-{test}-{}.", unique())
}

/// A loopback port free when asked (for settings that take a fixed port).
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct loopback ports free when asked: each is held until all are chosen, so none is
/// handed out twice.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("a bound port").port())
        .collect()
}

/// A PostgreSQL database created for one test and dropped by [`PgDatabase::drop_now`].
pub struct PgDatabase {
    name: String,
    /// URL of the new database.
    pub url: String,
}

impl PgDatabase {
    /// Creates an empty database with a unique name on the machine's PostgreSQL.
    pub async fn create() -> Result<Self, DbErr> {
        let base = pg_admin_url();
        let cut = base
            .rfind('/')
            .ok_or_else(|| DbErr::Custom(format!("admin URL names no database: {base}")))?;
        let name = format!("ontoloop_test_{}", unique().replace('-', "_"));
        let admin = Database::connect(&base).await?;
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await?;
        admin.close().await.ok();
        Ok(Self {
            url: format!("{}/{name}", &base[..cut]),
            name,
        })
    }

    /// Drops the database, closing whatever still uses it.
    pub async fn drop_now(self) -> Result<(), DbErr> {
        let admin = Database::connect(pg_admin_url()).await?;
        admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await?;
        admin.close().await.ok();
        Ok(())
    }
}

/// A name part no other test uses: the process id and the clock keep runs apart, a count kept
/// by this process keeps apart tests that ask in the same clock tick (two PostgreSQL tests once
/// got the same database name because the clock had not moved between them).
fn unique() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}
