//! The extraction pipeline's `model` stage over the OpenAI-compatible endpoint: core's
//! synchronous `ClaimModel`, answered by batches of sentences with a JSON schema built from the
//! ontology, and cached so a patch, repair or rebuild never pays twice for a sentence.
//!
//! Bridging sync to async: the pipeline is synchronous and runs on whatever thread reads text
//! (a tokio worker, a blocking-pool thread, a plain thread, a `current_thread` test runtime).
//! Requests therefore run on a dedicated thread that owns a small `current_thread` runtime; the
//! caller waits for the answer on a channel. Inside a multi-thread runtime the wait goes through
//! `tokio::task::block_in_place`, so the worker's other tasks move elsewhere meanwhile; anywhere
//! else it simply blocks (never `Handle::block_on` on the caller's runtime, which panics on a
//! `current_thread` runtime and can deadlock one with a single worker). The wait is bounded by the
//! request timeout. Dropping the client ends the thread.
//!
//! Cache: per sentence, keyed by sha256 of (model, prompt version, the system prompt and schema —
//! which carry every predicate, so they fingerprint the ontology — and the sentence). Bounded:
//! cleared whole when full. Failed calls are not cached.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use ontoloop_core::knowledge::{
    Claim, ClaimModel, ClaimSubject, ModelError, Ontology, PredicateKind,
};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ChatMessage, LlmError, LlmExtractor, LlmSettings, describe_predicate, text, unfence};

/// Sentences whose proposals the cache holds at most.
const CACHE_SENTENCES: usize = 50_000;

/// One request for the runtime thread: a body, and where to answer.
struct Job {
    body: Vec<u8>,
    reply: mpsc::Sender<Result<String, LlmError>>,
}

/// What the client did, counted since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientUsage {
    /// HTTP requests made.
    pub requests: u64,
    /// Sentences answered from the cache.
    pub cache_hits: u64,
    /// Sentences sent over the network.
    pub sentences_sent: u64,
}

/// The `model` stage's client: batches of sentences to proposed claims, cached.
pub struct ModelClient {
    id: String,
    settings: LlmSettings,
    timeout: Duration,
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    cache: Mutex<HashMap<[u8; 32], Vec<Claim>>>,
    requests: AtomicU64,
    cache_hits: AtomicU64,
    sentences_sent: AtomicU64,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ModelClient {
    /// A client for `settings` (the `[extract.model]` section), with its runtime thread. Fails
    /// like [`LlmExtractor::new`], or if the thread cannot start.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        let extractor = Arc::new(LlmExtractor::new(settings.clone())?);
        let timeout = extractor.timeout;
        let (jobs, mut queue) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let (started, start) = mpsc::channel();
        // The runtime is built, run and dropped on its own thread (dropping a runtime inside
        // another one panics).
        std::thread::Builder::new()
            .name("llm-claims".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = started.send(Err(err.to_string()));
                        return;
                    }
                };
                let _ = started.send(Ok(()));
                runtime.block_on(async move {
                    while let Some(job) = queue.recv().await {
                        let extractor = Arc::clone(&extractor);
                        tokio::spawn(async move {
                            let answer =
                                match tokio::time::timeout(timeout, extractor.complete(job.body))
                                    .await
                                {
                                    Ok(answer) => answer,
                                    Err(_) => Err(LlmError::Timeout),
                                };
                            // The caller may have stopped waiting.
                            let _ = job.reply.send(answer);
                        });
                    }
                });
            })
            .map_err(|err| LlmError::Http(format!("start the model client's thread: {err}")))?;
        match start.recv() {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                return Err(LlmError::Http(format!(
                    "start the model client's runtime: {err}"
                )));
            }
            Err(_) => return Err(LlmError::Http("the model client's thread died".into())),
        }
        Ok(Self {
            id: format!("model/{}/{}", settings.model, settings.prompt_version),
            settings,
            timeout,
            jobs,
            cache: Mutex::new(HashMap::new()),
            requests: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            sentences_sent: AtomicU64::new(0),
        })
    }

    /// The counts so far.
    pub fn usage(&self) -> ClientUsage {
        ClientUsage {
            requests: self.requests.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            sentences_sent: self.sentences_sent.load(Ordering::Relaxed),
        }
    }

    /// Proposals for `sentences`, all sent in one request.
    fn ask(
        &self,
        ontology: &Ontology,
        prompt: &str,
        schema: &Value,
        sentences: &[&str],
    ) -> Result<Vec<Vec<Claim>>, LlmError> {
        let mut user = String::from("Sentences:\n");
        for (i, sentence) in sentences.iter().enumerate() {
            let one_line: String = sentence
                .chars()
                .map(|c| if c.is_whitespace() { ' ' } else { c })
                .collect();
            let _ = writeln!(user, "{}. {one_line}", i + 1);
        }
        let request = BatchRequest {
            model: &self.settings.model,
            messages: [
                ChatMessage {
                    role: "system",
                    content: prompt,
                },
                ChatMessage {
                    role: "user",
                    content: &user,
                },
            ],
            temperature: 0.0,
            response_format: json!({
                "type": "json_schema",
                "json_schema": {"name": "claims", "strict": true, "schema": schema},
            }),
        };
        let body = serde_json::to_vec(&request)
            .map_err(|err| LlmError::Http(format!("encode request: {err}")))?;
        let (reply, answer) = mpsc::channel();
        self.jobs
            .send(Job { body, reply })
            .map_err(|_| LlmError::Http("the model client's runtime thread stopped".into()))?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.sentences_sent
            .fetch_add(sentences.len() as u64, Ordering::Relaxed);
        // The runtime thread answers within the timeout; the margin only guards against a
        // thread that died.
        let wait = || answer.recv_timeout(self.timeout + Duration::from_secs(5));
        let in_multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let content = if in_multi_thread {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        }
        .map_err(|_| LlmError::Timeout)??;
        parse_batch(ontology, &content, sentences)
    }
}

