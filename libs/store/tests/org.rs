//! The organisation tables on both backends: a generated world bulk loaded and read back whole,
//! one-event commits guarded by the org version, the change log readers catch up from, and
//! product facts replaced per documentation file. PostgreSQL runs in a database created for the
//! test and dropped after.

use chrono::Utc;
use ontoloop_org::hr::{HrEvent, OrgRecords, apply};
use ontoloop_org::product::Fact;
use ontoloop_settings::Loader;
use ontoloop_store::{OrgCommit, Store, StoreError, change_kind};
use ontoloop_testkit::generate::{WorldSpec, generate};
use ontoloop_testkit::load::load;
use ontoloop_testkit::servers::PgDatabase;

async fn open(url: &str) -> Store {
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", url)
        .load()
        .expect("settings");
    Store::open(&settings.store).await.expect("store opens")
}

async fn round_trip(store: &Store) {
    let world = generate(&WorldSpec {
        seed: 9,
        tenants: 2,
        people: 400,
        services: 40,
        items: 3_000,
        ..WorldSpec::default()
    });
    let loaded = load(store, &world).await.expect("bulk load");
    assert!(
        loaded.iter().all(|(.., version)| *version == 1),
        "{loaded:?}"
    );
    let first = &world.tenants[0];
    let snapshot = store
        .load_org_snapshot(&first.tenant)
        .await
        .expect("snapshot");
    assert_eq!(snapshot.org.version, 1);
    let records = OrgRecords::new(snapshot.org.people, snapshot.org.teams).expect("valid");
    assert_eq!(records, first.org, "HR records read back unchanged");
    assert_eq!(snapshot.facts, first.facts, "facts keep their order");
    let mut want = world.items_of(&first.tenant);
    want.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(
        snapshot.items, want,
        "items, ACLs and times read back unchanged"
    );
    let versions = store.org_versions().await.expect("versions");
    assert_eq!(
        versions,
        vec![("tenant-0".to_owned(), 1), ("tenant-1".to_owned(), 1)]
    );

    // One HR event, committed at the version it was applied to.
    let mut next = records.clone();
    let mover = next.people().nth(50).expect("a person").id.clone();
    let event = HrEvent::Transferred {
        person: mover.clone(),
        team: "team-0000".into(),
        manager: Some("p00000".into()),
        role: None,
    };
    apply(&mut next, &event).expect("transfer applies");
    let commit = OrgCommit {
        people: vec![next.person(&mover).expect("moved").clone()],
        change: (
            change_kind::HR.to_owned(),
            serde_json::to_string(&event).expect("encodes"),
        ),
        ..OrgCommit::default()
    };
    assert_eq!(
        store
            .commit_org(&first.tenant, 1, commit.clone())
            .await
            .expect("commit")
            .version,
        2
    );
    let stale = store.commit_org(&first.tenant, 1, commit).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    let rows = store.load_org(&first.tenant).await.expect("records");
    assert_eq!(rows.version, 2);
    let head = store.org_head(&first.tenant).await.expect("head");
    assert_eq!((head.version, head.committed_at), (2, rows.committed_at));
    assert!(head.committed_at.is_some());
    assert_eq!(
        OrgRecords::new(rows.people, rows.teams).expect("valid"),
        next
    );

    // A docs change replaces the facts of the files it names, and nothing else.
    let file_facts = vec![
        Fact::new("prod-new", "is_a", "product"),
        Fact::new("prod-new", "owned_by", "team-0001"),
    ];
    let docs = OrgCommit {
        files: vec![("docs/new.md".to_owned(), file_facts.clone())],
        change: (change_kind::DOCS.to_owned(), "{}".to_owned()),
        ..OrgCommit::default()
    };
    store
        .commit_org(&first.tenant, 2, docs)
        .await
        .expect("docs commit");
    let facts = store
        .load_product_facts(&first.tenant)
        .await
        .expect("facts");
    assert_eq!(facts.len(), first.facts.len() + 2);
    assert_eq!(&facts[..2], &file_facts[..], "docs/ sorts before generated");
    let gone = OrgCommit {
        files: vec![("docs/new.md".to_owned(), Vec::new())],
        change: (change_kind::DOCS.to_owned(), "{}".to_owned()),
        ..OrgCommit::default()
    };
    store
        .commit_org(&first.tenant, 3, gone)
        .await
        .expect("deletion");
    assert_eq!(
        store
            .load_product_facts(&first.tenant)
            .await
            .expect("facts"),
        first.facts
    );

    let changes = store
        .org_changes(&first.tenant, 1, 10)
        .await
        .expect("changes");
    let kinds: Vec<(i64, &str)> = changes
        .iter()
        .map(|c| (c.version, c.kind.as_str()))
        .collect();
    assert_eq!(kinds, vec![(2, "hr"), (3, "docs"), (4, "docs")]);
    let replayed: HrEvent = serde_json::from_str(&changes[0].body).expect("event body");
    assert_eq!(replayed, event);
    assert!(changes.iter().all(|c| c.at <= Utc::now()));
    assert_eq!(
        store.org_version("tenant-1").await.expect("version"),
        1,
        "tenants are independent"
    );
}

#[tokio::test]
async fn sqlite_org_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&format!(
        "sqlite://{}/org.db?mode=rwc",
        dir.path().display()
    ))
    .await;
    round_trip(&store).await;
}

#[tokio::test]
async fn postgres_org_round_trip() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = open(&database.url).await;
    round_trip(&store).await;
    store.close().await.ok();
    database.drop_now().await.expect("drop test database");
}
