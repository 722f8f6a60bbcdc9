//! Nothing of one tenant is reachable through another's identifiers, on both backends: intake
//! sequence numbers are counted per tenant and answer, wait, fail and settle only for their own
//! tenant; signals of two tenants whose tenant and key join to the same text are both kept;
//! learned sampling rates are per tenant. PostgreSQL runs in a database created for the test and dropped after.

use std::time::Duration;

use chrono::Utc;
use ontoloop_settings::Loader;
use ontoloop_store::{KnowledgeCommit, RateRecord, Settled, SignalRecord, Store, intake_state};
use ontoloop_testkit::servers::PgDatabase;

async fn open(url: &str) -> Store {
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", url)
        .load()
        .expect("settings");
    Store::open(&settings.store).await.expect("store opens")
}

async fn intake_numbers_belong_to_their_tenant(store: &Store) {
    let now = Utc::now();
    // The victim's third event: a number the other tenant, with one event, does not have.
    let mut victim = 0;
    for _ in 0..3 {
        victim = store
            .intake_append("victim", None, "doc.upsert", "{}", now)
            .await
            .expect("append")
            .0;
    }
    let (own, _) = store
        .intake_append("other", None, "doc.upsert", "{}", now)
        .await
        .expect("append");
    let never = victim.max(own) + 1_000;
    let pending = Some((intake_state::PENDING.to_owned(), None));
    assert_eq!(
        store.intake_state("victim", victim).await.expect("read"),
        pending
    );
    assert_eq!(
        store.intake_state("other", victim).await.expect("read"),
        store.intake_state("other", never).await.expect("read"),
        "another tenant's number reads exactly like one that never existed"
    );
    assert_eq!(
        store.intake_state("other", victim).await.expect("read"),
        None
    );
    let short = Duration::from_millis(50);
    assert_eq!(
        store
            .wait_settled("other", victim, short)
            .await
            .expect("wait"),
        Settled::Unknown
    );

    // Failing or settling another tenant's number, directly or inside a commit, changes nothing.
    store
        .intake_fail("other", victim, "forged")
        .await
        .expect("fail");
    let commit = KnowledgeCommit {
        settled: vec![(victim, Some("forged".to_owned())), (own, None)],
        ..KnowledgeCommit::default()
    };
    store
        .commit_knowledge("other", 0, commit)
        .await
        .expect("commit");
    assert_eq!(
        store.intake_state("victim", victim).await.expect("read"),
        pending,
        "the victim's event is untouched"
    );
    assert_eq!(
        store.intake_state("other", own).await.expect("read"),
        Some((intake_state::APPLIED.to_owned(), None)),
        "the committing tenant's own number is settled"
    );
    assert_eq!(
        store
            .wait_settled("victim", victim, short)
            .await
            .expect("wait"),
        Settled::Pending
    );
    store
        .intake_fail("victim", victim, "refused")
        .await
        .expect("fail");
    assert_eq!(
        store
            .wait_settled("victim", victim, short)
            .await
            .expect("wait"),
        Settled::Failed("refused".to_owned())
    );
}

async fn intake_numbers_are_counted_per_tenant(store: &Store) {
    let now = Utc::now();
    let mut numbers: Vec<(&str, i64)> = Vec::new();
    for tenant in ["count-a", "count-b", "count-a", "count-a", "count-b"] {
        let (seq, duplicate) = store
            .intake_append(tenant, None, "doc.upsert", "{}", now)
            .await
            .expect("append");
        assert!(!duplicate);
        numbers.push((tenant, seq));
    }
    assert_eq!(
        numbers,
        vec![
            ("count-a", 1),
            ("count-b", 1),
            ("count-a", 2),
            ("count-a", 3),
            ("count-b", 2)
        ],
        "each tenant counts its own events, so a number says nothing of other tenants'"
    );
    // A retry with the same key gets its number back; the same key of another tenant is new.
    let (first, _) = store
        .intake_append("count-a", Some("k"), "doc.upsert", "{}", now)
        .await
        .expect("append");
    assert_eq!(
        store
            .intake_append("count-a", Some("k"), "doc.upsert", "{}", now)
            .await
            .expect("append"),
        (first, true)
    );
    assert_eq!(
        store
            .intake_append("count-b", Some("k"), "doc.upsert", "{}", now)
            .await
            .expect("append"),
        (3, false)
    );
    // Appends racing for one tenant's next number all get one, without gaps or repeats.
    let racing: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .intake_append("count-race", None, "doc.upsert", "{}", Utc::now())
                    .await
            })
        })
        .collect();
    let mut got = Vec::new();
    for task in racing {
        got.push(task.await.expect("joined").expect("append").0);
    }
    got.sort_unstable();
    assert_eq!(got, (1..=16).collect::<Vec<i64>>());
}

