//! Communities over the entity graph (seed 002's "minimum viable" GraphRAG, without a model):
//! entities are tied by the current facts whose value names another entity, and by being stated
//! on the same page; Louvain modularity groups them; each community is summarised extractively by
//! its central entities and the facts that tie it together, each fact with its source. The same
//! entity graph answers "how does X relate to Y?" with the shortest chain of facts between them.
//!
//! Pure: the caller passes the graph a reader may see ([`Graph::visible_to`]), so a community
//! never holds what the reader could not read, and the time is not consulted (current facts).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::graph::{Fact, Graph};

/// How much a fact naming another entity ties the two, against sharing a page.
const FACT_WEIGHT: f64 = 1.0;
/// How much two entities stated on the same page are tied (a page about many things ties
/// each pair weakly).
const PAGE_WEIGHT: f64 = 0.25;
/// Pages stating more entities than this tie none by co-occurrence (an index page, a table
/// of everything): their pairs would swamp the facts.
const MAX_PAGE_ENTITIES: usize = 30;
/// Central entities named per community.
const CENTRAL: usize = 3;
/// Tying facts kept per community.
const TYING: usize = 5;

/// The entity graph: entity ids as nodes, weighted undirected ties.
#[derive(Debug, Clone, Default)]
pub struct EntityGraph {
    ids: Vec<String>,
    index: HashMap<String, usize>,
    /// Neighbours of each node with the tie's weight (both directions stored).
    adjacency: Vec<BTreeMap<usize, f64>>,
    /// The facts that tie two nodes, by the pair (smaller index first).
    ties: BTreeMap<(usize, usize), Vec<u64>>,
}

impl EntityGraph {
    /// The ties among `graph`'s entities: each current fact whose value resolves to another
    /// entity, and each pair of entities stated on one page (of at most
    /// [`MAX_PAGE_ENTITIES`]).
    pub fn of(graph: &Graph) -> Self {
        let mut this = Self::default();
        for entity in graph.entities() {
            this.node(&entity.id);
        }
        let mut by_page: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
        for fact in graph.facts().iter().filter(|f| f.is_current()) {
            let Some(&subject) = this.index.get(&fact.entity) else {
                continue;
            };
            by_page
                .entry(fact.source.source_id.as_str())
                .or_default()
                .insert(subject);
            let Some(object) = graph.resolve(&fact.object) else {
                continue;
            };
            let Some(&object) = this.index.get(&object.id) else {
                continue;
            };
            if object != subject {
                this.tie(subject, object, FACT_WEIGHT, Some(fact.id));
                by_page
                    .entry(fact.source.source_id.as_str())
                    .or_default()
                    .insert(object);
            }
        }
        for members in by_page.values() {
            if members.len() > MAX_PAGE_ENTITIES {
                continue;
            }
            let members: Vec<usize> = members.iter().copied().collect();
            for (i, &a) in members.iter().enumerate() {
                for &b in &members[i + 1..] {
                    this.tie(a, b, PAGE_WEIGHT, None);
                }
            }
        }
        this
    }

