//! No ontology is a valid start, end to end on the embedded default: a tenant that has pushed
//! only pages has them stored, indexed and read under the empty ontology, so Ask answers with
//! passages and "what do we know about X?" with the entity a titled page names, never
//! FAILED_PRECONDITION; the first ontology it sets reads every stored page again, and a slot
//! question is then answered with provenance.

use ontoloop_proto::v1;
use ontoloop_tests::{Clients, Sandbox, caller, doc, ontology};

const T: &str = "newcomer";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"feature","object_type":"team","patterns":["The {s} feature is owned by the {o} team."]}],
  "authority":{"default":2}}"#;

async fn ask(c: &Clients, text: &str, min_sequence: u64) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(T, "alice"),
            text: text.into(),
            min_sequence,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|status| panic!("{text}: {status:?}"))
        .into_inner()
}

/// The pages an answer's passages are cut from, each once.
fn cited(answer: &v1::Answer) -> Vec<&str> {
    let mut pages: Vec<&str> = answer
        .passages
        .iter()
        .map(|p| p.source_id.as_str())
        .collect();
    pages.dedup();
    pages
}

fn slots(answer: &v1::Answer) -> Vec<(&str, &str, &str)> {
    answer
        .hops
        .iter()
        .map(|h| {
            let source = h.evidence.first().map_or("", |e| e.source_id.as_str());
            (h.predicate.as_str(), h.value.as_str(), source)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_alone_answer_and_the_first_ontology_reads_them_again() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let pages = [
        doc(
            "kep-12",
            "wiki",
            "# KEP-12: Pod Spread\n\nPod Spread places replicas evenly across zones, so one \
             zone failing takes few of them down.\n\nThe Pod Spread feature is owned by the \
             Scheduling team.",
            &[],
            0.0,
        ),
        doc(
            "pricing",
            "pricing-page",
            "# Pricing\n\nThe Pro plan costs €49 per month.",
            &[],
            0.0,
        ),
    ];
    let mut seq = 0;
    for page in pages {
        seq = c.push(T, "integration", page).await.expect("page");
    }

    // A question in words: the passage that answers it.
    let placed = ask(&c, "How are replicas placed across zones?", seq).await;
    assert_eq!(
        placed.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{placed:?}"
    );
    assert_eq!(cited(&placed), ["kep-12"]);
    // A slot question has no slot to answer it yet: the page that says it.
    let price = ask(&c, "How much does the Pro plan cost?", seq).await;
    assert_eq!(
        price.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{price:?}"
    );
    assert_eq!(cited(&price), ["pricing"]);
    assert!(price.value.is_empty() && price.hops.is_empty());
    // About the entity the titled page names, by its id or its name: it, and its passages.
    let about = ask(&c, "What do we know about KEP-12?", seq).await;
    assert_eq!(
        about.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{about:?}"
    );
    assert!(!about.entity.is_empty(), "{about:?}");
    assert_eq!(cited(&about), ["kep-12"]);
    assert!(about.hops.is_empty(), "no ontology, no slot: {about:?}");
    let by_name = ask(&c, "What is Pod Spread?", seq).await;
    assert_eq!(by_name.entity, about.entity, "{by_name:?}");
    assert_eq!(cited(&by_name), ["kep-12"]);

    // The first ontology: every stored page is read again under it, in one rebuild.
    let set = c
        .push(T, "integration", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    let price = ask(&c, "How much does the Pro plan cost?", set).await;
    assert_eq!(price.status, v1::AnswerStatus::Answered as i32, "{price:?}");
    assert_eq!(price.value, "49");
    assert_eq!(price.evidence[0].source_id, "pricing");
    assert!(
        price.evidence[0].extracted_at.is_some(),
        "a fact of the graph"
    );
    // The entity named before the ontology is the one its facts now hang on.
    let about = ask(&c, "What do we know about Pod Spread?", set).await;
    assert_eq!(
        about.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{about:?}"
    );
    assert_eq!(about.entity, by_name.entity);
    assert_eq!(slots(&about), [("owned_by", "Scheduling", "kep-12")]);
    assert_eq!(cited(&about), ["kep-12"]);
    assert!(about.value.is_empty() && about.evidence.is_empty());
    let runs = c
        .analyst
        .clone()
        .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
            caller: caller(T, "ops"),
            min_sequence: set,
        })
        .await
        .expect("runs")
        .into_inner()
        .runs;
    let rebuilds: Vec<u64> = runs
        .iter()
        .filter(|r| r.mode == "rebuild")
        .map(|r| r.pages_read)
        .collect();
    assert_eq!(rebuilds, [2], "{runs:?}");
    sandbox.shutdown().await.expect("clean shutdown");
}

/// What `principal` is answered to `text`.
async fn ask_as(c: &Clients, principal: &str, text: &str, min_sequence: u64) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(T, principal),
            text: text.into(),
            min_sequence,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|status| panic!("{text}: {status:?}"))
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_asking_one_relation_of_different_people_form_one_pattern() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let mut seq = 0;
    for (id, body) in [
        (
            "melanie",
            "# Melanie\n\nMelanie went camping with her family; her activities include \
             painting, and she does partake in pottery.",
        ),
        (
            "nate",
            "# Nate\n\nNate walks his turtles every morning; those are his favourite activities. \
             Nate keeps two pet turtles.",
        ),
    ] {
        seq = c
            .push(T, "integration", doc(id, "wiki", body, &[], 0.0))
            .await
            .expect("page");
    }
    // Three agents ask one relation of two people; a fourth asks another. The ontology (the
    // empty one) has no relation, so passages answer and each reports the relation missing.
    for (agent, question) in [
        ("alice", "What activities has Melanie done with her family?"),
        ("bob", "What activities does Melanie partake in?"),
        ("carol", "What activities does Nate do with his turtles?"),
        ("dave", "What pets does Nate have?"),
    ] {
        let answer = ask_as(&c, agent, question, seq).await;
        assert_eq!(
            answer.status,
            v1::AnswerStatus::AnsweredPassages as i32,
            "{question}: {answer:?}"
        );
    }
    let listed = || {
        let mut analyst = c.analyst.clone();
        async move {
            let mut found: Vec<(String, u64, u64)> = analyst
                .list_patterns(v1::ListPatternsRequest {
                    caller: caller(T, "ops"),
                    ..Default::default()
                })
                .await
                .expect("patterns")
                .into_inner()
                .patterns
                .into_iter()
                .map(|p| (p.id, p.signal_count, p.agent_count))
                .collect();
            found.sort();
            found
        }
    };
    let want = vec![
        ("missing_relationship_type:activities".to_owned(), 3, 3),
        ("missing_relationship_type:pets".to_owned(), 1, 1),
    ];
    assert!(
        ontoloop_tests::wait_until(std::time::Duration::from_secs(10), || async {
            listed().await == want
        })
        .await,
        "one pattern per relation asked, not per question: {:?}",
        listed().await
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
