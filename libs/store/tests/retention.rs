//! Retention on both backends (SQLite in a temporary file, the machine's PostgreSQL in a database
//! created for the run): expired rows go, fresh ones and those the outbox or the intake numbering
//! still need stay, a pass deletes no more than its cap, and one tenant's signal window is read
//! through its index.

use chrono::{DateTime, Duration, Utc};
use ontoloop_settings::{Loader, StoreSettings};
use ontoloop_store::{OrgCommit, OutboxKind, Retained, SignalRecord, Store, change_kind};
use ontoloop_testkit::servers::PgDatabase;

fn settings_for(url: &str) -> StoreSettings {
    Loader::new()
        .env_vars([])
        .set("store.url", url)
        .set("store.connect_attempts", "3")
        .load()
        .expect("settings")
        .store
}

fn signal<'a>(tenant: &'a str, key: &'a str, at: DateTime<Utc>) -> SignalRecord<'a> {
    SignalRecord {
        tenant,
        idempotency_key: key,
        signal_type: "entity_missing",
        subject: "project kite",
        agent_id: "agent",
        query: "Who owns Kite?",
        at,
        trace_context: None,
    }
}

/// Accepts a signal (unpublished, as the intake does) and returns its row.
async fn accept(store: &Store, tenant: &str, key: &str, at: DateTime<Utc>) -> i64 {
    store
        .accept_signal(
            &signal(tenant, key, at),
            at - Duration::hours(1),
            None,
            |_| format!(r#"{{"tenant":"{tenant}","type":"entity_missing","entity":"Kite"}}"#),
        )
        .await
        .expect("accept signal")
        .row
}

async fn signals_of(store: &Store, tenant: &str) -> Vec<DateTime<Utc>> {
    store
        .signals_in_window(tenant, Utc::now() - Duration::days(365), u64::MAX >> 1)
        .await
        .expect("window")
        .into_iter()
        .map(|s| s.received_at)
        .collect()
}

async fn published_old_signals_go_and_the_outbox_stays(store: &Store) {
    let now = Utc::now();
    let old = now - Duration::days(40);
    let published_old = accept(store, "acme", "old-published", old).await;
    accept(store, "acme", "old-unpublished", old).await;
    let published_fresh = accept(store, "acme", "fresh", now).await;
    store
        .outbox_published(OutboxKind::Signal, &[published_old, published_fresh], now)
        .await
        .expect("published");
    let pruned = store
        .prune(Retained::SignalIntake, now - Duration::days(30), 100)
        .await
        .expect("prune");
    assert_eq!(pruned, 1, "only the old published signal is due");
    let kept = signals_of(store, "acme").await;
    assert_eq!(
        kept.len(),
        2,
        "the unpublished old one and the fresh one stay"
    );
    assert_eq!(
        store.outbox_backlog().await.expect("backlog").signals,
        1,
        "the old unpublished signal still waits in the outbox"
    );
    // A retry of the pruned signal's key is a new signal.
    let again = store
        .accept_signal(&signal("acme", "old-published", now), now, None, |_| {
            "{}".to_owned()
        })
        .await
        .expect("accept again");
    assert!(again.fresh);
}

async fn a_pass_is_bounded_by_its_cap(store: &Store) {
    let now = Utc::now();
    let old = now - Duration::days(10);
    for n in 0..5 {
        store
            .record_inbox("ontoloop.signals", &format!("m-{n}"), "{}", old)
            .await
            .expect("record");
    }
    store
        .record_inbox("ontoloop.signals", "fresh", "{}", now)
        .await
        .expect("record");
    let cutoff = now - Duration::days(7);
    let mut passes = Vec::new();
    for _ in 0..4 {
        passes.push(
            store
                .prune(Retained::Inbox, cutoff, 2)
                .await
                .expect("prune"),
        );
    }
    assert_eq!(passes, vec![2, 2, 1, 0], "at most 2 rows a pass");
    assert_eq!(
        store.inbox_count("ontoloop.signals").await.expect("count"),
        1
    );
    assert!(
        store
            .inbox_contains("ontoloop.signals", "fresh")
            .await
            .expect("contains")
    );
}

async fn settled_events_go_but_never_pending_or_a_tenants_newest(store: &Store) {
    let now = Utc::now();
    let old = now - Duration::days(40);
    let mut rows = Vec::new();
    for n in 1..=4 {
        let key = format!("k{n}");
        let intake = store
            .intake_accept("acme", Some(&key), "doc.upsert", "{}", old, None, None)
            .await
            .expect("accept");
        assert_eq!(intake.seq, n);
        rows.push(intake.row);
    }
    // 1 and 2 settled and published; 3 published but still pending; 4, the newest, settled.
    store
        .outbox_published(OutboxKind::Event, &rows, now)
        .await
        .expect("published");
    for seq in [1, 2, 4] {
        store
            .intake_fail("acme", seq, "refused")
            .await
            .expect("fail");
    }
    // Another tenant's only event, settled and old: its newest, so it stays too.
    let other = store
        .intake_accept("beta", None, "doc.upsert", "{}", old, None, None)
        .await
        .expect("accept");
    store
        .outbox_published(OutboxKind::Event, &[other.row], now)
        .await
        .expect("published");
    store.intake_fail("beta", 1, "refused").await.expect("fail");

    let pruned = store
        .prune(Retained::IntakeEvent, now - Duration::days(30), 100)
        .await
        .expect("prune");
    assert_eq!(pruned, 2, "events 1 and 2 of acme");
    for (tenant, seq, kept) in [
        ("acme", 1, false),
        ("acme", 2, false),
        ("acme", 3, true),
        ("acme", 4, true),
        ("beta", 1, true),
    ] {
        let state = store.intake_state(tenant, seq).await.expect("state");
        assert_eq!(state.is_some(), kept, "{tenant} #{seq}: {state:?}");
    }
    let (next, duplicate) = store
        .intake_append("acme", None, "doc.upsert", "{}", now)
        .await
        .expect("append");
    assert_eq!((next, duplicate), (5, false), "numbers count on");
}

async fn old_org_changes_go_and_the_version_stays(store: &Store) {
    let commit = || OrgCommit {
        change: (change_kind::DOCS.to_owned(), r#"{"files":[]}"#.to_owned()),
        ..Default::default()
    };
    let mut version = 0;
    for _ in 0..2 {
        version = store
            .commit_org("acme", version, commit())
            .await
            .expect("commit")
            .version;
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let cutoff = Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    version = store
        .commit_org("acme", version, commit())
        .await
        .expect("commit")
        .version;
    let pruned = store
        .prune(Retained::OrgChange, cutoff, 100)
        .await
        .expect("prune");
    assert_eq!(pruned, 2);
    let left: Vec<i64> = store
        .org_changes("acme", 0, 10)
        .await
        .expect("changes")
        .iter()
        .map(|c| c.version)
        .collect();
    assert_eq!(left, vec![3], "only the change after the cutoff");
    assert_eq!(store.org_version("acme").await.expect("version"), version);
}

async fn one_tenants_window_is_read_through_its_index(store: &Store) {
    let now = Utc::now();
    accept(store, "wind", "w-old", now - Duration::hours(3)).await;
    accept(store, "wind", "w-new", now - Duration::minutes(5)).await;
    accept(store, "other", "o-new", now - Duration::minutes(5)).await;
    let window = store
        .signals_in_window("wind", now - Duration::hours(1), 10)
        .await
        .expect("window");
    assert_eq!(window.len(), 1, "{window:?}");
    // A capped read keeps the newest of the window, oldest first.
    accept(store, "wind", "w-newer", now - Duration::minutes(4)).await;
    accept(store, "wind", "w-newest", now - Duration::minutes(3)).await;
    let capped: Vec<DateTime<Utc>> = store
        .signals_in_window("wind", now - Duration::hours(1), 2)
        .await
        .expect("capped window")
        .iter()
        .map(|s| s.received_at)
        .collect();
    // (Compared within a second: PostgreSQL keeps microseconds.)
    let expected = [now - Duration::minutes(4), now - Duration::minutes(3)];
    assert_eq!(capped.len(), 2, "{capped:?}");
    for (got, want) in capped.iter().zip(expected) {
        assert!((*got - want).num_seconds().abs() < 1, "{capped:?}");
    }
    assert!(
        window[0]
            .body
            .as_deref()
            .is_some_and(|b| b.contains("wind"))
    );
    let plan = store
        .signals_in_window_plan("wind", now - Duration::hours(1))
        .await
        .expect("plan");
    assert!(
        plan.iter()
            .any(|line| line.contains("ix_signal_intake_tenant_received")),
        "the window is read through its index: {plan:?}"
    );
    assert!(
        !plan
            .iter()
            .any(|line| line.contains("SCAN signal_intake") || line.contains("Seq Scan")),
        "never a scan of every tenant's signals: {plan:?}"
    );
}

async fn every_case(store: &Store) {
    store.migrate_up().await.expect("migrate");
    published_old_signals_go_and_the_outbox_stays(store).await;
    a_pass_is_bounded_by_its_cap(store).await;
    settled_events_go_but_never_pending_or_a_tenants_newest(store).await;
    old_org_changes_go_and_the_version_stays(store).await;
    one_tenants_window_is_read_through_its_index(store).await;
}

#[tokio::test]
async fn sqlite_retention() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/retention.db?mode=rwc", dir.path().display());
    let store = Store::connect(&settings_for(&url))
        .await
        .expect("connect sqlite");
    every_case(&store).await;
    store.close().await.expect("close");
}

#[tokio::test]
async fn postgres_retention() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = Store::connect(&settings_for(&database.url))
        .await
        .expect("connect postgres");
    every_case(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