    fn node(&mut self, id: &str) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.ids.len();
        self.ids.push(id.to_owned());
        self.index.insert(id.to_owned(), i);
        self.adjacency.push(BTreeMap::new());
        i
    }

    fn tie(&mut self, a: usize, b: usize, weight: f64, fact: Option<u64>) {
        *self.adjacency[a].entry(b).or_default() += weight;
        *self.adjacency[b].entry(a).or_default() += weight;
        if let Some(fact) = fact {
            self.ties
                .entry((a.min(b), a.max(b)))
                .or_default()
                .push(fact);
        }
    }

    /// The number of entities.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no entities.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The entities' communities, largest first (ties by their first entity id); an entity
    /// tied to nothing is in none.
    pub fn communities(&self) -> Vec<Community> {
        let edges: Vec<(usize, usize, f64)> = self
            .adjacency
            .iter()
            .enumerate()
            .flat_map(|(a, n)| {
                n.iter()
                    .filter(move |(b, _)| a < **b)
                    .map(move |(b, w)| (a, *b, *w))
            })
            .collect();
        let labels = louvain(self.len(), &edges);
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (node, label) in labels.into_iter().enumerate() {
            if !self.adjacency[node].is_empty() {
                groups.entry(label).or_default().push(node);
            }
        }
        let mut communities: Vec<Community> = groups
            .into_values()
            .filter(|members| members.len() > 1)
            .map(|members| self.community(&members))
            .collect();
        communities.sort_by(|a, b| {
            b.members
                .len()
                .cmp(&a.members.len())
                .then_with(|| a.members.cmp(&b.members))
        });
        communities
    }

    /// One community's summary: members, the most tied inside it, and the facts tying it.
    fn community(&self, members: &[usize]) -> Community {
        let inside: BTreeSet<usize> = members.iter().copied().collect();
        let strength = |node: usize| -> f64 {
            self.adjacency[node]
                .iter()
                .filter(|(other, _)| inside.contains(other))
                .map(|(_, w)| w)
                .sum()
        };
        let mut ranked: Vec<(f64, usize)> = members.iter().map(|&m| (strength(m), m)).collect();
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.ids[a.1].cmp(&self.ids[b.1]))
        });
        let central = ranked
            .iter()
            .take(CENTRAL)
            .map(|(_, m)| self.ids[*m].clone())
            .collect();
        let mut facts: Vec<u64> = self
            .ties
            .iter()
            .filter(|((a, b), _)| inside.contains(a) && inside.contains(b))
            .flat_map(|(_, facts)| facts.iter().copied())
            .collect();
        facts.sort_unstable();
        facts.dedup();
        facts.truncate(TYING);
        let mut members: Vec<String> = members.iter().map(|m| self.ids[*m].clone()).collect();
        members.sort();
        Community {
            members,
            central,
            facts,
        }
    }

    /// The shortest chain of facts from entity `from` to entity `to` (ids), each step a fact
    /// whose subject or value is the entity before it: `None` when no chain of facts joins them
    /// (sharing a page is not a relation one can cite).
    pub fn relate(&self, graph: &Graph, from: &str, to: &str) -> Option<Vec<u64>> {
        let (&start, &goal) = (self.index.get(from)?, self.index.get(to)?);
        if start == goal {
            return Some(Vec::new());
        }
        let mut previous: HashMap<usize, (usize, u64)> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for &next in self.adjacency[node].keys() {
                if next == start || previous.contains_key(&next) {
                    continue;
                }
                let Some(fact) = self
                    .ties
                    .get(&(node.min(next), node.max(next)))
                    .and_then(|f| {
                        f.iter()
                            .copied()
                            .filter(|id| graph.fact(*id).is_some_and(Fact::is_current))
                            .min()
                    })
                else {
                    continue;
                };
                previous.insert(next, (node, fact));
                if next == goal {
                    let mut chain = Vec::new();
                    let mut at = goal;
                    while at != start {
                        let (before, fact) = previous[&at];
                        chain.push(fact);
                        at = before;
                    }
                    chain.reverse();
                    return Some(chain);
                }
                queue.push_back(next);
            }
        }
        None
    }
}

/// A community of entities and its extractive summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Community {
    /// Its entities' ids, sorted.
    pub members: Vec<String>,
    /// The most tied entities inside it, most tied first (at most [`CENTRAL`]).
    pub central: Vec<String>,
    /// Facts tying two of its members (at most [`TYING`]), by id: each cites its source.
    pub facts: Vec<u64>,
}

/// Louvain modularity communities of an undirected weighted graph of `n` nodes: the community
/// label of each node (labels are node indices of the first level's representatives, not
/// consecutive). Deterministic: nodes are visited in index order.
pub fn louvain(n: usize, edges: &[(usize, usize, f64)]) -> Vec<usize> {
    let mut labels: Vec<usize> = (0..n).collect();
    let mut level = Level::new(n, edges);
    loop {
        let (moved, assignment) = level.local_moves();
        if !moved {
            return labels;
        }
        // Renumber the level's communities 0..k and lift every original node onto them.
        let mut renumber: BTreeMap<usize, usize> = BTreeMap::new();
        for &c in &assignment {
            let next = renumber.len();
            renumber.entry(c).or_insert(next);
        }
        for label in &mut labels {
            *label = renumber[&assignment[*label]];
        }
        level = level.aggregate(&assignment, &renumber);
    }
}

/// One level of Louvain: a weighted graph with self-loops.
struct Level {
    adjacency: Vec<BTreeMap<usize, f64>>,
    /// Self-loop weight of each node (the weight inside the community it stands for).
    loops: Vec<f64>,
}