async fn signal_keys_do_not_collide(store: &Store) {
    let at = Utc::now();
    let record = |tenant, key| SignalRecord {
        tenant,
        idempotency_key: key,
        signal_type: "entity_missing",
        subject: "project kite",
        agent_id: "agent",
        query: "who leads project kite?",
        at,
        trace_context: None,
    };
    // `a` + `b-c` and `a-b` + `c` join to the same `a-b-c`.
    assert!(
        store
            .record_signal(&record("a", "b-c"))
            .await
            .expect("record")
    );
    assert!(
        store
            .record_signal(&record("a-b", "c"))
            .await
            .expect("record")
    );
    assert!(
        !store
            .record_signal(&record("a-b", "c"))
            .await
            .expect("record"),
        "a retry is still a duplicate"
    );
    for tenant in ["a", "a-b"] {
        let frequency = store
            .signal_frequency(tenant, "entity_missing", "project kite", at)
            .await
            .expect("count");
        assert_eq!(frequency.occurrences, 1, "{tenant}");
    }
}

async fn sampling_rates_are_per_tenant(store: &Store) {
    let rate = |tenant: &str, rate| RateRecord {
        tenant: tenant.to_owned(),
        signal_type: "entity_missing".to_owned(),
        source: "crm".to_owned(),
        domain: "general".to_owned(),
        rate,
        approvals: 0,
        rejections: 0,
    };
    assert!(
        store
            .supervisor_rates("acme")
            .await
            .expect("read")
            .is_empty()
    );
    store
        .save_rate(&rate("acme", 0.5), false, Utc::now())
        .await
        .expect("save");
    assert!(
        store
            .supervisor_rates("globex")
            .await
            .expect("read")
            .is_empty(),
        "acme's lesson is not globex's"
    );
    store
        .save_rate(&rate("globex", 0.01), true, Utc::now())
        .await
        .expect("save");
    let acme = store.supervisor_rates("acme").await.expect("read");
    assert_eq!(
        acme,
        vec![RateRecord {
            rejections: 1,
            ..rate("acme", 0.5)
        }]
    );
    let globex = store.supervisor_rates("globex").await.expect("read");
    assert_eq!(
        globex,
        vec![RateRecord {
            approvals: 1,
            ..rate("globex", 0.01)
        }]
    );
}

async fn pending_events_before_a_number_are_the_tenants_own(store: &Store) {
    let now = Utc::now();
    for (tenant, body) in [
        ("order-a", "a1"),
        ("order-b", "b1"),
        ("order-a", "a2"),
        ("order-a", "a3"),
        ("order-a", "a4"),
    ] {
        store
            .intake_append(tenant, None, "doc.upsert", body, now)
            .await
            .expect("append");
    }
    // The second is settled (failed here; applied is the same for the look-up).
    store
        .intake_fail("order-a", 2, "refused")
        .await
        .expect("fail");
    assert_eq!(
        store
            .intake_pending_before("order-a", 4, 10)
            .await
            .expect("read"),
        vec![(1, "a1".to_owned()), (3, "a3".to_owned())],
        "the tenant's own pending events below the number, lowest first; settled ones skipped"
    );
    assert_eq!(
        store
            .intake_pending_before("order-a", 4, 1)
            .await
            .expect("read"),
        vec![(1, "a1".to_owned())],
        "at most the limit"
    );
    assert!(
        store
            .intake_pending_before("order-a", 1, 10)
            .await
            .expect("read")
            .is_empty()
    );
    assert_eq!(
        store
            .intake_pending_before("order-b", 5, 10)
            .await
            .expect("read"),
        vec![(1, "b1".to_owned())],
        "never another tenant's"
    );
    assert_eq!(
        store
            .intake_pending_numbers_before("order-a", 4, 10)
            .await
            .expect("read"),
        vec![1, 3],
        "the numbers alone, as the events with their bodies"
    );
}

async fn all(store: &Store) {
    intake_numbers_belong_to_their_tenant(store).await;
    intake_numbers_are_counted_per_tenant(store).await;
    signal_keys_do_not_collide(store).await;
    sampling_rates_are_per_tenant(store).await;
    pending_events_before_a_number_are_the_tenants_own(store).await;
}

#[tokio::test]
async fn sqlite_tenants_are_isolated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&format!(
        "sqlite://{}/isolation.db?mode=rwc",
        dir.path().display()
    ))
    .await;
    all(&store).await;
}

#[tokio::test]
async fn postgres_tenants_are_isolated() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = open(&database.url).await;
    all(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
