//! Upgrading a store that holds data: the migrations that made identifiers per tenant keep what
//! can be kept and drop what cannot honestly be attributed (on SQLite, in a temporary file).

use ontoloop_migrations::{Migrator, MigratorTrait};
use sea_orm_migration::sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};

/// Migrations before `m20261201_050000_supervisor_rate_per_tenant`.
const BEFORE_RATES: u32 = 6;

async fn rows(db: &DatabaseConnection, sql: &str) -> Vec<Vec<String>> {
    let backend = db.get_database_backend();
    db.query_all_raw(Statement::from_string(backend, sql.to_owned()))
        .await
        .expect("query")
        .iter()
        .map(|row| {
            (0..)
                .map_while(|i| {
                    row.try_get_by_index::<i64>(i)
                        .map(|n| n.to_string())
                        .or_else(|_| row.try_get_by_index::<String>(i))
                        .ok()
                })
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn per_tenant_identifiers_keep_intake_numbers_and_drop_shared_rates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/upgrade.db?mode=rwc", dir.path().display());
    let db = Database::connect(&url).await.expect("connect");
    Migrator::up(&db, Some(BEFORE_RATES))
        .await
        .expect("up to before");
    db.execute_unprepared(
        "INSERT INTO intake_event (seq, tenant, kind, body, received_at, state) VALUES \
         (1, 'a', 'doc.upsert', '{}', '2026-11-30T00:00:00Z', 'applied'), \
         (2, 'b', 'doc.upsert', '{}', '2026-11-30T00:00:00Z', 'pending'), \
         (3, 'a', 'doc.upsert', '{}', '2026-11-30T00:00:00Z', 'failed'); \
         INSERT INTO supervisor_rate (signal_type, source, domain, rate, approvals, rejections, \
         updated_at) VALUES ('entity_missing', 'crm', 'general', 0.5, 0, 3, \
         '2026-11-30T00:00:00Z');",
    )
    .await
    .expect("rows of an older store");

    Migrator::up(&db, None).await.expect("up");
    assert_eq!(
        rows(
            &db,
            "SELECT seq, tenant, tenant_seq FROM intake_event ORDER BY seq"
        )
        .await,
        vec![
            vec!["1".to_owned(), "a".to_owned(), "1".to_owned()],
            vec!["2".to_owned(), "b".to_owned(), "2".to_owned()],
            vec!["3".to_owned(), "a".to_owned(), "3".to_owned()],
        ],
        "numbers already handed out still name the same events"
    );
    let taken = db
        .execute_unprepared(
            "INSERT INTO intake_event (tenant, tenant_seq, kind, body, received_at, state) \
             VALUES ('a', 3, 'doc.upsert', '{}', '2026-12-01T00:00:00Z', 'pending')",
        )
        .await;
    assert!(taken.is_err(), "a tenant's number is unique");
    db.execute_unprepared(
        "INSERT INTO intake_event (tenant, tenant_seq, kind, body, received_at, state) \
         VALUES ('b', 3, 'doc.upsert', '{}', '2026-12-01T00:00:00Z', 'pending')",
    )
    .await
    .expect("another tenant may use the same number");
    assert!(
        rows(&db, "SELECT tenant FROM supervisor_rate")
            .await
            .is_empty(),
        "rates learned across all tenants belong to none and are dropped"
    );
    db.execute_unprepared(
        "INSERT INTO supervisor_rate (tenant, signal_type, source, domain, rate, approvals, \
         rejections, updated_at) VALUES \
         ('a', 'entity_missing', 'crm', 'general', 0.5, 0, 1, '2026-12-01T00:00:00Z'), \
         ('b', 'entity_missing', 'crm', 'general', 0.05, 1, 0, '2026-12-01T00:00:00Z')",
    )
    .await
    .expect("each tenant has its own rate of a category");

    Migrator::down(&db, Some(2)).await.expect("down both");
    Migrator::up(&db, None).await.expect("up again");
}
