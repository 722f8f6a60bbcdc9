//! The gate's rows on both backends: the query log keeps each tenant's newest questions up to
//! its bound (other tenants untouched); a change recorded in a commit is applied with it or not
//! at all; a held change moves on once (a second decision finds it no longer held, and a commit
//! that would move it then is refused whole); the last change that went live is what a rollback
//! undoes.

use chrono::Utc;
use ontoloop_settings::Loader;
use ontoloop_store::{GateMove, GateRecord, GateWrite, KnowledgeCommit, LoggedQuestion, Store};
use ontoloop_testkit::servers::PgDatabase;

async fn connect(url: &str) -> Store {
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", url)
        .set("store.connect_attempts", "3")
        .load()
        .expect("settings")
        .store;
    let store = Store::connect(&settings).await.expect("connect");
    store.migrate_up().await.expect("migrate");
    store
}

fn question(tenant: &str, n: usize) -> LoggedQuestion {
    LoggedQuestion {
        tenant: tenant.into(),
        question: format!("question {n}?"),
        scope: String::new(),
        caller: r#"{"principal":"agent","groups":[]}"#.into(),
        asked_at: Utc::now(),
    }
}

fn record(tenant: &str, status: &str, previous: Option<&str>) -> GateRecord {
    GateRecord {
        id: 0,
        tenant: tenant.into(),
        kind: "rebuild".into(),
        status: status.into(),
        event: "{}".into(),
        replayed: 3,
        differences: "[]".into(),
        previous: previous.map(str::to_owned),
        created_at: Utc::now(),
        decided_at: None,
        decided_by: String::new(),
    }
}

fn moved(id: i64, from: &str, to: &str) -> GateMove {
    GateMove {
        id,
        from: from.into(),
        to: to.into(),
        by: "alice".into(),
        at: Utc::now(),
        previous: Some("{\"facts\":[]}".into()),
    }
}

async fn every_case(store: &Store) {
    // The query log: the newest `keep` per tenant, newest first.
    let first: Vec<LoggedQuestion> = (0..5).map(|n| question("acme", n)).collect();
    store.query_log_append(&first, 3).await.expect("append");
    store
        .query_log_append(&[question("globex", 0)], 3)
        .await
        .expect("append");
    let more: Vec<LoggedQuestion> = (5..7).map(|n| question("acme", n)).collect();
    store.query_log_append(&more, 3).await.expect("append");
    let kept: Vec<String> = store
        .recent_questions("acme", 10)
        .await
        .expect("read")
        .into_iter()
        .map(|q| q.question)
        .collect();
    assert_eq!(kept, ["question 6?", "question 5?", "question 4?"]);
    assert_eq!(
        store
            .recent_questions("globex", 10)
            .await
            .expect("read")
            .len(),
        1
    );

    // A change recorded in the commit that applies it.
    let v1 = store
        .commit_knowledge(
            "acme",
            0,
            KnowledgeCommit {
                ontology: Some("{}".into()),
                gate: Some(GateWrite::Record(record("acme", "live", Some("{}")))),
                ..KnowledgeCommit::default()
            },
        )
        .await
        .expect("commit");
    let live = store.gate_changes("acme", 10).await.expect("changes");
    assert_eq!(live.len(), 1);
    assert_eq!(
        store
            .gate_last_live("acme")
            .await
            .expect("last")
            .map(|r| r.id),
        Some(live[0].id)
    );
    // A held one is not what a rollback undoes, and moves on once.
    let held = store
        .gate_record(&record("acme", "held", None))
        .await
        .expect("record");
    assert_eq!(
        store
            .gate_last_live("acme")
            .await
            .expect("last")
            .map(|r| r.id),
        Some(live[0].id)
    );
    assert!(
        store
            .gate_decide("acme", &moved(held, "held", "discarded"))
            .await
            .expect("decide")
    );
    assert!(
        !store
            .gate_decide("acme", &moved(held, "held", "approved"))
            .await
            .expect("decide again"),
        "decided once"
    );
    assert!(
        !store
            .gate_decide("globex", &moved(live[0].id, "live", "rolled_back"))
            .await
            .expect("another tenant's"),
        "another tenant's change is not moved"
    );
    // A commit whose gate move no longer holds is refused whole: the version does not move.
    let refused = store
        .commit_knowledge(
            "acme",
            v1,
            KnowledgeCommit {
                ontology: Some("{\"changed\":true}".into()),
                gate: Some(GateWrite::Move(moved(held, "held", "approved"))),
                ..KnowledgeCommit::default()
            },
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(store.knowledge_version("acme").await.expect("version"), v1);
    // The rollback's move, in its commit.
    store
        .commit_knowledge(
            "acme",
            v1,
            KnowledgeCommit {
                gate: Some(GateWrite::Move(GateMove {
                    previous: None,
                    ..moved(live[0].id, "live", "rolled_back")
                })),
                ..KnowledgeCommit::default()
            },
        )
        .await
        .expect("rollback commit");
    assert!(store.gate_last_live("acme").await.expect("last").is_none());
    let after = store
        .gate_change("acme", live[0].id)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(after.status, "rolled_back");
    assert_eq!(
        after.previous.as_deref(),
        Some("{}"),
        "what it held stays on record"
    );
    assert!(
        store
            .gate_change("globex", live[0].id)
            .await
            .expect("read")
            .is_none()
    );
}

#[tokio::test]
async fn sqlite_gate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/gate.db?mode=rwc", dir.path().display());
    let store = connect(&url).await;
    every_case(&store).await;
    store.close().await.expect("close");
}

#[tokio::test]
async fn postgres_gate() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = connect(&database.url).await;
    every_case(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
