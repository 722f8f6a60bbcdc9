//! Context graphs: one small, short-lived graph per project (who is on it, what it depends on,
//! what constrains it), dropped when its time to live runs out or nobody has used it for a while.
//!
//! Time is always passed in as a `std::time::Instant` (a `tokio::time::Instant` converts with
//! `into_std()`), so tests drive the clock and nothing here reads it.
//!
//! A graph is *live* while `now - created < ttl + extensions` and `now - last access < idle`.
//! An expired graph is invisible to [`ContextRegistry::get`] and [`ContextRegistry::extend`] and
//! is removed by the next [`ContextRegistry::sweep`], which reports it.
//!
//! Extensions add up to at most [`MAX_LIFETIME`] (ten years from creation), so a caller-given
//! duration, however large, never pushes an instant past what the clock can represent: use
//! [`ContextGraph::ends_at`] rather than adding to an `Instant`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The longest lifetime extensions can give a graph, counted from its creation (ten years); a
/// longer configured time to live is kept as it is, but never extended.
pub const MAX_LIFETIME: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Lifetimes of context graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextSettings {
    /// How long a graph lives after creation unless extended (`org.context_ttl_secs`).
    pub ttl: Duration,
    /// How long a graph may go unused (`org.context_idle_secs`).
    pub idle: Duration,
}

/// Why a context graph could not be extended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// No graph for the project.
    #[error("no context graph for project {0:?}")]
    NotFound(String),
    /// The graph exists but has expired; it will be swept.
    #[error("context graph for project {0:?} has expired")]
    Expired(String),
}

/// The context graph of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextGraph {
    project: String,
    members: BTreeSet<String>,
    dependencies: BTreeSet<String>,
    constraints: Vec<String>,
    created: Instant,
    lifetime: Duration,
    last_access: Instant,
}

impl ContextGraph {
    /// Project id.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// Person ids on the project team, sorted.
    pub fn members(&self) -> impl Iterator<Item = &str> + '_ {
        self.members.iter().map(String::as_str)
    }

    /// Whether a person is on the project team.
    pub fn is_member(&self, person: &str) -> bool {
        self.members.contains(person)
    }

    /// Service ids the project depends on, sorted.
    pub fn dependencies(&self) -> impl Iterator<Item = &str> + '_ {
        self.dependencies.iter().map(String::as_str)
    }

    /// Whether the project depends on a service.
    pub fn depends_on(&self, service: &str) -> bool {
        self.dependencies.contains(service)
    }

    /// Constraints in the order given.
    pub fn constraints(&self) -> &[String] {
        &self.constraints
    }

    /// When the graph expires unless used or extended, as an offset from its creation.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// When its lifetime ends, unless that lies beyond what an `Instant` can hold (then `None`:
    /// in practice never).
    pub fn ends_at(&self) -> Option<Instant> {
        self.created.checked_add(self.lifetime)
    }

    /// When it was created.
    pub fn created(&self) -> Instant {
        self.created
    }

    /// When it was last read or extended.
    pub fn last_access(&self) -> Instant {
        self.last_access
    }

    /// Whether it is live at `now` (module docs).
    pub fn is_live(&self, now: Instant, settings: &ContextSettings) -> bool {
        now.saturating_duration_since(self.created) < self.lifetime
            && now.saturating_duration_since(self.last_access) < settings.idle
    }
}

/// All context graphs, by project.
#[derive(Debug, Clone)]
pub struct ContextRegistry {
    settings: ContextSettings,
    graphs: BTreeMap<String, ContextGraph>,
}

impl ContextRegistry {
    /// An empty registry with these lifetimes.
    pub fn new(settings: ContextSettings) -> ContextRegistry {
        ContextRegistry {
            settings,
            graphs: BTreeMap::new(),
        }
    }

    /// The lifetimes in force.
    pub fn settings(&self) -> ContextSettings {
        self.settings
    }

