//! The `model` stage's cache kept in the store: a client built over a SQLite store asks a fake
//! OpenAI-compatible endpoint (127.0.0.1:0), its answers are written behind; a new client over
//! the same store (a restart) reads the same page with no request at all, and an edited page
//! asks only its changed sentence. Tokens come from the answers' `usage`; an unreadable stored
//! row is skipped, never fatal.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use chrono::Utc;
use ontoloop_core::knowledge::{
    Claim, ClaimModel, ExtractSettings, ExtractionSetup, Lexicon, Ontology, Stage,
};
use ontoloop_llm::{LlmSettings, ModelClient};
use ontoloop_settings::Loader;
use ontoloop_store::{CachedAnswer, Store};
use serde_json::{Value, json};

/// A harbour's ontology; no exact pattern reads the page below.
const ONTOLOGY: &str = r#"{
  "predicates": [
    {"name": "moored_at", "subject_type": "vessel", "object_type": "quay",
     "patterns": ["{s} is moored at the {o} quay."]},
    {"name": "crew_size", "subject_type": "vessel", "object_type": "number",
     "patterns": ["{s} carries a crew of {o:number}."]}
  ],
  "authority": {"default": 2}
}"#;

const PAGE: &str = "The Albatross now sits at the Northgate quay. \
                    On board the Albatross there are 14 sailors. \
                    The harbour smells of tar.";

/// The same page with its last sentence edited.
const EDITED: &str = "The Albatross now sits at the Northgate quay. \
                      On board the Albatross there are 14 sailors. \
                      The harbour smells of tar and rope.";

/// Every sentence the fake endpoint was asked, in order.
type Asked = Arc<Mutex<Vec<String>>>;

/// The fake endpoint's answer: a claim for the sentences that state one, and a `usage` block
/// of 10 prompt and 3 completion tokens per sentence.
async fn complete(State(asked): State<Asked>, Json(body): Json<Value>) -> Json<Value> {
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let sentences: Vec<String> = user
        .lines()
        .filter_map(|line| line.split_once(". "))
        .filter(|(n, _)| n.parse::<usize>().is_ok())
        .map(|(_, sentence)| sentence.to_owned())
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
    }
    let count = sentences.len() as u64;
    if let Ok(mut all) = asked.lock() {
        all.extend(sentences);
    }
    Json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant",
                     "content": json!({"claims": claims}).to_string()}}],
        "usage": {"prompt_tokens": 10 * count, "completion_tokens": 3 * count},
    }))
}

/// Starts the fake endpoint; its base URL and what it was asked.
async fn fake_model() -> (String, Asked) {
    let asked = Asked::default();
    let router = axum::Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(Arc::clone(&asked));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{address}/v1"), asked)
}

fn model_settings(base_url: &str) -> LlmSettings {
    LlmSettings {
        enabled: true,
        base_url: base_url.to_owned(),
        model: "harbour-model".to_owned(),
        api_key: String::new(),
        timeout_ms: 5_000,
        prompt_version: "prompt-v1".to_owned(),
    }
}

/// Reads `text` through a pipeline of patterns then the model, off the async workers (the
/// pipeline is synchronous).
async fn read(client: &Arc<ModelClient>, text: &'static str) -> Vec<Claim> {
    let model = Arc::clone(client) as Arc<dyn ClaimModel>;
    tokio::task::spawn_blocking(move || {
        let extract = ExtractSettings {
            stages: vec![Stage::Patterns, Stage::Model],
            ..ExtractSettings::default()
        };
        let setup = ExtractionSetup::new(extract, None).with_model(model);
        let ontology = setup.compile(Ontology::from_json(ONTOLOGY).expect("ontology"));
        ontology
            .extraction()
            .claims(&ontology, text, &Lexicon::default())
    })
    .await
    .expect("read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_survive_a_restart_and_an_edit_asks_only_its_changed_sentence() {
    let path = std::env::temp_dir().join(format!("ontoloop-model-cache-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", &url)
        .load()
        .expect("settings");
    let store = Store::open(&settings.store).await.expect("store");
    let (base, asked) = fake_model().await;
    let llm = model_settings(&base);

    // First start: every sentence is asked, in one request, and the tokens are counted.
    let (client, writer) = ontoloop_runtime::persisted_model_client(&llm, &store)
        .await
        .expect("client");
    let client = Arc::new(client);
    let claims = read(&client, PAGE).await;
    let kept: Vec<(&str, &str)> = claims
        .iter()
        .map(|c| (c.predicate.as_str(), c.object.as_str()))
        .collect();
    assert_eq!(kept, vec![("moored_at", "Northgate"), ("crew_size", "14")]);
    let cost = client.usage();
    assert_eq!(
        (cost.requests, cost.sentences_sent, cost.cache_hits),
        (1, 3, 0)
    );
    assert_eq!(
        (cost.prompt_tokens, cost.completion_tokens, cost.tokens),
        (30, 9, 39)
    );
    assert_eq!(client.unpersisted(), 0);
    // Stopping: the client goes, the writer stores what it was handed and ends.
    drop(client);
    writer.await.expect("the writer ends with the client");
    assert_eq!(
        store.model_cache_len("harbour-model").await.expect("len"),
        3
    );
    // A row that does not read (a hand edit, a bug elsewhere) must not stop the next start.
    store
        .model_cache_put(
            &[CachedAnswer {
                key: "f".repeat(64),
                model: "harbour-model".into(),
                prompt_version: "prompt-v1".into(),
                claims: "{not json".into(),
                created_at: Utc::now(),
            }],
            100,
        )
        .await
        .expect("put a bad row");

    // Restart over the same store: the same page costs nothing.
    let (client, writer) = ontoloop_runtime::persisted_model_client(&llm, &store)
        .await
        .expect("client after restart");
    let client = Arc::new(client);
    let again = read(&client, PAGE).await;
    assert_eq!(again, claims, "the cached answers read the same");
    let cost = client.usage();
    assert_eq!(
        (cost.requests, cost.cache_hits, cost.tokens),
        (0, 3, 0),
        "no request after a restart"
    );
    assert_eq!(asked.lock().expect("asked").len(), 3);

    // An edited page asks only its changed sentence.
    let edited = read(&client, EDITED).await;
    assert_eq!(edited, claims);
    let cost = client.usage();
    assert_eq!(
        (cost.requests, cost.sentences_sent, cost.cache_hits),
        (1, 1, 5)
    );
    assert_eq!(
        asked.lock().expect("asked").last().map(String::as_str),
        Some("The harbour smells of tar and rope.")
    );
    drop(client);
    writer.await.expect("writer");
    assert_eq!(
        store.model_cache_len("harbour-model").await.expect("len"),
        5
    );
    store.close().await.expect("close");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
