//! Claim extraction through a language model: calls an OpenAI-compatible chat completions
//! endpoint (`POST {base_url}/chat/completions`) and turns an answer text into claims phrased
//! with the ontology's predicates. It is optional; the pattern extractor in `ontoloop-core`
//! needs no network.
//!
//! It must never decide a verdict: it only proposes claims, and what an agent is told stays with
//! the answer policy. It must never send anything but the answer text and the ontology's
//! predicates: no facts, no entities, no tenant or caller data.
//!
//! `ModelClient` is the extraction pipeline's `model` stage over the same endpoint: core's
//! `ClaimModel`, batched, schema-constrained and cached (see `model`).
//!
//! Plain HTTP only: there is no TLS client here, so an `https://` endpoint needs a
//! TLS-terminating proxy in front of it for now.

mod model;

use std::error::Error as _;
use std::fmt::{self, Write as _};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ontoloop_core::knowledge::{Claim, ClaimSubject, Ontology, Predicate, PredicateKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where and how to call the model: the `[firewall.llm]` settings (`api_key` empty for none;
/// `enabled` is the caller's business).
pub use ontoloop_core::knowledge::firewall::LlmSettings;

pub use model::{CACHE_SENTENCES, CacheEntry, ModelClient, Preloaded};

/// Extracts claims from answer texts by asking an OpenAI-compatible model.
pub struct LlmExtractor {
    client: Client<HttpConnector, Full<Bytes>>,
    endpoint: Uri,
    authorization: Option<HeaderValue>,
    timeout: Duration,
    settings: LlmSettings,
}

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The settings are unusable or the request could not be sent or read (connection refused,
    /// reset, response too large).
    #[error("llm request failed: {0}")]
    Http(String),
    /// The endpoint answered with a status other than 2xx.
    #[error("llm endpoint answered status {code}: {body}")]
    Status {
        /// HTTP status code.
        code: u16,
        /// The start of the response body, for the log.
        body: String,
    },
    /// The whole request took longer than `timeout_ms`.
    #[error("llm request timed out")]
    Timeout,
    /// The response is not a chat completion whose content is a JSON array of claims.
    #[error("llm response unusable: {0}")]
    BadResponse(String),
}

/// The claims one text yielded.
#[derive(Debug, Clone)]
pub struct Extraction {
    /// Claims whose predicate is in the ontology, in the model's order.
    pub claims: Vec<Claim>,
    /// Claims the model returned that could not be used: unknown predicate, or a missing or
    /// empty subject, object or sentence.
    pub dropped: usize,
    /// Who extracted them: `model/{model}/{prompt_version}`.
    pub extractor: String,
}

impl LlmExtractor {
    /// Builds an extractor; fails if `base_url` is not a plain `http://` URL, the API key is
    /// not a valid header value, or the timeout is zero.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        let base = settings.base_url.trim().trim_end_matches('/');
        let base_uri: Uri = base.parse().map_err(|err| {
            LlmError::Http(format!(
                "base_url {:?} is not a url: {err}",
                ontoloop_core::redact_url(&settings.base_url)
            ))
        })?;
        if base_uri.scheme_str() != Some("http") {
            return Err(LlmError::Http(format!(
                "base_url {:?} must start with http:// (no tls client: put a tls-terminating \
                 proxy in front of an https endpoint)",
                ontoloop_core::redact_url(&settings.base_url)
            )));
        }
        if base_uri.host().is_none_or(str::is_empty) || base_uri.query().is_some() {
            return Err(LlmError::Http(format!(
                "base_url {:?} must have a host and no query",
                ontoloop_core::redact_url(&settings.base_url)
            )));
        }
        let endpoint: Uri = format!("{base}/chat/completions").parse().map_err(|err| {
            LlmError::Http(format!(
                "base_url {:?} is not a url: {err}",
                ontoloop_core::redact_url(&settings.base_url)
            ))
        })?;
        let authorization = match Some(settings.api_key.as_str()).filter(|k| !k.is_empty()) {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                    .map_err(|_| LlmError::Http("api_key is not a valid header value".into()))?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        if settings.timeout_ms == 0 {
            return Err(LlmError::Http("timeout_ms must be positive".into()));
        }
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            endpoint,
            authorization,
            timeout: Duration::from_millis(settings.timeout_ms),
            settings,
        })
    }

    /// Asks the model for the claims `text` makes in terms of the ontology's predicates.
    /// Sends only `text` and the predicates; the timeout covers the whole request.
    pub async fn extract(&self, ontology: &Ontology, text: &str) -> Result<Extraction, LlmError> {
        let prompt = system_prompt(ontology);
        let request = ChatRequest {
            model: &self.settings.model,
            messages: [
                ChatMessage {
                    role: "system",
                    content: &prompt,
                },
                ChatMessage {
                    role: "user",
                    content: text,
                },
            ],
            temperature: 0.0,
        };
        let body = serde_json::to_vec(&request)
            .map_err(|err| LlmError::Http(format!("encode request: {err}")))?;
        let content = tokio::time::timeout(self.timeout, self.complete(body))
            .await
            .map_err(|_| LlmError::Timeout)??
            .content;
        let (mut claims, dropped) = parse_claims(ontology, &content)?;
        tracing::debug!(claims = claims.len(), dropped, "llm extraction parsed");
        let extractor = format!(
            "model/{}/{}",
            self.settings.model, self.settings.prompt_version
        );
        for claim in &mut claims {
            claim.extractor.clone_from(&extractor);
        }
        Ok(Extraction {
            claims,
            dropped,
            extractor,
        })
    }

    /// One chat completion: the assistant message's content, and the tokens it cost when the
    /// endpoint says.
    async fn complete(&self, body: Vec<u8>) -> Result<Completion, LlmError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|err| LlmError::Http(format!("build request: {err}")))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|err| LlmError::Http(describe(&err)))?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|err| LlmError::Http(format!("read response: {err}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(LlmError::Status {
                code: status.as_u16(),
                body: excerpt(&bytes),
            });
        }
        let completion: ChatResponse = serde_json::from_slice(&bytes)
            .map_err(|err| LlmError::BadResponse(format!("not a chat completion: {err}")))?;
        let tokens = completion
            .usage
            .as_ref()
            .map(Tokens::read)
            .unwrap_or_default();
        let content = completion
            .choices
            .into_iter()
            .next()
            .and_then(|choice| choice.message.content);
        match content {
            Some(content) => Ok(Completion { content, tokens }),
            None => Err(LlmError::BadResponse(
                "chat completion has no content".into(),
            )),
        }
    }
}

