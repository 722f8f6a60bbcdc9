//! The extraction pipeline's `model` stage through `ModelClient` against a fake
//! OpenAI-compatible server on 127.0.0.1:0 (run on a runtime of its own): grounded triples are
//! kept, invented ones dropped and counted, tokens counted from the answer's `usage`, a second
//! rebuild is answered from the cache, and a server that times out or answers garbage leaves the
//! sentences unclaimed without a panic.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use ontoloop_core::knowledge::{
    ClaimModel, ClaimSubject, ExtractSettings, ExtractionSetup, Lexicon, ModelCost, ModelUsage,
    Ontology, Stage,
};
use ontoloop_llm::{LlmSettings, ModelClient};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const ONTOLOGY: &str = r#"{
  "predicates": [
    {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR",
     "patterns": ["The {s} plan costs €{o:number} per user per month."]},
    {"name": "owned_by", "subject_type": "product|service", "object_type": "team",
     "patterns": ["{s} is owned by the {o} team."]}
  ],
  "authority": {"default": 2}
}"#;

/// A page no exact pattern reads: an assertion and a proposal.
const PAGE: &str = "You pay €49 per user each month for the Pro plan. \
                    We proposed €59 per user each month for the Pro plan.";

/// What the fake model answers (the sentence numbers follow `PAGE`).
const ANSWER: &str = r#"{"claims": [
  {"sentence": 1, "subject": "Pro plan", "predicate": "price", "object": "49"},
  {"sentence": 2, "subject": "Pro", "predicate": "price", "object": "59"},
  {"sentence": 1, "subject": "Enterprise", "predicate": "price", "object": "49"},
  {"sentence": 1, "subject": "Pro", "predicate": "discount", "object": "5"}
]}"#;

type Answer = fn(&Value) -> Option<String>;

/// A fake server on its own runtime; `answer` gives the assistant content for a request body,
/// or `None` to hold the request forever. Returns the runtime (keep it alive), the base URL and
/// the request count.
fn serve(answer: Answer) -> (tokio::runtime::Runtime, String, Arc<AtomicUsize>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let address = listener.local_addr().expect("address");
    runtime.spawn(async move {
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
                        let Some(content) = answer(&body) else {
                            std::future::pending::<()>().await;
                            unreachable!("pending never resolves");
                        };
                        let completion = json!({
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": 50, "completion_tokens": 12}
                        });
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(
                            completion.to_string(),
                        ))))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (runtime, format!("http://{address}/v1"), requests)
}

fn settings(base_url: &str, timeout_ms: u64) -> LlmSettings {
    LlmSettings {
        enabled: true,
        base_url: base_url.to_owned(),
        model: "fake".to_owned(),
        api_key: String::new(),
        timeout_ms,
        prompt_version: "prompt-v1".to_owned(),
    }
}

fn setup(client: Arc<ModelClient>) -> ExtractionSetup {
    let extract = ExtractSettings {
        stages: vec![Stage::Patterns, Stage::Model],
        ..ExtractSettings::default()
    };
    ExtractionSetup::new(extract, None).with_model(client as Arc<dyn ClaimModel>)
}

fn read(setup: &ExtractionSetup) -> Vec<ontoloop_core::knowledge::Claim> {
    let ontology = setup.compile(Ontology::from_json(ONTOLOGY).expect("ontology"));
    ontology
        .extraction()
        .claims(&ontology, PAGE, &Lexicon::default())
}

fn checked_answer(body: &Value) -> Option<String> {
    // The request carries the schema built from the ontology and numbers the sentences.
    let schema = &body["response_format"]["json_schema"]["schema"];
    let predicates = &schema["properties"]["claims"]["items"]["properties"]["predicate"]["enum"];
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    if *predicates != json!(["price", "owned_by"]) || !user.contains("\n2. We proposed") {
        return Some(format!("unexpected request: {body}"));
    }
    Some(ANSWER.to_owned())
}

