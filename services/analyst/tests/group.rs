//! A batch of a tenant's events applied together (`KnowledgeWriter::handle_batch`) ends exactly as
//! the same events applied one at a time: the same outcomes, the same intake states, the same
//! pages and facts; only the number of commits differs.

use std::collections::BTreeSet;

use chrono::Utc;
use ontoloop_analyst::knowledge::KnowledgeWriter;
use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::knowledge::{ExtractionSetup, Scope};
use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::{Store, intake_state};

const TENANT: &str = "acme";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"record":4,"default":1}}"#;

async fn store(dir: &tempfile::TempDir, name: &str) -> Store {
    let settings = ontoloop_settings::Loader::new()
        .env_vars([])
        .set(
            "store.url",
            format!("sqlite://{}/{name}.db?mode=rwc", dir.path().display()),
        )
        .load()
        .expect("settings");
    Store::open(&settings.store).await.expect("store")
}

fn page(id: &str, body: &str) -> Event {
    Event::DocUpsert {
        doc_id: id.into(),
        title: id.into(),
        origin: "wiki".into(),
        body: body.into(),
        acl: Vec::new(),
        hold: false,
        confidence: None,
        effective_from: None,
    }
}

fn record(entity: &str, predicate: &str, value: &str) -> Event {
    Event::RecordSet {
        source: "crm".into(),
        entity: entity.into(),
        predicate: predicate.into(),
        value: value.into(),
        effective_from: None,
        scope: Scope::default(),
    }
}

/// Accepts `event` into the intake log (leased, so nothing else publishes it) and returns the
/// message the relay would publish for it.
async fn accept(store: &Store, event: Event) -> Message {
    let envelope = EventEnvelope {
        tenant: TENANT.into(),
        seq: None,
        at: Utc::now(),
        accepted: None,
        event,
    };
    let body = envelope.to_json();
    let now = Utc::now();
    let intake = store
        .intake_accept(
            TENANT,
            None,
            envelope.event.kind(),
            &body,
            now,
            Some(now + chrono::Duration::hours(1)),
            None,
        )
        .await
        .expect("accept");
    ontoloop_runtime::outbox::event_message(TENANT, intake.seq, &body)
}

/// The events of the test, in intake order, split into the batches the queue delivers.
fn batches() -> Vec<Vec<Event>> {
    let ontology: serde_json::Value = serde_json::from_str(ONTOLOGY).expect("ontology");
    vec![
        vec![Event::OntologySet { ontology }],
        // A clean run: one commit.
        vec![
            page("pricing", "The Pro plan costs €49 per month."),
            page("kite", "Kite is owned by the Falcon team."),
            page("pricing", "The Pro plan costs €59 per month."),
            record("Team plan", "price", "19"),
        ],
        // A run with an event that can never apply: applied one by one, the refused one failed.
        vec![
            page("wren", "Wren is owned by the Heron team."),
            record("Team plan", "colour", "blue"),
            page("kite", "Kite is owned by the Osprey team."),
        ],
        // Then a page deleted and a record changed, with a page that states nothing new.
        vec![
            Event::DocDelete {
                doc_id: "wren".into(),
            },
            record("Team plan", "price", "21"),
            page("pricing", "The Pro plan costs €59 per month."),
        ],
    ]
}

/// What a tenant's knowledge holds, without times: each page's versions and every fact with
/// whether it still holds.
type Held = (
    BTreeSet<(String, u64)>,
    BTreeSet<(String, String, String, bool)>,
);

async fn held(writer: &KnowledgeWriter) -> Held {
    writer
        .read(TENANT, |_, graph, pages| {
            let pages = pages
                .iter()
                .map(|p| (p.source_id.clone(), p.version))
                .collect();
            let facts = graph
                .facts()
                .iter()
                .map(|f| {
                    (
                        f.entity.clone(),
                        f.predicate.clone(),
                        f.object.clone(),
                        f.valid_to.is_none(),
                    )
                })
                .collect();
            (pages, facts)
        })
        .await
        .expect("read")
        .expect("an ontology")
}

/// Intake states of the tenant's events 1..=n.
async fn states(store: &Store, n: i64) -> Vec<String> {
    let mut states = Vec::new();
    for seq in 1..=n {
        let (state, _) = store
            .intake_state(TENANT, seq)
            .await
            .expect("read")
            .expect("an intake event");
        states.push(state);
    }
    states
}

