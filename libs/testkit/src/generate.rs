//! Seeded synthetic worlds for tests and benchmarks: tenants with an organisation, a product
//! landscape and work items, plus random HR events.
//!
//! The same [`WorldSpec`] always gives the same world. Person ids (`p00000`), team ids
//! (`team-0000`) and service ids (`svc-0000`) repeat in every tenant on purpose, so a plate that
//! mixed tenants up would be caught; item ids (`WI-0000000`) are unique across the world.

use chrono::{DateTime, Duration, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use ontoloop_org::hr::{HrEvent, Move, OrgRecords, Person, Team};
use ontoloop_org::items::{Scope, Severity, Source, WorkItem};
use ontoloop_org::product::Fact;

/// The size and seed of a world. `people`, `services` and `items` are totals, split evenly over
/// the tenants.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldSpec {
    /// Seed of the random generator.
    pub seed: u64,
    /// Number of tenants (at least one is generated).
    pub tenants: usize,
    /// People over all tenants.
    pub people: usize,
    /// Services over all tenants.
    pub services: usize,
    /// Work items over all tenants.
    pub items: usize,
    /// The moment item ages are relative to.
    pub now: DateTime<Utc>,
}

impl Default for WorldSpec {
    fn default() -> Self {
        WorldSpec {
            seed: 42,
            tenants: 3,
            people: 300,
            services: 60,
            items: 3_000,
            now: Utc
                .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
                .single()
                .unwrap_or(DateTime::UNIX_EPOCH),
        }
    }
}

/// One tenant of a generated world.
#[derive(Debug, Clone)]
pub struct TenantWorld {
    /// Tenant id, `tenant-0`, `tenant-1`, ...
    pub tenant: String,
    /// People and teams.
    pub org: OrgRecords,
    /// Product, service and feature facts.
    pub facts: Vec<Fact>,
}

/// A generated world.
#[derive(Debug, Clone)]
pub struct World {
    /// The moment item ages are relative to.
    pub now: DateTime<Utc>,
    /// Tenants in id order.
    pub tenants: Vec<TenantWorld>,
    /// Items of every tenant.
    pub items: Vec<WorkItem>,
}

impl World {
    /// One tenant by id.
    pub fn tenant(&self, tenant: &str) -> Option<&TenantWorld> {
        self.tenants.iter().find(|t| t.tenant == tenant)
    }

    /// The items of one tenant, in the world's order (what a bulk load of the tenant writes).
    pub fn items_of(&self, tenant: &str) -> Vec<WorkItem> {
        self.items
            .iter()
            .filter(|item| item.tenant == tenant)
            .cloned()
            .collect()
    }
}

const FIRST: [&str; 24] = [
    "Ada",
    "Alan",
    "Barbara",
    "Claude",
    "Dana",
    "Edsger",
    "Frances",
    "Grace",
    "Hedy",
    "Ivan",
    "Joan",
    "Ken",
    "Leslie",
    "Margaret",
    "Niklaus",
    "Ole",
    "Peter",
    "Radia",
    "Sophie",
    "Tim",
    "Ursula",
    "Vint",
    "Whitfield",
    "Yukihiro",
];
const LAST: [&str; 24] = [
    "Lovelace",
    "Turing",
    "Liskov",
    "Shannon",
    "Scott",
    "Dijkstra",
    "Allen",
    "Hopper",
    "Lamarr",
    "Sutherland",
    "Clarke",
    "Thompson",
    "Lamport",
    "Hamilton",
    "Wirth",
    "Dahl",
    "Naur",
    "Perlman",
    "Wilson",
    "Berners-Lee",
    "Franklin",
    "Cerf",
    "Diffie",
    "Matsumoto",
];
const WORDS: [&str; 16] = [
    "payments",
    "ledger",
    "search",
    "identity",
    "billing",
    "catalog",
    "checkout",
    "shipping",
    "inventory",
    "pricing",
    "gateway",
    "notifications",
    "reporting",
    "storage",
    "auth",
    "metrics",
];
const MEMBER_ROLES: [(&str, u32); 6] = [
    ("engineer", 55),
    ("sre", 15),
    ("product_manager", 10),
    ("designer", 10),
    ("manager", 5),
    ("analyst", 5),
];
const SEVERITIES: [(Severity, u32); 4] = [
    (Severity::Critical, 3),
    (Severity::High, 12),
    (Severity::Medium, 45),
    (Severity::Low, 40),
];
const SCOPES: [(Scope, u32); 6] = [
    (Scope::Code, 25),
    (Scope::Bugs, 25),
    (Scope::Features, 20),
    (Scope::Production, 15),
    (Scope::Critical, 5),
    (Scope::Strategic, 10),
];
const SOURCES: [(&str, u32); 7] = [
    ("jira", 35),
    ("servicenow", 15),
    ("production_logs", 15),
    ("email", 12),
    ("slack", 14),
    ("rumor", 5),
    ("confluence", 4),
];
const GROUPS: [&str; 3] = ["group:oncall", "group:leads", "group:security"];