#[test]
fn grounded_triples_are_kept_the_rest_counted_and_a_rebuild_pays_nothing() {
    let (_server, base, requests) = serve(checked_answer);
    let client = Arc::new(ModelClient::new(settings(&base, 5_000)).expect("client"));
    let setup = setup(Arc::clone(&client));

    let claims = read(&setup);

    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(claims[0].extractor, "model/fake/prompt-v1");
    assert_eq!(claims[0].subject, ClaimSubject::Named("Pro plan".into()));
    assert_eq!(claims[0].object, "49");
    assert_eq!(claims[0].confidence, 0.8);
    assert_eq!(
        setup.model_usage(),
        ModelUsage {
            calls: 1,
            errors: 0,
            sentences: 2,
            returned: 4,
            dropped: 3,
            kept: 1,
            corrected: 0,
            cost: ModelCost {
                requests: 1,
                sentences_sent: 2,
                cache_hits: 0,
                prompt_tokens: 50,
                completion_tokens: 12,
                tokens: 62
            }
        }
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);

    // A rebuild compiles the ontology again: every sentence comes from the cache.
    let again = read(&setup);
    assert_eq!(again, claims);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the rebuild made a request"
    );
    assert_eq!(client.usage().requests, 1);
    assert_eq!(client.usage().cache_hits, 2);
    let cost = setup.model_usage().cost;
    assert_eq!(
        (cost.requests, cost.cache_hits, cost.tokens),
        (1, 2, 62),
        "the cached rebuild cost no tokens"
    );
}

#[test]
fn called_from_inside_either_runtime_flavour_it_does_not_panic() {
    let (_server, base, _requests) = serve(checked_answer);
    let client = Arc::new(ModelClient::new(settings(&base, 5_000)).expect("client"));
    for multi in [false, true] {
        let mut builder = if multi {
            tokio::runtime::Builder::new_multi_thread()
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        let runtime = builder.enable_all().build().expect("runtime");
        // A fresh client each time so the request really goes out.
        let fresh = Arc::new(ModelClient::new(settings(&base, 5_000)).expect("client"));
        let claims = runtime.block_on(async {
            let setup = setup(Arc::clone(&fresh));
            tokio::spawn(async move { read(&setup) })
                .await
                .expect("task")
        });
        assert_eq!(claims.len(), 1, "multi-thread {multi}");
        assert_eq!(fresh.usage().requests, 1);
    }
    drop(client);
}

#[test]
fn a_silent_server_times_out_and_leaves_the_sentences_unclaimed() {
    let (_server, base, _requests) = serve(|_| None);
    let client = Arc::new(ModelClient::new(settings(&base, 200)).expect("client"));
    let setup = setup(client);

    let started = Instant::now();
    let claims = read(&setup);

    assert!(claims.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let usage = setup.model_usage();
    assert_eq!((usage.calls, usage.errors, usage.returned), (1, 1, 0));
}

#[test]
fn garbage_answers_are_errors_and_hallucinations_are_dropped() {
    let (_server, base, _requests) = serve(|_| Some("I cannot help with that.".to_owned()));
    let pipeline = setup(Arc::new(
        ModelClient::new(settings(&base, 5_000)).expect("client"),
    ));
    assert!(read(&pipeline).is_empty());
    assert_eq!(pipeline.model_usage().errors, 1);

    let (_server, base, _requests) = serve(|_| {
        Some(
            r#"{"claims": [
              {"sentence": 1, "subject": "Helix", "predicate": "owned_by", "object": "Atlas"},
              {"sentence": 9, "subject": "Pro", "predicate": "price", "object": "49"},
              {"subject": "Pro", "predicate": "price"}
            ]}"#
            .to_owned(),
        )
    });
    let pipeline = setup(Arc::new(
        ModelClient::new(settings(&base, 5_000)).expect("client"),
    ));
    assert!(read(&pipeline).is_empty());
    let usage = pipeline.model_usage();
    assert_eq!((usage.errors, usage.returned, usage.dropped), (0, 3, 3));
}
