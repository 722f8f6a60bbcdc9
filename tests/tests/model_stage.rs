//! The extraction pipeline's `model` stage in the whole system (embedded default, a fake
//! OpenAI-compatible endpoint on 127.0.0.1:0): every maintenance run lists what the stage did in
//! it — requests, sentences sent, cache hits, tokens from the answers' `usage`, triples dropped
//! by grounding — and its answers, kept in the store, make an edit ask only the changed sentence
//! and a rebuild after a restart ask nothing.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use ontoloop_proto::v1;
use ontoloop_settings::{Loader, Settings};
use ontoloop_tests::{Clients, Sandbox, caller, doc, ontology, wait_until};
use serde_json::{Value, json};

/// A harbour's ontology; no exact pattern reads the page below, so the model reads it all.
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"moored_at","subject_type":"vessel","object_type":"quay","patterns":["{s} is moored at the {o} quay."]},
  {"name":"crew_size","subject_type":"vessel","object_type":"number","patterns":["{s} carries a crew of {o:number}."]}],
  "authority":{"default":1}}"#;

const PAGE: &str = "The Albatross now sits at the Northgate quay. \
                    On board the Albatross there are 14 sailors. \
                    The harbour smells of tar.";

const EDITED: &str = "The Albatross now sits at the Northgate quay. \
                      On board the Albatross there are 14 sailors. \
                      The harbour smells of tar and rope.";

/// The fake endpoint: a claim for the sentences that state one, one invented claim on the
/// sentence about the smell (grounding drops it), and 10 prompt plus 3 completion tokens per
/// sentence. Counts its requests.
async fn fake_model() -> (String, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let requests = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let counted = Arc::clone(&counted);
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let bytes = request
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(
                            answer(&body).to_string(),
                        ))))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{address}/v1"), requests)
}

fn answer(body: &Value) -> Value {
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let sentences: Vec<&str> = user
        .lines()
        .filter_map(|line| line.split_once(". "))
        .filter(|(n, _)| n.parse::<usize>().is_ok())
        .map(|(_, sentence)| sentence)
        .collect();
    let mut claims = Vec::new();
    for (i, sentence) in sentences.iter().enumerate() {
        let n = i + 1;
        if sentence.contains("Northgate") {
            claims.push(json!({"sentence": n, "subject": "Albatross", "predicate": "moored_at", "object": "Northgate"}));
        }
        if sentence.contains("14 sailors") {
            claims.push(json!({"sentence": n, "subject": "Albatross", "predicate": "crew_size", "object": "14"}));
        }
        if sentence.contains("tar") {
            claims.push(json!({"sentence": n, "subject": "Albatross", "predicate": "crew_size", "object": "40"}));
        }
    }
    let count = sentences.len() as u64;
    json!({
        "choices": [{"index": 0, "message": {"role": "assistant",
                     "content": json!({"claims": claims}).to_string()}}],
        "usage": {"prompt_tokens": 10 * count, "completion_tokens": 3 * count},
    })
}

/// The embedded system on `store_url` with the model stage after the patterns.
fn settings(store_url: &str, model_url: &str) -> Settings {
    Loader::new()
        .env_vars([(
            "ONTOLOOP__EXTRACT__STAGES".to_owned(),
            "patterns,model".to_owned(),
        )])
        .set("store.url", store_url)
        .set("extract.model.enabled", "true")
        .set("extract.model.base_url", model_url)
        .set("extract.model.model", "harbour-model")
        .set("extract.model.timeout_ms", "5000")
        .load()
        .expect("settings")
}

/// The run `seq` caused.
async fn run(c: &Clients, tenant: &str, seq: u64) -> v1::MaintenanceRun {
    let runs = c
        .analyst
        .clone()
        .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
            caller: caller(tenant, "ops"),
            min_sequence: seq,
        })
        .await
        .expect("runs")
        .into_inner()
        .runs;
    runs.into_iter()
        .find(|r| r.sequence == seq)
        .expect("the event's run is listed")
}

/// (requests, sentences, cache hits, prompt, completion and all tokens, dropped, errors).
fn model(run: &v1::MaintenanceRun) -> (u64, u64, u64, u64, u64, u64, u64, u64) {
    (
        run.model_requests,
        run.model_sentences,
        run.model_cache_hits,
        run.model_prompt_tokens,
        run.model_completion_tokens,
        run.model_tokens,
        run.model_dropped,
        run.model_errors,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_lists_the_model_stage_cost_and_the_cache_spares_edits_and_restarts() {
    let (model_url, requests) = fake_model().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let store_url = format!("sqlite://{}/ontoloop.db?mode=rwc", dir.path().display());
    let t = "harbour";

    let sandbox = Sandbox::start(settings(&store_url, &model_url))
        .await
        .expect("the system starts");
    let c = sandbox.clients();
    c.push(t, "integration", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    let seq = c
        .push(t, "integration", doc("berths", "wiki", PAGE, &[], 0.0))
        .await
        .expect("page");
    let patch = run(&c, t, seq).await;
    assert_eq!(patch.mode, "patch");
    // One request for the three sentences; the invented crew size is dropped by grounding.
    assert_eq!(model(&patch), (1, 3, 0, 30, 9, 39, 1, 0), "{patch:?}");

    let seq = c
        .push(t, "integration", doc("berths", "wiki", EDITED, &[], 0.0))
        .await
        .expect("edit");
    let edit = run(&c, t, seq).await;
    assert_eq!(
        model(&edit),
        (1, 1, 2, 10, 3, 13, 1, 0),
        "only the changed sentence is asked: {edit:?}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 2);

    // The answers reach the store (written behind) before the system stops.
    let store = sandbox.ctx.store.clone();
    assert!(
        wait_until(Duration::from_secs(5), || {
            let store = store.clone();
            async move { store.model_cache_len("harbour-model").await.ok() == Some(4) }
        })
        .await,
        "the four answered sentences are stored"
    );
    sandbox.shutdown().await.expect("clean shutdown");

    // A restart over the same store: a rebuild reads every page again and asks nothing.
    let sandbox = Sandbox::start(settings(&store_url, &model_url))
        .await
        .expect("the system restarts");
    let c = sandbox.clients();
    let seq = c
        .push(
            t,
            "integration",
            v1::event::Kind::GraphMaintain(v1::GraphMaintain {
                mode: "rebuild".into(),
            }),
        )
        .await
        .expect("rebuild");
    let rebuild = run(&c, t, seq).await;
    assert_eq!(rebuild.mode, "rebuild");
    assert_eq!(rebuild.pages_read, 1);
    // Every sentence from the cache; the cached invention is grounded again, and dropped again.
    assert_eq!(
        model(&rebuild),
        (0, 0, 3, 0, 0, 0, 1, 0),
        "a rebuild after a restart pays nothing: {rebuild:?}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    sandbox.shutdown().await.expect("clean shutdown");
}