impl fmt::Debug for LlmExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmExtractor")
            .field("endpoint", &self.endpoint)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A larger answer is not a list of claims about one text; refusing it bounds memory.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// How much of an error body to keep in [`LlmError::Status`].
const MAX_ERROR_BODY_CHARS: usize = 512;

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    temperature: f64,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<ChatChoice>,
    /// Read leniently (`Tokens::read`): a malformed usage block costs the count, not the answer.
    #[serde(default)]
    usage: Option<Value>,
}

/// One chat completion as read.
struct Completion {
    /// The assistant message's content.
    content: String,
    /// The tokens the endpoint reported (all zero when it reported none).
    tokens: Tokens,
}

/// Tokens a completion cost, from its `usage` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tokens {
    prompt: u64,
    completion: u64,
    /// `total_tokens`, else prompt + completion.
    total: u64,
}

impl Tokens {
    /// `usage.prompt_tokens`, `usage.completion_tokens` and `usage.total_tokens`, each when it is
    /// a non-negative integer; anything else counts as absent.
    fn read(usage: &Value) -> Self {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        let prompt = field("prompt_tokens").unwrap_or_default();
        let completion = field("completion_tokens").unwrap_or_default();
        let total = field("total_tokens").unwrap_or_else(|| prompt.saturating_add(completion));
        Self {
            prompt,
            completion,
            total,
        }
    }
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatReply,
}

#[derive(Deserialize)]
struct ChatReply {
    #[serde(default)]
    content: Option<String>,
}