/// Generates a world. Ten thousand people and a hundred thousand items take well under a second
/// in a release build.
pub fn generate(spec: &WorldSpec) -> World {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let tenants = spec.tenants.max(1);
    let mut world = World {
        now: spec.now,
        tenants: Vec::with_capacity(tenants),
        items: Vec::with_capacity(spec.items),
    };
    for t in 0..tenants {
        let tenant = format!("tenant-{t}");
        let people = share(spec.people, tenants, t);
        let services = share(spec.services, tenants, t);
        let (org, teams) = generate_org(&mut rng, people);
        let facts = generate_facts(&mut rng, services, &teams);
        world.tenants.push(TenantWorld { tenant, org, facts });
    }
    let mut next_id = 0_usize;
    for (t, tenant) in world.tenants.iter().enumerate() {
        let people: Vec<&str> = tenant.org.people().map(|p| p.id.as_str()).collect();
        let services = share(spec.services, tenants, t);
        for _ in 0..share(spec.items, tenants, t) {
            let item = generate_item(
                &mut rng,
                spec.now,
                &tenant.tenant,
                next_id,
                &people,
                services,
            );
            world.items.push(item);
            next_id += 1;
        }
    }
    world
}

/// A random HR event against `records`: mostly valid hires, transfers and terminations, some
/// restructures, and some events that must be refused (unknown ids, duplicates, or loops).
/// `step` makes new ids unique.
pub fn random_hr_event(rng: &mut StdRng, records: &OrgRecords, step: usize) -> HrEvent {
    let people: Vec<&Person> = records.people().collect();
    let teams: Vec<&Team> = records.teams().collect();
    let any_person = |rng: &mut StdRng| people.choose(rng).map(|p| p.id.clone());
    let any_team = |rng: &mut StdRng| {
        teams
            .choose(rng)
            .map(|t| t.id.clone())
            .unwrap_or_else(|| "team-0000".to_owned())
    };
    let roll = rng.random_range(0..100);
    match roll {
        0..30 => HrEvent::Hired(Person {
            id: format!("hire-{step}"),
            name: name(rng),
            team: any_team(rng),
            role: pick(rng, &MEMBER_ROLES).to_owned(),
            manager: if rng.random_bool(0.95) {
                any_person(rng)
            } else {
                None
            },
        }),
        30..65 => match any_person(rng) {
            Some(person) => HrEvent::Transferred {
                person,
                team: any_team(rng),
                manager: if rng.random_bool(0.6) {
                    any_person(rng)
                } else {
                    None
                },
                role: rng
                    .random_bool(0.3)
                    .then(|| pick(rng, &MEMBER_ROLES).to_owned()),
            },
            None => HrEvent::Terminated {
                person: "nobody".into(),
            },
        },
        65..88 => HrEvent::Terminated {
            person: any_person(rng).unwrap_or_else(|| "nobody".into()),
        },
        88..95 => {
            let new_team = format!("re-team-{step}");
            let moves = (0..rng.random_range(1..=5))
                .filter_map(|_| any_person(rng))
                .map(|person| Move {
                    person,
                    team: new_team.clone(),
                    manager: None,
                    role: None,
                })
                .collect();
            let empty: Vec<&str> = teams
                .iter()
                .filter(|t| {
                    !people.iter().any(|p| p.team == t.id)
                        && !teams
                            .iter()
                            .any(|c| c.parent.as_deref() == Some(t.id.as_str()))
                })
                .map(|t| t.id.as_str())
                .collect();
            HrEvent::Restructure {
                teams: vec![Team {
                    id: new_team.clone(),
                    name: format!("Restructured {step}"),
                    parent: Some(any_team(rng)),
                }],
                moves,
                dissolve: empty
                    .choose(rng)
                    .map(|t| (*t).to_owned())
                    .into_iter()
                    .collect(),
            }
        }
        _ => match rng.random_range(0..3) {
            0 => HrEvent::Transferred {
                person: any_person(rng).unwrap_or_default(),
                team: "no-such-team".into(),
                manager: None,
                role: None,
            },
            1 => HrEvent::Terminated {
                person: format!("ghost-{step}"),
            },
            _ => match people.choose(rng) {
                Some(existing) => HrEvent::Hired((*existing).clone()),
                None => HrEvent::Terminated {
                    person: "nobody".into(),
                },
            },
        },
    }
}

