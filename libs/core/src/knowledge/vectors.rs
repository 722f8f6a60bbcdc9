//! Nearest vectors: an exact index over unit vectors (the sentence encoder's), ranked by dot
//! product, for the dense half of passage search. Permission is a filter applied before
//! ranking: a vector the caller may not read is never scored, so it can neither be returned nor
//! push a readable one out of the top k.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;

use super::encoder::cosine;

/// Why a vector was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorError {
    /// Its length is not the index's.
    #[error("a vector of {got} dimensions; this index holds {expected}")]
    Dimensions {
        /// The index's length.
        expected: usize,
        /// The vector's.
        got: usize,
    },
    /// A NaN or infinite component.
    #[error("a vector with a component that is not a finite number")]
    NotFinite,
}

/// Every vector held, scored one by one: exact, and linear in the index's size.
#[derive(Debug, Clone)]
pub struct ExactIndex<K> {
    dimensions: usize,
    keys: Vec<K>,
    /// The vectors end to end, `dimensions` components each, in the order of `keys`.
    components: Vec<f32>,
    positions: HashMap<K, usize>,
}

impl<K: Clone + Eq + Hash> ExactIndex<K> {
    /// An empty index of vectors of `dimensions` components.
    pub fn new(dimensions: usize) -> Self {
        ExactIndex {
            dimensions,
            keys: Vec::new(),
            components: Vec::new(),
            positions: HashMap::new(),
        }
    }

    /// Holds `vector` under `key`, in place of the vector held under it before, if any.
    pub fn insert(&mut self, key: K, vector: &[f32]) -> Result<(), VectorError> {
        if vector.len() != self.dimensions {
            return Err(VectorError::Dimensions {
                expected: self.dimensions,
                got: vector.len(),
            });
        }
        if !vector.iter().all(|c| c.is_finite()) {
            return Err(VectorError::NotFinite);
        }
        match self.positions.get(&key) {
            Some(&at) => {
                self.components[at * self.dimensions..(at + 1) * self.dimensions]
                    .copy_from_slice(vector);
            }
            None => {
                self.positions.insert(key.clone(), self.keys.len());
                self.keys.push(key);
                self.components.extend_from_slice(vector);
            }
        }
        Ok(())
    }

    /// Drops the vector held under `key`; whether there was one.
    pub fn remove(&mut self, key: &K) -> bool {
        let Some(at) = self.positions.remove(key) else {
            return false;
        };
        let last = self.keys.len() - 1;
        if at != last {
            // The last vector takes the freed place.
            self.keys.swap(at, last);
            let (head, tail) = self.components.split_at_mut(last * self.dimensions);
            head[at * self.dimensions..(at + 1) * self.dimensions].copy_from_slice(tail);
            self.positions.insert(self.keys[at].clone(), at);
        }
        self.keys.pop();
        self.components.truncate(last * self.dimensions);
        true
    }

    /// How many vectors are held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// About how many bytes the index holds (the vectors, and each key's two copies counted as
    /// the key's size).
    pub fn approx_bytes(&self) -> usize {
        self.components.len() * std::mem::size_of::<f32>()
            + self.keys.len() * 2 * std::mem::size_of::<K>()
    }

    /// The vector held under `key`.
    pub fn get(&self, key: &K) -> Option<&[f32]> {
        let at = *self.positions.get(key)?;
        self.components
            .get(at * self.dimensions..(at + 1) * self.dimensions)
    }

    /// The `k` vectors nearest to `query` (highest dot product) among those whose key
    /// `readable` admits, nearest first; of equal scores the one held longer first. A query of
    /// another length finds nothing.
    pub fn nearest(&self, query: &[f32], k: usize, readable: impl Fn(&K) -> bool) -> Vec<(K, f32)> {
        if query.len() != self.dimensions || k == 0 || self.dimensions == 0 {
            return Vec::new();
        }
        // A min-heap of the best k so far: its top is the weakest kept.
        let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
        for (at, (key, vector)) in self
            .keys
            .iter()
            .zip(self.components.chunks_exact(self.dimensions))
            .enumerate()
        {
            if !readable(key) {
                continue;
            }
            best.push(Scored {
                score: cosine(vector, query),
                at,
            });
            if best.len() > k {
                best.pop();
            }
        }
        // Ascending in this order is strongest first.
        best.into_sorted_vec()
            .into_iter()
            .map(|s| (self.keys[s.at].clone(), s.score))
            .collect()
    }
}