impl Level {
    fn new(n: usize, edges: &[(usize, usize, f64)]) -> Self {
        let mut adjacency = vec![BTreeMap::new(); n];
        let mut loops = vec![0.0; n];
        for &(a, b, w) in edges {
            if a >= n || b >= n || w.is_nan() || w <= 0.0 {
                continue;
            }
            if a == b {
                loops[a] += w;
            } else {
                *adjacency[a].entry(b).or_insert(0.0) += w;
                *adjacency[b].entry(a).or_insert(0.0) += w;
            }
        }
        Self { adjacency, loops }
    }

    fn degree(&self, node: usize) -> f64 {
        self.adjacency[node].values().sum::<f64>() + 2.0 * self.loops[node]
    }

    /// Moves nodes between communities while modularity rises: whether any node moved, and
    /// each node's community.
    fn local_moves(&self) -> (bool, Vec<usize>) {
        let n = self.adjacency.len();
        let degrees: Vec<f64> = (0..n).map(|i| self.degree(i)).collect();
        let total: f64 = degrees.iter().sum();
        let mut community: Vec<usize> = (0..n).collect();
        if total <= 0.0 {
            return (false, community);
        }
        let mut totals = degrees.clone();
        let mut moved_any = false;
        // Bounded passes: each pass raises modularity, but floating point may cycle.
        for _ in 0..n.max(1) * 4 {
            let mut moved = false;
            for node in 0..n {
                let own = community[node];
                let mut links: BTreeMap<usize, f64> = BTreeMap::new();
                for (&other, &w) in &self.adjacency[node] {
                    *links.entry(community[other]).or_insert(0.0) += w;
                }
                totals[own] -= degrees[node];
                let gain = |c: usize, links: &BTreeMap<usize, f64>| {
                    links.get(&c).copied().unwrap_or(0.0) - totals[c] * degrees[node] / total
                };
                let (mut best, mut best_gain) = (own, gain(own, &links));
                for &c in links.keys() {
                    let g = gain(c, &links);
                    if g > best_gain + 1e-12 {
                        (best, best_gain) = (c, g);
                    }
                }
                totals[best] += degrees[node];
                if best != own {
                    community[node] = best;
                    moved = true;
                    moved_any = true;
                }
            }
            if !moved {
                break;
            }
        }
        (moved_any, community)
    }