/// Part `index` of `total` split over `parts` as evenly as possible.
fn share(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}

fn pick<T: Copy>(rng: &mut StdRng, weighted: &[(T, u32)]) -> T {
    let total: u32 = weighted.iter().map(|(_, w)| w).sum();
    let mut roll = rng.random_range(0..total.max(1));
    for &(value, weight) in weighted {
        if roll < weight {
            return value;
        }
        roll -= weight;
    }
    weighted[0].0
}

fn name(rng: &mut StdRng) -> String {
    let first = FIRST[rng.random_range(0..FIRST.len())];
    let last = LAST[rng.random_range(0..LAST.len())];
    format!("{first} {last}")
}

/// People in teams: team `i` is led by person `i`, who reports to the lead of the parent team;
/// other members report to their lead or to an earlier member of the team. Every manager has a
/// smaller index than their report, so the reporting lines cannot loop.
fn generate_org(rng: &mut StdRng, people: usize) -> (OrgRecords, Vec<String>) {
    let team_count = people.div_ceil(8).max(1);
    let mut teams = Vec::with_capacity(team_count);
    let mut depth = Vec::with_capacity(team_count);
    let mut parents = Vec::with_capacity(team_count);
    for i in 0..team_count {
        let parent = (i > 0).then(|| rng.random_range(0..i));
        depth.push(parent.map_or(0, |p: usize| depth[p] + 1));
        parents.push(parent);
        teams.push(Team {
            id: format!("team-{i:04}"),
            name: format!("{} {i}", capitalise(WORDS[i % WORDS.len()])),
            parent: parent.map(|p| format!("team-{p:04}")),
        });
    }
    let team_ids: Vec<String> = teams.iter().map(|t| t.id.clone()).collect();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); team_count];
    let mut persons = Vec::with_capacity(people);
    for p in 0..people {
        let (team, manager, role) = if p < team_count {
            // The lead of team `i` is person `i`, so the parent team's index is the manager's.
            let parent = parents[p];
            let role = match depth[p] {
                0 => "executive",
                1 => "director",
                _ => "manager",
            };
            (p, parent, role)
        } else {
            let team = rng.random_range(0..team_count);
            let earlier = &members[team];
            let manager = if !earlier.is_empty() && rng.random_bool(0.2) {
                earlier[rng.random_range(0..earlier.len())]
            } else {
                team
            };
            (team, Some(manager), pick(rng, &MEMBER_ROLES))
        };
        if p >= team_count {
            members[team].push(p);
        }
        persons.push(Person {
            id: format!("p{p:05}"),
            name: name(rng),
            team: team_ids[team].clone(),
            role: role.to_owned(),
            manager: manager.filter(|&m| m < p).map(|m| format!("p{m:05}")),
        });
    }
    // The teams of a tenant with fewer people than teams have no lead; that is fine.
    let records = OrgRecords::new(persons, teams).unwrap_or_default();
    (records, team_ids)
}

/// Services owned by random teams with a dependency DAG (edges only from a higher index to a
/// lower one), grouped into products with features.
fn generate_facts(rng: &mut StdRng, services: usize, teams: &[String]) -> Vec<Fact> {
    let mut facts = Vec::new();
    let mut fact = |s: &str, p: &str, o: &str| facts.push(Fact::new(s, p, o));
    let products = services.div_ceil(6).max(1);
    for i in 0..products {
        let id = format!("prod-{i:03}");
        fact(&id, "is_a", "product");
        fact(
            &id,
            "name",
            &format!("{} suite {i}", capitalise(WORDS[i % WORDS.len()])),
        );
        if rng.random_bool(0.85)
            && let Some(team) = teams.choose(rng)
        {
            fact(&id, "owned_by", team);
        }
        if rng.random_bool(0.75) {
            fact(
                &id,
                "description",
                &format!("Everything about {}", WORDS[i % WORDS.len()]),
            );
        }
        for k in 0..2 {
            let feature = format!("feat-{i:03}-{k}");
            fact(&feature, "is_a", "feature");
            fact(&feature, "part_of", &id);
        }
    }
    for s in 0..services {
        let id = format!("svc-{s:04}");
        fact(&id, "is_a", "service");
        fact(&id, "name", &format!("{}-{s}", WORDS[s % WORDS.len()]));
        if rng.random_bool(0.9)
            && let Some(team) = teams.choose(rng)
        {
            fact(&id, "owned_by", team);
        }
        if rng.random_bool(0.7) {
            fact(
                &id,
                "description",
                &format!("Serves {}", WORDS[s % WORDS.len()]),
            );
        }
        if rng.random_bool(0.05) {
            fact(&id, "deprecated", "true");
        }
        fact(
            &id,
            "part_of",
            &format!("prod-{:03}", rng.random_range(0..products)),
        );
        if s > 0 {
            for _ in 0..rng.random_range(0..=3) {
                let target = rng.random_range(0..s);
                fact(&id, "depends_on", &format!("svc-{target:04}"));
            }
        }
    }
    facts
}