    /// Number of graphs held, live or awaiting a sweep.
    pub fn len(&self) -> usize {
        self.graphs.len()
    }

    /// Whether no graphs are held.
    pub fn is_empty(&self) -> bool {
        self.graphs.is_empty()
    }

    /// Creates the project's graph, replacing any existing one (a rebuild starts a fresh TTL).
    pub fn create(
        &mut self,
        project: &str,
        members: impl IntoIterator<Item = String>,
        dependencies: impl IntoIterator<Item = String>,
        constraints: impl IntoIterator<Item = String>,
        now: Instant,
    ) -> &ContextGraph {
        let graph = ContextGraph {
            project: project.to_owned(),
            members: members.into_iter().collect(),
            dependencies: dependencies.into_iter().collect(),
            constraints: constraints.into_iter().collect(),
            created: now,
            lifetime: self.settings.ttl,
            last_access: now,
        };
        self.graphs.insert(project.to_owned(), graph);
        &self.graphs[project]
    }

    /// The project's graph if live, marking it used at `now`.
    pub fn get(&mut self, project: &str, now: Instant) -> Option<&ContextGraph> {
        let settings = self.settings;
        let graph = self.graphs.get_mut(project)?;
        if !graph.is_live(now, &settings) {
            return None;
        }
        graph.last_access = graph.last_access.max(now);
        Some(graph)
    }

    /// Lengthens a live graph's lifetime by `by`, up to [`MAX_LIFETIME`] (or the configured time
    /// to live when that is longer), and marks it used; returns the new lifetime.
    pub fn extend(
        &mut self,
        project: &str,
        by: Duration,
        now: Instant,
    ) -> Result<Duration, ContextError> {
        let settings = self.settings;
        let graph = self
            .graphs
            .get_mut(project)
            .ok_or_else(|| ContextError::NotFound(project.to_owned()))?;
        if !graph.is_live(now, &settings) {
            return Err(ContextError::Expired(project.to_owned()));
        }
        let cap = MAX_LIFETIME.max(settings.ttl);
        graph.lifetime = graph
            .lifetime
            .max(graph.lifetime.saturating_add(by).min(cap));
        graph.last_access = graph.last_access.max(now);
        Ok(graph.lifetime)
    }

    /// Removes a project's graph; whether there was one.
    pub fn destroy(&mut self, project: &str) -> bool {
        self.graphs.remove(project).is_some()
    }

