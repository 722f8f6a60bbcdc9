//! Incremental equals rebuild: a read model brought forward commit by commit
//! (`Snapshots::get` patching with what each commit wrote) is, at every checkpoint, the model a
//! build from the store gives — the same version, pages, page versions, extraction log, graph
//! (entities, names, facts) and search rankings for readers of every ACL — after random events:
//! new pages, new versions, deletions and a source's listings, record values, renames (some
//! merging two services), ACL changes and maintenance runs.
//!
//! And callers that find no model at once wait for one build of it; a kept model follows
//! commits with no caller asking.
//!
//! `make test` runs 600 events; `INCREMENTAL_EVENTS=10000` runs the issue's size, and
//! `INCREMENTAL_SEED=N` replays a run.

use std::time::Duration;

use ontoloop_core::Caller;
use ontoloop_proto::v1;
use ontoloop_readmodel::{Snapshot, Snapshots};
use ontoloop_store::Settled;
use ontoloop_tests::{Sandbox, doc, ontology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TENANT: &str = "incremental";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"written_in","subject_type":"service","object_type":"language","patterns":["{s} is written in {o}."]}
],"authority":{"default":1,"hr":3}}"#;

const TEAMS: [&str; 6] = [
    "Atlas", "Borealis", "Cirrus", "Dorado", "Eridanus", "Fornax",
];
const LANGUAGES: [&str; 4] = ["Rust", "Go", "Java", "Python"];
const ACLS: [&[&str]; 4] = [&[], &[], &["cfo"], &["finance"]];

