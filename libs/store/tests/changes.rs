//! `knowledge_changes_since` on both backends: what commits after a version wrote (pages,
//! extraction log, entities, facts — a fact superseded later read as it is now — and entities
//! merged away), in order whatever order a commit wrote them in; the pages handed over before
//! the rest is read (`knowledge_changes_since_with`); an empty change set at the current
//! version; and `None` (load whole) across an ontology change or from a version the store kept
//! no commit record of.

use std::collections::BTreeSet;

use chrono::Utc;
use ontoloop_core::knowledge::{Entity, Fact, PageVersion, Scope, SourceRef};
use ontoloop_settings::Loader;
use ontoloop_store::{KnowledgeChanges, KnowledgeCommit, Store};
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

fn page(id: &str, version: u64) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version,
        title: id.into(),
        origin: "wiki".into(),
        body: format!("{id} version {version}"),
        updated_at: Utc::now(),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

fn entity(id: &str) -> Entity {
    Entity {
        id: id.into(),
        name: id.into(),
        entity_type: Some("service".into()),
        aliases: BTreeSet::from([id.to_owned()]),
    }
}

fn fact(id: u64, entity: &str, object: &str) -> Fact {
    let now = Utc::now();
    Fact {
        id,
        entity: entity.into(),
        predicate: "owned_by".into(),
        object: object.into(),
        source: SourceRef {
            source_id: "p".into(),
            version: 1,
            origin: "wiki".into(),
        },
        seen_version: 1,
        authority: 1,
        extracted_at: now,
        valid_from: now,
        valid_to: None,
        extractor: "patterns".into(),
        confidence: 1.0,
        acl: Vec::new(),
        scope: Default::default(),
    }
}

/// What commits after `since` wrote; `None` when the tenant must be loaded whole.
async fn changes_since(store: &Store, tenant: &str, since: i64) -> Option<KnowledgeChanges> {
    store
        .knowledge_changes_since(tenant, since)
        .await
        .expect("read")
}

async fn every_case(store: &Store) {
    let tenant = "changes";
    let v1 = store
        .commit_knowledge(
            tenant,
            0,
            KnowledgeCommit {
                ontology: Some("{}".into()),
                ..Default::default()
            },
        )
        .await
        .expect("ontology");
    let v2 = store
        .commit_knowledge(
            tenant,
            v1,
            KnowledgeCommit {
                pages: vec![page("p", 1)],
                entities: vec![entity("ent:a"), entity("ent:b")],
                facts: vec![fact(1, "ent:a", "Atlas")],
                extraction_log: vec![("p".into(), 1, Utc::now())],
                ..Default::default()
            },
        )
        .await
        .expect("page");
    // From before the ontology: load whole.
    assert!(changes_since(store, tenant, 0).await.is_none());
    let mut superseded = fact(1, "ent:a", "Atlas");
    superseded.valid_to = Some(Utc::now());
    let v3 = store
        .commit_knowledge(
            tenant,
            v2,
            KnowledgeCommit {
                pages: vec![page("p", 2)],
                facts: vec![
                    superseded.clone(),
                    Fact {
                        // A value that holds in one scope keeps it through the store.
                        scope: Scope::parse("region=EU, plan=Pro").expect("scope"),
                        ..fact(2, "ent:a", "Borealis")
                    },
                ],
                removed_entities: vec!["ent:b".into()],
                extraction_log: vec![("p".into(), 2, Utc::now())],
                ..Default::default()
            },
        )
        .await
        .expect("second version");
    let changes = changes_since(store, tenant, v1)
        .await
        .expect("replayable from the ontology's version");
    assert_eq!(changes.version, v3);
    assert_eq!(
        changes.pages.iter().map(|p| p.version).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(changes.extraction_log, vec![("p".to_owned(), 2)]);
    assert_eq!(
        changes.entities.iter().map(|e| &e.id).collect::<Vec<_>>(),
        vec!["ent:a"],
        "ent:b was removed after it was written"
    );
    assert_eq!(changes.removed_entities, vec!["ent:b".to_owned()]);
    assert_eq!(changes.facts.len(), 2);
    assert!(changes.facts[0].valid_to.is_some(), "read as it is now");
    // The pages go to `with_pages` before the rest is read, and come back with what it made.
    let (handed, made) = store
        .knowledge_changes_since_with(tenant, v1, |pages| async move {
            let versions: Vec<u64> = pages.iter().map(|p| p.version).collect();
            (pages, versions)
        })
        .await
        .expect("read")
        .expect("replayable");
    assert_eq!(made, vec![1, 2]);
    assert_eq!(handed.pages, changes.pages);
    assert_eq!(handed.facts, changes.facts);
    assert_eq!(handed.entities, changes.entities);
    let since_v2 = changes_since(store, tenant, v2).await.expect("replayable");
    assert_eq!(since_v2.pages.len(), 1);
    assert_eq!(since_v2.facts.len(), 2);
    assert!(since_v2.entities.is_empty());
    let none = changes_since(store, tenant, v3)
        .await
        .expect("at the current version");
    assert_eq!(none.version, v3);
    assert!(none.pages.is_empty() && none.facts.is_empty() && none.entities.is_empty());
    // A version ahead of the store (a reader of another store): load whole.
    assert!(changes_since(store, tenant, v3 + 5).await.is_none());
    // Rows one commit wrote out of order come back in order: pages by id then version,
    // entities and facts by id.
    let v4 = store
        .commit_knowledge(
            tenant,
            v3,
            KnowledgeCommit {
                pages: vec![page("z", 1), page("q", 2), page("q", 1)],
                entities: vec![entity("ent:z"), entity("ent:c")],
                facts: vec![fact(9, "ent:z", "Zephyr"), fact(5, "ent:c", "Comet")],
                ..Default::default()
            },
        )
        .await
        .expect("third version");
    let ordered = changes_since(store, tenant, v3).await.expect("replayable");
    assert_eq!(ordered.version, v4);
    assert_eq!(
        ordered
            .pages
            .iter()
            .map(|p| (p.source_id.as_str(), p.version))
            .collect::<Vec<_>>(),
        vec![("q", 1), ("q", 2), ("z", 1)]
    );
    assert_eq!(
        ordered.entities.iter().map(|e| &e.id).collect::<Vec<_>>(),
        vec!["ent:c", "ent:z"]
    );
    assert_eq!(
        ordered.facts.iter().map(|f| f.id).collect::<Vec<_>>(),
        vec![5, 9]
    );
    // The whole load agrees.
    let rows = store.load_knowledge(tenant).await.expect("load");
    assert_eq!(rows.version, v4);
    assert_eq!(rows.facts.len(), 4);
    assert_eq!(rows.entities.len(), 3);
    let scopes: Vec<String> = rows.facts.iter().map(|f| f.scope.encode()).collect();
    assert!(
        scopes.contains(&String::new()) && scopes.contains(&"plan=Pro, region=EU".to_owned()),
        "{scopes:?}"
    );
}

#[tokio::test]
async fn sqlite_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/changes.db?mode=rwc", dir.path().display());
    let store = connect(&url).await;
    every_case(&store).await;
    store.close().await.expect("close");
}

#[tokio::test]
async fn postgres_changes() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let store = connect(&database.url).await;
    every_case(&store).await;
    store.close().await.expect("close");
    database.drop_now().await.expect("drop test database");
}
