use super::*;
use crate::knowledge::encoder::{CachedEncoder, EncodeError};
use crate::knowledge::ontology::tests::sample;

/// What a test compares of claims: extractor, predicate, object, confidence.
pub(crate) fn stamped(claims: &[Claim]) -> Vec<(&str, &str, &str, f64)> {
    claims
        .iter()
        .map(|c| {
            (
                c.extractor.as_str(),
                c.predicate.as_str(),
                c.object.as_str(),
                c.confidence,
            )
        })
        .collect()
}

#[test]
fn stages_run_in_order_and_stamp_their_ids() {
    let ontology = sample();
    let text = "Owner of Tessaly Dock: the Atlas team. The Pro plan costs €49 per user per month. \
                You pay €19 per user each month for the Starter plan. \
                The Starter plan is not €24 per user per month.";
    let claims = ontology
        .extraction()
        .claims(&ontology, text, &Lexicon::default());
    assert_eq!(
        stamped(&claims),
        vec![
            ("structured/v2", "owned_by", "Atlas", 1.0),
            ("patterns/v1", "price", "49", 1.0),
            (semantic::LEXICAL_ID, "price", "19", 0.9),
        ]
    );
    let only = Extraction::new(&ontology, ExtractSettings::patterns_only(), None);
    assert_eq!(only.claims(&ontology, text, &Lexicon::default()).len(), 1);
}