/// The instructions and the ontology's predicates: everything the model sees besides the text.
fn system_prompt(ontology: &Ontology) -> String {
    let mut prompt = String::from(
        "You turn a text into claims. Use only the predicates listed below. Reply with a JSON \
         array and nothing else. Each element is an object {\"subject\": string, \
         \"predicate\": string, \"object\": string, \"sentence\": string}, where sentence is \
         the sentence of the text that states the claim, copied as written. State only what \
         the text says, never knowledge of your own. If the text states no claim, reply [].\n\
         \n\
         Predicates (in the example phrasing, {s} marks the subject and {o} the object):\n",
    );
    for predicate in ontology.predicates() {
        describe_predicate(&mut prompt, predicate);
    }
    prompt
}

fn describe_predicate(prompt: &mut String, predicate: &Predicate) {
    // Writing to a String cannot fail.
    let _ = write!(
        prompt,
        "- {}: subject type {}, object type {}",
        predicate.name,
        predicate.subject_types.join("|"),
        predicate.object_type
    );
    if let Some(unit) = &predicate.unit {
        let _ = write!(prompt, " (in {unit}, give the number only)");
    }
    if let Some(fixed) = &predicate.fixed_subject {
        let _ = write!(prompt, "; the subject is always {fixed:?}");
    }
    if predicate.kind == PredicateKind::Rename {
        prompt.push_str("; the subject is the current name and the object the former name");
    }
    if let Some(pattern) = predicate.patterns.first() {
        let _ = write!(prompt, "; phrased like: {}", pattern.source());
    }
    prompt.push('\n');
}

/// The claims in the model's content and how many of its elements were dropped.
fn parse_claims(ontology: &Ontology, content: &str) -> Result<(Vec<Claim>, usize), LlmError> {
    let json = unfence(content);
    let value: Value = serde_json::from_str(json)
        .map_err(|err| LlmError::BadResponse(format!("content is not json: {err}")))?;
    let Value::Array(items) = value else {
        return Err(LlmError::BadResponse("content is not a json array".into()));
    };
    let mut claims = Vec::new();
    let mut dropped = 0;
    for (index, item) in items.iter().enumerate() {
        let Value::Object(fields) = item else {
            return Err(LlmError::BadResponse(format!(
                "claim {index} is not a json object"
            )));
        };
        match claim(ontology, fields) {
            Some(claim) => claims.push(claim),
            None => dropped += 1,
        }
    }
    Ok((claims, dropped))
}

/// One element as a claim, or `None` if it cannot be used.
fn claim(ontology: &Ontology, fields: &Map<String, Value>) -> Option<Claim> {
    let name = text(fields.get("predicate")?)?;
    let predicate = ontology.predicate(&name)?;
    let subject = match &predicate.fixed_subject {
        Some(fixed) => ClaimSubject::Fixed(fixed.clone()),
        None => ClaimSubject::Named(text(fields.get("subject")?)?),
    };
    Some(Claim {
        predicate: predicate.name.clone(),
        kind: predicate.kind,
        subject,
        object: text(fields.get("object")?)?,
        sentence: text(fields.get("sentence")?)?,
        // Stamped by `extract`, which knows the model and prompt version.
        extractor: String::new(),
        confidence: 1.0,
    })
}

/// A string or number field, trimmed; `None` when absent in substance.
fn text(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(text) => text.trim().to_owned(),
        // Models often give numeric objects as JSON numbers.
        Value::Number(number) => number.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The JSON inside a Markdown code fence, if the content has one before its array.
fn unfence(content: &str) -> &str {
    let trimmed = content.trim();
    if trimmed.starts_with('[') {
        return trimmed;
    }
    let Some((_, after)) = trimmed.split_once("```") else {
        return trimmed;
    };
    // Skip the info string (`json`) that ends the opening fence line.
    let body = match after.split_once('\n') {
        Some((_, body)) => body,
        None => after.strip_prefix("json").unwrap_or(after),
    };
    match body.split_once("```") {
        Some((inside, _)) => inside.trim(),
        None => body.trim(),
    }
}

/// An error and its causes, because the client's own message ("client error (Connect)") hides
/// the reason.
fn describe(err: &hyper_util::client::legacy::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let _ = write!(message, ": {cause}");
        source = cause.source();
    }
    message
}

