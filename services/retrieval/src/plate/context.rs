//! Project context graphs per tenant: built on demand from the org and product graphs, kept for
//! their time to live or until unused for the idle time, extended or closed on request, and
//! removed by a background sweeper.
//!
//! Time comes from tokio's clock (`tokio::time::Instant`), so tests drive it with the paused
//! clock.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ontoloop_core::{CacheBudget, Lru};
use ontoloop_org::context::{ContextError, ContextGraph, ContextRegistry, ContextSettings};
use ontoloop_org::org::OrgGraph;
use ontoloop_org::product::{EntityKind, ProductGraph};
use tokio_util::sync::CancellationToken;

/// What a project's graph is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectSpec {
    /// The team working on the project.
    pub team: String,
    /// Services the project depends on besides those its team owns.
    pub services: Vec<String>,
    /// Constraints stated for the project.
    pub constraints: Vec<String>,
}

/// Why a project's context graph could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No team given.
    #[error("team is required to build a project's context graph")]
    NoTeam,
    /// The team is not in the org graph.
    #[error("team: no team {0:?} in the organisation")]
    UnknownTeam(String),
    /// A named service is not in the product graph.
    #[error("services: no service {0:?} in the product graph")]
    UnknownService(String),
}

impl ontoloop_core::ServiceError for BuildError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            BuildError::NoTeam => ontoloop_core::ErrorCode::InvalidArgument,
            BuildError::UnknownTeam(_) | BuildError::UnknownService(_) => {
                ontoloop_core::ErrorCode::NotFound
            }
        }
    }
}

/// What a context graph holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// Person ids of the project team.
    pub members: Vec<String>,
    /// Service ids the project depends on, transitively.
    pub dependencies: Vec<String>,
    /// The stated constraints, then one per deprecated or unowned dependency.
    pub constraints: Vec<String>,
}

/// The parts of a project's context graph, from the org and product graphs.
pub fn build_parts(
    spec: &ProjectSpec,
    org: &OrgGraph,
    product: &ProductGraph,
) -> Result<Parts, BuildError> {
    let team = spec.team.trim();
    if team.is_empty() {
        return Err(BuildError::NoTeam);
    }
    if org.team_name(team).is_none() {
        return Err(BuildError::UnknownTeam(team.to_owned()));
    }
    let members: Vec<String> = org.members(team).into_iter().map(str::to_owned).collect();
    let mut roots: BTreeSet<String> = product
        .services_owned_by(team)
        .into_iter()
        .map(str::to_owned)
        .collect();
    for service in &spec.services {
        if product.kind_of(service) != Some(EntityKind::Service) {
            return Err(BuildError::UnknownService(service.clone()));
        }
        roots.insert(service.clone());
    }
    let mut dependencies = roots.clone();
    for root in &roots {
        dependencies.extend(
            product
                .transitive_dependencies_of(root)
                .into_iter()
                .map(str::to_owned),
        );
    }
    let mut constraints = spec.constraints.clone();
    for service in &dependencies {
        if product.is_deprecated(service) {
            constraints.push(format!("{service} is deprecated"));
        }
        if product.owner_of(service).is_none() {
            constraints.push(format!("{service} has no owner"));
        }
    }
    Ok(Parts {
        members,
        dependencies: dependencies.into_iter().collect(),
        constraints,
    })
}

/// Every tenant's context graphs, for at most `[cache.context_graphs]` tenants: a graph is built
/// from the org and product graphs (the store's), so an evicted tenant's graphs are built again
/// on their next open, with a fresh time to live; until then an extend or a close of one answers
/// as for a graph that expired.
pub struct Contexts {
    settings: ContextSettings,
    tenants: Mutex<Lru<ContextRegistry>>,
}

/// A context graph as handed out, with when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The graph.
    pub graph: ContextGraph,
    /// Time left until it expires unless used or extended.
    pub expires_in: Duration,
    /// Whether this call built it.
    pub created: bool,
}

impl Contexts {
    /// No graphs yet; these lifetimes, holding the graphs of at most as many tenants as
    /// `budget` (`[cache.context_graphs]`) keeps.
    pub fn new(settings: ContextSettings, budget: CacheBudget) -> Self {
        Contexts {
            settings,
            tenants: Mutex::new(Lru::new(budget)),
        }
    }

    /// The project's live graph, or one built now with `build`.
    pub fn open<E>(
        &self,
        tenant: &str,
        project: &str,
        build: impl FnOnce() -> Result<Parts, E>,
    ) -> Result<Opened, E> {
        let now = now();
        let mut tenants = self.lock();
        let registry =
            tenants.get_or_insert_with(tenant, || (ContextRegistry::new(self.settings), 0));
        if let Some(graph) = registry.get(project, now) {
            let graph = graph.clone();
            return Ok(self.opened(graph, now, false));
        }
        let parts = build()?;
        let graph = registry
            .create(
                project,
                parts.members,
                parts.dependencies,
                parts.constraints,
                now,
            )
            .clone();
        super::cache_entries("retrieval_context_graphs", tenants.len());
        Ok(self.opened(graph, now, true))
    }

