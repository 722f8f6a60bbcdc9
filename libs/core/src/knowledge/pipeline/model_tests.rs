//! The model stage (`knowledge::model`) in the pipeline that runs it: grounding, typing,
//! regrounding and its counters, tested from the layer above it.

use std::sync::Arc;

use crate::knowledge::claim::{Claim, ClaimSubject};
use crate::knowledge::model::*;
use crate::knowledge::model::{better_predicate, number_in, numbers, typed};
use crate::knowledge::names::NameNormaliser;
use crate::knowledge::ontology::tests::sample;
use crate::knowledge::ontology::{Ontology, PredicateKind};
use crate::knowledge::pipeline::{ExtractSettings, ExtractionSetup, Stage};
use crate::knowledge::semantic::Lexicon;
use crate::knowledge::semantic::{self, Scorer};

fn proposed(predicate: &str, subject: &str, object: &str, sentence: &str) -> Claim {
    Claim {
        predicate: predicate.into(),
        kind: PredicateKind::Slot,
        subject: ClaimSubject::Named(subject.into()),
        object: object.into(),
        sentence: sentence.into(),
        extractor: "model/test/prompt-v1".into(),
        confidence: 0.8,
    }
}

fn check(claim: Claim, sentences: &[&str]) -> Result<Claim, Ungrounded> {
    let ontology = sample();
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    ground(&ontology, &normaliser, sentences, claim)
}

const PRICE: &str = "You pay €49 per user each month for the Pro plan.";

#[test]
fn a_triple_the_sentence_carries_is_kept_with_the_sentence_spelling() {
    let kept = check(proposed("price", "Pro plan", "€49.0", PRICE), &[PRICE]).expect("kept");
    assert_eq!(kept.subject, ClaimSubject::Named("Pro plan".into()));
    assert_eq!(kept.object, "49");
    assert_eq!(kept.confidence, 0.8);
    assert!(check(proposed("price", "pro", "49", PRICE), &[PRICE]).is_ok());
    let fixed = "Refunds can be asked for within 1,000 days.";
    let refund =
        check(proposed("refund_days", "refunds", "1000", fixed), &[fixed]).expect("fixed subject");
    assert_eq!(refund.subject, ClaimSubject::Fixed("Refund policy".into()));
    assert_eq!(refund.object, "1000");
}

#[test]
fn invented_or_misread_triples_are_dropped() {
    let sentences = [PRICE];
    let cases = [
        (
            proposed("discount", "Pro", "49", PRICE),
            Ungrounded::UnknownPredicate("discount".into()),
        ),
        (
            proposed("price", "Enterprise", "49", PRICE),
            Ungrounded::SubjectAbsent("Enterprise".into()),
        ),
        (
            proposed("price", "Pro", "59", PRICE),
            Ungrounded::ObjectAbsent("59".into()),
        ),
        (
            proposed("price", "Pro", "49", "The Pro plan costs €49."),
            Ungrounded::UnknownSentence,
        ),
        (
            proposed("owned_by", "Pro", "Atlas", PRICE),
            Ungrounded::ObjectAbsent("Atlas".into()),
        ),
        (
            proposed("owned_by", "Pro plan", "Pro", PRICE),
            Ungrounded::SelfReference("Pro".into()),
        ),
    ];
    for (claim, why) in cases {
        assert_eq!(check(claim.clone(), &sentences), Err(why), "{claim:?}");
    }
}

#[test]
fn non_assertions_are_dropped() {
    for sentence in [
        "We proposed that the Pro plan cost €59 per user per month.",
        "The Pro plan does not cost €59 per user per month.",
        "If approved, the Pro plan would cost €59 per user per month.",
    ] {
        let result = check(proposed("price", "Pro", "59", sentence), &[sentence]);
        assert!(
            matches!(result, Err(Ungrounded::Refused(_))),
            "{sentence}: {result:?}"
        );
    }
}

