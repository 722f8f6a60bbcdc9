//! The real model from `models/all-MiniLM-L6-v2` (`make test` runs `make model` first): vector
//! shape and norm, semantic ordering, batching and awkward input; and the clear error for a
//! missing folder or file, which callers use to fall back to a lexical scorer.

use std::path::Path;
use std::sync::OnceLock;

use ontoloop_core::knowledge::encoder::{SentenceEncoder, cosine};
use ontoloop_embed::{EmbedError, Embedder, MAX_BATCH, MODEL_ID};

fn model() -> &'static Embedder {
    static MODEL: OnceLock<Embedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        Embedder::load_default(None)
            .unwrap_or_else(|e| panic!("load the model (run `make model` first): {e}"))
    })
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn vectors_have_384_dimensions_and_unit_norm() {
    let encoder = model();
    assert_eq!(encoder.id(), MODEL_ID);
    assert_eq!(encoder.dimension(), 384);
    let vectors = encoder
        .encode(&["The Pro plan costs 49 euros per user per month", "Hello"])
        .expect("encode");
    assert_eq!(vectors.len(), 2);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((norm(v) - 1.0).abs() < 1e-4, "norm {}", norm(v));
    }
}

#[test]
fn a_paraphrased_question_is_closer_than_an_unrelated_one() {
    let v = model()
        .encode(&[
            "The Pro plan costs 49 euros per user per month",
            "How much is the Pro plan per seat?",
            "Who leads the Atlas team?",
        ])
        .expect("encode");
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(
        related > unrelated + 0.1,
        "related {related} should clearly beat unrelated {unrelated}"
    );
}

#[test]
fn identical_text_has_cosine_one_whatever_the_batch_padding() {
    let text = "Who leads the Atlas team?";
    let long = "A much longer sentence that forces the batch to pad the short one with many \
                padding tokens, which the mean pooling must ignore entirely.";
    let alone = model().encode(&[text]).expect("encode alone");
    let padded = model().encode(&[long, text, text]).expect("encode padded");
    assert!((cosine(&padded[1], &padded[2]) - 1.0).abs() < 1e-5);
    assert!(
        (cosine(&alone[0], &padded[1]) - 1.0).abs() < 1e-4,
        "padding changed the vector: {}",
        cosine(&alone[0], &padded[1])
    );
}

#[test]
fn more_texts_than_a_batch_come_back_in_order() {
    let texts: Vec<String> = (0..MAX_BATCH + 3)
        .map(|i| format!("sentence number {i}"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let all = model().encode(&refs).expect("encode many");
    assert_eq!(all.len(), refs.len());
    let last = model()
        .encode(&refs[refs.len() - 1..])
        .expect("encode last");
    assert!((cosine(&all[refs.len() - 1], &last[0]) - 1.0).abs() < 1e-4);
}

#[test]
fn awkward_input_is_encoded_not_refused() {
    let huge = "word ".repeat(20_000) + "🙂";
    let texts = [
        "",
        "   ",
        "🙂🚀 \u{0}\u{7} \t\r\n ctrl",
        "日本語のテキスト",
        huge.as_str(),
    ];
    let vectors = model().encode(&texts).expect("encode awkward input");
    assert_eq!(vectors.len(), texts.len());
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!(v.iter().all(|x| x.is_finite()));
    }
    assert!(model().encode(&[]).expect("encode nothing").is_empty());
}

#[test]
fn a_missing_folder_is_reported_as_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let absent = tmp.path().join("no-model-here");
    match Embedder::load(&absent) {
        Err(EmbedError::Missing { path }) => assert_eq!(path, absent),
        other => panic!("expected Missing, got {other:?}"),
    }
}

#[test]
fn an_empty_folder_names_the_missing_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    match Embedder::load_default(Some(tmp.path())) {
        Err(EmbedError::Missing { path }) => {
            assert_eq!(path, tmp.path().join("model.safetensors"))
        }
        other => panic!("expected Missing, got {other:?}"),
    }
}

