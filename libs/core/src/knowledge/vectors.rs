//! Nearest vectors: an exact index over unit vectors (the sentence encoder's), ranked by dot
//! product, for the dense half of passage search; above [`EXACT_UP_TO`] vectors a
//! [`VectorIndex`] also builds an approximate graph over them (HNSW, `instant-distance`) and
//! ranks its candidates. Permission is a filter applied before ranking: a vector the caller may
//! not read is never scored, so it can neither be returned nor push a readable one out of the
//! top k.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
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

/// Vectors an index scores one by one per question; above this many a [`VectorIndex`] ranks the
/// candidates of an approximate graph instead (at this size an exact question costs a few
/// milliseconds; `ontoloop bench passages` measures both).
pub const EXACT_UP_TO: usize = 50_000;

/// Candidates an approximate search takes from the graph before the caller's filter: the
/// readable nearest among them are ranked.
const APPROX_CANDIDATES: usize = 256;

/// Changes since the graph was built that never make it be built again by themselves (see
/// [`VectorIndex::wants_graph`]).
pub const REBUILD_AFTER_CHANGES: usize = 1_000;

/// The vectors and keys an approximate graph is built from ([`VectorIndex::graph_input`]).
pub struct GraphInput<K> {
    points: Vec<Unit>,
    keys: Vec<K>,
}

/// An approximate graph built from a [`GraphInput`], to install in its index.
pub struct ApproxGraph<K> {
    graph: instant_distance::HnswMap<Unit, K>,
    size: usize,
}

impl<K: Clone> GraphInput<K> {
    /// Builds the graph: the long step (seconds to minutes at tens of thousands of vectors),
    /// which holds no index.
    pub fn build(self) -> ApproxGraph<K> {
        ApproxGraph {
            size: self.keys.len(),
            graph: instant_distance::Builder::default()
                .seed(0x6f6e746f)
                .ef_search(APPROX_CANDIDATES)
                .build(self.points, self.keys),
        }
    }
}

/// A unit vector as the graph holds it; its distance to another is 1 − cosine.
#[derive(Debug, Clone)]
struct Unit(Box<[f32]>);

impl instant_distance::Point for Unit {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - cosine(&self.0, &other.0)
    }
}

/// The approximate graph over the vectors an index held when it was built, and what changed
/// since: a changed or removed key's point in the graph is stale (never returned), and a key
/// added or changed since is scored exactly beside the graph's candidates.
struct Approx<K> {
    graph: instant_distance::HnswMap<Unit, K>,
    /// Points in the graph.
    size: usize,
    stale: HashSet<K>,
    fresh: HashSet<K>,
}

/// Nearest vectors: exact up to a size ([`EXACT_UP_TO`] by default), approximate above it.
/// Every vector is held in an [`ExactIndex`] (the source of truth, which also answers a caller
/// whose filter leaves too few of the graph's candidates); [`VectorIndex::build_approx`] builds
/// the graph once the index has grown past its size, and changes after that are patched around
/// the graph until it is built again.
pub struct VectorIndex<K> {
    exact: ExactIndex<K>,
    approx: Option<Approx<K>>,
    exact_up_to: usize,
}

impl<K: Clone + Eq + Hash + Send + Sync> VectorIndex<K> {
    /// An empty index of vectors of `dimensions` components, exact up to [`EXACT_UP_TO`].
    pub fn new(dimensions: usize) -> Self {
        Self::exact_up_to(dimensions, EXACT_UP_TO)
    }

    /// An empty index, exact up to `exact_up_to` vectors.
    pub fn exact_up_to(dimensions: usize, exact_up_to: usize) -> Self {
        VectorIndex {
            exact: ExactIndex::new(dimensions),
            approx: None,
            exact_up_to,
        }
    }

    /// Holds `vector` under `key` (see [`ExactIndex::insert`]).
    pub fn insert(&mut self, key: K, vector: &[f32]) -> Result<(), VectorError> {
        self.exact.insert(key.clone(), vector)?;
        if let Some(approx) = &mut self.approx {
            approx.stale.insert(key.clone());
            approx.fresh.insert(key);
        }
        Ok(())
    }

    /// Drops the vector held under `key`; whether there was one.
    pub fn remove(&mut self, key: &K) -> bool {
        if let Some(approx) = &mut self.approx {
            approx.stale.insert(key.clone());
            approx.fresh.remove(key);
        }
        self.exact.remove(key)
    }

    /// Builds the approximate graph over every vector held when the index holds more than its
    /// exact size (else drops any graph: exact it is). Seeded, so the same vectors build the
    /// same graph. Seconds at tens of thousands of vectors: callers build off the request path
    /// ([`VectorIndex::graph_input`], [`GraphInput::build`] and [`VectorIndex::install_graph`]
    /// do it in three steps, the long one without the index).
    pub fn build_approx(&mut self) {
        match self.graph_input() {
            Some(input) => self.install_graph(input.build(), std::iter::empty()),
            None => self.approx = None,
        }
    }

