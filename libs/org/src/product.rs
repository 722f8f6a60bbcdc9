//! The product graph: products, features and services, who owns them and what depends on what,
//! built from `(subject, predicate, object)` facts.
//!
//! # Predicate vocabulary
//!
//! | predicate     | subject                      | object                                    |
//! |---------------|------------------------------|-------------------------------------------|
//! | `is_a`        | any id                       | `product`, `service` or `feature`         |
//! | `name`        | a declared entity            | display name (optional; defaults to id)   |
//! | `owned_by`    | a declared entity            | a team id (not checked against the org)   |
//! | `depends_on`  | a service                    | another service                           |
//! | `part_of`     | a service or feature         | a product                                 |
//! | `deprecated`  | a declared entity            | `true` or `false`                         |
//! | `description` | a declared entity            | free text                                 |
//!
//! Every entity must be declared with `is_a` somewhere in the fact list (order does not matter).
//! A fact that breaks a rule is not fatal: it is left out and reported in [`Rejected`], so one
//! bad document cannot take the whole graph down. For single-valued predicates (`is_a`, `name`,
//! `owned_by`, `description`, `deprecated`) the first fact wins and a later, different value is
//! rejected as a conflict; repeating the same value is accepted silently. Dependency cycles are
//! allowed (real systems have them); the transitive query stops at visited services.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

use crate::org::name_key;

/// One fact about the product landscape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fact {
    /// Entity the fact is about.
    pub subject: String,
    /// One of the predicates in the module table.
    pub predicate: String,
    /// Value or target entity.
    pub object: String,
}

impl Fact {
    /// Builds a fact from three strings.
    pub fn new(subject: &str, predicate: &str, object: &str) -> Fact {
        Fact {
            subject: subject.to_owned(),
            predicate: predicate.to_owned(),
            object: object.to_owned(),
        }
    }

    /// The facts of `(subject, predicate, object)` triples, in order.
    pub fn all<'a>(triples: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> Vec<Fact> {
        triples
            .into_iter()
            .map(|(s, p, o)| Fact::new(s, p, o))
            .collect()
    }
}

/// What kind of entity a product-graph node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// Something the company sells.
    Product,
    /// A running system; work items are filed against services.
    Service,
    /// A capability of a product.
    Feature,
}

impl EntityKind {
    /// Parses the `is_a` object.
    pub fn parse(text: &str) -> Option<EntityKind> {
        match text {
            "product" => Some(EntityKind::Product),
            "service" => Some(EntityKind::Service),
            "feature" => Some(EntityKind::Feature),
            _ => None,
        }
    }
}

/// Why a fact was left out of the graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactRejection {
    /// The predicate is not in the vocabulary.
    #[error("unknown predicate")]
    UnknownPredicate,
    /// `is_a` with an object that is not a kind.
    #[error("unknown kind")]
    UnknownKind,
    /// The subject (or, for edges, the object) was never declared with `is_a`.
    #[error("entity {0:?} is not declared with is_a")]
    Undeclared(String),
    /// A single-valued predicate already has a different value.
    #[error("conflicts with earlier value {0:?}")]
    Conflict(String),
    /// `depends_on` between entities that are not both services, or onto itself.
    #[error("depends_on needs two distinct services")]
    NotServices,
    /// `part_of` from something other than a service or feature, or onto a non-product.
    #[error("part_of needs a service or feature inside a product")]
    BadPartOf,
    /// `deprecated` with an object other than `true` or `false`.
    #[error("deprecated must be true or false")]
    BadFlag,
}

/// A fact left out of the graph, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The fact as given.
    pub fact: Fact,
    /// Why it was left out.
    pub reason: FactRejection,
}

/// How complete the product descriptions are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Number of products.
    pub products: usize,
    /// Products with both an owner and a non-blank description.
    pub covered: usize,
}

impl Coverage {
    /// `covered / products`; 0.0 when there are no products (an empty graph covers nothing).
    pub fn ratio(&self) -> f64 {
        if self.products == 0 {
            0.0
        } else {
            self.covered as f64 / self.products as f64
        }
    }
}

/// The product graph of one tenant.
#[derive(Debug, Clone, Default)]
pub struct ProductGraph {
    graph: DiGraph<Entity, Link>,
    ids: HashMap<String, NodeIndex>,
    /// Normalised name or id to entity ids.
    names: HashMap<String, BTreeSet<String>>,
    /// Team id to the ids of the services it owns.
    owned: HashMap<String, BTreeSet<String>>,
}

