//! The firewall benchmark: a labelled claim set generated from a world at its last checkpoint
//! (current true claims, also under former names; superseded values; draft values from
//! low-authority pages; invented entities), validated through the running firewall, and the
//! latency of validating a ten-claim answer in process and over loopback gRPC, with
//! authentication off and, on the same store restarted with `auth.mode = "jwt"` (an HS256 secret
//! generated for the run, the caller's token), with it on ([`time_with_auth`]).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Context as _;
use ontoloop_core::Caller;
use ontoloop_core::knowledge::{Ontology, extract_claims, same_value};
use ontoloop_core::world::{Scenario, World};
use ontoloop_proto::v1;
use serde::Serialize;

use crate::percentile;
use ontoloop::client::{self, Clients};

/// What a labelled claim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// True at the last checkpoint (possibly under a former name).
    True,
    /// A value the world held before and superseded.
    Stale,
    /// A value only a low-authority page (a draft, meeting notes) states.
    Draft,
    /// About an entity that does not exist.
    Invented,
}

/// One labelled claim.
#[derive(Debug, Clone)]
pub struct Labelled {
    /// Label.
    pub label: Label,
    /// The claim.
    pub claim: v1::Claim,
}

/// The confusion table: a block of a stale, draft or invented claim is a true block.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Confusion {
    /// True claims passed.
    pub true_pass: u64,
    /// Bad claims blocked.
    pub true_block: u64,
    /// Bad claims passed.
    pub false_pass: u64,
    /// True claims blocked.
    pub false_block: u64,
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    /// In process, p50.
    pub inproc_p50: u64,
    /// In process, p99.
    pub inproc_p99: u64,
    /// Over loopback gRPC, p50.
    pub grpc_p50: u64,
    /// Over loopback gRPC, p99.
    pub grpc_p99: u64,
    /// In process with authentication: the caller's HS256 token verified, then validate; p50.
    pub inproc_auth_p50: u64,
    /// The same, p99.
    pub inproc_auth_p99: u64,
    /// Over loopback gRPC to the system with `auth.mode = "jwt"`, the call carrying the
    /// caller's HS256 bearer; p50.
    pub grpc_auth_p50: u64,
    /// The same, p99.
    pub grpc_auth_p99: u64,
}

/// The timed ten-claim answer: who asks, and the request.
#[derive(Debug, Clone)]
pub struct TenClaims {
    /// The caller the world was replayed for.
    pub caller: Caller,
    /// The ten-claim validate request.
    pub request: v1::ValidateRequest,
    /// Its overall verdict with authentication off.
    pub overall: i32,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Confusion table.
    pub confusion: Confusion,
    /// Latency of a ten-claim answer.
    pub latency_us: Latency,
    /// Claims per label.
    #[serde(skip)]
    pub counts: BTreeMap<String, u64>,
    /// The same labelled claims written in the world's own phrasings, validated as text.
    pub paraphrased: Paraphrased,
    /// Mistakes, for the text report.
    #[serde(skip)]
    pub mistakes: Vec<String>,
    /// The largest inputs `Validate` accepts, each validated in process once.
    pub largest: Vec<Largest>,
}

/// One of the largest accepted inputs, validated in process: its size, the response's, the time
/// and the memory it took.
#[derive(Debug, Clone, Serialize)]
pub struct Largest {
    /// What the input is.
    pub input: String,
    /// Claims sent, or sentences of the text.
    pub items: usize,
    /// The request's encoded size.
    pub request_bytes: usize,
    /// The response's encoded size.
    pub response_bytes: usize,
    /// Wall time of the validation.
    pub ms: f64,
    /// Peak resident memory during the validation above the resident memory before it, in MB
    /// (Linux `VmHWM` after resetting it; 0 elsewhere).
    pub extra_mb: f64,
}

/// The labelled claims that have a phrasing in the world's pages (one subject, predicate and
/// object), each written in a sentence of the pages that states the same predicate in other
/// words than its template, and validated as answer text.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Paraphrased {
    /// Confusion table over the paraphrased claims.
    pub confusion: Confusion,
    /// Paraphrased sentences sent.
    pub sentences: u64,
    /// Of those, how many the firewall turned into a checkable claim.
    pub checkable: u64,
}