#[test]
fn corrupt_weights_are_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let real = ontoloop_embed::model_dir(None);
    std::fs::copy(
        real.join("tokenizer.json"),
        tmp.path().join("tokenizer.json"),
    )
    .expect("copy tokenizer");
    std::fs::write(tmp.path().join("model.safetensors"), b"not safetensors").expect("write");
    let err = Embedder::load(Path::new(tmp.path())).expect_err("corrupt weights must not load");
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
}

fn ontology() -> ontoloop_core::knowledge::Ontology {
    ontoloop_core::knowledge::Ontology::from_json(
        r#"{"predicates": [
            {"name": "price", "subject_type": "plan", "object_type": "number", "unit": "EUR per seat per month",
             "patterns": ["The {s} plan costs €{o:number} per seat per month."]},
            {"name": "managed_by", "subject_type": "team", "object_type": "person",
             "patterns": ["The {s} team is managed by {o}."]}
          ],
          "authority": {"default": 1}}"#,
    )
    .expect("ontology")
}

#[test]
fn an_empty_model_folder_falls_back_to_lexical_scoring_and_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = ontoloop_core::knowledge::ExtractSettings {
        model_dir: dir.path().display().to_string(),
        ..Default::default()
    };
    let (setup, err) = ontoloop_embed::extraction_setup(settings.clone(), None);
    assert!(matches!(err, Some(EmbedError::Missing { .. })), "{err:?}");
    assert!(
        setup.describe().contains("lexical fallback"),
        "{}",
        setup.describe()
    );
    assert!(
        ontoloop_embed::describe(&settings).contains("lexical fallback"),
        "{}",
        ontoloop_embed::describe(&settings)
    );
    // The pipeline still reads: the lexical scorer stamps its own id.
    let ontology = setup.compile(ontology());
    let claims = ontology.extraction().claims(
        &ontology,
        "You pay €12 per seat each month for the Basic plan.",
        &ontoloop_core::knowledge::Lexicon::default(),
    );
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(claims[0].extractor, "semantic/lexical/v1");
    assert_eq!(claims[0].object, "12");
}

#[test]
fn with_the_model_the_semantic_stage_reads_a_synonym_the_lexical_scorer_cannot() {
    let text = "The Falcon team is run by Mara Olsen.";
    let (setup, err) = ontoloop_embed::extraction_setup(Default::default(), None);
    assert!(
        err.is_none(),
        "the model is fetched by `make model`: {err:?}"
    );
    let ontology = setup.compile(ontology());
    let claims = ontology.extraction().claims(
        &ontology,
        text,
        &ontoloop_core::knowledge::Lexicon::default(),
    );
    let found: Vec<(&str, &str, &str, &str)> = claims
        .iter()
        .map(|c| {
            (
                c.extractor.as_str(),
                c.predicate.as_str(),
                c.subject.name(),
                c.object.as_str(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![(
            "semantic/all-MiniLM-L6-v2/v1",
            "managed_by",
            "Falcon team",
            "Mara Olsen"
        )]
    );
    let lexical = ontology_lexical();
    assert!(
        lexical
            .extraction()
            .claims(
                &lexical,
                text,
                &ontoloop_core::knowledge::Lexicon::default()
            )
            .is_empty()
    );
}

fn ontology_lexical() -> ontoloop_core::knowledge::Ontology {
    ontoloop_core::knowledge::ExtractionSetup::new(Default::default(), None).compile(ontology())
}

/// Missions, the crews that fly them and who commands a crew.
fn missions() -> &'static str {
    r#"{"predicates": [
        {"name": "flown_by", "subject_type": "mission", "object_type": "crew",
         "patterns": ["The {s} mission is flown by crew {o}."]},
        {"name": "commanded_by", "subject_type": "crew", "object_type": "astronaut",
         "patterns": ["Crew {s} is commanded by {o}."]}
      ],
      "authority": {"default": 1}}"#
}

