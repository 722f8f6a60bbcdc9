//! Writers that read first never fail for a lock on SQLite: recording batches of queue messages
//! (read which ids are known, then insert the rest) while other connections keep writing — an
//! intake appending events and accepting signals as fast as it can — succeeds every time. A
//! transaction that read first used to fail at once with "database is locked" when another
//! connection wrote before its own write (WAL mode cannot let a stale reader wait for the
//! lock), and a consumer retrying such a batch five times dead-lettered it. The same runs on
//! PostgreSQL.
//!
//! Appends of one tenant from many tasks at once, singly or a group per transaction, all get a
//! number, each its own, 1 to N with no gap: `ontoloop bench scale` pushing 16 pages at a time into one tenant used to see an append
//! lose the race for the next number 64 times running and fail.

use chrono::Utc;
use ontoloop_settings::Loader;
use ontoloop_store::Store;
use ontoloop_testkit::servers::PgDatabase;

const BATCHES: usize = 60;
const PER_BATCH: usize = 50;

async fn open(url: &str) -> Store {
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", url)
        .load()
        .expect("settings");
    Store::open(&settings.store).await.expect("store opens")
}

async fn batches_recorded_under_concurrent_writes_all_succeed(store: &Store) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Two writers on other pooled connections, committing as fast as they can.
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            tokio::spawn(async move {
                let mut written = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    store
                        .intake_append(&format!("busy-{w}"), None, "doc.upsert", "{}", Utc::now())
                        .await
                        .expect("the other writer's append");
                    written += 1;
                }
                written
            })
        })
        .collect();
    let mut failures = Vec::new();
    let mut recorded = 0;
    for b in 0..BATCHES {
        let messages: Vec<(String, String)> = (0..PER_BATCH)
            .map(|m| (format!("m-{b}-{m}"), format!(r#"{{"tenant":"t","n":{m}}}"#)))
            .collect();
        match store
            .record_inbox_batch("contention", &messages, Utc::now())
            .await
        {
            Ok(fresh) => recorded += fresh.len(),
            Err(err) => failures.push(err.to_string()),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut written = 0;
    for writer in writers {
        written += writer.await.expect("writer joined");
    }
    assert!(written > 0, "the other writers wrote meanwhile");
    assert!(
        failures.is_empty(),
        "{} of {BATCHES} batches failed while {written} other commits ran, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(recorded, BATCHES * PER_BATCH, "every message recorded once");
}

/// Concurrent appends of one tenant from this many tasks, this many each.
const APPENDERS: usize = 32;
const APPENDS: usize = 20;

async fn concurrent_appends_of_one_tenant_all_get_their_own_number(store: &Store) {
    let tasks: Vec<_> = (0..APPENDERS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..APPENDS {
                    let key = format!("key-{t}-{i}");
                    let (seq, duplicate) = store
                        .intake_append("crowded", Some(&key), "doc.upsert", "{}", Utc::now())
                        .await
                        .expect("every append of the crowd gets a number");
                    assert!(!duplicate);
                    seqs.push(seq);
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("appender"));
    }
    all.sort_unstable();
    let expected: Vec<i64> = (1..=(APPENDERS * APPENDS) as i64).collect();
    assert_eq!(all, expected, "numbers 1..N, each once");
}

/// Group appends (`intake_accept_many`, as the intake writes pushes in flight) beside single
/// ones: each tenant's numbers stay 1..N with no gap, and a key repeated inside a group or seen
/// before gives the earlier row.
async fn group_appends_beside_single_ones_keep_numbers_and_keys(store: &Store) {
    let request = |tenant: &str, key: String| ontoloop_store::IntakeRequest {
        tenant: tenant.to_owned(),
        idempotency_key: Some(key),
        kind: "doc.upsert".to_owned(),
        body: "{}".to_owned(),
        received_at: Utc::now(),
        lease_until: None,
        trace_context: None,
    };
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut fresh: Vec<(String, i64)> = Vec::new();
                for i in 0..10 {
                    if t % 2 == 0 {
                        let (seq, duplicate) = store
                            .intake_append(
                                "grouped",
                                Some(&format!("s-{t}-{i}")),
                                "doc.upsert",
                                "{}",
                                Utc::now(),
                            )
                            .await
                            .expect("a single append");
                        assert!(!duplicate);
                        fresh.push(("grouped".to_owned(), seq));
                        continue;
                    }
                    let group = vec![
                        request("grouped", format!("g-{t}-{i}")),
                        request("second", format!("g-{t}-{i}")),
                        // The same key again in the group, and a key this task used before.
                        request("grouped", format!("g-{t}-{i}")),
                        request("grouped", format!("g-{t}-0")),
                    ];
                    let accepted = store
                        .intake_accept_many(&group)
                        .await
                        .expect("a group append");
                    assert_eq!(accepted.len(), 4);
                    assert!(!accepted[0].duplicate && !accepted[1].duplicate);
                    assert!(accepted[2].duplicate && accepted[2].seq == accepted[0].seq);
                    assert!(accepted[3].duplicate || i == 0);
                    if i > 0 {
                        assert!(fresh.iter().any(
                                |(tenant, seq)| tenant == "grouped" && *seq == accepted[3].seq
                            ));
                    }
                    fresh.push(("grouped".to_owned(), accepted[0].seq));
                    fresh.push(("second".to_owned(), accepted[1].seq));
                }
                fresh
            })
        })
        .collect();
    let mut numbers: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for task in tasks {
        for (tenant, seq) in task.await.expect("appender") {
            numbers.entry(tenant).or_default().push(seq);
        }
    }
    for (tenant, mut seqs) in numbers {
        seqs.sort_unstable();
        let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
        assert_eq!(seqs, expected, "{tenant}: numbers 1..N, each once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_concurrent_appends_of_one_tenant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&format!(
        "sqlite://{}/appends.db?mode=rwc",
        dir.path().display()
    ))
    .await;
    concurrent_appends_of_one_tenant_all_get_their_own_number(&store).await;
    group_appends_beside_single_ones_keep_numbers_and_keys(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_concurrent_appends_of_one_tenant() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = open(&database.url).await;
    concurrent_appends_of_one_tenant_all_get_their_own_number(&store).await;
    group_appends_beside_single_ones_keep_numbers_and_keys(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_readers_that_write_wait_for_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&format!(
        "sqlite://{}/contention.db?mode=rwc",
        dir.path().display()
    ))
    .await;
    batches_recorded_under_concurrent_writes_all_succeed(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_readers_that_write_under_concurrent_writes() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = open(&database.url).await;
    batches_recorded_under_concurrent_writes_all_succeed(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