/// Sentences of the world's pages that state a predicate in a phrasing other than its template,
/// with the subject and object as they are written there: `(predicate, sentence, subject,
/// object)`.
fn phrasings(
    ontology: &Ontology,
    scenario: &Scenario,
) -> BTreeMap<String, Vec<(String, String, String)>> {
    let mut found: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for (_, _, body) in scenario.pages() {
        for c in extract_claims(ontology, body) {
            let by_template = c.extractor == ontoloop_core::knowledge::extract::RULE_SET;
            if by_template
                || c.kind != ontoloop_core::knowledge::PredicateKind::Slot
                || matches!(c.subject, ontoloop_core::knowledge::ClaimSubject::Fixed(_))
                || !c.sentence.contains(c.subject.name())
                || !c.sentence.contains(&c.object)
            {
                continue;
            }
            let list = found.entry(c.predicate.clone()).or_default();
            let phrasing = (
                c.sentence.clone(),
                c.subject.name().to_owned(),
                c.object.clone(),
            );
            if !list.contains(&phrasing) {
                list.push(phrasing);
            }
        }
    }
    found
}

/// `claim` written in the `n`th phrasing of its predicate, if it has one.
fn paraphrase(
    phrasings: &BTreeMap<String, Vec<(String, String, String)>>,
    claim: &v1::Claim,
    n: usize,
) -> Option<String> {
    if !claim.chain.is_empty() {
        return None;
    }
    let list = phrasings.get(&claim.predicate)?;
    let (sentence, subject, object) = list.get(n % list.len())?;
    let marked =
        sentence
            .replacen(subject.as_str(), "\u{1}", 1)
            .replacen(object.as_str(), "\u{2}", 1);
    // The phrasing's type noun stays with the new name ("the Pro plan" → "the Quorvex 3 plan").
    let mut new_subject = claim.subject.clone();
    if let Some((_, noun)) = subject.rsplit_once(' ')
        && noun.chars().all(char::is_lowercase)
        && !new_subject.to_lowercase().ends_with(noun)
    {
        new_subject = format!("{new_subject} {noun}");
    }
    Some(
        marked
            .replace('\u{1}', &new_subject)
            .replace('\u{2}', &claim.object),
    )
}

fn claim(subject: &str, predicate: &str, object: &str) -> v1::Claim {
    v1::Claim {
        subject: subject.to_owned(),
        predicate: predicate.to_owned(),
        object: object.to_owned(),
        chain: Vec::new(),
        scope: String::new(),
    }
}

async fn current_path(
    clients: &mut Clients,
    caller: &Caller,
    entity: &str,
    hops: &[String],
    seq: u64,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let answer = clients
        .retrieval
        .lookup(v1::LookupRequest {
            caller: client::caller(caller),
            entity: entity.to_owned(),
            predicate_path: hops.to_vec(),
            min_sequence: seq,
            ..Default::default()
        })
        .await
        .context("lookup the current path")?
        .into_inner();
    let mut subject = entity.to_owned();
    let mut steps = Vec::new();
    for hop in &answer.hops {
        steps.push((subject.clone(), hop.predicate.clone(), hop.value.clone()));
        subject = hop.value.clone();
    }
    Ok(steps)
}

fn chain_claim(steps: &[(String, String, String)], final_object: &str) -> v1::Claim {
    if steps.len() <= 1 {
        let (s, p, _) = steps.first().cloned().unwrap_or_default();
        return claim(&s, &p, final_object);
    }
    let mut chain: Vec<v1::ClaimStep> = steps
        .iter()
        .map(|(s, p, o)| v1::ClaimStep {
            subject: s.clone(),
            predicate: p.clone(),
            object: o.clone(),
        })
        .collect();
    if let Some(last) = chain.last_mut() {
        last.object = final_object.to_owned();
    }
    v1::Claim {
        chain,
        ..Default::default()
    }
}