#[test]
fn with_the_model_a_question_word_is_matched_by_meaning_not_only_by_spelling() {
    use ontoloop_core::knowledge::{Graph, Ontology, PageVersion, ask};
    let question = "Who commands the crew that flies the Heron mission?";
    let page = PageVersion {
        source_id: "crews".into(),
        version: 1,
        title: "crews".into(),
        origin: "wiki".into(),
        body: "The Heron mission is flown by crew Lyra. Crew Lyra is commanded by Ines Moreau."
            .into(),
        updated_at: chrono::Utc::now(),
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    };
    let link = |ontology: &Ontology| {
        let mut graph = Graph::new(ontology);
        graph.apply_page(ontology, &page, chrono::Utc::now());
        ask::link(
            question,
            ontology,
            &graph,
            &[],
            &ontoloop_core::knowledge::extract::Extract,
        )
        .expect("links")
    };
    let (setup, err) = ontoloop_embed::extraction_setup(Default::default(), None);
    assert!(err.is_none(), "{err:?}");
    let raw = Ontology::from_json(missions()).expect("ontology");
    // "flies" is spelled unlike "flown": the encoder reads it as that hop.
    let with_model = link(&setup.compile(raw.clone()));
    assert_eq!(with_model.entity, "Heron");
    assert_eq!(with_model.path, ["flown_by", "commanded_by"]);
    assert!(
        with_model.unexplained.is_empty(),
        "{:?}",
        with_model.unexplained
    );
    // Without it the same path is taken from the types, but the verb of the relative clause is
    // left unexplained, so the answer would be hedged naming it.
    let lexical = ontoloop_core::knowledge::ExtractionSetup::new(Default::default(), None);
    let without = link(&lexical.compile(raw));
    assert_eq!(without.path, ["flown_by", "commanded_by"]);
    assert_eq!(without.unexplained, ["flies"]);
}

/// Failed questions that ask one relation of different people form one pattern, and relations
/// that mean the same by the model ("pets", "dogs"; "job", "work") one too, while distinct ones
/// ("activities", "research", "job") stay apart (`RELATION_MIN_SIMILARITY`).
#[test]
fn relations_that_mean_the_same_form_one_pattern() {
    use ontoloop_core::SignalType;
    use ontoloop_core::knowledge::ask::key_words;
    use ontoloop_core::patterns::{ObservedSignal, cluster};
    use ontoloop_core::signal::SeverityThresholds;
    let asked = |(query, agent): &(&str, &str)| ObservedSignal {
        kind: SignalType::RelationshipUnknown,
        subject: key_words(query).join(" "),
        agent: (*agent).to_owned(),
        at: chrono::Utc::now(),
        query: (*query).to_owned(),
    };
    let signals: Vec<ObservedSignal> = [
        ("What activities has Melanie done with her family?", "a1"),
        ("What activity does Audrey's dog like at the park?", "a2"),
        ("What pets does Nate have?", "a3"),
        ("What dogs does Audrey have?", "a4"),
        ("What research has Caroline done?", "a5"),
        ("What job does Caroline have?", "a6"),
        ("Where does Melanie work?", "a7"),
    ]
    .iter()
    .map(asked)
    .collect();
    let thresholds = SeverityThresholds {
        window_secs: 3600,
        critical_occurrences: 10,
        critical_agents: 5,
        high_occurrences: 5,
        high_agents: 3,
        medium_occurrences: 2,
    };
    let mut found: Vec<u64> = cluster(&signals, &thresholds, Some(model()))
        .iter()
        .map(|p| p.signals)
        .collect();
    found.sort_unstable();
    // activities 2, pets + dogs 2, job + work 2, research 1.
    assert_eq!(found, [1, 2, 2, 2]);
}
