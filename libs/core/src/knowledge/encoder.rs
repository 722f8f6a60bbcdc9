//! The sentence-encoder contract the semantic extractor and question matching use: text in,
//! unit-length vectors out. The core only names the contract; a model crate (`ontoloop-embed`)
//! implements it, so the core stays free of IO and of any model runtime.

use std::fmt;

/// Why a batch of texts could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "encode sentences: {}", self.0)
    }
}

impl std::error::Error for EncodeError {}

/// Turns sentences into vectors whose dot product is their cosine similarity.
pub trait SentenceEncoder: Send + Sync {
    /// Stable id recorded in provenance, e.g. `all-MiniLM-L6-v2`.
    fn id(&self) -> &str;

    /// Which weights these are (the id when the encoder cannot tell): vectors kept beyond the
    /// process are keyed by it ([`vector_key`]), so other weights never read them.
    fn fingerprint(&self) -> &str {
        self.id()
    }

    /// One L2-normalised vector per text, in order. Every vector has the same length.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError>;

    /// Whether a text encoded once is kept ([`CachedEncoder`]), so encoding texts ahead in a
    /// batch saves the calls that ask for them one by one after.
    fn keeps_vectors(&self) -> bool {
        false
    }

    /// Texts sent to the model so far, where counted ([`CachedEncoder`]: its cache misses).
    fn texts_encoded(&self) -> Option<u64> {
        None
    }
}

/// Dot product of two vectors of the same length (cosine similarity for unit vectors).
///
/// Summed in eight independent lanes: one running sum is a chain of dependent additions the
/// compiler may not reorder, eight are vectorised. Every dense score and every distance the
/// approximate graph computes while it is built comes through here.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0.0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Vectors of texts already encoded, bounded; cleared whole when full.
const CACHE_ENTRIES: usize = 50_000;

/// The key a text's vector is kept under beyond the process ([`KeptVectors`]): the hex SHA-256
/// of the model's [fingerprint](SentenceEncoder::fingerprint) and the text, so one model's
/// vectors are never read for another's and the text itself is not kept.
pub fn vector_key(model: &str, text: &str) -> String {
    crate::digest::sha256_hex(&[model.as_bytes(), &[0], text.as_bytes()])
}

/// Where encoded vectors are kept beyond the process (the store, `ontoloop-runtime` wires it),
/// by [`vector_key`]: a restart, a rebuild of a dense index or a new version of a page asks the
/// model only for texts never encoded before.
pub trait KeptVectors: Send + Sync {
    /// The vectors kept under `keys`, in order (`None` where none is, or the lookup failed: the
    /// model encodes those). Blocks the caller for one lookup.
    fn find(&self, keys: &[String]) -> Vec<Option<Vec<f32>>>;

    /// Keeps freshly encoded vectors; never blocks (a full queue drops them, to be encoded
    /// again when next asked for).
    fn keep(&self, vectors: Vec<(String, Vec<f32>)>);
}

/// An encoder that remembers the vectors of texts it has encoded, so re-reading a page (a
/// patch, a repair, answer-time evidence) never pays the model twice for the same sentence; with
/// [`KeptVectors`] behind it, not across restarts either.
pub struct CachedEncoder {
    inner: Box<dyn SentenceEncoder>,
    cache: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
    kept: Option<std::sync::Arc<dyn KeptVectors>>,
    encoded: std::sync::atomic::AtomicU64,
    found: std::sync::atomic::AtomicU64,
}

impl CachedEncoder {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn SentenceEncoder>) -> Self {
        Self {
            inner,
            cache: std::sync::Mutex::new(std::collections::HashMap::new()),
            kept: None,
            encoded: std::sync::atomic::AtomicU64::new(0),
            found: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Looks texts it does not hold up in `kept` before the model, and keeps there what the
    /// model encodes.
    pub fn keeping(mut self, kept: std::sync::Arc<dyn KeptVectors>) -> Self {
        self.kept = Some(kept);
        self
    }

    /// How many texts it has sent to the model (cache misses), since it was made.
    pub fn model_texts(&self) -> u64 {
        self.encoded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many texts it found kept ([`KeptVectors`]) instead of sending them to the model.
    pub fn kept_texts(&self) -> u64 {
        self.found.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many vectors it holds.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }

    /// Holds `vectors` in memory.
    fn remember<'t>(&self, vectors: impl IntoIterator<Item = (&'t str, &'t Vec<f32>)>) {
        if let Ok(mut cache) = self.cache.lock() {
            for (text, vector) in vectors {
                if cache.len() >= CACHE_ENTRIES {
                    cache.clear();
                }
                cache.insert(text.to_owned(), vector.clone());
            }
        }
    }
}

impl SentenceEncoder for CachedEncoder {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn fingerprint(&self) -> &str {
        self.inner.fingerprint()
    }

    fn keeps_vectors(&self) -> bool {
        true
    }