/// Builds the labelled set for a world replayed into `caller`'s tenant.
pub async fn labelled_set(
    world: &World,
    scenario: &Scenario,
    clients: &mut Clients,
    caller: &Caller,
    seq: u64,
    hedge_below_authority: i32,
) -> anyhow::Result<Vec<Labelled>> {
    let ontology: Ontology = world.ontology()?;
    let last_step = world
        .questions
        .iter()
        .flat_map(|q| q.asks.iter().map(|a| a.step))
        .max()
        .unwrap_or_default();
    let mut set = Vec::new();
    for (n, question) in world.questions.iter().enumerate() {
        let Some(now) = question.asks.iter().find(|a| a.step == last_step) else {
            continue;
        };
        let steps = current_path(clients, caller, &now.entity, &question.hops, seq).await?;
        if steps.len() != question.hops.len() {
            continue;
        }
        set.push(Labelled {
            label: Label::True,
            claim: chain_claim(&steps, &now.expected),
        });
        let mut seen_names = vec![now.entity.clone()];
        for ask in question.asks.iter().filter(|a| a.step != last_step) {
            let mut old = steps.clone();
            old[0].0 = ask.entity.clone();
            if same_value(&ask.expected, &now.expected) {
                if !seen_names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(&ask.entity))
                {
                    // The same truth under a former name.
                    seen_names.push(ask.entity.clone());
                    set.push(Labelled {
                        label: Label::True,
                        claim: chain_claim(&old, &now.expected),
                    });
                }
            } else if !set.iter().any(|l: &Labelled| {
                l.label == Label::Stale && l.claim == chain_claim(&steps, &ask.expected)
            }) {
                set.push(Labelled {
                    label: Label::Stale,
                    claim: chain_claim(&steps, &ask.expected),
                });
            }
        }
        let invented = format!("Quorvex {}", n + 1);
        let mut fake = steps.clone();
        fake[0].0 = invented;
        set.push(Labelled {
            label: Label::Invented,
            claim: chain_claim(&fake, &now.expected),
        });
    }
    // Drafts: what low-authority pages state, where it differs from the current value.
    let pages: BTreeMap<&str, (&str, &str)> = scenario
        .pages()
        .map(|(doc_id, origin, body)| (doc_id, (origin, body)))
        .collect();
    for (_, body) in pages
        .values()
        .filter(|(origin, _)| ontology.authority(origin) < hedge_below_authority)
    {
        for found in extract_claims(&ontology, body)
            .into_iter()
            .filter(|c| c.kind == ontoloop_core::knowledge::PredicateKind::Slot)
        {
            let steps = current_path(
                clients,
                caller,
                found.subject.name(),
                std::slice::from_ref(&found.predicate),
                seq,
            )
            .await?;
            let differs = steps
                .first()
                .is_some_and(|(_, _, value)| !same_value(value, &found.object));
            if differs {
                set.push(Labelled {
                    label: Label::Draft,
                    claim: claim(found.subject.name(), &found.predicate, &found.object),
                });
            }
        }
    }
    Ok(set)
}