#[test]
fn a_neighbouring_predicate_is_replaced_by_the_better_fit() {
    let ontology = sample();
    let profiles = semantic::profiles(&ontology);
    let better = |claim: &Claim| better_predicate(&ontology, &profiles, &Scorer::Lexical, claim);
    let sentence = "Customers may ask for a refund up to 14 days after purchase.";
    let mut claim = proposed("refund_days", "Refund policy", "14", sentence);
    assert_eq!(better(&claim), None);
    claim.predicate = "price".into();
    assert_eq!(better(&claim).as_deref(), Some("refund_days"));
    // A sentence the scorer knows no word of leaves the model's choice alone.
    claim.sentence = "Pro: 14.".into();
    assert_eq!(better(&claim), None);
}

#[test]
fn known_types_and_a_fixed_subject_need_evidence() {
    let ontology = sample();
    let profiles = semantic::profiles(&ontology);
    let normaliser = NameNormaliser::new(ontology.type_nouns());
    let mut lexicon = Lexicon::default();
    lexicon.insert(&normaliser, "Payments", Some("service"));
    let check = |claim: &Claim| typed(&ontology, &profiles, &lexicon, &normaliser, claim);
    let alerts = "The Payments service sends alerts to Helix.";
    assert_eq!(
        check(&proposed("led_by", "Payments", "Helix", alerts)),
        Err(Ungrounded::WrongType("Payments".into()))
    );
    assert_eq!(
        check(&proposed("owned_by", "Payments", "Helix", alerts)),
        Ok(())
    );
    let outage = "Card capture failed for 41 minutes.";
    assert_eq!(
        check(&proposed("refund_days", "Refund policy", "41", outage)),
        Err(Ungrounded::PredicateUnsaid("refund_days".into()))
    );
    let refund = "Customers may ask for a refund up to 14 days after purchase.";
    assert_eq!(
        check(&proposed("refund_days", "Refund policy", "14", refund)),
        Ok(())
    );
}

#[test]
fn numbers_are_read_as_written() {
    assert_eq!(
        numbers("€1,200.50 and 99.9% or 14-day"),
        ["1200.50", "99.9", "14"]
    );
    assert_eq!(number_in("a 99.90% SLA", "99.9").as_deref(), Some("99.90"));
    assert_eq!(number_in("no number", "5"), None);
}

#[test]
fn counters_count_here_and_in_the_parent() {
    let parent = Arc::new(ModelCounters::default());
    parent.call(1);
    let counters = ModelCounters::child_of(Arc::clone(&parent));
    let before = counters.usage();
    counters.call(3);
    counters.triple(true);
    counters.triple(false);
    counters.error();
    let cost = ModelCost {
        requests: 1,
        sentences_sent: 2,
        cache_hits: 1,
        prompt_tokens: 40,
        completion_tokens: 9,
        tokens: 49,
    };
    counters.paid(&cost);
    let expected = ModelUsage {
        calls: 1,
        errors: 1,
        sentences: 3,
        returned: 2,
        dropped: 1,
        kept: 1,
        corrected: 0,
        cost,
    };
    assert_eq!(counters.usage(), expected);
    assert_eq!(counters.usage().since(&before), expected);
    let total = parent.usage();
    assert_eq!((total.calls, total.sentences), (2, 4));
    assert_eq!(total.cost, cost);
    assert_eq!(
        total.since(&counters.usage()).calls,
        1,
        "the parent's own call"
    );
    assert_eq!(
        before.since(&total),
        ModelUsage::default(),
        "never negative"
    );
}

/// A model with a canned answer that records what it was sent.
struct Canned {
    answer: Result<Vec<Claim>, ModelError>,
    sent: std::sync::Mutex<Vec<String>>,
}

impl ClaimModel for Canned {
    fn id(&self) -> &str {
        "model/canned/prompt-v1"
    }

    fn claims(
        &self,
        _: &Ontology,
        sentences: &[&str],
        cost: &mut ModelCost,
    ) -> Result<Vec<Claim>, ModelError> {
        cost.requests += 1;
        cost.sentences_sent += sentences.len() as u64;
        if let Ok(mut sent) = self.sent.lock() {
            sent.extend(sentences.iter().map(|s| (*s).to_owned()));
        }
        self.answer.clone()
    }
}

