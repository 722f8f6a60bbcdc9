//! The organisation graph: people, teams and roles with reports-to, member-of, has-role and
//! sub-team-of edges, built from an [`OrgRecords`] snapshot.
//!
//! The graph is ephemeral: it is rebuilt from the records on every HR event, or patched in place
//! for one-person events ([`OrgGraph::patch`]), which must give exactly the graph a rebuild gives
//! ([`OrgGraph::canonical`] is the comparison). Readers never see a half-built graph: build a
//! new graph, or patch a clone of the published one (`(*swap.load()).clone()`; a clone costs
//! about a quarter of a rebuild), then publish it whole through [`crate::swap::Swap`].

use std::collections::{BTreeSet, HashMap};

use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences, NodeIndexable};

use crate::hr::{HrEvent, OrgRecords};

/// How [`OrgGraph::patch`] brought the graph up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patched {
    /// Only the named number of people were re-read from the records.
    Incremental {
        /// People re-read.
        people: usize,
    },
    /// The whole graph was rebuilt (restructures, or a patch that could not be done locally).
    Rebuilt,
}

/// A canonical, index-free listing of a graph: equal listings mean equal graphs.
///
/// Lines are tab-separated and sorted, so a failed comparison reads as a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalOrg {
    /// `person\tid\tname`, `team\tid\tname`, `role\tname` lines.
    pub nodes: Vec<String>,
    /// `kind\tfrom\tto` lines, endpoints written as `person:id`, `team:id` or `role:name`.
    pub edges: Vec<String>,
    /// Side indexes: `by-name\tkey\tid` and `index\tkind\tkey\tnode` lines.
    pub indexes: Vec<String>,
}