#[test]
fn huge_pages_huge_sentences_and_garbage_are_read_without_panic() {
    let ontology = sample();
    let read = |text: &str| {
        ontology
            .extraction()
            .claims(&ontology, text, &Lexicon::default())
    };
    // A page of about 1 MB: every distinct sentence still read.
    let page: String = (0..11_000)
        .map(|i| {
            format!(
                "You pay €{i} per user each month for the Pro plan. Owner of Tessaly Dock {i}: the Atlas team.\n"
            )
        })
        .collect();
    assert!(page.len() > 1_000_000);
    assert_eq!(read(&page).len(), 22_000);
    // One sentence of 100 KB is too long to be a statement: nothing, quickly.
    let sentence = format!(
        "The Pro plan costs €49 per user per month{}.",
        " and more".repeat(12_000)
    );
    assert!(sentence.len() > 100_000);
    assert!(read(&sentence).is_empty());
    // Binary garbage (bytes as a lossy string), tables of pipes, an unclosed front matter.
    let bytes: Vec<u8> = (0..65_536u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let garbage = String::from_utf8_lossy(&bytes).into_owned();
    let _ = read(&garbage);
    let _ = read(&"|".repeat(10_000));
    let _ = read("---\nname: Tessaly Dock\nowner: Atlas\n");
    let _ = read(&"| a | b |\n|---|---|\n".repeat(2_000));
}

#[test]
fn a_tenant_may_have_a_pipeline_of_its_own() {
    let mut settings = ExtractSettings::default();
    settings.tenants.insert(
        "strict".into(),
        TenantExtract {
            stages: Some(vec![Stage::Patterns]),
            confidence: None,
        },
    );
    assert!(settings.validate().is_ok());
    let setup = ExtractionSetup::new(settings.clone(), None);
    let text = "You pay €19 per user each month for the Starter plan.";
    let strict = setup.compile_for("strict", sample());
    let other = setup.compile_for("acme", sample());
    assert!(
        strict
            .extraction()
            .claims(&strict, text, &Lexicon::default())
            .is_empty()
    );
    assert_eq!(
        other
            .extraction()
            .claims(&other, text, &Lexicon::default())
            .len(),
        1
    );
    settings.tenants.insert(
        "broken".into(),
        TenantExtract {
            stages: Some(Vec::new()),
            confidence: None,
        },
    );
    let err = settings.validate().expect_err("no stage");
    assert_eq!(err.key, "tenants");
    assert!(err.reason.starts_with("broken:"), "{}", err.reason);
}

#[test]
fn settings_are_checked() {
    assert!(ExtractSettings::default().validate().is_ok());
    let twice = ExtractSettings {
        stages: vec![Stage::Patterns, Stage::Patterns],
        ..ExtractSettings::default()
    };
    assert!(twice.validate().is_err());
    let mut bad = ExtractSettings::default();
    bad.confidence.semantic = 1.5;
    assert_eq!(
        bad.validate().map_err(|e| e.key),
        Err("confidence.semantic")
    );
}

struct Fixed;

impl SentenceEncoder for Fixed {
    fn id(&self) -> &str {
        "fixed"
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        // A toy encoder: one dimension per word of a small vocabulary, normalised.
        let vocab = [
            "cost", "costs", "pay", "owned", "owns", "led", "leads", "refund",
        ];
        Ok(texts
            .iter()
            .map(|t| {
                let lower = t.to_lowercase();
                let mut v: Vec<f32> = vocab
                    .iter()
                    .map(|w| if lower.contains(w) { 1.0 } else { 0.0 })
                    .collect();
                v.push(0.1);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

/// [`Fixed`], recording the texts of each call that reaches it.
struct Recorded(Arc<std::sync::Mutex<Vec<Vec<String>>>>);

impl SentenceEncoder for Recorded {
    fn id(&self) -> &str {
        "fixed"
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        if let Ok(mut calls) = self.0.lock() {
            calls.push(texts.iter().map(|t| (*t).to_owned()).collect());
        }
        Fixed.encode(texts)
    }
}

#[test]
fn only_sentences_a_predicate_could_take_are_encoded_and_a_page_in_one_call() {
    let ontology = sample();
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let encoder = Arc::new(CachedEncoder::new(Box::new(Recorded(Arc::clone(&calls)))));
    let extraction = Extraction::new(&ontology, ExtractSettings::default(), Some(encoder));
    // The predicates' prototypes are encoded at the first page.
    extraction.claims(&ontology, "", &Lexicon::default());
    let before = calls.lock().expect("calls").len();
    extraction.claims(
        &ontology,
        "Deployments go out during working hours after a review. Tessaly Dock is run by \
         the Atlas team. Questions go to Derya Kaya first. Payments service is looked after \
         by the Helix team.",
        &Lexicon::default(),
    );
    let calls = calls.lock().expect("calls");
    let page: Vec<&Vec<String>> = calls[before..].iter().collect();
    // Sentences no predicate could take (nothing named, or a name and no object of any
    // predicate's type) never reach the model; the two that could are encoded together,
    // once.
    assert!(
        page.iter()
            .flat_map(|call| call.iter())
            .all(|t| !t.contains("Deployments") && !t.contains("Questions")),
        "{page:?}"
    );
    let first = page.first().expect("a call");
    assert!(
        first.iter().any(|t| t.contains("run by"))
            && first.iter().any(|t| t.contains("looked after")),
        "{page:?}"
    );
    let run_by = page
        .iter()
        .flat_map(|call| call.iter())
        .filter(|t| t.contains("run by"))
        .count();
    assert_eq!(run_by, 2, "{page:?}");
}

#[test]
fn an_encoder_names_the_semantic_stage_and_its_vectors_are_cached() {
    let ontology = sample();
    let encoder = Arc::new(CachedEncoder::new(Box::new(Fixed)));
    let extraction = Extraction::new(
        &ontology,
        ExtractSettings::default(),
        Some(encoder.clone() as Arc<dyn SentenceEncoder>),
    );
    assert_eq!(extraction.semantic_id(), "semantic/fixed/v1");
    let claims = extraction.claims(
        &ontology,
        "Tessaly Dock is owned by Atlas, the team. The Atlas team owns Payments service.",
        &Lexicon::default(),
    );
    assert!(
        claims
            .iter()
            .any(|c| c.extractor == "semantic/fixed/v1" && c.predicate == "owned_by"),
        "{claims:?}"
    );
    assert!(encoder.cached() > 0);
    let setup = ExtractionSetup::new(ExtractSettings::default(), Some(encoder));
    assert_eq!(
        setup.describe(),
        "stages structured → patterns → semantic; semantic: model fixed"
    );
}