    /// Whether the graph should be built (again): the index has grown past its exact size with
    /// no graph, or the vectors changed since the graph was built (scored exactly beside it, or
    /// skipped as stale) are more than a tenth of it, at least [`REBUILD_AFTER_CHANGES`].
    pub fn wants_graph(&self) -> bool {
        if self.exact.len() <= self.exact_up_to {
            return self.approx.is_some();
        }
        match &self.approx {
            None => true,
            Some(approx) => {
                approx.stale.len() + approx.fresh.len()
                    > (approx.size / 10).max(REBUILD_AFTER_CHANGES)
            }
        }
    }

    /// What the graph is built from: every vector held now with its key; `None` while the
    /// index is within its exact size.
    pub fn graph_input(&self) -> Option<GraphInput<K>> {
        if self.exact.len() <= self.exact_up_to {
            return None;
        }
        let points = self
            .exact
            .components
            .chunks_exact(self.exact.dimensions.max(1))
            .map(|v| Unit(v.into()))
            .collect();
        Some(GraphInput {
            points,
            keys: self.exact.keys.clone(),
        })
    }

    /// Puts `graph` (built from an earlier [`VectorIndex::graph_input`]) in use; `changed` are
    /// the keys inserted or removed since that input was taken: their points in the graph are
    /// stale and the vectors held for them now are scored exactly. A graph built while the
    /// index shrank back within its exact size is dropped.
    pub fn install_graph(&mut self, graph: ApproxGraph<K>, changed: impl IntoIterator<Item = K>) {
        if self.exact.len() <= self.exact_up_to {
            self.approx = None;
            return;
        }
        let mut approx = Approx {
            graph: graph.graph,
            size: graph.size,
            stale: HashSet::new(),
            fresh: HashSet::new(),
        };
        for key in changed {
            if self.exact.get(&key).is_some() {
                approx.fresh.insert(key.clone());
            }
            approx.stale.insert(key);
        }
        self.approx = Some(approx);
    }

    /// Whether questions are answered from the approximate graph.
    pub fn is_approximate(&self) -> bool {
        self.approx.is_some()
    }

    /// How many vectors are held.
    pub fn len(&self) -> usize {
        self.exact.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// About how many bytes the index holds (the vectors twice over once the graph is built,
    /// and the graph's links).
    pub fn approx_bytes(&self) -> usize {
        let exact = self.exact.approx_bytes();
        match &self.approx {
            // The graph holds its own copy of each vector and about 32 links of 4 bytes each.
            Some(_) => exact * 2 + self.exact.len() * 32 * 4,
            None => exact,
        }
    }

    /// The vector held under `key`.
    pub fn get(&self, key: &K) -> Option<&[f32]> {
        self.exact.get(key)
    }

    /// Every key held with its vector, in the order they came in.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &[f32])> {
        self.exact.keys.iter().zip(
            self.exact
                .components
                .chunks_exact(self.exact.dimensions.max(1)),
        )
    }

    /// The `k` vectors nearest to `query` among those `readable` admits, nearest first, with
    /// their cosine similarity. Exact while the index is small; above its size, the readable
    /// ones among the graph's nearest candidates (never a stale point) and every vector added
    /// since the graph was built, scored exactly; when the caller's filter leaves fewer than
    /// `k` of those, every readable vector is scored exactly, so a narrow permission never
    /// returns less than the exact index would.
    pub fn nearest(&self, query: &[f32], k: usize, readable: impl Fn(&K) -> bool) -> Vec<(K, f32)> {
        let Some(approx) = &self.approx else {
            return self.exact.nearest(query, k, readable);
        };
        if query.len() != self.exact.dimensions || k == 0 {
            return Vec::new();
        }
        let point = Unit(query.into());
        let mut search = instant_distance::Search::default();
        let mut found: Vec<(K, f32)> = approx
            .graph
            .search(&point, &mut search)
            .filter(|item| !approx.stale.contains(item.value) && readable(item.value))
            .map(|item| (item.value.clone(), 1.0 - item.distance))
            .collect();
        found.extend(
            approx
                .fresh
                .iter()
                .filter(|key| readable(key))
                .filter_map(|key| {
                    let vector = self.exact.get(key)?;
                    Some((key.clone(), cosine(vector, query)))
                }),
        );
        if found.len() < k {
            return self.exact.nearest(query, k, readable);
        }
        found.sort_by(|a, b| b.1.total_cmp(&a.1));
        found.truncate(k);
        found
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

    fn random_unit(rng: &mut StdRng, dimensions: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dimensions)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect();
        unit(&v)
    }