    /// Removes every graph that is not live at `now`; returns their projects, sorted.
    pub fn sweep(&mut self, now: Instant) -> Vec<String> {
        let settings = self.settings;
        let expired: Vec<String> = self
            .graphs
            .iter()
            .filter(|(_, graph)| !graph.is_live(now, &settings))
            .map(|(project, _)| project.clone())
            .collect();
        for project in &expired {
            self.graphs.remove(project);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn registry_with(project: &str, now: Instant) -> ContextRegistry {
        let mut registry = ContextRegistry::new(ContextSettings {
            ttl: Duration::from_secs(crate::embedded_default("org.context_ttl_secs")),
            idle: Duration::from_secs(crate::embedded_default("org.context_idle_secs")),
        });
        registry.create(
            project,
            strings(&["p2", "p1"]),
            strings(&["svc-b", "svc-a"]),
            strings(&["no schema changes", "ship by friday"]),
            now,
        );
        registry
    }

    #[test]
    fn created_graph_holds_its_context() {
        let start = Instant::now();
        let mut registry = registry_with("apollo", start);
        let graph = registry.get("apollo", start + DAY).expect("live");
        assert_eq!(graph.members().collect::<Vec<_>>(), vec!["p1", "p2"]);
        assert!(graph.is_member("p2") && !graph.is_member("p3"));
        assert!(graph.depends_on("svc-a"));
        assert_eq!(graph.constraints()[1], "ship by friday");
        assert_eq!(graph.last_access(), start + DAY);
        assert!(registry.get("zeus", start).is_none());
    }

    #[test]
    fn idle_graphs_expire_and_access_keeps_them_alive() {
        let start = Instant::now();
        let mut registry = registry_with("apollo", start);
        registry.create("hermes", [], [], [], start);
        for day in 1..=20 {
            assert!(
                registry.get("apollo", start + DAY * day * 6 / 5).is_some(),
                "day {day}"
            );
        }
        assert!(
            registry.get("hermes", start + DAY * 7).is_none(),
            "idle limit is exclusive"
        );
        assert_eq!(registry.sweep(start + DAY * 7), vec!["hermes".to_owned()]);
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn ttl_ends_even_busy_graphs_unless_extended() {
        let start = Instant::now();
        let mut registry = registry_with("apollo", start);
        registry.create("hermes", [], [], [], start);
        for day in 1..30 {
            let now = start + DAY * day;
            assert!(registry.get("apollo", now).is_some());
            assert!(registry.get("hermes", now).is_some());
        }
        let lifetime = registry
            .extend("hermes", DAY * 10, start + DAY * 29)
            .expect("live graph extends");
        assert_eq!(lifetime, DAY * 40);
        let at_ttl = start + DAY * 30;
        assert!(registry.get("apollo", at_ttl).is_none());
        assert_eq!(
            registry.extend("apollo", DAY, at_ttl),
            Err(ContextError::Expired("apollo".into()))
        );
        assert_eq!(registry.sweep(at_ttl), vec!["apollo".to_owned()]);
        assert!(registry.get("hermes", at_ttl).is_some());
        assert_eq!(
            registry.extend("apollo", DAY, at_ttl),
            Err(ContextError::NotFound("apollo".into()))
        );
        assert_eq!(registry.sweep(start + DAY * 40), vec!["hermes".to_owned()]);
        assert!(registry.is_empty());
    }

    #[test]
    fn extensions_stop_at_the_maximum_lifetime() {
        let start = Instant::now();
        let mut registry = registry_with("apollo", start);
        let huge = Duration::from_secs(u64::MAX);
        assert_eq!(registry.extend("apollo", huge, start), Ok(MAX_LIFETIME));
        assert_eq!(
            registry.extend("apollo", Duration::MAX, start),
            Ok(MAX_LIFETIME)
        );
        let graph = registry.get("apollo", start).expect("live");
        assert_eq!(graph.ends_at(), start.checked_add(MAX_LIFETIME));
        // A configured time to live beyond the cap is kept, never shortened nor extended.
        let mut long = ContextRegistry::new(ContextSettings {
            ttl: Duration::MAX,
            idle: DAY,
        });
        long.create("x", [], [], [], start);
        assert_eq!(long.extend("x", huge, start), Ok(Duration::MAX));
        assert_eq!(long.get("x", start).and_then(ContextGraph::ends_at), None);
    }

    #[test]
    fn recreate_restarts_and_destroy_removes() {
        let start = Instant::now();
        let mut registry = registry_with("apollo", start);
        registry.create("apollo", strings(&["p9"]), [], [], start + DAY * 25);
        let graph = registry.get("apollo", start + DAY * 31).expect("fresh ttl");
        assert_eq!(graph.members().collect::<Vec<_>>(), vec!["p9"]);
        assert!(registry.destroy("apollo"));
        assert!(!registry.destroy("apollo"));
        assert!(registry.sweep(start + DAY * 100).is_empty());
    }

    #[test]
    fn custom_lifetimes_apply() {
        let start = Instant::now();
        let settings = ContextSettings {
            ttl: Duration::from_secs(60),
            idle: Duration::from_secs(10),
        };
        let mut registry = ContextRegistry::new(settings);
        registry.create("x", [], [], [], start);
        assert!(registry.get("x", start + Duration::from_secs(9)).is_some());
        assert!(registry.get("x", start + Duration::from_secs(18)).is_some());
        assert!(registry.get("x", start + Duration::from_secs(29)).is_none());
        assert_eq!(registry.settings(), settings);
    }
}
