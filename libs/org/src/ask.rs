//! Answers to the organisational questions retrieval can settle from the graphs alone:
//! "who does X report to?" and "who owns the Y service?".
//!
//! Questions are recognised by fixed patterns, case-insensitively, ignoring trailing `?`, `.` or
//! `!` and extra whitespace. Anything else is not an org question and gets `None`, so the caller
//! falls back to ordinary retrieval.
//!
//! | asks for | patterns (`X` a person's name or id, `Y` an entity's name or id) |
//! |----------|-------------------------------------------------------------------|
//! | manager  | `who does X report to`, `whom does X report to`, `to whom does X report`, `who is X's manager`, `who's X's manager`, `who is the manager of X`, `who manages X` |
//! | owner    | `who owns Y`, `which team owns Y`, `what team owns Y`, `who is the owner of Y`, `who is responsible for Y`; `Y` may read `the Y service` or `Y service` |

use crate::org::OrgGraph;
use crate::product::{EntityKind, ProductGraph};

/// A recognised organisational question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrgQuestion {
    /// Who does this person (name or id, as written) report to?
    Manager(String),
    /// Who owns this product, service or feature (name or id, as written)?
    Owner(String),
}

/// The answer to an [`OrgQuestion`], with ids so the caller can cite the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrgAnswer {
    /// The person's manager; `None` at the top of the organisation.
    Manager {
        /// Person id.
        person: String,
        /// Manager's person id.
        manager: Option<String>,
    },
    /// The entity's owning team; `None` when no owner is recorded.
    Owner {
        /// Entity id.
        entity: String,
        /// Team id.
        team: Option<String>,
    },
    /// Nobody by that name or id.
    UnknownPerson(String),
    /// Several people carry the name; their ids, sorted.
    AmbiguousPerson {
        /// The name as asked.
        name: String,
        /// Ids of the people with that name.
        candidates: Vec<String>,
    },
    /// No product, service or feature by that name or id.
    UnknownEntity(String),
    /// Several entities match; their ids, sorted.
    AmbiguousEntity {
        /// The name as asked.
        name: String,
        /// Ids of the matching entities.
        candidates: Vec<String>,
    },
}

const MANAGER_PATTERNS: [(&str, &str); 7] = [
    ("who does ", " report to"),
    ("whom does ", " report to"),
    ("to whom does ", " report"),
    ("who is ", "'s manager"),
    ("who's ", "'s manager"),
    ("who is the manager of ", ""),
    ("who manages ", ""),
];

const OWNER_PATTERNS: [(&str, &str); 5] = [
    ("who owns ", ""),
    ("which team owns ", ""),
    ("what team owns ", ""),
    ("who is the owner of ", ""),
    ("who is responsible for ", ""),
];

