//! The dense half of passage search: one unit vector per passage of each current page (the
//! page's title, the passage's headings and its text, as [`PassageIndex`](crate::PassageIndex)
//! indexes it), made by the sentence encoder the process extracts with, held in an exact index
//! and patched page by page as versions move. Permission is the caller's filter applied before
//! ranking ([`ExactIndex::nearest`]).

use std::collections::HashMap;
use std::sync::Arc;

use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::encoder::{EncodeError, SentenceEncoder};
use ontoloop_core::knowledge::passage::chunk_page;
use ontoloop_core::knowledge::vectors::ExactIndex;

/// Passages encoded in one call to the model.
const BATCH: usize = 32;

/// A passage: its page and its number among the page's chunks.
pub type PassageKey = (String, usize);

/// Vectors of the passages of a tenant's current pages.
pub struct DenseIndex {
    encoder: Arc<dyn SentenceEncoder>,
    vectors: ExactIndex<PassageKey>,
    /// How many passages each page holds in the index.
    chunks: HashMap<String, usize>,
}

/// Why the dense index could not be built or patched.
#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The model failed.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The model gave a vector the index refuses.
    #[error("the encoder gave an unusable vector: {0}")]
    Vector(#[from] ontoloop_core::knowledge::vectors::VectorError),
}

