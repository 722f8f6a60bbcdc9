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

/// An encoder that remembers the vectors of texts it has encoded, so re-reading a page (a
/// patch, a repair, answer-time evidence) never pays the model twice for the same sentence.
pub struct CachedEncoder {
    inner: Box<dyn SentenceEncoder>,
    cache: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
    encoded: std::sync::atomic::AtomicU64,
}

impl CachedEncoder {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn SentenceEncoder>) -> Self {
        Self {
            inner,
            cache: std::sync::Mutex::new(std::collections::HashMap::new()),
            encoded: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many texts it has sent to the model (cache misses), since it was made.
    pub fn model_texts(&self) -> u64 {
        self.encoded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many vectors it holds.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }
}

impl SentenceEncoder for CachedEncoder {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn keeps_vectors(&self) -> bool {
        true
    }

    fn texts_encoded(&self) -> Option<u64> {
        Some(self.model_texts())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        let mut out: Vec<Option<Vec<f32>>> = match self.cache.lock() {
            Ok(cache) => texts.iter().map(|t| cache.get(*t).cloned()).collect(),
            Err(_) => vec![None; texts.len()],
        };
        let missing: Vec<&str> = texts
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| *t)
            .collect();
        if !missing.is_empty() {
            self.encoded
                .fetch_add(missing.len() as u64, std::sync::atomic::Ordering::Relaxed);
            let fresh = self.inner.encode(&missing)?;
            if fresh.len() != missing.len() {
                return Err(EncodeError(format!(
                    "the encoder returned {} vectors for {} texts",
                    fresh.len(),
                    missing.len()
                )));
            }
            if let Ok(mut cache) = self.cache.lock() {
                if cache.len() + fresh.len() > CACHE_ENTRIES {
                    cache.clear();
                }
                for (text, vector) in missing.iter().zip(&fresh) {
                    cache.insert((*text).to_owned(), vector.clone());
                }
            }
            let mut fresh = fresh.into_iter();
            for slot in out.iter_mut().filter(|s| s.is_none()) {
                *slot = fresh.next();
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::cosine;

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