    fn texts_encoded(&self) -> Option<u64> {
        Some(self.model_texts())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut out: Vec<Option<Vec<f32>>> = match self.cache.lock() {
            Ok(cache) => texts.iter().map(|t| cache.get(*t).cloned()).collect(),
            Err(_) => vec![None; texts.len()],
        };
        let unheld: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if unheld.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        // Looked up beyond the process by key, each key computed once and kept with what the
        // model makes of a text not found.
        let mut keys: Vec<Option<String>> = vec![None; texts.len()];
        if let Some(kept) = &self.kept {
            let model = self.inner.fingerprint();
            let asked: Vec<String> = unheld
                .iter()
                .map(|&i| vector_key(model, texts[i]))
                .collect();
            let mut found = kept.find(&asked);
            found.resize(asked.len(), None);
            for ((&i, vector), key) in unheld.iter().zip(found).zip(asked) {
                out[i] = vector;
                keys[i] = Some(key);
            }
            let found: Vec<usize> = unheld
                .iter()
                .copied()
                .filter(|&i| out[i].is_some())
                .collect();
            self.found.fetch_add(found.len() as u64, Relaxed);
            self.remember(
                found
                    .iter()
                    .filter_map(|&i| Some((texts[i], out[i].as_ref()?))),
            );
        }
        let missing: Vec<usize> = unheld.into_iter().filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let missing_texts: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            self.encoded.fetch_add(missing_texts.len() as u64, Relaxed);
            let fresh = self.inner.encode(&missing_texts)?;
            if fresh.len() != missing_texts.len() {
                return Err(EncodeError(format!(
                    "the encoder returned {} vectors for {} texts",
                    fresh.len(),
                    missing_texts.len()
                )));
            }
            self.remember(missing_texts.iter().copied().zip(&fresh));
            if let Some(kept) = &self.kept {
                kept.keep(
                    missing
                        .iter()
                        .zip(&fresh)
                        .filter_map(|(&i, vector)| Some((keys[i].take()?, vector.clone())))
                        .collect(),
                );
            }
            for (i, vector) in missing.into_iter().zip(fresh) {
                out[i] = Some(vector);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{CachedEncoder, EncodeError, KeptVectors, SentenceEncoder, cosine, vector_key};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// A model whose vector of a text is its length and its first byte.
    struct Counting;

    impl SentenceEncoder for Counting {
        fn id(&self) -> &str {
            "counting"
        }

        fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                .collect())
        }
    }

    /// Vectors kept in a map, as the store keeps them.
    #[derive(Default)]
    struct Shelf(Mutex<HashMap<String, Vec<f32>>>);

    impl KeptVectors for Shelf {
        fn find(&self, keys: &[String]) -> Vec<Option<Vec<f32>>> {
            let held = self.0.lock().unwrap();
            keys.iter().map(|k| held.get(k).cloned()).collect()
        }

        fn keep(&self, vectors: Vec<(String, Vec<f32>)>) {
            self.0.lock().unwrap().extend(vectors);
        }
    }

    #[test]
    fn a_restarted_encoder_finds_kept_vectors_and_asks_the_model_only_for_new_texts() {
        let shelf = Arc::new(Shelf::default());
        let first = CachedEncoder::new(Box::new(Counting)).keeping(shelf.clone());
        let texts = ["alpha beta", "gamma", "delta epsilon zeta"];
        let vectors = first.encode(&texts).unwrap();
        assert_eq!((first.model_texts(), first.kept_texts()), (3, 0));
        assert_eq!(shelf.0.lock().unwrap().len(), 3);
        assert!(
            shelf
                .0
                .lock()
                .unwrap()
                .contains_key(&vector_key("counting", "gamma"))
        );

        // A new process: nothing in memory, everything kept.
        let again = CachedEncoder::new(Box::new(Counting)).keeping(shelf.clone());
        let mixed = ["gamma", "a new sentence", "alpha beta"];
        let out = again.encode(&mixed).unwrap();
        assert_eq!((again.model_texts(), again.kept_texts()), (1, 2));
        assert_eq!(out[0], vectors[1]);
        assert_eq!(out[2], vectors[0]);
        assert_eq!(out[1], Counting.encode(&["a new sentence"]).unwrap()[0]);
        // Held in memory now: the shelf is not asked again.
        again.encode(&mixed).unwrap();
        assert_eq!((again.model_texts(), again.kept_texts()), (1, 2));
    }

    #[test]
    fn another_model_never_reads_the_vectors_kept_for_one() {
        assert_ne!(vector_key("a", "text"), vector_key("b", "text"));
        assert_ne!(vector_key("a", "bc"), vector_key("ab", "c"));
        assert_eq!(vector_key("a", "text").len(), 64);
    }

    #[test]
    fn the_lane_sum_equals_the_plain_dot_product_at_every_length() {
        for n in [0, 1, 7, 8, 9, 16, 383, 384] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 13 % 17) as f32 - 8.0) / 9.0).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            let lanes = f64::from(cosine(&a, &b));
            assert!((plain - lanes).abs() < 1e-4, "n={n}: {plain} vs {lanes}");
        }
    }
}
