//! The encoder's vectors kept in the store: an encoder over a SQLite store encodes three texts,
//! which are written behind; a new encoder over the same store (a restart) finds them and sends
//! the model only a text it never saw. Run on a single-threaded runtime and called on its
//! thread, as an encoder may be: the lookup must not wait on that runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ontoloop_core::knowledge::encoder::{CachedEncoder, EncodeError, SentenceEncoder, vector_key};
use ontoloop_settings::Loader;
use ontoloop_store::Store;

/// A model whose vector of a text is its length and first byte, counting the texts it encodes.
struct Counting(Arc<AtomicU64>);

impl SentenceEncoder for Counting {
    fn id(&self) -> &str {
        "counting"
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        self.0.fetch_add(texts.len() as u64, Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
            .collect())
    }
}

#[tokio::test]
async fn a_restarted_encoder_sends_the_model_only_texts_it_never_saw() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/ontoloop.db?mode=rwc", dir.path().display());
    let settings = Loader::new()
        .env_vars([])
        .set("store.url", &url)
        .load()
        .expect("settings");
    let store = Store::open(&settings.store).await.expect("store");
    let texts = [
        "The crane lifts forty tonnes.",
        "Tugs wait at the mouth.",
        "Tar.",
    ];

    let model = Arc::new(AtomicU64::new(0));
    let kept = ontoloop_runtime::kept_vectors(&settings.store, &store, "counting", 1_000)
        .expect("vectors are kept");
    let first = CachedEncoder::new(Box::new(Counting(Arc::clone(&model)))).keeping(kept);
    let vectors = first.encode(&texts).expect("encode");
    assert_eq!(model.load(Ordering::SeqCst), 3);
    // Written behind by a task of this runtime.
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.text_vectors_len("counting").await.expect("len") < 3 {
        assert!(Instant::now() < deadline, "the vectors were never written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(first);

    // A restart: a new encoder, nothing in its memory. Its reader connects as it starts; a
    // lookup that outwaits it is skipped (the model encodes) and lookups pause a while, so the
    // test waits until one answers.
    let kept = ontoloop_runtime::kept_vectors(&settings.store, &store, "counting", 1_000)
        .expect("vectors are kept");
    let probe = [vector_key("counting", "Tar.")];
    let deadline = Instant::now() + Duration::from_secs(90);
    while kept.find(&probe)[0].is_none() {
        assert!(
            Instant::now() < deadline,
            "the kept vectors were never found"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = CachedEncoder::new(Box::new(Counting(Arc::clone(&model)))).keeping(kept);
    let read = again.encode(&texts).expect("encode again");
    assert_eq!(read, vectors, "the kept vectors are the model's");
    assert_eq!((again.model_texts(), again.kept_texts()), (0, 3));
    let more = again
        .encode(&["Tar.", "The pilot boards at dawn."])
        .expect("encode a new text");
    assert_eq!(more[0], vectors[2]);
    assert_eq!(
        model.load(Ordering::SeqCst),
        4,
        "only the new text reached the model"
    );

    // Nothing kept: the setting's 0.
    assert!(ontoloop_runtime::kept_vectors(&settings.store, &store, "counting", 0).is_none());
}