/// Recognises an organisational question; `None` for anything else.
pub fn parse_org_question(text: &str) -> Option<OrgQuestion> {
    let text = text
        .replace('\u{2019}', "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let text = text.trim_end_matches(['?', '.', '!', ' ']);
    // ASCII lowercasing keeps byte offsets, so the subject is cut from the original spelling.
    let lower = text.to_ascii_lowercase();
    let cut = |(prefix, suffix): (&str, &str)| -> Option<String> {
        if lower.len() <= prefix.len() + suffix.len()
            || !lower.starts_with(prefix)
            || !lower.ends_with(suffix)
        {
            return None;
        }
        let subject = text.get(prefix.len()..text.len() - suffix.len())?.trim();
        (!subject.is_empty()).then(|| subject.to_owned())
    };
    if let Some(person) = MANAGER_PATTERNS.into_iter().find_map(cut) {
        return Some(OrgQuestion::Manager(person));
    }
    OWNER_PATTERNS
        .into_iter()
        .find_map(cut)
        .map(OrgQuestion::Owner)
}

/// Answers an organisational question from the graphs; `None` if it is not one.
pub fn answer_org_question(
    text: &str,
    org: &OrgGraph,
    product: &ProductGraph,
) -> Option<OrgAnswer> {
    Some(match parse_org_question(text)? {
        OrgQuestion::Manager(who) => match resolve_person(org, &who) {
            Ok(person) => OrgAnswer::Manager {
                manager: org.manager_of(&person).map(str::to_owned),
                person,
            },
            Err(answer) => answer,
        },
        OrgQuestion::Owner(what) => match resolve_entity(product, &what) {
            Ok(entity) => OrgAnswer::Owner {
                team: product.owner_of(&entity).map(str::to_owned),
                entity,
            },
            Err(answer) => answer,
        },
    })
}

impl OrgAnswer {
    /// The answer as one English sentence, with display names from the graphs.
    pub fn render(&self, org: &OrgGraph, product: &ProductGraph) -> String {
        let person = |id: &str| org.person_name(id).unwrap_or(id).to_owned();
        match self {
            OrgAnswer::Manager {
                person: who,
                manager: Some(manager),
            } => format!("{} reports to {}.", person(who), person(manager)),
            OrgAnswer::Manager {
                person: who,
                manager: None,
            } => format!(
                "{} reports to nobody: they are at the top of the organisation.",
                person(who)
            ),
            OrgAnswer::Owner { entity, team } => {
                let kind = match product.kind_of(entity) {
                    Some(EntityKind::Product) => "product",
                    Some(EntityKind::Feature) => "feature",
                    _ => "service",
                };
                let name = product.name_of(entity).unwrap_or(entity);
                match team {
                    Some(team) => {
                        let team_name = org.team_name(team).unwrap_or(team);
                        format!("The {name} {kind} is owned by {team_name}.")
                    }
                    None => format!("The {name} {kind} has no recorded owner."),
                }
            }
            OrgAnswer::UnknownPerson(name) => format!("I know nobody called {name}."),
            OrgAnswer::AmbiguousPerson { name, candidates } => {
                let ids = candidates.join(", ");
                format!("Several people are called {name} ({ids}); which one?")
            }
            OrgAnswer::UnknownEntity(name) => {
                format!("I know no product or service called {name}.")
            }
            OrgAnswer::AmbiguousEntity { name, candidates } => {
                let ids = candidates.join(", ");
                format!("Several entities are called {name} ({ids}); which one?")
            }
        }
    }
}

/// A person by exact id, else by name.
fn resolve_person(org: &OrgGraph, who: &str) -> Result<String, OrgAnswer> {
    if org.contains_person(who) {
        return Ok(who.to_owned());
    }
    match org.people_named(who).as_slice() {
        [] => Err(OrgAnswer::UnknownPerson(who.to_owned())),
        [one] => Ok((*one).to_owned()),
        many => Err(OrgAnswer::AmbiguousPerson {
            name: who.to_owned(),
            candidates: many.iter().map(|id| (*id).to_owned()).collect(),
        }),
    }
}

/// An entity by name or id, trying the text as written, then without a leading `the` and a
/// trailing `service`. Among several matches, a single service wins.
fn resolve_entity(product: &ProductGraph, what: &str) -> Result<String, OrgAnswer> {
    let mut attempts = vec![what.to_owned()];
    let lower = what.to_ascii_lowercase();
    let without_the = if lower.starts_with("the ") {
        &what[4..]
    } else {
        what
    };
    attempts.push(without_the.to_owned());
    if without_the.to_ascii_lowercase().ends_with(" service") {
        attempts.push(without_the[..without_the.len() - " service".len()].to_owned());
    }
    for attempt in &attempts {
        let found = product.find(attempt);
        let services: Vec<&str> = found
            .iter()
            .copied()
            .filter(|id| product.kind_of(id) == Some(EntityKind::Service))
            .collect();
        match (found.as_slice(), services.as_slice()) {
            ([], _) => continue,
            ([one], _) | (_, [one]) => return Ok((*one).to_owned()),
            (many, _) => {
                return Err(OrgAnswer::AmbiguousEntity {
                    name: what.to_owned(),
                    candidates: many.iter().map(|id| (*id).to_owned()).collect(),
                });
            }
        }
    }
    Err(OrgAnswer::UnknownEntity(what.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hr::{OrgRecords, Person, Team};
    use crate::product::Fact;

    fn graphs() -> (OrgGraph, ProductGraph) {
        let person = |id: &str, name: &str, manager: Option<&str>| Person {
            id: id.into(),
            name: name.into(),
            team: "team-pay".into(),
            role: "engineer".into(),
            manager: manager.map(Into::into),
        };
        let records = OrgRecords::new(
            [
                person("p1", "Grace Hopper", None),
                person("p2", "Alan Turing", Some("p1")),
                person("p3", "Ada Lovelace", Some("p2")),
                person("p4", "Ada Lovelace", Some("p2")),
            ],
            [Team {
                id: "team-pay".into(),
                name: "Payments Team".into(),
                parent: None,
            }],
        )
        .expect("valid records");
        let facts = Fact::all([
            ("svc-pay", "is_a", "service"),
            ("svc-pay", "name", "Payments"),
            ("svc-pay", "owned_by", "team-pay"),
            ("payments", "is_a", "product"),
            ("svc-ledger", "is_a", "service"),
            ("svc-ledger", "name", "Ledger"),
        ]);
        (OrgGraph::build(&records), ProductGraph::build(&facts).0)
    }

    #[test]
    fn recognises_question_shapes() {
        for text in [
            "Who does Alan Turing report to?",
            "WHO DOES  Alan   Turing REPORT TO",
            "To whom does Alan Turing report?",
            "Who is Alan Turing's manager?",
            "who\u{2019}s Alan Turing\u{2019}s manager",
            "Who is the manager of Alan Turing.",
            "who manages Alan Turing",
        ] {
            assert_eq!(
                parse_org_question(text),
                Some(OrgQuestion::Manager("Alan Turing".into())),
                "{text}"
            );
        }
        for text in [
            "Who owns the Payments service?",
            "which team owns the Payments service",
            "Who is the owner of the Payments service?",
        ] {
            assert_eq!(
                parse_org_question(text),
                Some(OrgQuestion::Owner("the Payments service".into())),
                "{text}"
            );
        }
        for text in [
            "What is the refund policy?",
            "who owns",
            "who is?",
            "",
            "who does report to",
        ] {
            assert_eq!(parse_org_question(text), None, "{text:?}");
        }
    }

    #[test]
    fn answers_reporting_questions() {
        let (org, product) = graphs();
        let answer = answer_org_question("Who does alan turing report to?", &org, &product);
        assert_eq!(
            answer,
            Some(OrgAnswer::Manager {
                person: "p2".into(),
                manager: Some("p1".into())
            })
        );
        let rendered = answer.map(|a| a.render(&org, &product));
        assert_eq!(
            rendered.as_deref(),
            Some("Alan Turing reports to Grace Hopper.")
        );
        let top = answer_org_question("who manages p1", &org, &product).expect("org question");
        assert_eq!(
            top,
            OrgAnswer::Manager {
                person: "p1".into(),
                manager: None
            }
        );
        assert!(
            top.render(&org, &product)
                .contains("top of the organisation")
        );
        assert_eq!(
            answer_org_question("who does Ada Lovelace report to", &org, &product),
            Some(OrgAnswer::AmbiguousPerson {
                name: "Ada Lovelace".into(),
                candidates: vec!["p3".into(), "p4".into()]
            })
        );
        assert_eq!(
            answer_org_question("who does Linus report to", &org, &product),
            Some(OrgAnswer::UnknownPerson("Linus".into()))
        );
        assert_eq!(
            answer_org_question("how do refunds work", &org, &product),
            None
        );
    }

    #[test]
    fn answers_ownership_questions() {
        let (org, product) = graphs();
        let answer = answer_org_question("Who owns the payments service?", &org, &product)
            .expect("org question");
        assert_eq!(
            answer,
            OrgAnswer::Owner {
                entity: "svc-pay".into(),
                team: Some("team-pay".into())
            },
            "the service wins over the product of the same name"
        );
        assert_eq!(
            answer.render(&org, &product),
            "The Payments service is owned by Payments Team."
        );
        let unowned = answer_org_question("which team owns svc-ledger", &org, &product)
            .expect("org question");
        assert_eq!(
            unowned.render(&org, &product),
            "The Ledger service has no recorded owner."
        );
        assert_eq!(
            answer_org_question("who owns the billing service", &org, &product),
            Some(OrgAnswer::UnknownEntity("the billing service".into()))
        );
    }
}