fn events() -> usize {
    std::env::var("INCREMENTAL_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600)
}

fn seed() -> u64 {
    std::env::var("INCREMENTAL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random)
}

/// Service `n`'s first name (letters, as the templates read names).
fn name(n: usize) -> String {
    let mut letters = String::new();
    let mut k = n;
    loop {
        letters.insert(0, char::from(b'a' + (k % 26) as u8));
        k /= 26;
        if k == 0 {
            break;
        }
    }
    format!("Svc{letters}")
}

/// One random event; `names` holds each service's current name (renames change it).
fn event(rng: &mut StdRng, names: &mut Vec<String>, renamed: &mut usize) -> v1::event::Kind {
    let roll = rng.random_range(0..100);
    if names.is_empty() || roll < 25 {
        names.push(name(names.len()));
    }
    let k = rng.random_range(0..names.len());
    let service = names[k].clone();
    let team = TEAMS[rng.random_range(0..TEAMS.len())];
    match roll {
        // A page, new or a new version: owner and language, sometimes one fact only, under an
        // ACL now and then.
        0..=59 => {
            let mut body = format!("{service} is owned by the {team} team.");
            if rng.random_bool(0.7) {
                let language = LANGUAGES[rng.random_range(0..LANGUAGES.len())];
                body.push_str(&format!(" {service} is written in {language}."));
            }
            let acl = ACLS[rng.random_range(0..ACLS.len())];
            doc(&format!("page-{k}"), "wiki", &body, acl, 0.0)
        }
        // A page deleted (sometimes one already gone or never written).
        60..=62 => v1::event::Kind::DocDelete(v1::DocDelete {
            doc_id: format!("page-{k}"),
        }),
        // The wiki's listing, which leaves out a page now and then.
        63..=64 => v1::event::Kind::SourceListing(v1::SourceListing {
            origin: "wiki".into(),
            doc_ids: (0..names.len())
                .filter(|_| rng.random_bool(0.9))
                .map(|k| format!("page-{k}"))
                .collect(),
        }),
        // A system-of-record value.
        65..=84 => v1::event::Kind::RecordSet(v1::RecordSet {
            source: "hr".into(),
            entity: service,
            predicate: "owned_by".into(),
            value: team.into(),
            effective_from: None,
            scope: String::new(),
        }),
        // A rename: the old name stays an alias; now and then to another service's name, which
        // merges the two.
        85..=94 => {
            *renamed += 1;
            let other = rng.random_range(0..names.len());
            let new = if names[other] != service && rng.random_bool(0.3) {
                names[other].clone()
            } else {
                format!("{}x{}", service, name(*renamed))
            };
            names[k] = new.clone();
            v1::event::Kind::RecordRename(v1::RecordRename {
                source: "hr".into(),
                old: service,
                new,
            })
        }
        // A maintenance run.
        _ => v1::event::Kind::GraphMaintain(v1::GraphMaintain {
            mode: ["patch", "repair", "rebuild"][rng.random_range(0..3)].into(),
        }),
    }
}

/// Every difference between the patched model and the one built whole, as text.
fn differences(patched: &Snapshot, built: &Snapshot, names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if patched.version != built.version {
        out.push(format!("version {} vs {}", patched.version, built.version));
    }
    if patched.current != built.current {
        out.push("current pages differ".into());
    }
    if patched.log != built.log {
        out.push(format!(
            "extraction log {:?} vs {:?}",
            patched.log, built.log
        ));
    }
    let key = |p: &ontoloop_core::knowledge::PageVersion| (p.source_id.clone(), p.version);
    let (mut a, mut b) = (patched.versions.clone(), built.versions.clone());
    a.sort_by_key(key);
    b.sort_by_key(key);
    if a != b {
        out.push("page versions differ".into());
    }
    if patched.latest_change != built.latest_change {
        out.push("latest change differs".into());
    }
    if patched.graph.entities().collect::<Vec<_>>() != built.graph.entities().collect::<Vec<_>>() {
        out.push("entities differ".into());
    }
    if patched.graph.facts() != built.graph.facts() {
        out.push("facts differ".into());
    }
    // Every name and alias either model knows resolves to the same entity in both.
    let known: std::collections::BTreeSet<&String> = [&patched.graph, &built.graph]
        .into_iter()
        .flat_map(|g| g.entities())
        .flat_map(|e| e.aliases.iter().chain([&e.name, &e.id]))
        .collect();
    for name in known {
        let (x, y) = (patched.graph.resolve(name), built.graph.resolve(name));
        if x.map(|e| &e.id) != y.map(|e| &e.id) {
            out.push(format!("{name:?} resolves to {x:?} vs {y:?}"));
        }
    }
    let readers = [
        Caller::new(TENANT, "alice").expect("caller"),
        Caller::new(TENANT, "cfo").expect("caller"),
        Caller::new(TENANT, "bob")
            .expect("caller")
            .with_groups(["finance".to_owned()]),
    ];
    let queries = TEAMS
        .iter()
        .map(|t| format!("which services does {t} own"))
        // At most 50 of the services, spread over the catalogue.
        .chain(
            names
                .iter()
                .step_by(names.len().div_ceil(50).max(1))
                .map(|n| format!("who owns {n}?")),
        )
        .chain(LANGUAGES.iter().map(|l| format!("written in {l}")));
    for query in queries {
        for reader in &readers {
            let (x, y) = (
                patched.index.search(&query, 10, reader),
                built.index.search(&query, 10, reader),
            );
            if x != y {
                out.push(format!(
                    "search {query:?} as {}: {x:?} vs {y:?}",
                    reader.principal()
                ));
            }
        }
    }
    out
}

/// The `[cache.read_models]` budget of the sandbox's settings.
fn budget(sandbox: &Sandbox) -> ontoloop_core::CacheBudget {
    sandbox.ctx.settings.cache.read_models
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_patched_commit_by_commit_equals_one_built_from_the_store() {
    let (n, seed) = (events(), seed());
    eprintln!("incremental: {n} events, INCREMENTAL_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let sandbox = Sandbox::embedded(&[]).await;
    let clients = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    let patched = Snapshots::new(
        store.clone(),
        sandbox.ctx.extraction().await,
        budget(&sandbox),
    );
    let fresh = Snapshots::new(
        store.clone(),
        sandbox.ctx.extraction().await,
        budget(&sandbox),
    );
    let settle = |seq: u64| {
        let store = store.clone();
        async move {
            let settled = store
                .wait_settled(TENANT, seq as i64, Duration::from_secs(60))
                .await
                .expect("wait");
            assert!(
                matches!(settled, Settled::Applied | Settled::Failed(_)),
                "event {seq} settled: {settled:?}"
            );
        }
    };
    let seq = clients
        .push(TENANT, "admin", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    settle(seq).await;
    let mut names: Vec<String> = Vec::new();
    let mut renamed = 0;
    let (mut patches, mut checkpoints) = (0, 0);
    let first = patched.get(TENANT).await.expect("first model").version;
    for i in 1..=n {
        let kind = event(&mut rng, &mut names, &mut renamed);
        let seq = clients.push(TENANT, "admin", kind).await.expect("push");
        // The reader catches up after one event or after several, as a live reader does.
        if rng.random_bool(0.4) || i % 50 == 0 {
            settle(seq).await;
            let model = patched.get(TENANT).await.expect("patched model");
            patches += 1;
            if i % 50 == 0 || i == n {
                let built = fresh.build(TENANT).await.expect("built model");
                let diff = differences(&model, &built, &names);
                assert!(
                    diff.is_empty(),
                    "after event {i} (seed {seed}) the patched model differs from the built \
                     one:\n{}",
                    diff.join("\n")
                );
                checkpoints += 1;
            }
        }
    }
    let last = patched.get(TENANT).await.expect("model").version;
    // Built whole once (its first use); every catch-up after that was a patch.
    let (built, patches_done) = patched.updates();
    assert_eq!(
        built, 1,
        "the patched reader built its model whole only at first use"
    );
    assert!(
        patches_done > 0 && patches_done <= patches,
        "{patches_done} patches"
    );
    eprintln!(
        "incremental: {n} events, versions {first} -> {last}, {patches} catch-ups, {checkpoints} \
         checkpoints equal to a model built from the store"
    );
    assert!(
        last > first + (n as i64) / 4,
        "the model moved: {first} -> {last}"
    );
    assert!(checkpoints >= n / 50, "{checkpoints} checkpoints");
    sandbox.shutdown().await.expect("clean shutdown");
}

/// Pushes one page naming one owner and waits until the analyst applied it.
async fn push_one_page(clients: &ontoloop_tests::Clients, store: &ontoloop_store::Store) {
    let seq = clients
        .push(
            TENANT,
            "admin",
            doc("p1", "wiki", "Svca is owned by the Atlas team.", &[], 1.0),
        )
        .await
        .expect("page");
    let settled = store
        .wait_settled(TENANT, seq as i64, Duration::from_secs(60))
        .await
        .expect("wait");
    assert_eq!(settled, Settled::Applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_that_find_no_model_wait_for_one_build() {
    let sandbox = Sandbox::embedded(&[]).await;
    let clients = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    clients
        .push(TENANT, "admin", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    push_one_page(&clients, &store).await;
    let models = std::sync::Arc::new(Snapshots::new(
        store,
        sandbox.ctx.extraction().await,
        budget(&sandbox),
    ));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let models = std::sync::Arc::clone(&models);
            tokio::spawn(async move { models.get(TENANT).await.map(|m| m.version) })
        })
        .collect();
    let mut versions = Vec::new();
    for reader in readers {
        versions.push(reader.await.expect("reader").expect("model"));
    }
    assert!(versions.iter().all(|v| *v == versions[0]), "{versions:?}");
    assert_eq!(
        models.updates().0,
        1,
        "eight callers found no model at once: one built it, the others waited for it"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

/// A kept model follows the store's commits with no caller asking (`Snapshots::follow`): after
/// a commit it is brought forward in the background, and `recent` then holds the commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_model_follows_commits_with_no_caller() {
    let sandbox = Sandbox::embedded(&[]).await;
    let clients = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    let seq = clients
        .push(TENANT, "admin", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    store
        .wait_settled(TENANT, seq as i64, Duration::from_secs(60))
        .await
        .expect("wait");
    let models = std::sync::Arc::new(Snapshots::new(
        store.clone(),
        sandbox.ctx.extraction().await,
        budget(&sandbox),
    ));
    models.follow();
    let before = models.get(TENANT).await.expect("model").version;
    push_one_page(&clients, &store).await;
    let version = store.knowledge_version(TENANT).await.expect("version");
    assert!(
        version > before,
        "the page was committed: {before} -> {version}"
    );
    // Only the follower brings it forward: no caller asks until it has.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while models.updates().1 == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (built, patched) = models.updates();
    assert_eq!(built, 1, "built once, by the first get");
    assert!(patched >= 1, "the follower brought the model forward");
    let model = models.recent(TENANT).await.expect("model");
    assert_eq!(model.version, version);
    assert!(model.current.contains_key("p1"));
    drop(model);
    sandbox.shutdown().await.expect("clean shutdown");
}
