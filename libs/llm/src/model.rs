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
//! which carry every predicate, so they fingerprint the ontology — and the sentence). A
//! per-sentence key is finer than a per-page one (page content hash, ontology version, model,
//! prompt version): an edited page re-asks only its changed sentences, and a sentence that
//! several pages share is asked once. What is kept is the model's proposals, before grounding
//! (grounding runs again on every read, so what a cached answer yields follows the graph's
//! names). In memory the cache is bounded ([`CACHE_SENTENCES`]; the oldest answers go first).
//! It survives restarts through the store, which this crate does not know: the runtime hands the
//! stored answers to [`ModelClient::preload`] at start-up, and each fresh answer goes to the
//! sink given to [`ModelClient::persisting`] (a bounded channel; when it is full the answer
//! stays in memory only), which the runtime writes to the store in batches. Failed calls, and
//! proposals that name no sentence sent, are never cached.
//!
//! Cost: every call adds to core's `ModelCost` what it spent — requests, sentences sent,
//! sentences answered from the cache, and the tokens the endpoint reported in `usage`.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use ontoloop_core::knowledge::{
    Claim, ClaimModel, ClaimSubject, CostCounter, ModelCost, ModelError, Ontology, PredicateKind,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    ChatMessage, Completion, LlmError, LlmExtractor, LlmSettings, describe_predicate, text, unfence,
};

/// Sentences whose answers the cache holds at most: in memory, and in the store per model.
pub const CACHE_SENTENCES: usize = 50_000;

/// One answered sentence as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// Hex sha256 of model, prompt version, prompt, schema and sentence (64 characters).
    pub key: String,
    /// The model's proposals for the sentence, a JSON array of
    /// `{"subject", "predicate", "object"}` (empty when the sentence states nothing).
    pub claims: String,
}

/// What [`ModelClient::preload`] took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preloaded {
    /// Entries now in the cache.
    pub loaded: usize,
    /// Entries skipped: a key that is not 64 hex characters, or claims that do not read.
    pub skipped: usize,
}

/// One request for the runtime thread: a body, and where to answer.
struct Job {
    body: Vec<u8>,
    reply: mpsc::Sender<Result<Completion, LlmError>>,
}

/// A proposed triple as the model wrote it, before grounding; the sentence is the cache key's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Proposal {
    subject: String,
    predicate: String,
    object: String,
}

impl Proposal {
    /// The proposal as an (unchecked) claim on `sentence`.
    fn claim(&self, ontology: &Ontology, sentence: &str) -> Claim {
        let kind = ontology
            .predicate(&self.predicate)
            .map_or(PredicateKind::Slot, |p| p.kind);
        Claim {
            predicate: self.predicate.clone(),
            kind,
            subject: ClaimSubject::Named(self.subject.clone()),
            object: self.object.clone(),
            sentence: sentence.to_owned(),
            extractor: String::new(),
            confidence: 0.0,
        }
    }
}

type Key = [u8; 32];

/// The in-memory cache: answers by key, and the order they came in, for eviction.
#[derive(Default)]
struct Cache {
    answers: HashMap<Key, Arc<[Proposal]>>,
    order: VecDeque<Key>,
}

impl Cache {
    fn get(&self, key: &Key) -> Option<Arc<[Proposal]>> {
        self.answers.get(key).cloned()
    }

    /// Adds an answer, evicting the oldest beyond [`CACHE_SENTENCES`]; `false` if the key was
    /// already there.
    fn insert(&mut self, key: Key, proposals: Arc<[Proposal]>) -> bool {
        if self.answers.contains_key(&key) {
            return false;
        }
        self.answers.insert(key, proposals);
        self.order.push_back(key);
        while self.order.len() > CACHE_SENTENCES {
            if let Some(oldest) = self.order.pop_front() {
                self.answers.remove(&oldest);
            }
        }
        true
    }
}

