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
}

/// Dot product of two vectors of the same length (cosine similarity for unit vectors).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