/// The start of a response body, as text.
fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .take(MAX_ERROR_BODY_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONTOLOGY: &str = r#"{
      "predicates": [
        {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR",
         "patterns": ["The {s} plan costs €{o:number} per user per month."]},
        {"name": "refund_days", "subject_type": "policy", "object_type": "number", "subject": "Refund policy",
         "patterns": ["Customers can request a refund within {o:number} days of purchase."]},
        {"name": "formerly", "kind": "rename", "subject_type": "any", "object_type": "any",
         "patterns": ["{s} was formerly called {o}."]}
      ],
      "authority": {"default": 2}
    }"#;

    fn ontology() -> Ontology {
        Ontology::from_json(ONTOLOGY).expect("sample ontology")
    }

    #[test]
    fn unfence_finds_the_array() {
        assert_eq!(unfence(" [1] "), "[1]");
        assert_eq!(unfence("```json\n[1]\n```"), "[1]");
        assert_eq!(unfence("```\n[1]\n```\n"), "[1]");
        assert_eq!(unfence("Here you go:\n```json\n[1]\n```"), "[1]");
        assert_eq!(unfence("```json [1]```"), "[1]");
        assert_eq!(unfence("no claims"), "no claims");
    }

    #[test]
    fn prompt_lists_every_predicate_with_its_first_pattern() {
        let prompt = system_prompt(&ontology());
        assert!(prompt.contains(
            "- price: subject type plan, object type number (in EUR, give the number only); \
             phrased like: The {s} plan costs €{o:number} per user per month.\n"
        ));
        assert!(prompt.contains("the subject is always \"Refund policy\""));
        assert!(prompt.contains("- formerly: subject type any, object type any; the subject is"));
    }

    #[test]
    fn claims_take_kind_and_fixed_subject_from_the_ontology() {
        let content = r#"[
          {"subject": "Pro", "predicate": "price", "object": 49, "sentence": " The Pro plan costs €49. "},
          {"subject": "it", "predicate": "refund_days", "object": "30", "sentence": "Refunds within 30 days."},
          {"subject": "Atlas", "predicate": "formerly", "object": "Orion", "sentence": "Atlas was Orion."},
          {"subject": "Pro", "predicate": "colour", "object": "blue", "sentence": "Pro is blue."},
          {"predicate": "price", "object": "10", "sentence": "It costs €10."}
        ]"#;
        let (claims, dropped) = parse_claims(&ontology(), content).expect("parses");
        assert_eq!(dropped, 2);
        assert_eq!(claims.len(), 3);
        assert_eq!(claims[0].subject, ClaimSubject::Named("Pro".into()));
        assert_eq!(claims[0].object, "49");
        assert_eq!(claims[0].sentence, "The Pro plan costs €49.");
        assert_eq!(
            claims[1].subject,
            ClaimSubject::Fixed("Refund policy".into())
        );
        assert_eq!(claims[2].kind, PredicateKind::Rename);
    }

    #[test]
    fn non_arrays_are_bad_responses() {
        for content in ["{}", "[1]", "sorry", ""] {
            let result = parse_claims(&ontology(), content);
            assert!(
                matches!(result, Err(LlmError::BadResponse(_))),
                "{content:?}: {result:?}"
            );
        }
    }

    #[test]
    fn tokens_are_read_from_usage_when_present() {
        let read = |usage: Value| Tokens::read(&usage);
        assert_eq!(
            read(
                serde_json::json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150})
            ),
            Tokens {
                prompt: 120,
                completion: 30,
                total: 150
            }
        );
        assert_eq!(
            read(serde_json::json!({"prompt_tokens": 7, "completion_tokens": 2})),
            Tokens {
                prompt: 7,
                completion: 2,
                total: 9
            }
        );
        assert_eq!(
            read(serde_json::json!({"total_tokens": 41})),
            Tokens {
                prompt: 0,
                completion: 0,
                total: 41
            }
        );
        assert_eq!(
            read(serde_json::json!({"prompt_tokens": -3, "completion_tokens": "many"})),
            Tokens::default()
        );
        assert_eq!(
            read(serde_json::json!({"prompt_tokens": u64::MAX, "completion_tokens": 5})).total,
            u64::MAX,
            "saturates"
        );
        let answer: ChatResponse = serde_json::from_str(
            r#"{"choices": [{"message": {"content": "[]"}}], "usage": "n/a"}"#,
        )
        .expect("a malformed usage block still reads");
        assert_eq!(
            answer.usage.as_ref().map(Tokens::read),
            Some(Tokens::default())
        );
    }
}