fn generate_item(
    rng: &mut StdRng,
    now: DateTime<Utc>,
    tenant: &str,
    n: usize,
    people: &[&str],
    services: usize,
) -> WorkItem {
    let assignee = match rng.random_range(0..100) {
        0..90 => people.choose(rng).map(|p| (*p).to_owned()),
        90..93 => Some(format!("ext-{}", rng.random_range(0..20))),
        _ => None,
    };
    let service = (services > 0 && rng.random_bool(0.85))
        .then(|| format!("svc-{:04}", rng.random_range(0..services)));
    let severity = pick(rng, &SEVERITIES);
    let scope = pick(rng, &SCOPES);
    let source = Source::from(pick(rng, &SOURCES));
    let age_secs = if rng.random_bool(0.01) {
        -rng.random_range(0..86_400)
    } else {
        rng.random_range(0..180 * 86_400)
    };
    let mut acl = Vec::new();
    if rng.random_bool(0.15) {
        if let Some(assignee) = &assignee
            && rng.random_bool(0.5)
        {
            acl.push(assignee.clone());
        }
        for _ in 0..rng.random_range(1..=3) {
            if let Some(person) = people.choose(rng) {
                acl.push((*person).to_owned());
            }
        }
        if rng.random_bool(0.3)
            && let Some(group) = GROUPS.choose(rng)
        {
            acl.push((*group).to_owned());
        }
    }
    WorkItem {
        id: format!("WI-{n:07}"),
        tenant: tenant.to_owned(),
        title: format!("{} {} item {n}", severity.name(), scope.as_str()),
        assignee,
        service,
        severity,
        scope,
        source,
        created_at: now - Duration::seconds(age_secs),
        acl,
    }
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use ontoloop_org::product::ProductGraph;

    #[test]
    fn same_seed_same_world() {
        let spec = WorldSpec::default();
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.items, b.items);
        assert_eq!(a.tenants[1].org, b.tenants[1].org);
        assert_eq!(a.tenants[2].facts, b.tenants[2].facts);
        let other = generate(&WorldSpec {
            seed: 43,
            ..spec.clone()
        });
        assert_ne!(a.items, other.items);
    }

    #[test]
    fn world_has_the_requested_shape() {
        let spec = WorldSpec {
            tenants: 3,
            people: 1_000,
            services: 90,
            items: 10_000,
            ..WorldSpec::default()
        };
        let world = generate(&spec);
        assert_eq!(world.tenants.len(), 3);
        let people: usize = world.tenants.iter().map(|t| t.org.people().len()).sum();
        assert_eq!(people, 1_000);
        assert_eq!(world.items.len(), 10_000);
        for tenant in &world.tenants {
            tenant.org.validate().expect("generated org is valid");
            assert!(tenant.org.people().any(|p| p.manager.is_none()));
            assert!(tenant.org.people().filter(|p| p.manager.is_some()).count() > 300);
            let (product, rejected) = ProductGraph::build(&tenant.facts);
            assert!(rejected.is_empty(), "{rejected:?}");
            let ratio = product.coverage().ratio();
            assert!(ratio > 0.3 && ratio < 1.0, "coverage {ratio}");
            for service in product.entities(ontoloop_org::product::EntityKind::Service) {
                for dependency in product.dependencies_of(service) {
                    assert!(dependency < service, "edges go from higher to lower index");
                }
            }
        }
        let mut by_severity = BTreeMap::new();
        for item in &world.items {
            *by_severity.entry(item.severity).or_insert(0_usize) += 1;
        }
        let critical = by_severity.get(&Severity::Critical).copied().unwrap_or(0);
        let low = by_severity.get(&Severity::Low).copied().unwrap_or(0);
        assert!(critical > 100 && critical < 600, "critical {critical}");
        assert!(low > 3_000, "low {low}");
        let restricted = world.items.iter().filter(|i| !i.acl.is_empty()).count();
        assert!(
            restricted > 1_000 && restricted < 2_500,
            "restricted {restricted}"
        );
        let oldest = world.items.iter().map(|i| world.now - i.created_at).max();
        assert!(oldest.is_some_and(|age| age <= Duration::days(180)));
    }
}
