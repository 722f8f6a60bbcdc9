//! The store on both backends: SQLite in a temporary file and the machine's PostgreSQL (in a
//! database created for the test run and dropped after). PostgreSQL tests fail, never skip, when
//! the server does not answer: `.ci/run` starts it.

use chrono::{TimeZone, Utc};
use ontoloop_core::knowledge::{MaintenanceReport, ModelCost, ModelUsage};
use ontoloop_settings::{Loader, StoreSettings};
use ontoloop_store::{
    Backend, CachedAnswer, KnowledgeCommit, OutboxKind, RunRecord, SignalRecord, Store, StoreError,
    StoredRun, VectorReader,
};
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
            "m20261129_000005_create_org".to_owned(),
            "m20261201_040000_model_stage".to_owned(),
            "m20261201_050000_supervisor_rate_per_tenant".to_owned(),
            "m20261201_060000_intake_sequence_per_tenant".to_owned(),
            "m20261201_070000_intake_outbox".to_owned(),
            "m20261201_080000_intake_order".to_owned(),
            "m20261201_090000_retention".to_owned(),
            "m20261201_130000_knowledge_changes".to_owned(),
            "m20261201_160000_outbox_trace".to_owned(),
            "m20261201_210000_page_tombstone".to_owned(),
            "m20261203_070000_fact_scope".to_owned(),
            "m20261203_100000_gate".to_owned(),
            "m20261204_090000_page_effective_from".to_owned(),
            "m20261207_040000_text_vector".to_owned(),
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