fn pipeline(answer: Result<Vec<Claim>, ModelError>) -> (Arc<Canned>, ExtractionSetup) {
    let model = Arc::new(Canned {
        answer,
        sent: std::sync::Mutex::new(Vec::new()),
    });
    let settings = ExtractSettings {
        stages: vec![Stage::Patterns, Stage::Model],
        ..ExtractSettings::default()
    };
    let setup = ExtractionSetup::new(settings, None).with_model(model.clone());
    (model, setup)
}

const PAGE: &str =
    "The Pro plan costs €49 per user per month. Atlas looks after Tessaly Dock these days.";
const LEFT: &str = "Atlas looks after Tessaly Dock these days.";

#[test]
fn the_model_reads_only_what_earlier_stages_left_and_is_grounded() {
    let mut owned = proposed("owned_by", "Tessaly Dock", "Atlas", LEFT);
    owned.kind = PredicateKind::Slot;
    let answer = vec![
        owned,
        // A sentence it was not sent.
        proposed(
            "price",
            "Pro",
            "49",
            "The Pro plan costs €49 per user per month.",
        ),
    ];
    let (model, setup) = pipeline(Ok(answer));
    let ontology = setup.compile(sample());
    let claims = ontology
        .extraction()
        .claims(&ontology, PAGE, &Lexicon::default());
    assert_eq!(
        crate::knowledge::pipeline::tests::stamped(&claims),
        vec![
            ("patterns/v1", "price", "49", 1.0),
            ("model/canned/prompt-v1", "owned_by", "Atlas", 0.8),
        ]
    );
    assert_eq!(*model.sent.lock().expect("sent"), vec![LEFT.to_owned()]);
    let usage = setup.model_usage();
    assert_eq!(
        (
            usage.calls,
            usage.sentences,
            usage.returned,
            usage.dropped,
            usage.kept
        ),
        (1, 1, 2, 1, 1)
    );
    assert_eq!(
        (usage.cost.requests, usage.cost.sentences_sent),
        (1, 1),
        "the model's cost is counted"
    );
    assert!(
        setup
            .describe()
            .ends_with("; model: model/canned/prompt-v1"),
        "{}",
        setup.describe()
    );
}

#[test]
fn a_tallied_setup_counts_its_own_share_and_the_process_sees_all() {
    let (_, process) = pipeline(Ok(Vec::new()));
    let part = process.tallied();
    let ontology = part.compile(sample());
    ontology
        .extraction()
        .claims(&ontology, PAGE, &Lexicon::default());
    let other = process.compile(sample());
    other.extraction().claims(&other, PAGE, &Lexicon::default());
    assert_eq!(
        (part.model_usage().calls, part.model_usage().cost.requests),
        (1, 1)
    );
    assert_eq!(
        (
            process.model_usage().calls,
            process.model_usage().cost.requests
        ),
        (2, 2)
    );
}

#[test]
fn a_failed_call_leaves_its_sentences_unclaimed_and_is_counted() {
    let (_, setup) = pipeline(Err(ModelError("connection refused".into())));
    let ontology = setup.compile(sample());
    let claims = ontology
        .extraction()
        .claims(&ontology, PAGE, &Lexicon::default());
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].extractor, "patterns/v1");
    assert_eq!(setup.model_usage().errors, 1);
}

#[test]
fn model_settings_are_checked_when_enabled() {
    let mut settings = ExtractSettings::default();
    assert!(!settings.model_wanted());
    settings.model.enabled = true;
    settings.model.base_url = "https://api.example.com/v1".into();
    settings.model.model = "m".into();
    assert_eq!(
        settings.validate().map_err(|e| e.key),
        Err("model.base_url")
    );
    settings.model.base_url = "http://127.0.0.1:8000/v1".into();
    assert!(settings.validate().is_ok());
    assert!(!settings.model_wanted(), "enabled but not staged");
    settings.stages.push(Stage::Model);
    assert!(settings.model_wanted());
    settings.confidence.model = 2.0;
    assert_eq!(
        settings.validate().map_err(|e| e.key),
        Err("confidence.model")
    );
}
