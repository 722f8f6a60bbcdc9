//! Word of commits (`Store::commits`): a commit in this process moves its own feed; on PostgreSQL
//! a commit by another process (here another pool and feed on the same database) reaches it
//! through `LISTEN/NOTIFY`, so a read-your-writes wait there ends without waiting for its poll.

use std::time::Duration;

use chrono::Utc;
use ontoloop_settings::Loader;
use ontoloop_store::{Settled, Store};
use ontoloop_testkit::servers::PgDatabase;

async fn open(url: &str) -> Store {
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", url)
        .load()
        .expect("settings");
    Store::open(&settings.store).await.expect("store opens")
}

/// Accepts an event for `tenant` and returns its number.
async fn accept(store: &Store, tenant: &str) -> i64 {
    store
        .intake_append(tenant, None, "doc.upsert", "{}", Utc::now())
        .await
        .expect("append")
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_moves_this_processs_feed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&format!(
        "sqlite://{}/feed.db?mode=rwc",
        dir.path().display()
    ))
    .await;
    let seq = accept(&store, "acme").await;
    let mut commits = store.commits();
    commits.borrow_and_update();
    store
        .intake_fail("acme", seq, "refused for the test")
        .await
        .expect("fail");
    tokio::time::timeout(Duration::from_secs(5), commits.changed())
        .await
        .expect("word of the commit")
        .expect("the feed lives");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_processs_commit_reaches_this_one_through_postgres() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let (writer, reader) = (open(&database.url).await, open(&database.url).await);
    let mut heard = reader.commits();
    // The listener says once that it listens (what came before it is unknown).
    tokio::time::timeout(Duration::from_secs(10), heard.changed())
        .await
        .expect("the reader listens")
        .expect("the feed lives");
    heard.borrow_and_update();
    let seq = accept(&writer, "acme").await;
    assert!(
        tokio::time::timeout(Duration::from_millis(300), heard.changed())
            .await
            .is_err(),
        "an append is no commit: no word"
    );
    // A waiter in the reader, for longer than any test would wait on its poll alone.
    let waiter = {
        let reader = reader.clone();
        tokio::spawn(async move {
            reader
                .wait_settled("acme", seq, Duration::from_secs(30))
                .await
        })
    };
    writer
        .intake_fail("acme", seq, "refused for the test")
        .await
        .expect("fail");
    tokio::time::timeout(Duration::from_secs(10), heard.changed())
        .await
        .expect("word of the other process's commit")
        .expect("the feed lives");
    let settled = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the wait ends")
        .expect("joined")
        .expect("read");
    assert_eq!(settled, Settled::Failed("refused for the test".to_owned()));
    writer.close().await.expect("close");
    reader.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