/// The `model` stage's client: batches of sentences to proposed claims, cached.
pub struct ModelClient {
    id: String,
    settings: LlmSettings,
    timeout: Duration,
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    cache: Mutex<Cache>,
    totals: CostCounter,
    sink: Option<tokio::sync::mpsc::Sender<CacheEntry>>,
    unpersisted: AtomicU64,
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
            cache: Mutex::new(Cache::default()),
            totals: CostCounter::default(),
            sink: None,
            unpersisted: AtomicU64::new(0),
        })
    }

    /// The same client handing every fresh answer to `sink` (write-behind persistence: the
    /// receiver stores them). Never waits: when the channel is full the answer stays in memory
    /// only, counted in [`ModelClient::unpersisted`].
    pub fn persisting(mut self, sink: tokio::sync::mpsc::Sender<CacheEntry>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Fills the cache with answers stored earlier (the newest first, as many as fit). A bad
    /// entry is skipped and counted, never fatal; the caller logs the count.
    pub fn preload(&self, entries: impl IntoIterator<Item = CacheEntry>) -> Preloaded {
        let mut preloaded = Preloaded::default();
        let Ok(mut cache) = self.cache.lock() else {
            return preloaded;
        };
        for entry in entries {
            if cache.answers.len() >= CACHE_SENTENCES {
                break;
            }
            let Some(key) = key_from_hex(&entry.key) else {
                preloaded.skipped += 1;
                continue;
            };
            match serde_json::from_str::<Vec<Proposal>>(&entry.claims) {
                Ok(proposals) => {
                    cache.insert(key, proposals.into());
                    preloaded.loaded += 1;
                }
                Err(_) => preloaded.skipped += 1,
            }
        }
        preloaded
    }

    /// The model name and prompt version stored answers are filed under.
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// What the client spent since start (every caller together).
    pub fn usage(&self) -> ModelCost {
        self.totals.get()
    }

    /// Fresh answers not handed to the persistence sink because it was full or closed.
    pub fn unpersisted(&self) -> u64 {
        self.unpersisted.load(Ordering::Relaxed)
    }

    /// Proposals for `sentences`, all sent in one request; the request and its tokens are added
    /// to `cost` even when the answer cannot be read.
    fn ask(
        &self,
        prompt: &str,
        schema: &Value,
        sentences: &[&str],
        cost: &mut ModelCost,
    ) -> Result<(Vec<Vec<Proposal>>, Vec<Proposal>), LlmError> {
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
        cost.add(&ModelCost {
            requests: 1,
            sentences_sent: u64::try_from(sentences.len()).unwrap_or(u64::MAX),
            ..ModelCost::default()
        });
        // The runtime thread answers within the timeout; the margin only guards against a
        // thread that died.
        let wait = || answer.recv_timeout(self.timeout + Duration::from_secs(5));
        let in_multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let completion = if in_multi_thread {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        }
        .map_err(|_| LlmError::Timeout)??;
        cost.add(&ModelCost {
            prompt_tokens: completion.tokens.prompt,
            completion_tokens: completion.tokens.completion,
            tokens: completion.tokens.total,
            ..ModelCost::default()
        });
        parse_batch(&completion.content, sentences.len())
    }

    /// Hands a fresh answer to the persistence sink, if there is one.
    fn persist(&self, key: &Key, proposals: &[Proposal]) {
        let Some(sink) = &self.sink else {
            return;
        };
        let entry = CacheEntry {
            key: hex(key),
            claims: serde_json::to_string(proposals).unwrap_or_else(|_| "[]".to_owned()),
        };
        if sink.try_send(entry).is_err() {
            self.unpersisted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ClaimModel for ModelClient {
    fn id(&self) -> &str {
        &self.id
    }

    fn claims(
        &self,
        ontology: &Ontology,
        sentences: &[&str],
        cost: &mut ModelCost,
    ) -> Result<Vec<Claim>, ModelError> {
        let mut spent = ModelCost::default();
        let answered = self.answer(ontology, sentences, &mut spent);
        self.totals.add(&spent);
        cost.add(&spent);
        answered
    }
}

impl ModelClient {
    /// [`ClaimModel::claims`], with what it spends added to `spent`.
    fn answer(
        &self,
        ontology: &Ontology,
        sentences: &[&str],
        spent: &mut ModelCost,
    ) -> Result<Vec<Claim>, ModelError> {
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
        let keys: Vec<Key> = sentences
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
        let mut found: Vec<Option<Arc<[Proposal]>>> = match self.cache.lock() {
            Ok(cache) => keys.iter().map(|k| cache.get(k)).collect(),
            Err(_) => vec![None; sentences.len()],
        };
        let hits = found.iter().filter(|f| f.is_some()).count();
        spent.add(&ModelCost {
            cache_hits: u64::try_from(hits).unwrap_or(u64::MAX),
            ..ModelCost::default()
        });
        let missing: Vec<usize> = (0..sentences.len())
            .filter(|i| found[*i].is_none())
            .collect();
        let mut strays = Vec::new();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|i| sentences[*i]).collect();
            let (fresh, stray) = self
                .ask(&prompt, &schema, &asked, spent)
                .map_err(|err| ModelError(err.to_string()))?;
            // On no sentence: handed on for grounding to drop and count, never cached.
            strays = stray.into_iter().map(|p| p.claim(ontology, "")).collect();
            let mut cache = self.cache.lock().ok();
            for (i, proposals) in missing.into_iter().zip(fresh) {
                let proposals: Arc<[Proposal]> = proposals.into();
                let new = cache
                    .as_mut()
                    .is_some_and(|c| c.insert(keys[i], Arc::clone(&proposals)));
                if new {
                    self.persist(&keys[i], &proposals);
                }
                found[i] = Some(proposals);
            }
        }
        Ok(found
            .into_iter()
            .zip(sentences)
            .flat_map(|(proposals, sentence)| {
                proposals
                    .iter()
                    .flat_map(|p| p.iter())
                    .map(|p| p.claim(ontology, sentence))
                    .collect::<Vec<_>>()
            })
            .chain(strays)
            .collect())
    }
}

/// Lowercase hex of a key.
fn hex(key: &Key) -> String {
    let mut out = String::with_capacity(64);
    for byte in key {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// A key back from its hex; `None` unless exactly 64 hex characters.
fn key_from_hex(text: &str) -> Option<Key> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
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

/// The model's content as proposals per sentence (for `count` sentences), and the strays: an
/// element that names no sentence sent is kept aside (never cached; grounding drops and counts
/// it). A missing field reads as empty, which grounding drops too. Content that is not the
/// schema's object (or a bare array of claims) is a bad response.
fn parse_batch(
    content: &str,
    count: usize,
) -> Result<(Vec<Vec<Proposal>>, Vec<Proposal>), LlmError> {
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
    let mut out: Vec<Vec<Proposal>> = vec![Vec::new(); count];
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
        .filter(|n| (1..=count).contains(n));
        let proposal = Proposal {
            subject: field("subject"),
            predicate: field("predicate"),
            object: field("object"),
        };
        match index {
            Some(n) => out[n - 1].push(proposal),
            None => stray.push(proposal),
        }
    }
    Ok((out, stray))
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
        let content = r#"{"claims": [
            {"sentence": 1, "subject": "Pro", "predicate": "price", "object": 49},
            {"sentence": 7, "subject": "Pro", "predicate": "price", "object": "59"}
        ]}"#;
        let (parsed, stray) = parse_batch(content, 2).expect("parses");
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            parsed[0],
            vec![Proposal {
                subject: "Pro".into(),
                predicate: "price".into(),
                object: "49".into()
            }]
        );
        assert!(parsed[1].is_empty());
        assert_eq!(stray.len(), 1, "sentence 7 was not sent");
        assert_eq!(stray[0].object, "59");
        for bad in ["sorry", "{\"facts\": []}", "[1]", "42"] {
            assert!(
                matches!(parse_batch(bad, 2), Err(LlmError::BadResponse(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn keys_round_trip_through_hex_and_bad_ones_are_refused() {
        let key: Key = Sha256::digest(b"a sentence").into();
        let text = hex(&key);
        assert_eq!(text.len(), 64);
        assert_eq!(key_from_hex(&text), Some(key));
        for bad in [
            "",
            "abc",
            &text[..63],
            &format!("{}zz", &text[..62]),
            &"é".repeat(32),
        ] {
            assert_eq!(key_from_hex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_cache_keeps_the_newest_answers_and_preload_skips_bad_rows() {
        let mut cache = Cache::default();
        let key = |n: usize| -> Key { Sha256::digest(n.to_le_bytes()).into() };
        for n in 0..=CACHE_SENTENCES {
            assert!(cache.insert(key(n), Arc::from(Vec::new())));
        }
        assert_eq!(cache.answers.len(), CACHE_SENTENCES);
        assert!(cache.get(&key(0)).is_none(), "the oldest answer went first");
        assert!(cache.get(&key(CACHE_SENTENCES)).is_some());
        assert!(
            !cache.insert(key(1), Arc::from(Vec::new())),
            "already there"
        );

        let client = ModelClient::new(LlmSettings {
            enabled: true,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: String::new(),
            timeout_ms: 100,
            prompt_version: "prompt-v1".into(),
        })
        .expect("client");
        let good = CacheEntry {
            key: hex(&key(1)),
            claims: r#"[{"subject": "Pro", "predicate": "price", "object": "49"}]"#.into(),
        };
        let rows = [
            good.clone(),
            CacheEntry {
                key: hex(&key(2)),
                claims: "{not json".into(),
            },
            CacheEntry {
                key: "short".into(),
                claims: "[]".into(),
            },
        ];
        assert_eq!(
            client.preload(rows),
            Preloaded {
                loaded: 1,
                skipped: 2
            }
        );
        let cached = client.cache.lock().expect("cache").get(&key(1));
        assert_eq!(cached.map(|p| p.len()), Some(1));
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
