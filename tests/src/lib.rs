//! A sandbox that runs the whole system for tests: all four services, in one process, through
//! the same `serve_all` that `ontoloop up` uses (by way of `ontoloop::up::Local`), on whatever store and queue the settings name.
//! Tests get a shutdown trigger and [`wait_until`] instead of sleeps.

pub mod browser;

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ontoloop::up::Local;
use ontoloop_core::ServiceKind;
use ontoloop_runtime::Context;
use ontoloop_settings::{Loader, Settings};
use sea_orm::{ConnectionTrait, Database};

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
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("test-{test}-{}-{nanos}.", std::process::id())
}

/// Settings for a test: defaults, no process environment, these overrides.
pub fn settings(overrides: &[(&str, &str)]) -> Settings {
    let mut loader = Loader::new().env_vars([]);
    for (key, value) in overrides {
        loader = loader.set(key, *value);
    }
    loader.load().expect("test settings are valid")
}

/// A PostgreSQL database created for one test and dropped by [`PgDatabase::drop_now`].
pub struct PgDatabase {
    name: String,
    /// URL of the new database.
    pub url: String,
}

impl PgDatabase {
    /// Creates an empty database with a unique name.
    pub async fn create() -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let name = format!("ontoloop_sys_{}_{nanos}", std::process::id());
        let admin = Database::connect(pg_admin_url())
            .await
            .context("connect to PostgreSQL as administrator")?;
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .context("create the test database")?;
        admin.close().await.ok();
        let base = pg_admin_url();
        let cut = base.rfind('/').context("admin URL names no database")?;
        Ok(Self {
            url: format!("{}/{name}", &base[..cut]),
            name,
        })
    }

    /// Drops the database, closing whatever still uses it.
    pub async fn drop_now(self) -> anyhow::Result<()> {
        let admin = Database::connect(pg_admin_url()).await?;
        admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await?;
        Ok(())
    }
}

/// The whole system, running: the same `Local` system `ontoloop bench` starts, with test helpers.
pub struct Sandbox {
    local: Local,
    /// The shared context (store and queue) the services run on.
    pub ctx: Context,
}

impl Sandbox {
    /// Binds every service on `127.0.0.1:0`, connects the store and queue the settings name and
    /// starts serving.
    pub async fn start(settings: Settings) -> anyhow::Result<Self> {
        let local = Local::start(settings).await?;
        let ctx = local.ctx.clone();
        Ok(Self { local, ctx })
    }

    /// The address a service listens on.
    pub fn addr(&self, kind: ServiceKind) -> SocketAddr {
        self.local
            .addrs
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, addr)| *addr)
            .expect("every service is bound")
    }

    /// The HTTP address of a service (metrics; the analyst's dashboard).
    pub fn http_addr(&self, kind: ServiceKind) -> SocketAddr {
        self.local
            .http_addrs
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, addr)| *addr)
            .expect("every service is bound")
    }

    /// `http://ADDR` of a service, for a tonic client.
    pub fn endpoint(&self, kind: ServiceKind) -> String {
        format!("http://{}", self.addr(kind))
    }

    /// Triggers shutdown and waits for every service to drain.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.local.stop().await
    }
}

/// `GET path` over plain HTTP/1.0; the body of a 200 response.
pub async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect to {addr}"))?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("a response with headers")?;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "GET {path}: {head}"
    );
    Ok(body.to_owned())
}

/// Polls `predicate` every 20 ms until it holds or `timeout` passes; true when it held.
pub async fn wait_until<F, Fut>(timeout: Duration, mut predicate: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if predicate().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