impl ClaimModel for ModelClient {
    fn id(&self) -> &str {
        &self.id
    }

    fn claims(&self, ontology: &Ontology, sentences: &[&str]) -> Result<Vec<Claim>, ModelError> {
        let prompt = batch_prompt(ontology);
        let schema = schema(ontology);
        let fingerprint = Sha256::new()
            .chain_update(self.settings.model.as_bytes())
            .chain_update([0])
            .chain_update(self.settings.prompt_version.as_bytes())
            .chain_update([0])
            .chain_update(prompt.as_bytes())
            .chain_update([0])
            .chain_update(schema.to_string().as_bytes());
        let keys: Vec<[u8; 32]> = sentences
            .iter()
            .map(|s| {
                fingerprint
                    .clone()
                    .chain_update([0])
                    .chain_update(s.as_bytes())
                    .finalize()
                    .into()
            })
            .collect();
        let mut found: Vec<Option<Vec<Claim>>> = match self.cache.lock() {
            Ok(cache) => keys.iter().map(|k| cache.get(k).cloned()).collect(),
            Err(_) => vec![None; sentences.len()],
        };
        let hits = found.iter().filter(|f| f.is_some()).count();
        self.cache_hits.fetch_add(hits as u64, Ordering::Relaxed);
        let missing: Vec<usize> = (0..sentences.len())
            .filter(|i| found[*i].is_none())
            .collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|i| sentences[*i]).collect();
            let fresh = self
                .ask(ontology, &prompt, &schema, &asked)
                .map_err(|err| ModelError(err.to_string()))?;
            if let Ok(mut cache) = self.cache.lock() {
                if cache.len() + fresh.len() > CACHE_SENTENCES {
                    cache.clear();
                }
                for (i, claims) in missing.iter().zip(&fresh) {
                    cache.insert(keys[*i], claims.clone());
                }
            }
            for (i, claims) in missing.into_iter().zip(fresh) {
                found[i] = Some(claims);
            }
        }
        Ok(found.into_iter().flatten().flatten().collect())
    }
}

#[derive(Serialize)]
struct BatchRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    temperature: f64,
    response_format: Value,
}

/// The instructions and the ontology's predicates: everything the model sees besides the
/// sentences.
pub(crate) fn batch_prompt(ontology: &Ontology) -> String {
    let mut prompt = String::from(
        "You read numbered sentences and list the facts each one states, using only the \
         predicates listed below. Reply with a JSON object {\"claims\": [...]} and nothing else. \
         Each claim is {\"sentence\": the sentence's number, \"subject\": string, \"predicate\": \
         string, \"object\": string}. Copy names as the sentence writes them. State only what a \
         sentence asserts as currently true: skip negations, proposals, drafts, hypotheticals, \
         questions and past or future states, and never add knowledge of your own. A sentence \
         may state no fact.\n\
         \n\
         Predicates (in the example phrasing, {s} marks the subject and {o} the object):\n",
    );
    for predicate in ontology.predicates() {
        describe_predicate(&mut prompt, predicate);
    }
    prompt
}

