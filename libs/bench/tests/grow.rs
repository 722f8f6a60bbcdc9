//! `ontoloop bench grow` on the small world shipped in tests/fixtures: with its predicates
//! stripped every question fails and reports a signal, the proposal's predicates that failed
//! questions ask for agree with the world's own, are approved and applied, and every question is
//! then answered as under the full ontology, none wrong.

use ontoloop::client::Clients;
use ontoloop_bench::grow::{self, Dashboard, Options};
use ontoloop_core::ServiceKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stripped_world_grows_its_ontology_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = ontoloop_settings::Loader::new()
        .set(
            "store.url",
            format!("sqlite://{}/grow.db?mode=rwc", dir.path().display()),
        )
        .set("queue.url", "memory")
        .load()
        .expect("settings");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/lab-grow.world.json"
    ))
    .expect("the fixture world");
    let world = ontoloop_core::world::World::parse(&text).expect("a valid world");
    let local = ontoloop::up::Local::start(settings).await.expect("start");
    let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls)
        .await
        .expect("clients");
    let dashboard = Dashboard {
        addr: local
            .http_addrs
            .iter()
            .find(|(kind, _)| *kind == ServiceKind::Analyst)
            .map(|(_, addr)| *addr)
            .expect("the analyst's HTTP address"),
    };
    let setup = local.ctx.extraction().await;
    let report = grow::run(
        &world,
        clients,
        &setup,
        &dashboard,
        &Options::default(),
        &mut |_| {},
    )
    .await
    .expect("the benchmark runs");
    local.stop().await.expect("stop");

    assert_eq!(report.asks, 12);
    assert_eq!(report.accuracy_full, 1.0);
    assert_eq!(report.accuracy_before, 0.0);
    assert_eq!(report.accuracy_after, 1.0, "{}", report.to_text());
    assert_eq!(report.wrong_unhedged, 0);
    assert_eq!(report.failed_questions, 12);
    assert_eq!(report.healed_questions, 12);
    assert!(report.signals >= 12, "{}", report.to_text());
    let decided: Vec<(&str, &str, bool)> = report
        .decisions
        .iter()
        .map(|d| (d.predicate.as_str(), d.world_predicate.as_str(), d.approved))
        .collect();
    assert_eq!(
        decided,
        vec![
            ("custodian", "custodian", true),
            ("firmware", "firmware", true),
            ("status", "status", true),
        ]
    );
    assert_eq!(report.max_decisions_per_world_predicate, 1);
    assert!(
        report.types_proposed.iter().any(|t| t == "instrument"),
        "{:?}",
        report.types_proposed
    );
}