    /// Lengthens a live graph's time to live.
    pub fn extend(
        &self,
        tenant: &str,
        project: &str,
        by: Duration,
    ) -> Result<Opened, ContextError> {
        let now = now();
        let mut tenants = self.lock();
        let registry = tenants
            .get_mut(tenant)
            .ok_or_else(|| ContextError::NotFound(project.to_owned()))?;
        registry.extend(project, by, now)?;
        let graph = registry
            .get(project, now)
            .cloned()
            .ok_or_else(|| ContextError::Expired(project.to_owned()))?;
        Ok(self.opened(graph, now, false))
    }

    /// Destroys a project's graph; whether there was one.
    pub fn close(&self, tenant: &str, project: &str) -> bool {
        self.lock()
            .get_mut(tenant)
            .is_some_and(|registry| registry.destroy(project))
    }

    /// Number of graphs held (live or awaiting the sweeper).
    pub fn len(&self) -> usize {
        self.lock().iter().map(|(_, registry)| registry.len()).sum()
    }

    /// Whether no graphs are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every expired graph; returns `(tenant, project)` of each.
    pub fn sweep(&self) -> Vec<(String, String)> {
        let now = now();
        let mut swept = Vec::new();
        let mut tenants = self.lock();
        for (tenant, registry) in tenants.iter_mut() {
            swept.extend(
                registry
                    .sweep(now)
                    .into_iter()
                    .map(|project| (tenant.to_owned(), project)),
            );
        }
        tenants.retain(|_, registry| !registry.is_empty());
        swept
    }