/// The response's JSON schema: the predicate is one of the ontology's.
pub(crate) fn schema(ontology: &Ontology) -> Value {
    let names: Vec<&str> = ontology
        .predicates()
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["claims"],
        "properties": {
            "claims": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["sentence", "subject", "predicate", "object"],
                    "properties": {
                        "sentence": {"type": "integer", "minimum": 1},
                        "subject": {"type": "string"},
                        "predicate": {"type": "string", "enum": names},
                        "object": {"type": "string"},
                    },
                },
            },
        },
    })
}

/// The model's content as proposals per sentence. An element that names no sentence sent, or
/// lacks a field, becomes a claim on no sentence, which grounding drops and counts. Content
/// that is not the schema's object (or a bare array of claims) is a bad response.
fn parse_batch(
    ontology: &Ontology,
    content: &str,
    sentences: &[&str],
) -> Result<Vec<Vec<Claim>>, LlmError> {
    let value: Value = serde_json::from_str(unfence(content))
        .map_err(|err| LlmError::BadResponse(format!("content is not json: {err}")))?;
    let items = match value {
        Value::Object(mut fields) => match fields.remove("claims") {
            Some(Value::Array(items)) => items,
            _ => return Err(LlmError::BadResponse("no \"claims\" array".into())),
        },
        Value::Array(items) => items,
        _ => return Err(LlmError::BadResponse("content is not a json object".into())),
    };
    let mut out: Vec<Vec<Claim>> = vec![Vec::new(); sentences.len()];
    let mut stray = Vec::new();
    for item in items {
        let Value::Object(fields) = item else {
            return Err(LlmError::BadResponse("a claim is not a json object".into()));
        };
        let field = |name: &str| fields.get(name).and_then(text).unwrap_or_default();
        let index = match fields.get("sentence") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        }
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=sentences.len()).contains(n));
        let predicate = field("predicate");
        let kind = ontology
            .predicate(&predicate)
            .map_or(PredicateKind::Slot, |p| p.kind);
        let claim = Claim {
            predicate,
            kind,
            subject: ClaimSubject::Named(field("subject")),
            object: field("object"),
            sentence: index.map_or_else(String::new, |n| sentences[n - 1].to_owned()),
            extractor: String::new(),
            confidence: 0.0,
        };
        match index {
            Some(n) => out[n - 1].push(claim),
            None => stray.push(claim),
        }
    }
    // Strays are answered with the first sentence's proposals (grounding drops them).
    if let Some(first) = out.first_mut() {
        first.extend(stray);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ontology() -> Ontology {
        Ontology::from_json(
            r#"{"predicates": [
                {"name": "price", "subject_type": "plan", "object_type": "number",
                 "patterns": ["The {s} plan costs €{o:number} per user per month."]}
              ], "authority": {"default": 2}}"#,
        )
        .expect("ontology")
    }

    #[test]
    fn batches_are_read_by_sentence_number() {
        let sentences = ["The Pro plan is €49.", "Nothing here."];
        let content = r#"{"claims": [
            {"sentence": 1, "subject": "Pro", "predicate": "price", "object": 49},
            {"sentence": 7, "subject": "Pro", "predicate": "price", "object": "59"}
        ]}"#;
        let parsed = parse_batch(&ontology(), content, &sentences).expect("parses");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].len(), 2);
        assert_eq!(parsed[0][0].sentence, "The Pro plan is €49.");
        assert_eq!(parsed[0][0].object, "49");
        assert_eq!(parsed[0][1].sentence, "", "a stray names no sentence");
        assert!(parsed[1].is_empty());
        for bad in ["sorry", "{\"facts\": []}", "[1]", "42"] {
            assert!(
                matches!(
                    parse_batch(&ontology(), bad, &sentences),
                    Err(LlmError::BadResponse(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_schema_lists_the_predicates() {
        let schema = schema(&ontology());
        assert_eq!(
            schema["properties"]["claims"]["items"]["properties"]["predicate"]["enum"],
            json!(["price"])
        );
        assert!(batch_prompt(&ontology()).contains("- price: subject type plan"));
    }
}