/// The organisation graph of one tenant.
#[derive(Debug, Clone, Default)]
pub struct OrgGraph {
    graph: StableDiGraph<OrgNode, OrgEdge>,
    people: HashMap<String, NodeIndex>,
    teams: HashMap<String, NodeIndex>,
    roles: HashMap<String, NodeIndex>,
    /// Normalised name (see [`name_key`]) to the ids of the people with that name.
    names: HashMap<String, BTreeSet<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum OrgNode {
    Person { id: String, name: String },
    Team { id: String, name: String },
    Role { name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OrgEdge {
    /// Person to their manager.
    ReportsTo,
    /// Person to their team.
    MemberOf,
    /// Person to their role.
    HasRole,
    /// Team to its parent team.
    SubteamOf,
}

/// Marker for a patch step that needs a node the graph does not have; the patch then rebuilds.
struct Missing;

impl OrgGraph {
    /// Builds the graph from a validated record set.
    pub fn build(records: &OrgRecords) -> OrgGraph {
        let mut org = OrgGraph::default();
        for team in records.teams() {
            let ix = org.graph.add_node(OrgNode::Team {
                id: team.id.clone(),
                name: team.name.clone(),
            });
            org.teams.insert(team.id.clone(), ix);
        }
        for team in records.teams() {
            if let (Some(&child), Some(parent)) = (
                org.teams.get(&team.id),
                team.parent.as_ref().and_then(|p| org.teams.get(p)),
            ) {
                org.graph.add_edge(child, *parent, OrgEdge::SubteamOf);
            }
        }
        for person in records.people() {
            let ix = org.graph.add_node(OrgNode::Person {
                id: person.id.clone(),
                name: person.name.clone(),
            });
            org.people.insert(person.id.clone(), ix);
            org.names
                .entry(name_key(&person.name))
                .or_default()
                .insert(person.id.clone());
        }
        for person in records.people() {
            let Some(&ix) = org.people.get(&person.id) else {
                continue;
            };
            // Records are validated, so team and manager exist; the guards only keep a
            // hypothetical inconsistency from panicking.
            if let Some(&team) = org.teams.get(&person.team) {
                org.graph.add_edge(ix, team, OrgEdge::MemberOf);
            }
            if let Some(&manager) = person.manager.as_ref().and_then(|m| org.people.get(m)) {
                org.graph.add_edge(ix, manager, OrgEdge::ReportsTo);
            }
            let role = org.role_node(&person.role);
            org.graph.add_edge(ix, role, OrgEdge::HasRole);
        }
        org
    }

    /// Brings the graph up to date after `event` was applied to `records` (the records *after*
    /// the event; the graph must have matched the records before it).
    ///
    /// One-person events re-read only the people they touch (for a termination, the leaver and
    /// their former direct reports); a restructure, or anything the graph cannot patch locally,
    /// rebuilds. Either way the result equals [`OrgGraph::build`] of `records`. Patching after
    /// a refused event is harmless: the people re-read are unchanged.
    pub fn patch(&mut self, records: &OrgRecords, event: &HrEvent) -> Patched {
        let ids: Vec<String> = match event {
            HrEvent::Hired(person) => vec![person.id.clone()],
            HrEvent::Transferred { person, .. } => vec![person.clone()],
            HrEvent::Terminated { person } => std::iter::once(person.clone())
                .chain(self.direct_reports(person).into_iter().map(str::to_owned))
                .collect(),
            HrEvent::Restructure { .. } => {
                *self = OrgGraph::build(records);
                return Patched::Rebuilt;
            }
        };
        let mut touched_roles = BTreeSet::new();
        for id in &ids {
            if self.resync_person(records, id, &mut touched_roles).is_err() {
                *self = OrgGraph::build(records);
                return Patched::Rebuilt;
            }
        }
        for role in touched_roles {
            self.drop_role_if_unused(&role);
        }
        Patched::Incremental { people: ids.len() }
    }

    /// Whether the person id is in the graph.
    pub fn contains_person(&self, person: &str) -> bool {
        self.people.contains_key(person)
    }

    /// Number of people.
    pub fn person_count(&self) -> usize {
        self.people.len()
    }

    /// Number of teams.
    pub fn team_count(&self) -> usize {
        self.teams.len()
    }

    /// Display name of a person.
    pub fn person_name(&self, person: &str) -> Option<&str> {
        match self
            .people
            .get(person)
            .and_then(|&ix| self.graph.node_weight(ix))
        {
            Some(OrgNode::Person { name, .. }) => Some(name),
            _ => None,
        }
    }

    /// Role of a person, as HR spelled it.
    pub fn role_of(&self, person: &str) -> Option<&str> {
        match self.neighbour(person, OrgEdge::HasRole) {
            Some(OrgNode::Role { name }) => Some(name),
            _ => None,
        }
    }

    /// Id of a person's manager; `None` for unknown people and the top of the organisation.
    pub fn manager_of(&self, person: &str) -> Option<&str> {
        match self.neighbour(person, OrgEdge::ReportsTo) {
            Some(OrgNode::Person { id, .. }) => Some(id),
            _ => None,
        }
    }

    /// Ids of a person's direct reports, sorted.
    pub fn direct_reports(&self, person: &str) -> Vec<&str> {
        let Some(&ix) = self.people.get(person) else {
            return Vec::new();
        };
        self.sources_into(ix, OrgEdge::ReportsTo)
    }

    /// Id of a person's team.
    pub fn team_of(&self, person: &str) -> Option<&str> {
        match self.neighbour(person, OrgEdge::MemberOf) {
            Some(OrgNode::Team { id, .. }) => Some(id),
            _ => None,
        }
    }

    /// Display name of a team.
    pub fn team_name(&self, team: &str) -> Option<&str> {
        match self
            .teams
            .get(team)
            .and_then(|&ix| self.graph.node_weight(ix))
        {
            Some(OrgNode::Team { name, .. }) => Some(name),
            _ => None,
        }
    }

    /// Id of the team's parent team.
    pub fn parent_team(&self, team: &str) -> Option<&str> {
        let &ix = self.teams.get(team)?;
        self.graph
            .edges_directed(ix, Direction::Outgoing)
            .find(|e| *e.weight() == OrgEdge::SubteamOf)
            .and_then(|e| match self.graph.node_weight(e.target()) {
                Some(OrgNode::Team { id, .. }) => Some(id.as_str()),
                _ => None,
            })
    }

    /// Ids of a team's members, sorted.
    pub fn members(&self, team: &str) -> Vec<&str> {
        let Some(&ix) = self.teams.get(team) else {
            return Vec::new();
        };
        self.sources_into(ix, OrgEdge::MemberOf)
    }

    /// The id of the one person with this name (case-insensitive, whitespace-normalised);
    /// `None` when nobody or several people carry it (see [`OrgGraph::people_named`]).
    pub fn person_by_name(&self, name: &str) -> Option<&str> {
        let ids = self.names.get(&name_key(name))?;
        match ids.len() {
            1 => ids.iter().next().map(String::as_str),
            _ => None,
        }
    }

    /// Ids of every person with this name (case-insensitive, whitespace-normalised), sorted.
    pub fn people_named(&self, name: &str) -> Vec<&str> {
        self.names
            .get(&name_key(name))
            .map(|ids| ids.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The canonical listing of the graph and its side indexes.
    pub fn canonical(&self) -> CanonicalOrg {
        let mut keys = vec![String::new(); NodeIndexable::node_bound(&self.graph)];
        let mut nodes = Vec::with_capacity(self.graph.node_count());
        for ix in self.graph.node_indices() {
            let (key, line) = match &self.graph[ix] {
                OrgNode::Person { id, name } => {
                    (format!("person:{id}"), format!("person\t{id}\t{name}"))
                }
                OrgNode::Team { id, name } => (format!("team:{id}"), format!("team\t{id}\t{name}")),
                OrgNode::Role { name } => (format!("role:{name}"), format!("role\t{name}")),
            };
            keys[ix.index()] = key;
            nodes.push(line);
        }
        nodes.sort_unstable();
        let key = |ix: NodeIndex| keys.get(ix.index()).map_or("missing", String::as_str);
        let mut edges: Vec<String> = (&self.graph)
            .edge_references()
            .map(|e| {
                let kind = match e.weight() {
                    OrgEdge::ReportsTo => "reports-to",
                    OrgEdge::MemberOf => "member-of",
                    OrgEdge::HasRole => "has-role",
                    OrgEdge::SubteamOf => "subteam-of",
                };
                format!("{kind}\t{}\t{}", key(e.source()), key(e.target()))
            })
            .collect();
        edges.sort_unstable();
        let mut indexes: Vec<String> = self
            .names
            .iter()
            .flat_map(|(name, ids)| ids.iter().map(move |id| format!("by-name\t{name}\t{id}")))
            .collect();
        for (kind, map) in [
            ("person", &self.people),
            ("team", &self.teams),
            ("role", &self.roles),
        ] {
            indexes.extend(
                map.iter()
                    .map(|(name, &ix)| format!("index\t{kind}\t{name}\t{}", key(ix))),
            );
        }
        indexes.sort_unstable();
        CanonicalOrg {
            nodes,
            edges,
            indexes,
        }
    }

    /// A 64-bit FNV-1a hash of [`OrgGraph::canonical`]: equal graphs give equal fingerprints,
    /// stable across processes and builds.
    pub fn fingerprint(&self) -> u64 {
        let canonical = self.canonical();
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for section in [&canonical.nodes, &canonical.edges, &canonical.indexes] {
            for line in section {
                for byte in line.bytes().chain(std::iter::once(b'\n')) {
                    hash ^= u64::from(byte);
                    hash = hash.wrapping_mul(0x0100_0000_01b3);
                }
            }
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        hash
    }

    /// The target of a person's first outgoing edge of `kind`.
    fn neighbour(&self, person: &str, kind: OrgEdge) -> Option<&OrgNode> {
        let &ix = self.people.get(person)?;
        self.graph
            .edges_directed(ix, Direction::Outgoing)
            .find(|e| *e.weight() == kind)
            .and_then(|e| self.graph.node_weight(e.target()))
    }

    /// Ids of the people with an edge of `kind` into `ix`, sorted.
    fn sources_into(&self, ix: NodeIndex, kind: OrgEdge) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .graph
            .edges_directed(ix, Direction::Incoming)
            .filter(|e| *e.weight() == kind)
            .filter_map(|e| match self.graph.node_weight(e.source()) {
                Some(OrgNode::Person { id, .. }) => Some(id.as_str()),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    fn role_node(&mut self, role: &str) -> NodeIndex {
        if let Some(&ix) = self.roles.get(role) {
            return ix;
        }
        let ix = self.graph.add_node(OrgNode::Role {
            name: role.to_owned(),
        });
        self.roles.insert(role.to_owned(), ix);
        ix
    }

    /// A rebuild only creates role nodes somebody holds, so a patch removes emptied ones.
    fn drop_role_if_unused(&mut self, role: &str) {
        let Some(&ix) = self.roles.get(role) else {
            return;
        };
        if self
            .graph
            .edges_directed(ix, Direction::Incoming)
            .next()
            .is_none()
        {
            self.graph.remove_node(ix);
            self.roles.remove(role);
        }
    }

    /// Re-reads one person from the records: removes, inserts or rewires their node.
    fn resync_person(
        &mut self,
        records: &OrgRecords,
        id: &str,
        touched_roles: &mut BTreeSet<String>,
    ) -> Result<(), Missing> {
        let existing = self.people.get(id).copied();
        if let Some(ix) = existing {
            if let Some(role) = self.role_of(id) {
                touched_roles.insert(role.to_owned());
            }
            if let Some(name) = self.person_name(id) {
                let key = name_key(name);
                if let Some(ids) = self.names.get_mut(&key) {
                    ids.remove(id);
                    if ids.is_empty() {
                        self.names.remove(&key);
                    }
                }
            }
            let outgoing: Vec<_> = self
                .graph
                .edges_directed(ix, Direction::Outgoing)
                .map(|e| e.id())
                .collect();
            for edge in outgoing {
                self.graph.remove_edge(edge);
            }
        }
        let Some(person) = records.person(id) else {
            if let Some(ix) = existing {
                // Incoming reports-to edges go too; the patch re-reads those reports.
                self.graph.remove_node(ix);
                self.people.remove(id);
            }
            return Ok(());
        };
        let &team = self.teams.get(&person.team).ok_or(Missing)?;
        let manager = match &person.manager {
            Some(m) => Some(*self.people.get(m).ok_or(Missing)?),
            None => None,
        };
        let ix = match existing {
            Some(ix) => {
                if let Some(OrgNode::Person { name, .. }) = self.graph.node_weight_mut(ix) {
                    name.clone_from(&person.name);
                }
                ix
            }
            None => {
                let ix = self.graph.add_node(OrgNode::Person {
                    id: person.id.clone(),
                    name: person.name.clone(),
                });
                self.people.insert(person.id.clone(), ix);
                ix
            }
        };
        self.names
            .entry(name_key(&person.name))
            .or_default()
            .insert(person.id.clone());
        self.graph.add_edge(ix, team, OrgEdge::MemberOf);
        if let Some(manager) = manager {
            self.graph.add_edge(ix, manager, OrgEdge::ReportsTo);
        }
        let role = self.role_node(&person.role);
        self.graph.add_edge(ix, role, OrgEdge::HasRole);
        Ok(())
    }
}

/// The key names are looked up by: lowercase, runs of whitespace collapsed to one space.
pub fn name_key(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hr::{Person, Team, apply};

    fn person(id: &str, name: &str, team: &str, role: &str, manager: Option<&str>) -> Person {
        Person {
            id: id.into(),
            name: name.into(),
            team: team.into(),
            role: role.into(),
            manager: manager.map(Into::into),
        }
    }

    fn sample() -> OrgRecords {
        OrgRecords::new(
            [
                person("ceo", "Grace Hopper", "root", "executive", None),
                person("lead", "Alan Turing", "eng", "manager", Some("ceo")),
                person("dev1", "Ada Lovelace", "eng", "engineer", Some("lead")),
                person("dev2", "Edsger  Dijkstra", "eng", "engineer", Some("lead")),
                person("dev3", "ada lovelace", "ops", "sre", Some("lead")),
            ],
            [
                Team {
                    id: "root".into(),
                    name: "Company".into(),
                    parent: None,
                },
                Team {
                    id: "eng".into(),
                    name: "Engineering".into(),
                    parent: Some("root".into()),
                },
                Team {
                    id: "ops".into(),
                    name: "Operations".into(),
                    parent: Some("root".into()),
                },
            ],
        )
        .expect("valid records")
    }

    #[test]
    fn queries_follow_the_records() {
        let org = OrgGraph::build(&sample());
        assert_eq!(org.person_count(), 5);
        assert_eq!(org.team_count(), 3);
        assert_eq!(org.manager_of("dev1"), Some("lead"));
        assert_eq!(org.manager_of("ceo"), None);
        assert_eq!(org.manager_of("nobody"), None);
        assert_eq!(org.direct_reports("lead"), vec!["dev1", "dev2", "dev3"]);
        assert!(org.direct_reports("dev1").is_empty());
        assert_eq!(org.team_of("dev3"), Some("ops"));
        assert_eq!(org.members("eng"), vec!["dev1", "dev2", "lead"]);
        assert_eq!(org.parent_team("eng"), Some("root"));
        assert_eq!(org.parent_team("root"), None);
        assert_eq!(org.team_name("ops"), Some("Operations"));
        assert_eq!(org.role_of("dev3"), Some("sre"));
        assert_eq!(org.person_name("lead"), Some("Alan Turing"));
        assert_eq!(org.person_by_name("  edsger DIJKSTRA "), Some("dev2"));
        assert_eq!(
            org.person_by_name("Ada Lovelace"),
            None,
            "two people share it"
        );
        assert_eq!(org.people_named("ADA LOVELACE"), vec!["dev1", "dev3"]);
        assert_eq!(org.person_by_name("Nobody"), None);
    }

    #[test]
    fn patch_handles_each_one_person_event() {
        let mut records = sample();
        let mut org = OrgGraph::build(&records);
        let events = [
            HrEvent::Hired(person(
                "new",
                "Barbara Liskov",
                "ops",
                "designer",
                Some("dev3"),
            )),
            HrEvent::Transferred {
                person: "dev1".into(),
                team: "ops".into(),
                manager: Some("dev3".into()),
                role: Some("sre".into()),
            },
            HrEvent::Terminated {
                person: "lead".into(),
            },
            HrEvent::Terminated {
                person: "new".into(),
            },
        ];
        for event in &events {
            apply(&mut records, event).expect("event applies");
            let outcome = org.patch(&records, event);
            assert!(
                matches!(outcome, Patched::Incremental { .. }),
                "{outcome:?}"
            );
            assert_eq!(org.canonical(), OrgGraph::build(&records).canonical());
        }
        assert_eq!(org.manager_of("dev2"), Some("ceo"));
        assert_eq!(org.direct_reports("ceo"), vec!["dev2", "dev3"]);
        assert_eq!(org.role_of("new"), None);
        assert!(!org.canonical().nodes.contains(&"role\tdesigner".to_owned()));
    }

    #[test]
    fn fingerprint_tells_graphs_apart() {
        let records = sample();
        let org = OrgGraph::build(&records);
        assert_eq!(org.fingerprint(), OrgGraph::build(&records).fingerprint());
        let mut moved = records.clone();
        apply(
            &mut moved,
            &HrEvent::Transferred {
                person: "dev2".into(),
                team: "ops".into(),
                manager: None,
                role: None,
            },
        )
        .expect("transfer applies");
        assert_ne!(org.fingerprint(), OrgGraph::build(&moved).fingerprint());
    }
}