    /// Sweeps every `every` until `cancel` fires.
    pub async fn run_sweeper(&self, every: Duration, cancel: CancellationToken) {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                _ = ticks.tick() => {
                    for (tenant, project) in self.sweep() {
                        tracing::info!(tenant, project, "context graph expired");
                    }
                }
            }
        }
    }

    fn opened(&self, graph: ContextGraph, now: Instant, created: bool) -> Opened {
        // Checked: a lifetime or idle time too long for the clock means "not before Duration::MAX".
        let left = |end: Option<Instant>| {
            end.map_or(Duration::MAX, |end| end.saturating_duration_since(now))
        };
        let by_ttl = left(graph.ends_at());
        let by_idle = left(graph.last_access().checked_add(self.settings.idle));
        Opened {
            expires_in: by_ttl.min(by_idle),
            graph,
            created,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru<ContextRegistry>> {
        // Every critical section leaves the map consistent, so a poisoned lock is safe to use.
        self.tenants.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Now on tokio's clock (paused in tests).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use ontoloop_org::hr::{OrgRecords, Person, Team};
    use ontoloop_org::product::Fact;

    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    /// Three people in two teams, and three services of which one depends on the next.
    pub(crate) fn graphs() -> (OrgGraph, ProductGraph) {
        let person = |id: &str, team: &str| Person {
            id: id.into(),
            name: id.to_uppercase(),
            team: team.into(),
            role: "engineer".into(),
            manager: None,
        };
        let team = |id: &str| Team {
            id: id.into(),
            name: id.into(),
            parent: None,
        };
        let records = OrgRecords::new(
            [
                person("p1", "core"),
                person("p2", "core"),
                person("p3", "ops"),
            ],
            [team("core"), team("ops")],
        )
        .expect("valid records");
        let facts: Vec<Fact> = [
            ("api", "is_a", "service"),
            ("db", "is_a", "service"),
            ("cache", "is_a", "service"),
            ("api", "owned_by", "core"),
            ("db", "owned_by", "ops"),
            ("api", "depends_on", "db"),
            ("db", "depends_on", "cache"),
            ("cache", "deprecated", "true"),
        ]
        .into_iter()
        .map(|(s, p, o)| Fact::new(s, p, o))
        .collect();
        (OrgGraph::build(&records), ProductGraph::build(&facts).0)
    }

    /// A project of `team` with one constraint.
    pub(crate) fn spec(team: &str) -> ProjectSpec {
        ProjectSpec {
            team: team.into(),
            services: Vec::new(),
            constraints: vec!["ship by friday".into()],
        }
    }

    #[test]
    fn a_graph_holds_the_team_its_transitive_dependencies_and_constraints() {
        let (org, product) = graphs();
        let parts = build_parts(&spec("core"), &org, &product).expect("builds");
        assert_eq!(parts.members, vec!["p1", "p2"]);
        assert_eq!(parts.dependencies, vec!["api", "cache", "db"]);
        assert_eq!(
            parts.constraints,
            vec![
                "ship by friday",
                "cache is deprecated",
                "cache has no owner"
            ]
        );
        assert_eq!(
            build_parts(&spec("ghosts"), &org, &product),
            Err(BuildError::UnknownTeam("ghosts".into()))
        );
        let mut bad = spec("ops");
        bad.services.push("nope".into());
        assert_eq!(
            build_parts(&bad, &org, &product),
            Err(BuildError::UnknownService("nope".into()))
        );
    }

    /// Under a budget of two tenants, a third tenant's graph evicts the least recently used
    /// tenant's; that tenant's next open builds the same graph again, and extending the evicted
    /// one answers as for an expired graph.
    #[tokio::test(start_paused = true)]
    async fn graphs_of_at_most_the_budgeted_tenants_are_held_and_rebuilt_alike() {
        let (org, product) = graphs();
        let settings = ontoloop_settings::Settings::defaults();
        let contexts = Contexts::new(
            settings.org.contexts(),
            CacheBudget {
                max_entries: 2,
                max_bytes: 0,
            },
        );
        let open = |tenant: &str| {
            contexts
                .open(tenant, "apollo", || {
                    build_parts(&spec("core"), &org, &product)
                })
                .expect("builds")
        };
        let first = open("acme");
        open("globex");
        open("initech");
        assert_eq!(contexts.len(), 2, "acme's graph was evicted");
        assert_eq!(
            contexts.extend("acme", "apollo", DAY),
            Err(ContextError::NotFound("apollo".into()))
        );
        let again = open("acme");
        assert!(again.created, "built again");
        let parts = |opened: &Opened| {
            (
                opened
                    .graph
                    .members()
                    .map(str::to_owned)
                    .collect::<Vec<_>>(),
                opened
                    .graph
                    .dependencies()
                    .map(str::to_owned)
                    .collect::<Vec<_>>(),
                opened.graph.constraints().to_vec(),
            )
        };
        assert_eq!(parts(&again), parts(&first));
        assert_eq!(contexts.len(), 2);
    }

    /// The sweeper runs on tokio's paused clock: a graph nobody uses goes after the idle time, a
    /// busy one after its time to live, an extended one later, a closed one at once.
    #[tokio::test(start_paused = true)]
    async fn the_sweeper_removes_idle_and_expired_graphs_on_the_paused_clock() {
        let (org, product) = graphs();
        let settings = ontoloop_settings::Settings::defaults();
        let contexts = Arc::new(Contexts::new(
            settings.org.contexts(),
            settings.cache.context_graphs,
        ));
        let cancel = CancellationToken::new();
        let sweeper = {
            let contexts = Arc::clone(&contexts);
            let cancel = cancel.clone();
            tokio::spawn(async move {
                contexts
                    .run_sweeper(Duration::from_secs(3600), cancel)
                    .await
            })
        };
        let build = |team: &str| {
            let parts = build_parts(&spec(team), &org, &product);
            move || parts
        };
        let opened = contexts
            .open("acme", "busy", build("core"))
            .expect("builds");
        assert!(opened.created);
        assert_eq!(opened.expires_in, 7 * DAY, "idle limit comes first");
        for project in ["idle", "extended", "closed"] {
            contexts
                .open("acme", project, build("ops"))
                .expect("builds");
        }
        assert!(contexts.close("acme", "closed"));
        assert!(!contexts.close("acme", "closed"));

        // Sleeping on the paused clock jumps from timer to timer, so the hourly sweeps run at
        // their own instants; checks sit half an hour off that grid.
        const HALF_HOUR: Duration = Duration::from_secs(1800);
        // Use "busy" and "extended" every 6 days; "idle" is never used again.
        for _ in 0..4 {
            tokio::time::sleep(6 * DAY).await;
            for project in ["busy", "extended"] {
                let again = contexts
                    .open("acme", project, || Err::<_, BuildError>(BuildError::NoTeam))
                    .expect("still live: not rebuilt");
                assert!(!again.created);
            }
        }
        // Day 24: the sweep of day 7 removed the idle graph.
        tokio::time::sleep(HALF_HOUR).await;
        assert_eq!(contexts.len(), 2);
        let extended = contexts
            .extend("acme", "extended", 10 * DAY)
            .expect("live graph extends");
        assert_eq!(extended.graph.lifetime(), 40 * DAY);

        // Day 30: the busy graph's time to live is over, the extended one lives on.
        tokio::time::sleep(5 * DAY).await;
        let again = contexts
            .open("acme", "extended", || {
                Err::<_, BuildError>(BuildError::NoTeam)
            })
            .expect("extended graph is live");
        assert!(!again.created);
        tokio::time::sleep(DAY).await;
        assert_eq!(contexts.len(), 1, "the busy graph expired at day 30");
        assert_eq!(
            contexts.extend("acme", "busy", DAY).map(|o| o.created),
            Err(ContextError::NotFound("busy".into()))
        );
        let rebuilt = contexts
            .open("acme", "busy", build("core"))
            .expect("builds");
        assert!(
            rebuilt.created,
            "an expired project's graph is built afresh"
        );

        cancel.cancel();
        sweeper.await.expect("sweeper stops");
    }
}