#[derive(Debug, Clone)]
struct Entity {
    id: String,
    kind: EntityKind,
    name: Option<String>,
    owner: Option<String>,
    description: Option<String>,
    deprecated: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Link {
    DependsOn,
    PartOf,
}

impl ProductGraph {
    /// Builds the graph from facts, returning the facts it left out.
    pub fn build(facts: &[Fact]) -> (ProductGraph, Vec<Rejected>) {
        let mut product = ProductGraph::default();
        let mut rejected = Vec::new();
        let mut reject = |fact: &Fact, reason| {
            rejected.push(Rejected {
                fact: fact.clone(),
                reason,
            })
        };
        // Declarations first, so the other facts may come in any order.
        for fact in facts.iter().filter(|f| f.predicate == "is_a") {
            let Some(kind) = EntityKind::parse(&fact.object) else {
                reject(fact, FactRejection::UnknownKind);
                continue;
            };
            match product.ids.get(&fact.subject) {
                Some(&ix) if product.graph[ix].kind == kind => {}
                Some(&ix) => {
                    let earlier = format!("{:?}", product.graph[ix].kind).to_lowercase();
                    reject(fact, FactRejection::Conflict(earlier));
                }
                None => {
                    let ix = product.graph.add_node(Entity {
                        id: fact.subject.clone(),
                        kind,
                        name: None,
                        owner: None,
                        description: None,
                        deprecated: None,
                    });
                    product.ids.insert(fact.subject.clone(), ix);
                }
            }
        }
        let mut links = BTreeSet::new();
        for fact in facts.iter().filter(|f| f.predicate != "is_a") {
            let Some(&ix) = product.ids.get(&fact.subject) else {
                let reason = if is_known_predicate(&fact.predicate) {
                    FactRejection::Undeclared(fact.subject.clone())
                } else {
                    FactRejection::UnknownPredicate
                };
                reject(fact, reason);
                continue;
            };
            let outcome = match fact.predicate.as_str() {
                "name" => set_once(&mut product.graph[ix].name, &fact.object),
                "owned_by" => set_once(&mut product.graph[ix].owner, &fact.object),
                "description" => set_once(&mut product.graph[ix].description, &fact.object),
                "deprecated" => match fact.object.as_str() {
                    "true" => set_once(&mut product.graph[ix].deprecated, &true),
                    "false" => set_once(&mut product.graph[ix].deprecated, &false),
                    _ => Err(FactRejection::BadFlag),
                },
                "depends_on" | "part_of" => product.link(ix, fact).map(|link| {
                    links.insert(link);
                }),
                _ => Err(FactRejection::UnknownPredicate),
            };
            if let Err(reason) = outcome {
                reject(fact, reason);
            }
        }
        for (from, to, link) in links {
            product.graph.add_edge(from, to, link);
        }
        for entity in product.graph.node_weights() {
            let mut keys = vec![name_key(&entity.id)];
            if let Some(name) = &entity.name {
                keys.push(name_key(name));
            }
            for key in keys {
                product
                    .names
                    .entry(key)
                    .or_default()
                    .insert(entity.id.clone());
            }
            if let (EntityKind::Service, Some(owner)) = (entity.kind, &entity.owner) {
                product
                    .owned
                    .entry(owner.clone())
                    .or_default()
                    .insert(entity.id.clone());
            }
        }
        (product, rejected)
    }

    /// Checks an edge fact and returns it as `(from, to, link)`.
    fn link(
        &self,
        from: NodeIndex,
        fact: &Fact,
    ) -> Result<(NodeIndex, NodeIndex, Link), FactRejection> {
        let Some(&to) = self.ids.get(&fact.object) else {
            return Err(FactRejection::Undeclared(fact.object.clone()));
        };
        let (from_kind, to_kind) = (self.graph[from].kind, self.graph[to].kind);
        if fact.predicate == "depends_on" {
            if from_kind != EntityKind::Service || to_kind != EntityKind::Service || from == to {
                return Err(FactRejection::NotServices);
            }
            Ok((from, to, Link::DependsOn))
        } else {
            if from_kind == EntityKind::Product || to_kind != EntityKind::Product {
                return Err(FactRejection::BadPartOf);
            }
            Ok((from, to, Link::PartOf))
        }
    }

    /// Kind of an entity.
    pub fn kind_of(&self, id: &str) -> Option<EntityKind> {
        self.entity(id).map(|e| e.kind)
    }

    /// Display name of an entity (its id when no `name` fact was given).
    pub fn name_of(&self, id: &str) -> Option<&str> {
        self.entity(id).map(|e| e.name.as_deref().unwrap_or(&e.id))
    }

    /// Team id that owns an entity.
    pub fn owner_of(&self, id: &str) -> Option<&str> {
        self.entity(id).and_then(|e| e.owner.as_deref())
    }

    /// Description of an entity.
    pub fn description(&self, id: &str) -> Option<&str> {
        self.entity(id).and_then(|e| e.description.as_deref())
    }