/// Runs the benchmark: confusion table over the labelled set and latency of ten-claim answers
/// (with authentication off; the auth-on rows are [`time_with_auth`]'s, from the returned
/// answer).
pub async fn run(
    world: &World,
    mut clients: Clients,
    validator: &ontoloop_firewall::Validator,
    rounds: usize,
    hedge_below_authority: i32,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(Report, TenClaims)> {
    let scenario = super::drift::patched_scenario(world)?;
    progress(&format!(
        "replaying scenario {} to its last checkpoint",
        scenario.name
    ));
    let (caller, seq) =
        super::drift::replay_only(world, clients.clone(), scenario, "firewall").await?;
    let set = labelled_set(
        world,
        scenario,
        &mut clients,
        &caller,
        seq,
        hedge_below_authority,
    )
    .await?;
    progress(&format!("validating {} labelled claims", set.len()));
    let mut report = Report {
        confusion: Confusion::default(),
        latency_us: Latency::default(),
        counts: BTreeMap::new(),
        paraphrased: Paraphrased::default(),
        mistakes: Vec::new(),
        largest: Vec::new(),
    };
    for item in &set {
        *report
            .counts
            .entry(format!("{:?}", item.label).to_lowercase())
            .or_default() += 1;
        let response = clients
            .firewall
            .validate(v1::ValidateRequest {
                caller: client::caller(&caller),
                input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
                    claims: vec![item.claim.clone()],
                })),
                ..Default::default()
            })
            .await
            .context("validate a labelled claim")?
            .into_inner();
        let blocked = response.overall == v1::Verdict::Block as i32;
        let reasons: Vec<String> = response
            .verdicts
            .iter()
            .flat_map(|v| v.reasons.iter().map(|r| r.code.clone()))
            .collect();
        match (item.label, blocked) {
            (Label::True, false) => report.confusion.true_pass += 1,
            (Label::True, true) => {
                report.confusion.false_block += 1;
                report.mistakes.push(format!(
                    "true claim blocked: {:?} ({})",
                    item.claim,
                    reasons.join(",")
                ));
            }
            (_, true) => report.confusion.true_block += 1,
            (label, false) => {
                report.confusion.false_pass += 1;
                report
                    .mistakes
                    .push(format!("{label:?} claim passed: {:?}", item.claim));
            }
        }
    }
    // The same claims in the world's own phrasings, as answer text.
    let (setup, _) = ontoloop_embed::extraction_setup(Default::default(), None);
    let ontology = setup.compile(world.ontology()?);
    let phrasings = phrasings(&ontology, scenario);
    for (n, item) in set.iter().enumerate() {
        let Some(text) = paraphrase(&phrasings, &item.claim, n) else {
            continue;
        };
        let response = clients
            .firewall
            .validate(v1::ValidateRequest {
                caller: client::caller(&caller),
                input: Some(v1::validate_request::Input::Text(text.clone())),
                ..Default::default()
            })
            .await
            .context("validate a paraphrased claim")?
            .into_inner();
        let p = &mut report.paraphrased;
        p.sentences += 1;
        let checkable = response.coverage.as_ref().is_some_and(|c| c.checkable > 0);
        p.checkable += u64::from(checkable);
        let blocked = response.overall == v1::Verdict::Block as i32;
        match (item.label, blocked) {
            (Label::True, false) => p.confusion.true_pass += 1,
            (Label::True, true) => {
                p.confusion.false_block += 1;
                report
                    .mistakes
                    .push(format!("true paraphrase blocked: {text}"));
            }
            (_, true) => p.confusion.true_block += 1,
            (label, false) => {
                p.confusion.false_pass += 1;
                report.mistakes.push(format!(
                    "{label:?} paraphrase passed{}: {text}",
                    if checkable { "" } else { " (unrecognised)" }
                ));
            }
        }
    }
    // Latency of a ten-claim answer made of the true claims.
    let mut answer: Vec<v1::Claim> = set
        .iter()
        .filter(|l| l.label == Label::True)
        .map(|l| l.claim.clone())
        .collect();
    answer.truncate(10);
    let request = v1::ValidateRequest {
        caller: client::caller(&caller),
        input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
            claims: answer,
        })),
        ..Default::default()
    };
    progress(&format!(
        "timing {rounds} ten-claim answers in process and over gRPC"
    ));
    let mut inproc = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        validator
            .validate(request.clone())
            .await
            .map_err(|s| anyhow::anyhow!("validate in process: {}", s.message()))?;
        inproc.push(started.elapsed().as_micros() as u64);
    }
    let mut grpc = Vec::with_capacity(rounds);
    let mut overall = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let response = clients
            .firewall
            .validate(request.clone())
            .await
            .context("validate over gRPC")?;
        grpc.push(started.elapsed().as_micros() as u64);
        overall = response.into_inner().overall;
    }
    report.largest = largest_inputs(validator, &caller, &set, &ontology).await?;
    inproc.sort_unstable();
    grpc.sort_unstable();
    report.latency_us = Latency {
        inproc_p50: percentile(&inproc, 0.50),
        inproc_p99: percentile(&inproc, 0.99),
        grpc_p50: percentile(&grpc, 0.50),
        grpc_p99: percentile(&grpc, 0.99),
        ..Latency::default()
    };
    Ok((
        report,
        TenClaims {
            caller,
            request,
            overall,
        },
    ))
}

