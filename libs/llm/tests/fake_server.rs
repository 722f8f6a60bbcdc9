//! The extractor against a fake OpenAI-compatible server bound on 127.0.0.1:0, which checks
//! the request's shape and answers with canned content.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::AUTHORIZATION;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use ontoloop_core::knowledge::{ClaimSubject, Ontology, PredicateKind};
use ontoloop_llm::{LlmError, LlmExtractor, LlmSettings};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const ONTOLOGY: &str = r#"{
  "predicates": [
    {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR",
     "patterns": ["The {s} plan costs €{o:number} per user per month."]},
    {"name": "refund_days", "subject_type": "policy", "object_type": "number", "subject": "Refund policy",
     "patterns": ["Customers can request a refund within {o:number} days of purchase."]},
    {"name": "owned_by", "subject_type": "product|service", "object_type": "team",
     "patterns": ["{s} is owned by the {o} team."]},
    {"name": "formerly", "kind": "rename", "subject_type": "any", "object_type": "any",
     "patterns": ["{s} was formerly called {o}."]}
  ],
  "authority": {"record": 4, "default": 2}
}"#;

const MODEL: &str = "test-model";
const TEXT: &str = "The Pro plan costs €49 per user per month. Refunds within 30 days.";

/// What the fake server expects and what it answers.
struct Fake {
    api_key: Option<&'static str>,
    status: StatusCode,
    body: String,
}

/// Starts the fake server; returns its base URL.
async fn start(fake: Fake) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let fake = Arc::new(fake);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let fake = Arc::clone(&fake);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let fake = Arc::clone(&fake);
                    async move { Ok::<_, Infallible>(answer(&fake, request).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}/v1/")
}

/// The canned answer, or a 400 naming what is wrong with the request.
async fn answer(fake: &Fake, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    };
    match check(fake, request).await {
        Ok(()) => reply(fake.status, fake.body.clone()),
        Err(problem) => reply(StatusCode::BAD_REQUEST, problem),
    }
}

async fn check(fake: &Fake, request: Request<Incoming>) -> Result<(), String> {
    if request.method() != Method::POST || request.uri().path() != "/v1/chat/completions" {
        return Err(format!(
            "wrong route {} {}",
            request.method(),
            request.uri()
        ));
    }
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or_default().to_owned());
    let expected = fake.api_key.map(|key| format!("Bearer {key}"));
    if authorization != expected {
        return Err(format!(
            "authorization {authorization:?}, expected {expected:?}"
        ));
    }
    let bytes = request
        .into_body()
        .collect()
        .await
        .map_err(|err| err.to_string())?
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).map_err(|err| err.to_string())?;
    if body["model"] != MODEL || body["temperature"].as_f64() != Some(0.0) {
        return Err(format!("wrong model or temperature: {body}"));
    }
    let messages = body["messages"].as_array().ok_or("no messages")?;
    let [system, user] = messages.as_slice() else {
        return Err(format!("{} messages", messages.len()));
    };
    let prompt = system["content"].as_str().unwrap_or_default();
    if system["role"] != "system" || !prompt.contains("- refund_days:") {
        return Err(format!("wrong system message: {system}"));
    }
    // Only the answer text goes out as the user message.
    if user["role"] != "user" || user["content"] != TEXT {
        return Err(format!("wrong user message: {user}"));
    }
    Ok(())
}

/// A chat completion whose assistant message is `content`.
fn completion(content: &str) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }]
    })
    .to_string()
}

fn settings(base_url: &str, api_key: Option<&str>, timeout_ms: u64) -> LlmSettings {
    LlmSettings {
        enabled: true,
        base_url: base_url.to_owned(),
        model: MODEL.to_owned(),
        api_key: api_key.unwrap_or_default().to_owned(),
        timeout_ms,
        prompt_version: "v1".to_owned(),
    }
}

fn ontology() -> Ontology {
    Ontology::from_json(ONTOLOGY).expect("ontology")
}

const CLAIMS: &str = r#"[
  {"subject": "Pro", "predicate": "price", "object": "49", "sentence": "The Pro plan costs €49 per user per month."},
  {"subject": "the refund policy", "predicate": "refund_days", "object": 30, "sentence": "Refunds within 30 days."},
  {"subject": "Pro", "predicate": "discount", "object": "10", "sentence": "The Pro plan costs €49 per user per month."}
]"#;

