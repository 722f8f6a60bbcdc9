//! The store on both backends: SQLite in a temporary file and the machine's PostgreSQL (in a
//! database created for the test run and dropped after). PostgreSQL tests fail, never skip, when
//! the server does not answer: `.ci/run` starts it.

use chrono::{TimeZone, Utc};
use ontoloop_settings::{Loader, StoreSettings};
use ontoloop_store::{Backend, Store, StoreError};
use ontoloop_testkit::servers::PgDatabase;

fn settings_for(url: &str) -> StoreSettings {
    Loader::new()
        .env_vars([])
        .set("store.url", url)
        .set("store.connect_attempts", "3")
        .set("store.backoff_initial_ms", "50")
        .set("store.backoff_max_ms", "100")
        .load()
        .expect("settings")
        .store
}

async fn migrations_go_up_and_down(store: &Store) {
    store.migrate_up().await.expect("up");
    let applied = store.applied_migrations().await.expect("applied");
    assert_eq!(
        applied,
        vec![
            "m20261129_000001_create_inbox".to_owned(),
            "m20261129_000002_create_knowledge".to_owned(),
            "m20261129_000003_create_signal_intake".to_owned(),
            "m20261129_000004_create_review".to_owned(),
            "m20261129_000005_create_org".to_owned()
        ]
    );
    // Up again is a no-op.
    store.migrate_up().await.expect("up twice");
    store.migrate_down().await.expect("down");
    assert!(
        store
            .applied_migrations()
            .await
            .expect("applied")
            .is_empty()
    );
    let gone = store.record_inbox("q", "m", "{}", Utc::now()).await;
    assert!(
        matches!(gone, Err(StoreError::Db(_))),
        "the table is gone after down"
    );
    store.migrate_up().await.expect("up again");
}

async fn messages_round_trip_once(store: &Store) {
    let at = Utc
        .with_ymd_and_hms(2026, 11, 29, 12, 0, 0)
        .single()
        .expect("valid time");
    let body = r#"{"type":"doc.upsert","doc_id":"pricing"}"#;
    assert!(
        store
            .record_inbox("ontoloop.events", "m-1", body, at)
            .await
            .expect("insert")
    );
    assert!(
        !store
            .record_inbox("ontoloop.events", "m-1", body, at)
            .await
            .expect("duplicate"),
        "a redelivered message is recorded once"
    );
    assert!(
        store
            .record_inbox("ontoloop.signals", "m-1", "{}", at)
            .await
            .expect("other queue")
    );
    let rows = store.inbox("ontoloop.events", 10).await.expect("read");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].message_id, "m-1");
    assert_eq!(rows[0].body, body);
    assert_eq!(rows[0].received_at, at);
}

#[tokio::test]
async fn sqlite_migrations_and_round_trip() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!(
        "sqlite://{}/nested/ontoloop.db?mode=rwc",
        dir.path().display()
    );
    let store = Store::connect(&settings_for(&url))
        .await
        .expect("connect sqlite");
    assert_eq!(store.backend(), Backend::Sqlite);
    migrations_go_up_and_down(&store).await;
    messages_round_trip_once(&store).await;
    store.close().await.expect("close");
}

#[tokio::test]
async fn postgres_migrations_and_round_trip() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = Store::connect(&settings_for(&database.url))
        .await
        .expect("connect postgres");
    assert_eq!(store.backend(), Backend::Postgres);
    migrations_go_up_and_down(&store).await;
    messages_round_trip_once(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}

#[tokio::test]
async fn an_unreachable_database_is_reported_after_backoff() {
    let mut settings = settings_for("postgres://app:secret@127.0.0.1:1/ontoloop");
    settings.connect_timeout_ms = 300;
    let err = Store::connect(&settings)
        .await
        .expect_err("nothing listens on port 1");
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::Unreachable { attempts: 3, .. }),
        "{text}"
    );
    assert!(
        !text.contains("secret"),
        "the password must not leak: {text}"
    );
}
