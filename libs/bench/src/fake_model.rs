//! A seeded fake OpenAI-compatible model for `ontoloop bench drift --extractor model`: it
//! answers the model stage's requests from the world's own facts, with realistic faults, so the
//! robustness of grounding and of the answer policy is measured without a real model.
//!
//! The truth for a sentence is what the default pipeline (structured, patterns and semantic
//! stages, with the sentence encoder when it is installed) reads in it, knowing every name the
//! world's pages state. Each true triple, with probability `noise`, suffers one fault: dropped, its
//! subject's name respelled ("Pro" / "Pro plan"), or its predicate swapped for a neighbouring one
//! (same object type). Each sentence with no true triple but a name or a number, with the same
//! probability, gets an invented triple (a value read from a sentence that asserts nothing). The
//! faults are drawn from a generator seeded by the seed and the sentence, so the same sentence
//! always gets the same answer, whatever the order of requests. Each answer carries a `usage`
//! block like a real endpoint's, its token counts estimated (characters / 4).

use std::collections::hash_map::DefaultHasher;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use ontoloop_core::knowledge::{
    Claim, ClaimSubject, ExtractSettings, Lexicon, NameNormaliser, Ontology, PredicateKind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use ontoloop_core::world::World;

/// Faults injected so far.
#[derive(Debug, Default)]
pub struct Faults {
    /// Requests answered.
    pub requests: AtomicU64,
    /// True triples answered.
    pub truths: AtomicU64,
    /// Triples dropped.
    pub dropped: AtomicU64,
    /// Names respelled.
    pub respelled: AtomicU64,
    /// Predicates swapped for a neighbour.
    pub neighbour: AtomicU64,
    /// Triples invented from sentences that assert nothing.
    pub invented: AtomicU64,
    /// Each fault with its sentence, in the order they were made.
    pub log: std::sync::Mutex<Vec<String>>,
}

impl Faults {
    /// One line for the report.
    pub fn describe(&self) -> String {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "fake model: {} requests, {} true triples; faults: {} dropped, {} respelled, {} neighbouring predicate, {} invented",
            n(&self.requests),
            n(&self.truths),
            n(&self.dropped),
            n(&self.respelled),
            n(&self.neighbour),
            n(&self.invented)
        )
    }

    /// Each fault with its sentence.
    pub fn lines(&self) -> Vec<String> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    fn note(&self, fault: &str, sentence: &str, triple: &Value) {
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("{fault}: {sentence:?} -> {triple}"));
        }
    }
}

/// The fake model, serving until dropped.
pub struct FakeModel {
    /// Its base URL, for `[extract.model] base_url`.
    pub base_url: String,
    /// What it did.
    pub faults: Arc<Faults>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the server answers from.
struct Oracle {
    ontology: Ontology,
    lexicon: Lexicon,
    normaliser: NameNormaliser,
    noise: f64,
    seed: u64,
    faults: Arc<Faults>,
}

/// Starts the fake model for `world` on 127.0.0.1:0.
pub async fn start(world: &World, noise: f64, seed: u64) -> anyhow::Result<FakeModel> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&noise),
        "--extractor-noise {noise}: use a rate from 0 to 1"
    );
    let ontology = world.ontology()?;
    let bodies: Vec<String> = world
        .parsed
        .iter()
        .flat_map(|s| s.pages())
        .map(|(_, _, body)| body.to_owned())
        .collect();
    let oracle = tokio::task::spawn_blocking(move || {
        let (setup, _) = ontoloop_embed::extraction_setup(ExtractSettings::default(), None);
        let ontology = setup.compile(ontology);
        let normaliser = NameNormaliser::new(ontology.type_nouns());
        let mut lexicon = Lexicon::default();
        for body in &bodies {
            for claim in ontology
                .extraction()
                .claims(&ontology, body, &Lexicon::default())
            {
                learn(&ontology, &normaliser, &mut lexicon, &claim);
            }
        }
        (ontology, lexicon, normaliser)
    })
    .await
    .context("build the fake model's oracle")?;
    let (ontology, lexicon, normaliser) = oracle;
    let faults = Arc::new(Faults::default());
    let oracle = Arc::new(Oracle {
        ontology,
        lexicon,
        normaliser,
        noise,
        seed,
        faults: Arc::clone(&faults),
    });
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind the fake model")?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let oracle = Arc::clone(&oracle);
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let oracle = Arc::clone(&oracle);
                    async move { Ok::<_, Infallible>(answer(oracle, request).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(FakeModel {
        base_url: format!("http://{address}/v1"),
        faults,
        task,
    })
}

fn learn(ontology: &Ontology, normaliser: &NameNormaliser, lexicon: &mut Lexicon, claim: &Claim) {
    let Some(predicate) = ontology.predicate(&claim.predicate) else {
        return;
    };
    let subject_type = predicate
        .subject_types
        .first()
        .filter(|_| predicate.subject_types.len() == 1)
        .map(String::as_str);
    lexicon.insert(normaliser, claim.subject.name(), subject_type);
    if predicate.object_is_entity() || predicate.kind == PredicateKind::Rename {
        let object_type = predicate
            .object_is_entity()
            .then_some(predicate.object_type.as_str());
        lexicon.insert(normaliser, &claim.object, object_type);
    }
}

async fn answer(oracle: Arc<Oracle>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let user = body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let content = tokio::task::spawn_blocking(move || oracle.claims(&user))
        .await
        .unwrap_or_else(|_| json!({"claims": []}))
        .to_string();
    // Like a real endpoint it reports `usage`; a fake has no tokenizer, so these are estimates
    // (characters / 4 of the request and of the answer).
    let prompt_tokens = bytes.len() / 4;
    let completion_tokens = content.len() / 4;
    let completion = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    });
    Response::new(Full::new(Bytes::from(completion.to_string())))
}