#[tokio::test]
async fn claims_come_back_and_unknown_predicates_are_dropped() {
    let base = start(Fake {
        api_key: Some("sk-test"),
        status: StatusCode::OK,
        body: completion(CLAIMS),
    })
    .await;
    let extractor = LlmExtractor::new(settings(&base, Some("sk-test"), 5_000)).expect("new");

    let extraction = extractor.extract(&ontology(), TEXT).await.expect("extract");

    assert_eq!(extraction.extractor, "model/test-model/v1");
    assert_eq!(extraction.dropped, 1);
    assert_eq!(extraction.claims.len(), 2);
    let price = &extraction.claims[0];
    assert_eq!(price.predicate, "price");
    assert_eq!(price.kind, PredicateKind::Slot);
    assert_eq!(price.subject, ClaimSubject::Named("Pro".into()));
    assert_eq!(price.object, "49");
    assert_eq!(price.sentence, "The Pro plan costs €49 per user per month.");
    let refund = &extraction.claims[1];
    assert_eq!(refund.subject, ClaimSubject::Fixed("Refund policy".into()));
    assert_eq!(refund.object, "30");
}

#[tokio::test]
async fn a_fenced_json_answer_works() {
    let base = start(Fake {
        api_key: None,
        status: StatusCode::OK,
        body: completion(&format!("```json\n{CLAIMS}\n```")),
    })
    .await;
    let extractor = LlmExtractor::new(settings(&base, None, 5_000)).expect("new");

    let extraction = extractor.extract(&ontology(), TEXT).await.expect("extract");

    assert_eq!(extraction.claims.len(), 2);
    assert_eq!(extraction.dropped, 1);
}

#[tokio::test]
async fn a_server_error_is_a_status_with_its_code() {
    let base = start(Fake {
        api_key: None,
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: "model overloaded".into(),
    })
    .await;
    let extractor = LlmExtractor::new(settings(&base, None, 5_000)).expect("new");

    let error = extractor.extract(&ontology(), TEXT).await.expect_err("500");

    match error {
        LlmError::Status { code, body } => {
            assert_eq!(code, 500);
            assert_eq!(body, "model overloaded");
        }
        other => panic!("expected a status error, got {other:?}"),
    }
}

#[tokio::test]
async fn garbage_is_a_bad_response() {
    for body in [
        completion("I am sorry, I cannot find any claims."),
        completion(r#"{"claims": []}"#),
        "<html>not json</html>".to_owned(),
        json!({"choices": []}).to_string(),
    ] {
        let base = start(Fake {
            api_key: None,
            status: StatusCode::OK,
            body: body.clone(),
        })
        .await;
        let extractor = LlmExtractor::new(settings(&base, None, 5_000)).expect("new");

        let error = extractor.extract(&ontology(), TEXT).await.expect_err(&body);

        assert!(
            matches!(error, LlmError::BadResponse(_)),
            "{body}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    // Accepts connections and holds them without reading or answering.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let extractor =
        LlmExtractor::new(settings(&format!("http://{address}/v1"), None, 200)).expect("new");

    let started = Instant::now();
    let error = extractor
        .extract(&ontology(), TEXT)
        .await
        .expect_err("timeout");

    assert!(matches!(error, LlmError::Timeout), "{error:?}");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(190) && elapsed < Duration::from_secs(2),
        "took {elapsed:?}"
    );
}

#[test]
fn new_rejects_anything_but_plain_http() {
    for base_url in [
        "https://api.openai.com/v1",
        "ftp://example.com",
        "localhost:8080/v1",
        "not a url",
        "",
        "http:///v1",
        "http://example.com/v1?key=1",
    ] {
        let result = LlmExtractor::new(settings(base_url, None, 1_000));
        assert!(
            matches!(result, Err(LlmError::Http(_))),
            "{base_url:?}: {result:?}"
        );
    }
    let https =
        LlmExtractor::new(settings("https://api.openai.com/v1", None, 1_000)).expect_err("https");
    assert!(https.to_string().contains("http://"), "{https}");
    assert!(LlmExtractor::new(settings("http://127.0.0.1:8080/v1", None, 1_000)).is_ok());
    assert!(matches!(
        LlmExtractor::new(settings("http://127.0.0.1:8080/v1", None, 0)),
        Err(LlmError::Http(_))
    ));
}