    /// Inserts a random unit vector of 8 dimensions under each of `keys`.
    fn insert_random(index: &mut VectorIndex<u32>, rng: &mut StdRng, keys: std::ops::Range<u32>) {
        for key in keys {
            index.insert(key, &random_unit(rng, 8)).unwrap();
        }
    }

    #[test]
    fn above_its_exact_size_the_index_is_approximate_and_finds_nearly_what_exact_finds() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut index = VectorIndex::exact_up_to(16, 500);
        let mut exact = ExactIndex::new(16);
        for key in 0..3_000u32 {
            let v = random_unit(&mut rng, 16);
            index.insert(key, &v).unwrap();
            exact.insert(key, &v).unwrap();
        }
        assert!(!index.is_approximate());
        index.build_approx();
        assert!(index.is_approximate());
        let (mut hits, mut wanted) = (0, 0);
        for _ in 0..50 {
            let query = random_unit(&mut rng, 16);
            let truth: HashSet<u32> = exact
                .nearest(&query, 10, |_| true)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let got = index.nearest(&query, 10, |_| true);
            assert_eq!(got.len(), 10);
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "nearest first");
            hits += got.iter().filter(|(k, _)| truth.contains(k)).count();
            wanted += 10;
        }
        let recall = hits as f64 / wanted as f64;
        assert!(recall >= 0.9, "recall@10 {recall}");
    }

    #[test]
    fn the_approximate_index_filters_before_ranking_and_follows_changes() {
        let mut rng = StdRng::seed_from_u64(12);
        let mut index = VectorIndex::exact_up_to(8, 100);
        insert_random(&mut index, &mut rng, 0..1_000);
        index.build_approx();
        let query = random_unit(&mut rng, 8);
        // Only what the caller may read, and as many as asked.
        let even = index.nearest(&query, 10, |k| k % 2 == 0);
        assert_eq!(even.len(), 10);
        assert!(even.iter().all(|(k, _)| k % 2 == 0));
        // A filter the graph's candidates cannot satisfy falls back to scoring exactly.
        let few = index.nearest(&query, 5, |k| *k >= 997);
        let mut keys: Vec<u32> = few.iter().map(|(k, _)| *k).collect();
        keys.sort();
        assert_eq!(keys, [997, 998, 999]);
        // A removed vector is never returned; one added (or changed) since the build is found.
        let top = index.nearest(&query, 1, |_| true)[0].0;
        assert!(index.remove(&top));
        assert!(
            index
                .nearest(&query, 10, |_| true)
                .iter()
                .all(|(k, _)| *k != top)
        );
        index.insert(5_000, &query).unwrap();
        index.insert(3, &query).unwrap();
        let found = index.nearest(&query, 2, |_| true);
        let mut keys: Vec<u32> = found.iter().map(|(k, _)| *k).collect();
        keys.sort();
        assert_eq!(keys, [3, 5_000]);
        assert!((found[0].1 - 1.0).abs() < 1e-5);
        assert_eq!(index.len(), 1_000);
    }

    #[test]
    fn the_graph_is_built_again_off_the_index_once_it_grew_or_enough_changed() {
        let mut rng = StdRng::seed_from_u64(13);
        let mut index = VectorIndex::exact_up_to(8, 100);
        insert_random(&mut index, &mut rng, 0..50);
        assert!(!index.wants_graph(), "within the exact size");
        assert!(index.graph_input().is_none());
        insert_random(&mut index, &mut rng, 50..1_000);
        assert!(
            index.wants_graph(),
            "grown past the exact size, no graph yet"
        );
        // The input is taken, the graph built without the index, and changes made meanwhile
        // are named when it is installed.
        let input = index.graph_input().expect("above the exact size");
        let query = random_unit(&mut rng, 8);
        assert!(index.remove(&7));
        index.insert(9_000, &query).unwrap();
        index.install_graph(input.build(), [7, 9_000]);
        assert!(index.is_approximate() && !index.wants_graph());
        let found = index.nearest(&query, 10, |_| true);
        assert_eq!(
            found[0].0, 9_000,
            "added while the graph was built: {found:?}"
        );
        assert!(found.iter().all(|(k, _)| *k != 7), "removed meanwhile");
        // Enough changes since (scored exactly beside the graph) call for it again.
        for key in 0..REBUILD_AFTER_CHANGES as u32 {
            index
                .insert(10_000 + key, &random_unit(&mut rng, 8))
                .unwrap();
        }
        assert!(index.wants_graph());
        index.build_approx();
        assert!(!index.wants_graph());
        // Back within the exact size, the graph is dropped.
        let keys: Vec<u32> = (0..20_000).collect();
        for key in keys.iter().skip(60) {
            index.remove(key);
        }
        assert!(index.wants_graph());
        assert!(index.graph_input().is_none());
        index.build_approx();
        assert!(!index.is_approximate() && !index.wants_graph());
        assert_eq!(index.nearest(&query, 100, |_| true).len(), index.len());
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