    /// The graph of communities: one node each, ties summed, inside weight as a self-loop.
    fn aggregate(&self, assignment: &[usize], renumber: &BTreeMap<usize, usize>) -> Self {
        let k = renumber.len();
        let mut next = Self {
            adjacency: vec![BTreeMap::new(); k],
            loops: vec![0.0; k],
        };
        for (node, neighbours) in self.adjacency.iter().enumerate() {
            let a = renumber[&assignment[node]];
            next.loops[a] += self.loops[node];
            for (&other, &w) in neighbours {
                let b = renumber[&assignment[other]];
                if a == b {
                    // Each inside edge is seen from both ends.
                    next.loops[a] += w / 2.0;
                } else {
                    *next.adjacency[a].entry(b).or_insert(0.0) += w;
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two cliques of four joined by one edge split into the two cliques.
    #[test]
    fn louvain_finds_two_cliques_joined_by_a_bridge() {
        let mut edges = Vec::new();
        for group in [0..4, 4..8] {
            let nodes: Vec<usize> = group.collect();
            for (i, &a) in nodes.iter().enumerate() {
                for &b in &nodes[i + 1..] {
                    edges.push((a, b, 1.0));
                }
            }
        }
        edges.push((3, 4, 1.0));
        let labels = louvain(8, &edges);
        assert!(labels[..4].iter().all(|&l| l == labels[0]), "{labels:?}");
        assert!(labels[4..].iter().all(|&l| l == labels[4]), "{labels:?}");
        assert_ne!(labels[0], labels[4], "{labels:?}");
    }

    #[test]
    fn louvain_leaves_unconnected_nodes_alone_and_ignores_bad_edges() {
        let labels = louvain(
            4,
            &[(0, 1, 1.0), (2, 9, 1.0), (2, 3, -1.0), (3, 3, f64::NAN)],
        );
        assert_eq!(labels[0], labels[1]);
        assert_ne!(labels[2], labels[0]);
        assert_ne!(labels[3], labels[0]);
        assert_ne!(labels[2], labels[3]);
        assert!(louvain(0, &[]).is_empty());
    }

    /// A ring of cliques (the classic case of a resolution limit only at large sizes): every
    /// clique is one community at this size.
    #[test]
    fn louvain_separates_a_ring_of_cliques() {
        let (cliques, size) = (6, 5);
        let mut edges = Vec::new();
        for c in 0..cliques {
            let base = c * size;
            for a in 0..size {
                for b in a + 1..size {
                    edges.push((base + a, base + b, 1.0));
                }
            }
            edges.push((base + size - 1, ((c + 1) % cliques) * size, 1.0));
        }
        let labels = louvain(cliques * size, &edges);
        let distinct: BTreeSet<usize> = labels.iter().copied().collect();
        assert_eq!(distinct.len(), cliques, "{labels:?}");
        for c in 0..cliques {
            let clique = &labels[c * size..(c + 1) * size];
            assert!(clique.iter().all(|&l| l == clique[0]), "{labels:?}");
        }
    }

    fn world() -> Graph {
        use crate::knowledge::{Ontology, PageVersion};
        use chrono::{TimeZone as _, Utc};
        let ontology = Ontology::from_json(
            r#"{"predicates":[
              {"name":"depends_on","subject_type":"service","object_type":"service","patterns":["{s} depends on {o}."]},
              {"name":"maintained_by","subject_type":"service","object_type":"team","patterns":["{s} is maintained by the {o} team."]}],
              "authority":{"default":1}}"#,
        )
        .expect("ontology");
        let at = Utc
            .with_ymd_and_hms(2026, 9, 1, 9, 0, 0)
            .single()
            .expect("date");
        let mut graph = Graph::new(&ontology);
        for (id, body) in [
            (
                "payments",
                "Kite depends on Ledger. Ledger depends on Vault. Kite is maintained by the Payments team. Ledger is maintained by the Payments team.",
            ),
            (
                "search",
                "Atlas depends on Beacon. Beacon depends on Comet. Atlas is maintained by the Search team. Comet is maintained by the Search team.",
            ),
        ] {
            let page = PageVersion {
                source_id: id.into(),
                version: 1,
                title: id.into(),
                origin: "wiki".into(),
                body: body.into(),
                updated_at: at,
                acl: Vec::new(),
                confidence: 1.0,
                deleted: false,
                effective_from: None,
            };
            graph.apply_page(&ontology, &page, at);
        }
        graph
    }

    fn id(graph: &Graph, name: &str) -> String {
        graph
            .resolve(name)
            .map(|e| e.id.clone())
            .unwrap_or_else(|| panic!("{name} is an entity"))
    }

    #[test]
    fn each_page_s_services_form_a_community_summarised_by_its_facts() {
        let graph = world();
        let entities = EntityGraph::of(&graph);
        let communities = entities.communities();
        assert_eq!(communities.len(), 2, "{communities:?}");
        let payments: BTreeSet<String> = ["Kite", "Ledger", "Vault", "Payments"]
            .iter()
            .map(|n| id(&graph, n))
            .collect();
        let found: Vec<BTreeSet<String>> = communities
            .iter()
            .map(|c| c.members.iter().cloned().collect())
            .collect();
        assert!(found.contains(&payments), "{found:?}");
        for community in &communities {
            assert!(!community.central.is_empty() && community.central.len() <= CENTRAL);
            assert!(!community.facts.is_empty() && community.facts.len() <= TYING);
            for fact in &community.facts {
                let fact = graph.fact(*fact).expect("a tying fact exists");
                assert!(community.members.contains(&fact.entity), "{fact:?}");
            }
        }
        let ledger = id(&graph, "Ledger");
        assert!(
            communities
                .iter()
                .any(|c| c.central.first() == Some(&ledger)),
            "Ledger is tied to the most in its community: {communities:?}"
        );
    }

    #[test]
    fn two_entities_relate_through_the_shortest_chain_of_facts() {
        let graph = world();
        let entities = EntityGraph::of(&graph);
        let chain = entities
            .relate(&graph, &id(&graph, "Kite"), &id(&graph, "Vault"))
            .expect("a chain");
        let steps: Vec<(String, String)> = chain
            .iter()
            .map(|f| {
                let f = graph.fact(*f).expect("fact");
                (f.predicate.clone(), f.object.clone())
            })
            .collect();
        assert_eq!(
            steps,
            vec![
                ("depends_on".to_owned(), "Ledger".to_owned()),
                ("depends_on".to_owned(), "Vault".to_owned())
            ]
        );
        assert_eq!(
            entities.relate(&graph, &id(&graph, "Kite"), &id(&graph, "Atlas")),
            None,
            "no chain of facts joins two communities"
        );
        assert_eq!(
            entities.relate(&graph, &id(&graph, "Kite"), "ent:nobody"),
            None
        );
    }
}