/// The largest inputs the firewall accepts (`firewall.max_claims` claims; a text of as many
/// sentences within `firewall.max_text_bytes`, each written by the predicate's first pattern),
/// every claim on one slot with a value of its own: the worst case of the consistency check. Each is validated once in process.
async fn largest_inputs(
    validator: &ontoloop_firewall::Validator,
    caller: &Caller,
    set: &[Labelled],
    ontology: &Ontology,
) -> anyhow::Result<Vec<Largest>> {
    let policy = validator.policy();
    let base = set
        .iter()
        .find(|l| l.claim.chain.is_empty())
        .map(|l| l.claim.clone())
        .context("the labelled set has a single-step claim")?;
    let predicate = ontology
        .predicate(&base.predicate)
        .context("the claim's predicate is in the ontology")?;
    let numeric = predicate.object_type == "number";
    let nth = |n: usize| v1::Claim {
        object: if numeric {
            n.to_string()
        } else {
            format!("{} {n}", base.object)
        },
        ..base.clone()
    };
    // The sentence the predicate's first pattern writes for a claim, so the text is read as
    // claims (the worst case), not left unrecognised.
    let written = |claim: &v1::Claim| {
        let source = predicate.patterns.first()?.source();
        let with_subject = source.replace("{s}", &claim.subject);
        let open = with_subject.find("{o")?;
        let close = open + with_subject[open..].find('}')?;
        Some(format!(
            "{}{}{}",
            &with_subject[..open],
            claim.object,
            &with_subject[close + 1..]
        ))
    };
    let claims: Vec<v1::Claim> = (0..policy.max_claims).map(nth).collect();
    let mut text = String::new();
    let mut sentences = 0;
    while sentences < policy.max_claims {
        let claim = nth(sentences);
        let sentence = written(&claim)
            .unwrap_or_else(|| format!("{} {} {}.", claim.subject, claim.predicate, claim.object));
        if text.len() + sentence.len() + 1 > policy.max_text_bytes {
            break;
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(sentence.trim());
        sentences += 1;
    }
    let mut out = Vec::new();
    for (input, items, request) in [
        (
            format!("{} claims, one slot", claims.len()),
            claims.len(),
            v1::validate_request::Input::Claims(v1::ClaimList { claims }),
        ),
        (
            format!("text, {sentences} sentences"),
            sentences,
            v1::validate_request::Input::Text(text),
        ),
    ] {
        let request = v1::ValidateRequest {
            caller: client::caller(caller),
            input: Some(request),
            ..Default::default()
        };
        let request_bytes = prost::Message::encoded_len(&request);
        let before = memory::reset_peak();
        let started = Instant::now();
        let response = validator
            .validate(request)
            .await
            .map_err(|s| anyhow::anyhow!("validate the largest input: {}", s.message()))?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let extra_mb = memory::peak_above(before);
        out.push(Largest {
            input,
            items,
            request_bytes,
            response_bytes: prost::Message::encoded_len(&response),
            ms,
            extra_mb,
        });
    }
    Ok(out)
}

/// Resident memory from `/proc/self/status` (Linux; nothing elsewhere).
mod memory {
    fn field_kb(name: &str) -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// Resets the peak (`VmHWM`) to the current resident size; that size in kB.
    pub(super) fn reset_peak() -> Option<u64> {
        std::fs::write("/proc/self/clear_refs", "5").ok()?;
        field_kb("VmRSS:")
    }

    /// The peak since [`reset_peak`] above what it returned, in MB; 0 when unknown.
    pub(super) fn peak_above(before: Option<u64>) -> f64 {
        match (before, field_kb("VmHWM:")) {
            (Some(before), Some(peak)) => peak.saturating_sub(before) as f64 / 1024.0,
            _ => 0.0,
        }
    }
}

/// Times the same ten-claim answer with authentication on: in process as `token` verified by
/// `verifier` then validated by `validator`, and over gRPC through `clients` (dialled to a
/// system with `auth.mode = "jwt"` on the store [`run`] replayed into, their calls carrying
/// `token`). The verdict must be the one given with authentication off.
pub async fn time_with_auth(
    report: &mut Report,
    answer: &TenClaims,
    validator: &ontoloop_firewall::Validator,
    verifier: &ontoloop_auth::Verifier,
    token: &str,
    mut clients: Clients,
    rounds: usize,
) -> anyhow::Result<()> {
    let first = clients
        .firewall
        .validate(answer.request.clone())
        .await
        .context("validate over gRPC with a bearer")?
        .into_inner();
    anyhow::ensure!(
        first.overall == answer.overall,
        "with authentication on the ten-claim answer's verdict is {}, with it off {}",
        first.overall,
        answer.overall
    );
    let mut inproc = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let identity = verifier
            .verify(token)
            .context("verify the benchmark's token")?;
        anyhow::ensure!(
            identity.tenant == answer.caller.tenant()
                && identity.principal == answer.caller.principal(),
            "the benchmark's token names another caller"
        );
        validator
            .validate(answer.request.clone())
            .await
            .map_err(|s| anyhow::anyhow!("validate in process: {}", s.message()))?;
        inproc.push(started.elapsed().as_micros() as u64);
    }
    let mut grpc = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        clients
            .firewall
            .validate(answer.request.clone())
            .await
            .context("validate over gRPC with a bearer")?;
        grpc.push(started.elapsed().as_micros() as u64);
    }
    inproc.sort_unstable();
    grpc.sort_unstable();
    let latency = &mut report.latency_us;
    latency.inproc_auth_p50 = percentile(&inproc, 0.50);
    latency.inproc_auth_p99 = percentile(&inproc, 0.99);
    latency.grpc_auth_p50 = percentile(&grpc, 0.50);
    latency.grpc_auth_p99 = percentile(&grpc, 0.99);
    Ok(())
}