fn kinds(outcomes: &[Handled]) -> Vec<&'static str> {
    outcomes
        .iter()
        .map(|outcome| match outcome {
            Handled::Done => "done",
            Handled::Reject(_) => "reject",
            _ => "retry",
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_applies_in_fewer_commits_and_ends_as_one_event_at_a_time_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (together, alone) = (store(&dir, "together").await, store(&dir, "alone").await);
    let settings = ontoloop_settings::Settings::defaults();
    let grouped = KnowledgeWriter::new(together.clone(), ExtractionSetup::default(), &settings);
    let single = KnowledgeWriter::new(alone.clone(), ExtractionSetup::default(), &settings);
    let mut events = 0i64;
    let mut delivered = Vec::new();
    for batch in batches() {
        let mut messages = Vec::new();
        let mut twins = Vec::new();
        for event in batch {
            messages.push(accept(&together, event.clone()).await);
            twins.push(accept(&alone, event).await);
            events += 1;
        }
        let before = together.knowledge_version(TENANT).await.expect("version");
        let outcomes = grouped.handle_batch(&messages).await;
        let after = together.knowledge_version(TENANT).await.expect("version");
        let mut one_by_one = Vec::new();
        for message in &twins {
            one_by_one.push(single.handle(message).await);
        }
        assert_eq!(
            kinds(&outcomes),
            kinds(&one_by_one),
            "the same outcomes: {outcomes:?}"
        );
        if messages.len() > 1 && outcomes.iter().all(|o| *o == Handled::Done) {
            assert_eq!(
                after,
                before + 1,
                "a clean run of {} is one commit",
                messages.len()
            );
        }
        delivered.extend(messages);
    }
    assert_eq!(
        kinds(&grouped.handle_batch(&delivered[1..5]).await),
        ["done"; 4],
        "a redelivered run is acknowledged"
    );
    // Another replica holds an event between two of this batch's: the batch must not pass it.
    // Kite moves to the Alpha team, then to the Omega team; this writer gets the first event
    // before it and the Omega one, the other replica's Alpha one comes last.
    let later = [
        page("ledger", "Ledger is owned by the Crane team."),
        page("kite", "Kite is owned by the Alpha team."),
        page("kite", "Kite is owned by the Omega team."),
    ];
    let (mut mine, mut twins) = (Vec::new(), Vec::new());
    for event in later {
        mine.push(accept(&together, event.clone()).await);
        twins.push(accept(&alone, event).await);
        events += 1;
    }
    let batch = [mine[0].clone(), mine[2].clone()];
    assert_eq!(kinds(&grouped.handle_batch(&batch).await), ["done"; 2]);
    assert_eq!(kinds(&grouped.handle_batch(&mine[1..2]).await), ["done"]);
    for at in [0, 2, 1] {
        assert_eq!(single.handle(&twins[at]).await, Handled::Done);
    }
    // Pushes in flight are published in whatever order their writes finish: a batch that brings
    // a tenant's events out of order applies them in intake order, still as one commit.
    let swapped = [
        page("ledger", "Ledger is owned by the Stork team."),
        page("ledger", "Ledger is owned by the Wren team."),
    ];
    let (mut mine, mut twins) = (Vec::new(), Vec::new());
    for event in swapped {
        mine.push(accept(&together, event.clone()).await);
        twins.push(accept(&alone, event).await);
        events += 1;
    }
    let before = together.knowledge_version(TENANT).await.expect("version");
    let batch = [mine[1].clone(), mine[0].clone()];
    assert_eq!(kinds(&grouped.handle_batch(&batch).await), ["done"; 2]);
    assert_eq!(
        together.knowledge_version(TENANT).await.expect("version"),
        before + 1,
        "one commit"
    );
    for at in [1, 0] {
        assert_eq!(single.handle(&twins[at]).await, Handled::Done);
    }
    // An integration publishing straight to the queue (no intake number) sends one message
    // twice in one batch: it applies once.
    let direct = Message::with_id(
        "crm-1",
        EventEnvelope {
            tenant: TENANT.into(),
            seq: None,
            at: Utc::now(),
            accepted: None,
            event: record("Team plan", "price", "23"),
        }
        .to_json(),
    );
    let twice = [direct.clone(), direct.clone()];
    assert_eq!(kinds(&grouped.handle_batch(&twice).await), ["done"; 2]);
    for message in &twice {
        assert_eq!(single.handle(message).await, Handled::Done);
    }
    let (states_together, states_alone) = (
        states(&together, events).await,
        states(&alone, events).await,
    );
    assert_eq!(states_together, states_alone);
    assert_eq!(
        states_together
            .iter()
            .filter(|s| *s == intake_state::FAILED)
            .count(),
        1,
        "only the record naming a predicate the ontology lacks is refused: {states_together:?}"
    );
    let (pages, facts) = held(&grouped).await;
    assert_eq!((pages.clone(), facts.clone()), held(&single).await);
    assert_eq!(
        facts
            .iter()
            .filter(|(_, _, object, _)| object == "23")
            .count(),
        1,
        "a message twice in one batch is one fact: {facts:?}"
    );
    assert_eq!(
        pages.iter().filter(|(id, _)| id == "pricing").count(),
        2,
        "an unchanged body is no new version, redelivered or not: {pages:?}"
    );
    let holding: BTreeSet<&str> = facts
        .iter()
        .filter(|(_, _, _, holds)| *holds)
        .map(|(_, _, object, _)| object.as_str())
        .collect();
    assert!(
        holding.contains("59") && holding.contains("23") && !holding.contains("49"),
        "{facts:?}"
    );
    let holds = |team: &str| {
        holding
            .iter()
            .any(|object| object.eq_ignore_ascii_case(team))
    };
    assert!(
        holds("omega") && !holds("alpha") && !holds("osprey"),
        "{facts:?}"
    );
    assert!(
        holds("wren") && !holds("stork") && !holds("crane"),
        "{facts:?}"
    );
}