/// A vector's score and place, ordered so that a [`BinaryHeap`] pops the weakest first: the
/// lower score, and of equal scores the later place.
#[derive(Debug, Clone, Copy)]
struct Scored {
    score: f32,
    at: usize,
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.at.cmp(&other.at))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored {}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|c| c * c).sum::<f32>().sqrt();
        v.iter().map(|c| c / norm).collect()
    }

    #[test]
    fn the_nearest_come_first_and_an_unreadable_vector_is_never_ranked() {
        let mut index = ExactIndex::new(2);
        index.insert("east", &unit(&[1.0, 0.0])).unwrap();
        index.insert("north-east", &unit(&[1.0, 1.0])).unwrap();
        index.insert("north", &unit(&[0.0, 1.0])).unwrap();
        index.insert("secret-east", &unit(&[1.0, 0.01])).unwrap();
        let query = unit(&[1.0, 0.2]);
        fn keys(found: Vec<(&'static str, f32)>) -> Vec<&'static str> {
            found.into_iter().map(|(k, _)| k).collect()
        }
        assert_eq!(
            keys(index.nearest(&query, 2, |_| true)),
            ["secret-east", "east"]
        );
        // Filtered before ranking: the readable top two, not the top two less the secret one.
        assert_eq!(
            keys(index.nearest(&query, 2, |k| !k.starts_with("secret"))),
            ["east", "north-east"]
        );
        assert!(index.nearest(&[1.0, 0.0, 0.0], 2, |_| true).is_empty());
        assert!(index.nearest(&query, 0, |_| true).is_empty());
    }

    #[test]
    fn a_key_inserted_again_is_replaced_and_a_removed_one_is_gone() {
        let mut index = ExactIndex::new(2);
        index.insert(1, &[1.0, 0.0]).unwrap();
        index.insert(2, &[0.0, 1.0]).unwrap();
        index.insert(3, &[0.6, 0.8]).unwrap();
        index.insert(1, &[0.0, -1.0]).unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(index.nearest(&[0.0, -1.0], 1, |_| true)[0].0, 1);
        assert!(index.remove(&1));
        assert!(!index.remove(&1));
        assert_eq!(index.len(), 2);
        // The vector moved into the freed place still answers under its own key.
        let found = index.nearest(&[0.6, 0.8], 1, |_| true);
        assert_eq!(found[0].0, 3);
        assert!((found[0].1 - 1.0).abs() < 1e-6);
        assert_eq!(
            index.insert(4, &[1.0]),
            Err(VectorError::Dimensions {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            index.insert(4, &[f32::NAN, 0.0]),
            Err(VectorError::NotFinite)
        );
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn the_top_k_is_the_head_of_a_full_sort_with_ties_in_insertion_order() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut index = ExactIndex::new(8);
        let mut all = Vec::new();
        for key in 0..500u32 {
            // Coarse components make many exact ties.
            let v: Vec<f32> = (0..8).map(|_| rng.random_range(-2i32..=2) as f32).collect();
            index.insert(key, &v).unwrap();
            all.push((key, v));
        }
        let query: Vec<f32> = (0..8).map(|_| rng.random_range(-2i32..=2) as f32).collect();
        let readable = |k: &u32| !k.is_multiple_of(3);
        let mut expected: Vec<(u32, f32)> = all
            .iter()
            .filter(|(k, _)| readable(k))
            .map(|(k, v)| (*k, v.iter().zip(&query).map(|(a, b)| a * b).sum()))
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        expected.truncate(10);
        assert_eq!(index.nearest(&query, 10, readable), expected);
    }
}