impl Report {
    /// `{"confusion":{...},"latency_us":{...}}`.
    pub fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// The confusion and latency tables.
    pub fn to_text(&self, world: &World) -> String {
        let c = &self.confusion;
        let l = &self.latency_us;
        let mut out = format!(
            "firewall benchmark · world {}\n\nlabelled claims: ",
            world.name
        );
        out.push_str(
            &self
                .counts
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push_str(&format!(
            "\n\n{:<22} {:>8} {:>8}\n{:<22} {:>8} {:>8}\n{:<22} {:>8} {:>8}\n",
            "",
            "passed",
            "blocked",
            "true claims",
            c.true_pass,
            c.false_block,
            "stale/draft/invented",
            c.false_pass,
            c.true_block
        ));
        let p = &self.paraphrased;
        out.push_str(&format!(
            "\nthe same claims in the pages' own phrasings, as text: {} sentences, {} checkable\n{:<22} {:>8} {:>8}\n{:<22} {:>8} {:>8}\n",
            p.sentences,
            p.checkable,
            "true claims",
            p.confusion.true_pass,
            p.confusion.false_block,
            "stale/draft/invented",
            p.confusion.false_pass,
            p.confusion.true_block
        ));
        out.push_str(&format!(
            "\nten-claim answer latency (µs)                      p50      p99\n  in process                                  {:>7}  {:>7}\n  loopback gRPC                               {:>7}  {:>7}\n  in process, auth on (HS256 verify)          {:>7}  {:>7}\n  loopback gRPC, auth on (HS256 bearer)       {:>7}  {:>7}\n",
            l.inproc_p50,
            l.inproc_p99,
            l.grpc_p50,
            l.grpc_p99,
            l.inproc_auth_p50,
            l.inproc_auth_p99,
            l.grpc_auth_p50,
            l.grpc_auth_p99
        ));
        out.push_str(
            "\nlargest accepted Validate, in process         request   response        ms   extra MB\n",
        );
        for l in &self.largest {
            out.push_str(&format!(
                "  {:<42} {:>8} B {:>8} B {:>9.1} {:>10.1}\n",
                l.input, l.request_bytes, l.response_bytes, l.ms, l.extra_mb
            ));
        }
        for mistake in &self.mistakes {
            out.push_str(&format!("  {mistake}\n"));
        }
        out
    }
}