impl DenseIndex {
    /// Encodes the passages of `pages` (their current versions) with `encoder`.
    pub fn build<'a>(
        encoder: Arc<dyn SentenceEncoder>,
        pages: impl IntoIterator<Item = &'a PageVersion>,
    ) -> Result<Self, DenseError> {
        let dimensions = encoder
            .encode(&["dimensions"])?
            .pop()
            .map_or(0, |v| v.len());
        let mut index = Self {
            encoder,
            vectors: ExactIndex::new(dimensions),
            chunks: HashMap::new(),
        };
        index.update(pages.into_iter().map(|page| (None, page)))?;
        Ok(index)
    }

    /// Every passage of each `old` version leaves and every passage of the new one comes in
    /// (a deleted page only leaves), as [`PassageIndex::update`](crate::PassageIndex::update).
    pub fn update<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (Option<&'a PageVersion>, &'a PageVersion)>,
    ) -> Result<(), DenseError> {
        let mut pending: Vec<(PassageKey, String)> = Vec::new();
        for (_, page) in pages {
            for n in 0..self.chunks.remove(&page.source_id).unwrap_or(0) {
                self.vectors.remove(&(page.source_id.clone(), n));
            }
            if page.deleted {
                continue;
            }
            let texts: Vec<String> = chunk_page(&page.source_id, page.version, &page.body)
                .iter()
                .map(|chunk| chunk.indexed_text(&page.title))
                .collect();
            self.chunks.insert(page.source_id.clone(), texts.len());
            pending.extend(
                texts
                    .into_iter()
                    .enumerate()
                    .map(|(n, text)| ((page.source_id.clone(), n), text)),
            );
        }
        for batch in pending.chunks(BATCH) {
            let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
            let vectors = self.encoder.encode(&texts)?;
            for ((key, _), vector) in batch.iter().zip(vectors) {
                self.vectors.insert(key.clone(), &vector)?;
            }
        }
        Ok(())
    }

    /// The `limit` passages nearest in meaning to `vector` (a query's, from
    /// [`DenseIndex::encode`]), nearest first, with their cosine similarity, among those
    /// `readable` admits (checked before ranking).
    pub fn nearest(
        &self,
        vector: &[f32],
        limit: usize,
        readable: impl Fn(&PassageKey) -> bool,
    ) -> Vec<(PassageKey, f32)> {
        self.vectors.nearest(vector, limit, readable)
    }

    /// A query's vector (`None` for an empty text).
    pub fn encode(&self, query: &str) -> Result<Option<Vec<f32>>, DenseError> {
        if query.trim().is_empty() {
            return Ok(None);
        }
        Ok(self.encoder.encode(&[query])?.pop())
    }

    /// Cosine similarity of `vector` (from [`DenseIndex::encode`]) and the passage `key`.
    pub fn similarity(&self, vector: &[f32], key: &PassageKey) -> Option<f32> {
        let held = self.vectors.get(key)?;
        (held.len() == vector.len())
            .then(|| ontoloop_core::knowledge::encoder::cosine(held, vector))
    }

    /// Passages held.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether no passage is held.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Approximate memory of the vectors and keys.
    pub fn approx_bytes(&self) -> usize {
        self.vectors.approx_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use ontoloop_core::knowledge::encoder::EncodeError;

    /// Words hashed into 64 dimensions, normalised: texts sharing words are close.
    struct Words;

    impl SentenceEncoder for Words {
        fn id(&self) -> &str {
            "words"
        }

        fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v = vec![0.0f32; 64];
                    for word in text.split(|c: char| !c.is_alphanumeric()) {
                        if word.is_empty() {
                            continue;
                        }
                        let lower = word.to_lowercase();
                        let slot = lower.bytes().fold(7usize, |h, b| h * 31 + usize::from(b)) % 64;
                        v[slot] += 1.0;
                    }
                    let norm = v
                        .iter()
                        .map(|x| x * x)
                        .sum::<f32>()
                        .sqrt()
                        .max(f32::EPSILON);
                    v.iter().map(|x| x / norm).collect()
                })
                .collect())
        }
    }

    fn page(id: &str, body: &str, acl: &[&str]) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version: 1,
            title: id.into(),
            origin: "wiki".into(),
            body: body.into(),
            updated_at: Utc::now(),
            acl: acl.iter().map(|s| (*s).to_owned()).collect(),
            confidence: 1.0,
            deleted: false,
        }
    }

    fn nearest(index: &DenseIndex, query: &str, readable: &[&str]) -> Vec<PassageKey> {
        let vector = index.encode(query).expect("encode").expect("a vector");
        index
            .nearest(&vector, 2, |(id, _)| readable.contains(&id.as_str()))
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    }

    #[test]
    fn passages_are_found_by_meaning_filtered_first_and_follow_their_page() {
        let handbook = page(
            "handbook",
            "# Travel\n\nBook trains two weeks ahead.\n\n# Office\n\nThe guest wifi password is on the fridge.",
            &[],
        );
        let vault = page("vault", "The admin wifi password is in the vault.", &["it"]);
        let mut index = DenseIndex::build(Arc::new(Words), [&handbook, &vault]).expect("build");
        assert_eq!(index.len(), 3);
        assert_eq!(
            nearest(&index, "guest wifi password fridge", &["handbook"])[0],
            ("handbook".to_owned(), 1)
        );
        // Filtered before ranking: the vault is never returned to one who may not read it.
        assert!(
            !nearest(&index, "admin wifi password vault", &["handbook"])
                .iter()
                .any(|(id, _)| id == "vault")
        );
        assert_eq!(
            nearest(&index, "admin wifi password vault", &["handbook", "vault"])[0].0,
            "vault"
        );
        let vector = index.encode("guest wifi").expect("encode").expect("vector");
        let similarity = index
            .similarity(&vector, &("handbook".to_owned(), 1))
            .expect("held");
        assert!(similarity > 0.0 && similarity <= 1.0 + 1e-6, "{similarity}");
        // A new version replaces the page's passages; a deletion takes them out.
        let revised = PageVersion {
            version: 2,
            ..page("handbook", "Wifi: ask reception.", &[])
        };
        index.update([(Some(&handbook), &revised)]).expect("update");
        assert_eq!(index.len(), 2);
        assert!(
            index
                .similarity(&vector, &("handbook".to_owned(), 1))
                .is_none()
        );
        let tombstone = PageVersion::tombstone(&revised, Utc::now());
        index
            .update([(Some(&revised), &tombstone)])
            .expect("delete");
        assert_eq!(index.len(), 1);
        assert!(index.encode("  ").expect("encode").is_none());
    }
}