    /// Whether an entity is marked deprecated (unknown entities are not).
    pub fn is_deprecated(&self, id: &str) -> bool {
        self.entity(id).and_then(|e| e.deprecated).unwrap_or(false)
    }

    /// Ids of the services a team owns, sorted.
    pub fn services_owned_by(&self, team: &str) -> Vec<&str> {
        self.owned
            .get(team)
            .map(|ids| ids.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Ids of the services a service depends on directly, sorted.
    pub fn dependencies_of(&self, service: &str) -> Vec<&str> {
        self.linked(service, Link::DependsOn, Direction::Outgoing)
    }

    /// Ids of every service reachable through `depends_on`, sorted, without the service itself.
    pub fn transitive_dependencies_of(&self, service: &str) -> Vec<&str> {
        let Some(&start) = self.ids.get(service) else {
            return Vec::new();
        };
        let mut seen = BTreeSet::from([start]);
        let mut stack = vec![start];
        while let Some(ix) = stack.pop() {
            for edge in self.graph.edges_directed(ix, Direction::Outgoing) {
                if *edge.weight() == Link::DependsOn && seen.insert(edge.target()) {
                    stack.push(edge.target());
                }
            }
        }
        seen.remove(&start);
        let mut ids: Vec<&str> = seen
            .into_iter()
            .map(|ix| self.graph[ix].id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Ids of the services that depend directly on a service, sorted.
    pub fn dependents_of(&self, service: &str) -> Vec<&str> {
        self.linked(service, Link::DependsOn, Direction::Incoming)
    }

    /// Ids of the product a service or feature is part of, sorted.
    pub fn products_of(&self, id: &str) -> Vec<&str> {
        self.linked(id, Link::PartOf, Direction::Outgoing)
    }

    /// Ids of the entities whose id or name matches (case-insensitive, whitespace-normalised),
    /// sorted.
    pub fn find(&self, name_or_id: &str) -> Vec<&str> {
        self.names
            .get(&name_key(name_or_id))
            .map(|ids| ids.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Ids of all entities of a kind, sorted.
    pub fn entities(&self, kind: EntityKind) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .graph
            .node_weights()
            .filter(|e| e.kind == kind)
            .map(|e| e.id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Share of products with both an owner and a non-blank description.
    pub fn coverage(&self) -> Coverage {
        let products = self
            .graph
            .node_weights()
            .filter(|e| e.kind == EntityKind::Product);
        let (mut total, mut covered) = (0, 0);
        for product in products {
            total += 1;
            let described = product
                .description
                .as_deref()
                .is_some_and(|d| !d.trim().is_empty());
            if product.owner.is_some() && described {
                covered += 1;
            }
        }
        Coverage {
            products: total,
            covered,
        }
    }

    /// Every team that owns at least one service, with its services; for inspection and tests.
    pub fn ownership(&self) -> BTreeMap<&str, Vec<&str>> {
        self.owned
            .iter()
            .map(|(team, ids)| (team.as_str(), ids.iter().map(String::as_str).collect()))
            .collect()
    }

    fn entity(&self, id: &str) -> Option<&Entity> {
        self.ids.get(id).map(|&ix| &self.graph[ix])
    }

    fn linked(&self, id: &str, link: Link, direction: Direction) -> Vec<&str> {
        let Some(&ix) = self.ids.get(id) else {
            return Vec::new();
        };
        let mut ids: Vec<&str> = self
            .graph
            .edges_directed(ix, direction)
            .filter(|e| *e.weight() == link)
            .map(|e| {
                let other = if direction == Direction::Outgoing {
                    e.target()
                } else {
                    e.source()
                };
                self.graph[other].id.as_str()
            })
            .collect();
        ids.sort_unstable();
        ids
    }
}

fn is_known_predicate(predicate: &str) -> bool {
    matches!(
        predicate,
        "is_a" | "name" | "owned_by" | "depends_on" | "part_of" | "deprecated" | "description"
    )
}

/// Sets a single-valued attribute the first time; a later different value is a conflict.
fn set_once<T>(slot: &mut Option<T>, value: &T) -> Result<(), FactRejection>
where
    T: Clone + PartialEq + std::fmt::Display,
{
    match slot {
        Some(existing) if existing == value => Ok(()),
        Some(existing) => Err(FactRejection::Conflict(existing.to_string())),
        None => {
            *slot = Some(value.clone());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Vec<Fact> {
        Fact::all([
            ("checkout", "is_a", "product"),
            ("checkout", "owned_by", "team-payments"),
            ("checkout", "description", "Buy things"),
            ("search", "is_a", "product"),
            ("search", "owned_by", "team-search"),
            ("payments-api", "is_a", "service"),
            ("payments-api", "name", "Payments API"),
            ("payments-api", "owned_by", "team-payments"),
            ("payments-api", "depends_on", "ledger"),
            ("payments-api", "part_of", "checkout"),
            ("ledger", "depends_on", "postgres"),
            ("ledger", "is_a", "service"),
            ("ledger", "owned_by", "team-core"),
            ("postgres", "is_a", "service"),
            ("postgres", "depends_on", "ledger"),
            ("postgres", "deprecated", "true"),
            ("one-click", "is_a", "feature"),
            ("one-click", "part_of", "checkout"),
        ])
    }

    #[test]
    fn dependency_and_ownership_queries() {
        let (graph, rejected) = ProductGraph::build(&facts());
        assert!(rejected.is_empty(), "{rejected:?}");
        assert_eq!(graph.dependencies_of("payments-api"), vec!["ledger"]);
        assert_eq!(
            graph.transitive_dependencies_of("payments-api"),
            vec!["ledger", "postgres"]
        );
        assert_eq!(
            graph.transitive_dependencies_of("ledger"),
            vec!["postgres"],
            "cycle stops"
        );
        assert_eq!(
            graph.dependents_of("ledger"),
            vec!["payments-api", "postgres"]
        );
        assert_eq!(
            graph.services_owned_by("team-payments"),
            vec!["payments-api"]
        );
        assert!(
            graph.services_owned_by("team-search").is_empty(),
            "products are not services"
        );
        assert_eq!(graph.owner_of("ledger"), Some("team-core"));
        assert_eq!(graph.owner_of("postgres"), None);
        assert!(graph.is_deprecated("postgres"));
        assert!(!graph.is_deprecated("ledger"));
        assert_eq!(graph.products_of("one-click"), vec!["checkout"]);
        assert_eq!(graph.find("payments api"), vec!["payments-api"]);
        assert_eq!(graph.find("LEDGER"), vec!["ledger"]);
        assert_eq!(graph.name_of("ledger"), Some("ledger"));
        assert_eq!(graph.kind_of("one-click"), Some(EntityKind::Feature));
        assert_eq!(
            graph.entities(EntityKind::Service),
            vec!["ledger", "payments-api", "postgres"]
        );
    }

    #[test]
    fn coverage_counts_owner_and_description() {
        let (graph, _) = ProductGraph::build(&facts());
        let coverage = graph.coverage();
        assert_eq!(
            coverage,
            Coverage {
                products: 2,
                covered: 1
            }
        );
        assert!((coverage.ratio() - 0.5).abs() < f64::EPSILON);
        let (empty, _) = ProductGraph::build(&[]);
        assert_eq!(empty.coverage().ratio(), 0.0);
    }

    #[test]
    fn bad_facts_are_rejected_with_reasons() {
        let mut all = facts();
        all.extend(Fact::all([
            ("ghost", "owned_by", "team-x"),
            ("ledger", "owned_by", "team-y"),
            ("ledger", "owned_by", "team-core"),
            ("ledger", "is_a", "product"),
            ("ledger", "colour", "blue"),
            ("ledger", "depends_on", "ledger"),
            ("ledger", "depends_on", "checkout"),
            ("ledger", "depends_on", "nowhere"),
            ("checkout", "part_of", "search"),
            ("ledger", "part_of", "one-click"),
            ("ledger", "deprecated", "maybe"),
            ("x", "is_a", "gizmo"),
        ]));
        let (graph, rejected) = ProductGraph::build(&all);
        let reasons: Vec<_> = rejected
            .iter()
            .map(|r| {
                (
                    r.fact.subject.as_str(),
                    r.fact.predicate.as_str(),
                    r.reason.clone(),
                )
            })
            .collect();
        assert_eq!(
            reasons,
            vec![
                ("ledger", "is_a", FactRejection::Conflict("service".into())),
                ("x", "is_a", FactRejection::UnknownKind),
                (
                    "ghost",
                    "owned_by",
                    FactRejection::Undeclared("ghost".into())
                ),
                (
                    "ledger",
                    "owned_by",
                    FactRejection::Conflict("team-core".into())
                ),
                ("ledger", "colour", FactRejection::UnknownPredicate),
                ("ledger", "depends_on", FactRejection::NotServices),
                ("ledger", "depends_on", FactRejection::NotServices),
                (
                    "ledger",
                    "depends_on",
                    FactRejection::Undeclared("nowhere".into())
                ),
                ("checkout", "part_of", FactRejection::BadPartOf),
                ("ledger", "part_of", FactRejection::BadPartOf),
                ("ledger", "deprecated", FactRejection::BadFlag),
            ]
        );
        assert_eq!(
            graph.owner_of("ledger"),
            Some("team-core"),
            "first value wins"
        );
        assert_eq!(graph.dependencies_of("ledger"), vec!["postgres"]);
    }
}