/// A cached model answer for sentence `n` of `model`.
fn answer(model: &str, n: u32) -> CachedAnswer {
    CachedAnswer {
        key: format!("{n:064x}"),
        model: model.to_owned(),
        prompt_version: "prompt-v1".to_owned(),
        claims: format!(r#"[{{"subject":"Kestrel","predicate":"tier","object":"{n}"}}]"#),
        created_at: Utc
            .with_ymd_and_hms(2026, 12, 1, 4, 0, 0)
            .single()
            .expect("valid time"),
    }
}

async fn model_answers_persist_bounded_per_model(store: &Store) {
    let first: Vec<CachedAnswer> = (0..3).map(|n| answer("small", n)).collect();
    assert_eq!(store.model_cache_put(&first, 4).await.expect("put"), 0);
    // A key already stored keeps its row; the bound is per model.
    let mut again = vec![answer("small", 0), answer("small", 3), answer("small", 4)];
    again[0].claims = "[]".to_owned();
    again.push(answer("large", 9));
    assert_eq!(store.model_cache_put(&again, 5).await.expect("put"), 0);
    let stored = store
        .model_cache_load("small", "prompt-v1", 10)
        .await
        .expect("load");
    assert_eq!(stored.len(), 5);
    assert_eq!(stored[4], answer("small", 0), "the first answer stays");
    // Beyond the bound the oldest go.
    assert_eq!(
        store
            .model_cache_put(&[answer("small", 5)], 4)
            .await
            .expect("put"),
        2
    );
    assert_eq!(store.model_cache_len("small").await.expect("len"), 4);
    assert_eq!(store.model_cache_len("large").await.expect("len"), 1);
    let loaded = store
        .model_cache_load("small", "prompt-v1", 10)
        .await
        .expect("load");
    let keys: Vec<u32> = loaded
        .iter()
        .map(|a| u32::from_str_radix(&a.key, 16).expect("hex key"))
        .collect();
    assert_eq!(
        keys,
        vec![5, 4, 3, 2],
        "newest first; the oldest were evicted"
    );
    assert_eq!(loaded[3], answer("small", 2), "a row reads back as written");
    assert_eq!(
        store
            .model_cache_load("small", "prompt-v1", 2)
            .await
            .expect("load")
            .len(),
        2
    );
    assert!(
        store
            .model_cache_load("small", "prompt-v2", 10)
            .await
            .expect("load")
            .is_empty(),
        "another prompt version's answers are not this one's"
    );
    assert_eq!(store.model_cache_put(&[], 4).await.expect("nothing"), 0);
}

async fn maintenance_runs_keep_the_model_usage(store: &Store) {
    let model = ModelUsage {
        dropped: 2,
        errors: 1,
        cost: ModelCost {
            requests: 3,
            sentences_sent: 7,
            cache_hits: 5,
            prompt_tokens: 410,
            completion_tokens: 96,
            tokens: 506,
        },
        ..ModelUsage::default()
    };
    let report = MaintenanceReport {
        pages_read: 2,
        pages_total: 4,
        est_tokens: 120,
        graph_writes: 6,
        model,
    };
    let commit = KnowledgeCommit {
        runs: vec![RunRecord {
            seq: 11,
            mode: "rebuild".to_owned(),
            report,
            at: Utc::now(),
        }],
        ..KnowledgeCommit::default()
    };
    store
        .commit_knowledge("harbour", 0, commit)
        .await
        .expect("commit");
    assert_eq!(
        store.maintenance_runs("harbour").await.expect("runs"),
        vec![StoredRun {
            seq: 11,
            mode: "rebuild".to_owned(),
            report
        }]
    );
}

/// Each intake event is settled once: two replicas that both found an event pending both apply
/// it, and the second commit, built on the version that already holds the first's, passes the
/// version guard. Its settling fails the commit instead (a conflict, retried, which then finds
/// the event settled), and so does recording a queue message recorded already; nothing of it is
/// written. A number that is not the tenant's still changes nothing, and marking an applied
/// event failed leaves it applied.
async fn an_event_is_settled_once(store: &Store) {
    let tenant = "once";
    let (seq, _) = store
        .intake_append(tenant, Some("first"), "doc.upsert", "{}", Utc::now())
        .await
        .expect("append");
    let (later, _) = store
        .intake_append(tenant, Some("second"), "doc.upsert", "{}", Utc::now())
        .await
        .expect("append");
    let message = |id: &str| ("events".to_owned(), id.to_owned(), "{}".to_owned());
    let applying = |seqs: &[i64], messages: Vec<(String, String, String)>| KnowledgeCommit {
        settled: seqs.iter().map(|seq| (*seq, None)).collect(),
        messages,
        ..KnowledgeCommit::default()
    };
    let version = store
        .commit_knowledge(tenant, 0, applying(&[seq], vec![message("m-1")]))
        .await
        .expect("the first commit of the event");
    for (what, again) in [
        ("the same event", applying(&[seq], vec![message("m-2")])),
        ("a later event with it", applying(&[seq, later], vec![])),
        ("the same message", applying(&[later], vec![message("m-1")])),
        (
            "a message twice",
            applying(&[later], vec![message("m-3"), message("m-3")]),
        ),
    ] {
        let second = store.commit_knowledge(tenant, version, again).await;
        assert!(
            matches!(second, Err(StoreError::Conflict { .. })),
            "{what} settled again: {second:?}"
        );
        assert_eq!(
            store.knowledge_version(tenant).await.expect("version"),
            version,
            "{what}: nothing of the refused commit is written"
        );
        let state = store.intake_state(tenant, later).await.expect("state");
        assert_eq!(state.map(|(state, _)| state).as_deref(), Some("pending"));
    }
    store
        .intake_fail(tenant, seq, "a late refusal")
        .await
        .expect("fail");
    let state = store.intake_state(tenant, seq).await.expect("state");
    assert_eq!(state, Some(("applied".to_owned(), None)), "applied stays");
    let next = store
        .commit_knowledge(tenant, version, applying(&[later, later + 1000], vec![]))
        .await
        .expect("a number not the tenant's changes nothing");
    assert_eq!(next, version + 1);
}

/// What an acknowledged request's trace context was comes back with its row when a publisher
/// claims it, for an event and for a signal, so a late publish continues that trace.
async fn outbox_rows_keep_the_request_trace(store: &Store) {
    let traced = r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
    let now = Utc::now();
    for (key, trace) in [("traced", Some(traced)), ("untraced", None)] {
        store
            .intake_accept("trace", Some(key), "doc.upsert", "{}", now, None, trace)
            .await
            .expect("accept an event");
        store
            .accept_signal(
                &SignalRecord {
                    tenant: "trace",
                    idempotency_key: key,
                    signal_type: "entity_missing",
                    subject: "kite",
                    agent_id: "agent",
                    query: "Who owns Kite?",
                    at: now,
                    trace_context: trace,
                },
                now - chrono::Duration::hours(1),
                None,
                |_| "{}".to_owned(),
            )
            .await
            .expect("accept a signal");
    }
    let lease = now + chrono::Duration::seconds(10);
    for kind in [OutboxKind::Event, OutboxKind::Signal] {
        let rows = store
            .outbox_claim(kind, now, lease, 10, false)
            .await
            .expect("claim");
        let traces: Vec<Option<&str>> = rows.iter().map(|r| r.trace_context.as_deref()).collect();
        assert_eq!(traces, vec![Some(traced), None], "{kind:?}");
    }
}

/// The encoder's vectors: kept once per key, read back exactly (by the store and by a reader of
/// their own), the oldest evicted beyond the bound.
async fn text_vectors_persist_bounded(store: &Store, settings: &StoreSettings) {
    let vector = |n: u32| vec![n as f32 / 3.0, -1.0, f32::EPSILON * n as f32];
    let key = |n: u32| format!("{n:064x}");
    let first: Vec<(String, Vec<f32>)> = (0..3).map(|n| (key(n), vector(n))).collect();
    store.text_vectors_put("mini", &first).await.expect("put");
    // A key already kept keeps its row.
    store
        .text_vectors_put("mini", &[(key(0), vec![9.0]), (key(3), vector(3))])
        .await
        .expect("put again");
    store
        .text_vectors_put("other", &[(key(7), vector(7))])
        .await
        .expect("put another model's");
    assert_eq!(store.text_vectors_len("mini").await.expect("len"), 4);
    let keys: Vec<String> = (0..5).map(key).collect();
    let found = store.text_vectors_find(&keys).await.expect("find");
    assert_eq!(found.len(), 4, "key 4 was never kept");
    assert_eq!(found[&key(0)], vector(0), "the first vector stays");
    assert_eq!(found[&key(2)], vector(2));
    let reader = VectorReader::connect(settings)
        .await
        .expect("reader connects")
        .expect("a database another pool sees");
    assert_eq!(reader.find(&keys).await.expect("reader finds"), found);
    // Beyond the bound the oldest go, per model.
    assert_eq!(store.text_vectors_evict("mini", 2).await.expect("evict"), 2);
    assert_eq!(store.text_vectors_evict("mini", 2).await.expect("evict"), 0);
    let left = store.text_vectors_find(&keys).await.expect("find");
    let mut left: Vec<&String> = left.keys().collect();
    left.sort();
    assert_eq!(left, vec![&key(2), &key(3)]);
    assert_eq!(store.text_vectors_len("other").await.expect("len"), 1);
}

#[tokio::test]
async fn a_vector_reader_sees_no_database_in_memory() {
    let reader = VectorReader::connect(&settings_for("sqlite::memory:"))
        .await
        .expect("no error");
    assert!(reader.is_none());
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
    model_answers_persist_bounded_per_model(&store).await;
    text_vectors_persist_bounded(&store, &settings_for(&url)).await;
    maintenance_runs_keep_the_model_usage(&store).await;
    outbox_rows_keep_the_request_trace(&store).await;
    an_event_is_settled_once(&store).await;
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
    model_answers_persist_bounded_per_model(&store).await;
    text_vectors_persist_bounded(&store, &settings_for(&database.url)).await;
    maintenance_runs_keep_the_model_usage(&store).await;
    outbox_rows_keep_the_request_trace(&store).await;
    an_event_is_settled_once(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}

/// Processes starting together on a fresh database (every service of a deployment, replicas)
/// all open it: the migrations run once, under a lock, instead of each process creating the
/// same tables at once and failing on the others'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_opened_together_on_a_fresh_postgres_database_all_start() {
    use ontoloop_migrations::MigratorTrait as _;
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let opening: Vec<_> = (0..6)
        .map(|_| {
            let settings = settings_for(&database.url);
            tokio::spawn(async move { Store::open(&settings).await })
        })
        .collect();
    for open in opening {
        let store = open
            .await
            .expect("task")
            .expect("every process opens the store");
        assert_eq!(
            store.applied_migrations().await.expect("applied").len(),
            ontoloop_migrations::Migrator::migrations().len()
        );
        store.close().await.expect("close");
    }
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