impl Oracle {
    /// The answer to one request's numbered sentences.
    fn claims(&self, user: &str) -> Value {
        self.faults.requests.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::new();
        for line in user.lines() {
            let Some((number, sentence)) = line.split_once(". ") else {
                continue;
            };
            let Ok(number) = number.trim().parse::<u64>() else {
                continue;
            };
            let mut hasher = DefaultHasher::new();
            (self.seed, sentence).hash(&mut hasher);
            let mut rng = StdRng::seed_from_u64(hasher.finish());
            let truths = self
                .ontology
                .extraction()
                .claims(&self.ontology, sentence, &self.lexicon);
            if truths.is_empty() {
                if rng.random::<f64>() < self.noise
                    && let Some(invented) = self.invent(sentence, &mut rng)
                {
                    self.faults.invented.fetch_add(1, Ordering::Relaxed);
                    let made = triple(number, &invented.0, &invented.1, &invented.2);
                    self.faults.note("invented", sentence, &made);
                    out.push(made);
                }
                continue;
            }
            for claim in truths {
                self.faults.truths.fetch_add(1, Ordering::Relaxed);
                let mut subject = claim.subject.name().to_owned();
                let mut predicate = claim.predicate.clone();
                let true_triple = triple(number, &subject, &predicate, &claim.object);
                let fault = if rng.random::<f64>() < self.noise {
                    match rng.random_range(0..3) {
                        0 => {
                            self.faults.dropped.fetch_add(1, Ordering::Relaxed);
                            self.faults.note("dropped", sentence, &true_triple);
                            continue;
                        }
                        1 => {
                            self.faults.respelled.fetch_add(1, Ordering::Relaxed);
                            subject = self.respell(&claim);
                            Some("respelled")
                        }
                        _ => {
                            self.faults.neighbour.fetch_add(1, Ordering::Relaxed);
                            predicate = self.neighbour(&claim, &mut rng);
                            Some("neighbouring predicate")
                        }
                    }
                } else {
                    None
                };
                let made = triple(number, &subject, &predicate, &claim.object);
                if let Some(fault) = fault {
                    self.faults.note(fault, sentence, &made);
                }
                out.push(made);
            }
        }
        json!({"claims": out})
    }

    /// "Pro plan" for "Pro", "Pro" for "Pro plan".
    fn respell(&self, claim: &Claim) -> String {
        let name = claim.subject.name();
        if let ClaimSubject::Fixed(_) = claim.subject {
            return name.to_lowercase();
        }
        if let Some(noun) = self.normaliser.type_of(name) {
            let cut = name.len() - noun.len();
            let shorter = name[..cut].trim();
            if !shorter.is_empty() {
                return shorter.to_owned();
            }
        }
        let noun = self
            .ontology
            .predicate(&claim.predicate)
            .and_then(|p| p.subject_types.first())
            .filter(|t| *t != "any");
        match noun {
            Some(noun) => format!("{name} {noun}"),
            None => name.to_lowercase(),
        }
    }

    /// Another predicate with the same object type, else any other slot predicate.
    fn neighbour(&self, claim: &Claim, rng: &mut StdRng) -> String {
        let Some(own) = self.ontology.predicate(&claim.predicate) else {
            return claim.predicate.clone();
        };
        let others: Vec<&str> = self
            .ontology
            .predicates()
            .iter()
            .filter(|p| p.name != own.name && p.kind == PredicateKind::Slot)
            .map(|p| p.name.as_str())
            .collect();
        let same: Vec<&str> = others
            .iter()
            .copied()
            .filter(|n| {
                self.ontology
                    .predicate(n)
                    .is_some_and(|p| p.object_type == own.object_type)
            })
            .collect();
        let pool = if same.is_empty() { others } else { same };
        if pool.is_empty() {
            return claim.predicate.clone();
        }
        pool[rng.random_range(0..pool.len())].to_owned()
    }

    /// A triple read from a sentence that asserts nothing: its first number (or last name) as
    /// the object of a predicate of that kind, about its first name.
    fn invent(&self, sentence: &str, rng: &mut StdRng) -> Option<(String, String, String)> {
        let words: Vec<&str> = sentence
            .split(|c: char| c.is_whitespace())
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.'))
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| !w.is_empty())
            .collect();
        let names: Vec<&str> = words
            .iter()
            .enumerate()
            .filter(|(i, w)| *i > 0 && w.chars().next().is_some_and(char::is_uppercase))
            .map(|(_, w)| *w)
            .collect();
        let number = words
            .iter()
            .find(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .copied();
        let wanted_number = number.is_some();
        let pool: Vec<_> = self
            .ontology
            .predicates()
            .iter()
            .filter(|p| {
                p.kind == PredicateKind::Slot && (p.object_type == "number") == wanted_number
            })
            .collect();
        if pool.is_empty() {
            return None;
        }
        let predicate = pool[rng.random_range(0..pool.len())];
        let subject = match &predicate.fixed_subject {
            Some(fixed) => fixed.clone(),
            None => (*names.first()?).to_owned(),
        };
        let object = match number {
            Some(number) => number.to_owned(),
            None => (*names.iter().rev().find(|n| **n != subject)?).to_owned(),
        };
        Some((subject, predicate.name.clone(), object))
    }
}

fn triple(sentence: u64, subject: &str, predicate: &str, object: &str) -> Value {
    json!({"sentence": sentence, "subject": subject, "predicate": predicate, "object": object})
}
