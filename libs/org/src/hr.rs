//! HR records and HR events: the source of truth the organisation graph is rebuilt from.
//!
//! [`OrgRecords`] is a plain, validated set of people and teams (the shape the store mirrors).
//! [`apply`] folds one [`HrEvent`] into it atomically: an event that is refused changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::OrgError;

/// One employee as HR knows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// Stable id; also the principal the person authenticates as.
    pub id: String,
    /// Display name, for example `Ada Lovelace`.
    pub name: String,
    /// Id of the team the person belongs to.
    pub team: String,
    /// Job role, for example `engineer`, `sre` or `manager`; compared case-insensitively.
    pub role: String,
    /// Id of the person's manager; `None` at the top of the organisation.
    #[serde(default)]
    pub manager: Option<String>,
}

/// One team; teams form a tree through `parent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Team {
    /// Stable id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Id of the enclosing team; `None` for a top-level team.
    #[serde(default)]
    pub parent: Option<String>,
}

/// A person's move inside an [`HrEvent::Restructure`]; same rules as [`HrEvent::Transferred`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// Id of the person who moves.
    pub person: String,
    /// Id of the new team (may be the current one).
    pub team: String,
    /// New manager; `None` keeps the current manager.
    #[serde(default)]
    pub manager: Option<String>,
    /// New role; `None` keeps the current role.
    #[serde(default)]
    pub role: Option<String>,
}

/// An event pushed by an HR integration, tagged on the wire by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum HrEvent {
    /// A new person joins; their team and manager must exist.
    #[serde(rename = "employee.hired")]
    Hired(Person),
    /// A person changes team and, optionally, manager and role.
    #[serde(rename = "employee.transferred")]
    Transferred {
        /// Id of the person.
        person: String,
        /// Id of the new team (may be the current one).
        team: String,
        /// New manager; `None` keeps the current manager.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        manager: Option<String>,
        /// New role; `None` keeps the current role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// A person leaves. Their direct reports move to the leaver's own manager (or to the top of
    /// the organisation when the leaver had none).
    #[serde(rename = "employee.terminated")]
    Terminated {
        /// Id of the person.
        person: String,
    },
    /// A batch reorganisation, applied in three steps: team upserts (create, rename or re-parent),
    /// then person moves in order, then team dissolutions (each team must be empty by then).
    /// The whole batch applies or nothing does.
    #[serde(rename = "org.restructure")]
    Restructure {
        /// Teams to create or replace, by id.
        #[serde(default)]
        teams: Vec<Team>,
        /// People to move, in order.
        #[serde(default)]
        moves: Vec<Move>,
        /// Ids of teams to dissolve after the moves.
        #[serde(default)]
        dissolve: Vec<String>,
    },
}

impl HrEvent {
    /// The wire names of every HR event type, as the `type` tag carries them.
    pub const TYPES: [&'static str; 4] = [
        "employee.hired",
        "employee.transferred",
        "employee.terminated",
        "org.restructure",
    ];

    /// The wire name of the event type, for example `employee.hired`.
    pub fn type_name(&self) -> &'static str {
        match self {
            HrEvent::Hired(_) => "employee.hired",
            HrEvent::Transferred { .. } => "employee.transferred",
            HrEvent::Terminated { .. } => "employee.terminated",
            HrEvent::Restructure { .. } => "org.restructure",
        }
    }

    /// Checks the event's own fields (no records needed); the error names the first field
    /// missing or wrong. [`apply`] checks the event against the records.
    pub fn validate(&self) -> Result<(), OrgError> {
        match self {
            HrEvent::Hired(person) => {
                required("id", &person.id)?;
                required("name", &person.name)?;
                required("team", &person.team)?;
                required("role", &person.role)?;
                optional("manager", person.manager.as_deref())
            }
            HrEvent::Transferred {
                person,
                team,
                manager,
                role,
            } => {
                required("person", person)?;
                required("team", team)?;
                optional("manager", manager.as_deref())?;
                optional("role", role.as_deref())
            }
            HrEvent::Terminated { person } => required("person", person),
            HrEvent::Restructure {
                teams,
                moves,
                dissolve,
            } => {
                if teams.is_empty() && moves.is_empty() && dissolve.is_empty() {
                    return Err(OrgError::InvalidField {
                        field: "teams".to_owned(),
                        reason: "a restructure needs teams, moves or dissolve".to_owned(),
                    });
                }
                for (i, team) in teams.iter().enumerate() {
                    required(&format!("teams[{i}].id"), &team.id)?;
                    required(&format!("teams[{i}].name"), &team.name)?;
                    optional(&format!("teams[{i}].parent"), team.parent.as_deref())?;
                }
                for (i, step) in moves.iter().enumerate() {
                    required(&format!("moves[{i}].person"), &step.person)?;
                    required(&format!("moves[{i}].team"), &step.team)?;
                    optional(&format!("moves[{i}].manager"), step.manager.as_deref())?;
                    optional(&format!("moves[{i}].role"), step.role.as_deref())?;
                }
                for (i, team) in dissolve.iter().enumerate() {
                    required(&format!("dissolve[{i}]"), team)?;
                }
                Ok(())
            }
        }
    }
}

/// Longest id, name or role an HR event may carry, in bytes: ids are keys the store indexes, so
/// a huge one is refused with its field rather than by the database (the same bound as the
/// knowledge events' `MAX_NAME_BYTES`).
pub const MAX_FIELD_BYTES: usize = 1024;

/// A required field: present, not blank and at most [`MAX_FIELD_BYTES`].
fn required(field: &str, value: &str) -> Result<(), OrgError> {
    if value.trim().is_empty() {
        return Err(OrgError::Missing(field.to_owned()));
    }
    bounded(field, value)
}

/// An optional field that, when present, must not be blank and is at most [`MAX_FIELD_BYTES`].
fn optional(field: &str, value: Option<&str>) -> Result<(), OrgError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(OrgError::InvalidField {
            field: field.to_owned(),
            reason: "must not be blank".to_owned(),
        }),
        Some(v) => bounded(field, v),
        None => Ok(()),
    }
}

/// At most [`MAX_FIELD_BYTES`].
fn bounded(field: &str, value: &str) -> Result<(), OrgError> {
    if value.len() > MAX_FIELD_BYTES {
        return Err(OrgError::InvalidField {
            field: field.to_owned(),
            reason: format!(
                "{} bytes are more than MAX_FIELD_BYTES ({MAX_FIELD_BYTES})",
                value.len()
            ),
        });
    }
    Ok(())
}

/// What an applied event changed: the ids of people and teams whose records were written or
/// removed. Use it to decide which derived views to refresh.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Affected {
    /// People created, changed or removed.
    pub people: BTreeSet<String>,
    /// Teams created, changed or removed.
    pub teams: BTreeSet<String>,
}

/// A validated set of people and teams.
///
/// Invariants, checked on construction and kept by [`apply`]: every person's team exists, every
/// manager exists, nobody manages themselves, the reporting lines and the team tree have no
/// loops, and every team parent exists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrgRecords {
    people: BTreeMap<String, Person>,
    teams: BTreeMap<String, Team>,
}

impl OrgRecords {
    /// Builds a record set, refusing duplicates and any broken invariant.
    pub fn new(
        people: impl IntoIterator<Item = Person>,
        teams: impl IntoIterator<Item = Team>,
    ) -> Result<Self, OrgError> {
        let mut records = OrgRecords::default();
        for team in teams {
            if team.id.trim().is_empty() {
                return Err(OrgError::Blank("team.id"));
            }
            if records.teams.contains_key(&team.id) {
                return Err(OrgError::DuplicateTeam(team.id));
            }
            records.teams.insert(team.id.clone(), team);
        }
        for person in people {
            if person.id.trim().is_empty() {
                return Err(OrgError::Blank("person.id"));
            }
            if records.people.contains_key(&person.id) {
                return Err(OrgError::DuplicatePerson(person.id));
            }
            records.people.insert(person.id.clone(), person);
        }
        records.validate()?;
        Ok(records)
    }

    /// All people, ordered by id.
    pub fn people(&self) -> impl ExactSizeIterator<Item = &Person> + '_ {
        self.people.values()
    }

    /// All teams, ordered by id.
    pub fn teams(&self) -> impl ExactSizeIterator<Item = &Team> + '_ {
        self.teams.values()
    }

    /// One person by id.
    pub fn person(&self, id: &str) -> Option<&Person> {
        self.people.get(id)
    }

    /// One team by id.
    pub fn team(&self, id: &str) -> Option<&Team> {
        self.teams.get(id)
    }

    /// Checks every invariant listed on the type.
    pub fn validate(&self) -> Result<(), OrgError> {
        for team in self.teams.values() {
            if let Some(parent) = &team.parent
                && !self.teams.contains_key(parent)
            {
                return Err(OrgError::UnknownTeam(parent.clone()));
            }
        }
        if let Some((team, parent)) = first_loop(&self.teams, |t| t.parent.as_deref()) {
            return Err(OrgError::TeamCycle {
                team: team.to_owned(),
                parent: parent.to_owned(),
            });
        }
        for person in self.people.values() {
            if !self.teams.contains_key(&person.team) {
                return Err(OrgError::UnknownTeam(person.team.clone()));
            }
            if let Some(manager) = &person.manager
                && !self.people.contains_key(manager)
            {
                return Err(OrgError::UnknownPerson(manager.clone()));
            }
        }
        if let Some((person, manager)) = first_loop(&self.people, |p| p.manager.as_deref()) {
            return Err(OrgError::ManagerCycle {
                person: person.to_owned(),
                manager: manager.to_owned(),
            });
        }
        Ok(())
    }

    /// Whether walking up the reporting line from `start` (inclusive) meets `target`.
    fn manager_chain_reaches(&self, start: &str, target: &str) -> bool {
        chain_reaches(&self.people, |p| p.manager.as_deref(), start, target)
    }

    /// Moves one person, checking team, manager and loops before writing anything.
    fn transfer(
        &mut self,
        person: &str,
        team: &str,
        manager: Option<&str>,
        role: Option<&str>,
    ) -> Result<(), OrgError> {
        if !self.people.contains_key(person) {
            return Err(OrgError::UnknownPerson(person.to_owned()));
        }
        if !self.teams.contains_key(team) {
            return Err(OrgError::UnknownTeam(team.to_owned()));
        }
        if let Some(manager) = manager {
            if !self.people.contains_key(manager) {
                return Err(OrgError::UnknownPerson(manager.to_owned()));
            }
            if self.manager_chain_reaches(manager, person) {
                return Err(OrgError::ManagerCycle {
                    person: person.to_owned(),
                    manager: manager.to_owned(),
                });
            }
        }
        if let Some(record) = self.people.get_mut(person) {
            record.team = team.to_owned();
            if let Some(manager) = manager {
                record.manager = Some(manager.to_owned());
            }
            if let Some(role) = role {
                record.role = role.to_owned();
            }
        }
        Ok(())
    }
}

/// Applies one HR event to the records. On error the records are unchanged.
pub fn apply(records: &mut OrgRecords, event: &HrEvent) -> Result<Affected, OrgError> {
    let mut affected = Affected::default();
    match event {
        HrEvent::Hired(person) => {
            if person.id.trim().is_empty() {
                return Err(OrgError::Blank("person.id"));
            }
            if records.people.contains_key(&person.id) {
                return Err(OrgError::DuplicatePerson(person.id.clone()));
            }
            if !records.teams.contains_key(&person.team) {
                return Err(OrgError::UnknownTeam(person.team.clone()));
            }
            if let Some(manager) = &person.manager
                && !records.people.contains_key(manager)
            {
                return Err(OrgError::UnknownPerson(manager.clone()));
            }
            records.people.insert(person.id.clone(), person.clone());
            affected.people.insert(person.id.clone());
        }
        HrEvent::Transferred {
            person,
            team,
            manager,
            role,
        } => {
            records.transfer(person, team, manager.as_deref(), role.as_deref())?;
            affected.people.insert(person.clone());
        }
        HrEvent::Terminated { person } => {
            let Some(leaver) = records.people.remove(person) else {
                return Err(OrgError::UnknownPerson(person.clone()));
            };
            affected.people.insert(person.clone());
            for report in records.people.values_mut() {
                if report.manager.as_deref() == Some(person.as_str()) {
                    report.manager = leaver.manager.clone();
                    affected.people.insert(report.id.clone());
                }
            }
        }
        HrEvent::Restructure {
            teams,
            moves,
            dissolve,
        } => {
            // A batch touches many records; working on a copy keeps the refusal atomic.
            let mut next = records.clone();
            for team in teams {
                if team.id.trim().is_empty() {
                    return Err(OrgError::Blank("team.id"));
                }
                next.teams.insert(team.id.clone(), team.clone());
                affected.teams.insert(team.id.clone());
            }
            for step in moves {
                next.transfer(
                    &step.person,
                    &step.team,
                    step.manager.as_deref(),
                    step.role.as_deref(),
                )?;
                affected.people.insert(step.person.clone());
            }
            for team in dissolve {
                if !next.teams.contains_key(team) {
                    return Err(OrgError::UnknownTeam(team.clone()));
                }
                let occupied = next.people.values().any(|p| &p.team == team)
                    || next
                        .teams
                        .values()
                        .any(|t| t.parent.as_deref() == Some(team.as_str()));
                if occupied {
                    return Err(OrgError::TeamNotEmpty(team.clone()));
                }
                next.teams.remove(team);
                affected.teams.insert(team.clone());
            }
            next.validate()?;
            *records = next;
        }
    }
    Ok(affected)
}

/// Whether walking up from record `start` (inclusive), `up` naming each record's next, meets
/// `target`. Bounded by the number of records, so a corrupt loop cannot hang it.
fn chain_reaches<T>(
    records: &BTreeMap<String, T>,
    up: impl Fn(&T) -> Option<&str>,
    start: &str,
    target: &str,
) -> bool {
    let mut current = Some(start);
    for _ in 0..=records.len() {
        match current {
            Some(id) if id == target => return true,
            Some(id) => current = records.get(id).and_then(&up),
            None => return false,
        }
    }
    true
}

/// The first record (in id order) whose walk up, `up` naming each record's next, comes back to
/// it: its id and its next.
fn first_loop<T>(
    records: &BTreeMap<String, T>,
    up: impl Fn(&T) -> Option<&str> + Copy,
) -> Option<(&str, &str)> {
    records.iter().find_map(|(id, record)| {
        let next = up(record)?;
        chain_reaches(records, up, next, id).then_some((id.as_str(), next))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str, team: &str, manager: Option<&str>) -> Person {
        Person {
            id: id.into(),
            name: format!("Name {id}"),
            team: team.into(),
            role: "engineer".into(),
            manager: manager.map(Into::into),
        }
    }

    fn team(id: &str, parent: Option<&str>) -> Team {
        Team {
            id: id.into(),
            name: format!("Team {id}"),
            parent: parent.map(Into::into),
        }
    }

    fn small() -> OrgRecords {
        OrgRecords::new(
            [
                person("ceo", "root", None),
                person("lead", "eng", Some("ceo")),
                person("dev1", "eng", Some("lead")),
                person("dev2", "eng", Some("lead")),
            ],
            [team("root", None), team("eng", Some("root"))],
        )
        .expect("valid records")
    }

    #[test]
    fn events_round_trip_with_wire_tags() {
        let hired: HrEvent = serde_json::from_str(
            r#"{"type":"employee.hired","id":"p9","name":"Nia","team":"eng","role":"sre"}"#,
        )
        .expect("hired parses");
        let nia = Person {
            id: "p9".into(),
            name: "Nia".into(),
            team: "eng".into(),
            role: "sre".into(),
            manager: None,
        };
        assert_eq!(hired, HrEvent::Hired(nia));
        let moved: HrEvent = serde_json::from_str(
            r#"{"type":"employee.transferred","person":"dev1","team":"root","manager":"ceo"}"#,
        )
        .expect("transfer parses");
        assert_eq!(moved.type_name(), "employee.transferred");
        let gone: HrEvent =
            serde_json::from_str(r#"{"type":"employee.terminated","person":"dev2"}"#)
                .expect("termination parses");
        let restructure: HrEvent = serde_json::from_str(
            r#"{"type":"org.restructure","teams":[{"id":"ops","name":"Ops","parent":"root"}],
                "moves":[{"person":"dev2","team":"ops"}],"dissolve":[]}"#,
        )
        .expect("restructure parses");
        for event in [hired, moved, gone, restructure] {
            let json = serde_json::to_value(&event).expect("serialises");
            assert_eq!(json["type"], event.type_name());
            assert!(HrEvent::TYPES.contains(&event.type_name()));
            event.validate().expect("valid fields");
            let back: HrEvent = serde_json::from_value(json).expect("parses back");
            assert_eq!(back, event);
        }
    }

    #[test]
    fn ids_and_names_are_bounded_and_the_error_names_the_field() {
        let long = "x".repeat(MAX_FIELD_BYTES + 1);
        let hired = HrEvent::Hired(Person {
            id: "p".repeat(MAX_FIELD_BYTES),
            name: "n".repeat(MAX_FIELD_BYTES),
            team: "t".into(),
            role: "sre".into(),
            manager: None,
        });
        hired.validate().expect("an id at the bound");
        let err = HrEvent::Terminated {
            person: long.clone(),
        }
        .validate()
        .expect_err("too long");
        assert!(
            matches!(&err, OrgError::InvalidField { field, reason }
                if field == "person" && reason.contains("MAX_FIELD_BYTES")),
            "{err:?}"
        );
        let err = HrEvent::Transferred {
            person: "p".into(),
            team: "t".into(),
            manager: None,
            role: Some(long),
        }
        .validate()
        .expect_err("too long");
        assert!(
            matches!(&err, OrgError::InvalidField { field, .. } if field == "role"),
            "{err:?}"
        );
    }

    #[test]
    fn construction_refuses_broken_invariants() {
        let dangling = OrgRecords::new([person("a", "nope", None)], [team("t", None)]);
        assert_eq!(dangling, Err(OrgError::UnknownTeam("nope".into())));
        let loop_ = OrgRecords::new(
            [person("a", "t", Some("b")), person("b", "t", Some("a"))],
            [team("t", None)],
        );
        assert!(matches!(loop_, Err(OrgError::ManagerCycle { .. })));
        let self_managed = OrgRecords::new([person("a", "t", Some("a"))], [team("t", None)]);
        assert!(matches!(self_managed, Err(OrgError::ManagerCycle { .. })));
        let team_loop = OrgRecords::new([], [team("x", Some("y")), team("y", Some("x"))]);
        assert!(matches!(team_loop, Err(OrgError::TeamCycle { .. })));
        let twice = OrgRecords::new(
            [person("a", "t", None), person("a", "t", None)],
            [team("t", None)],
        );
        assert_eq!(twice, Err(OrgError::DuplicatePerson("a".into())));
    }

    #[test]
    fn hire_checks_team_manager_and_duplicates() {
        let mut records = small();
        let before = records.clone();
        assert_eq!(
            apply(&mut records, &HrEvent::Hired(person("dev1", "eng", None))),
            Err(OrgError::DuplicatePerson("dev1".into()))
        );
        assert_eq!(
            apply(&mut records, &HrEvent::Hired(person("n", "ghost", None))),
            Err(OrgError::UnknownTeam("ghost".into()))
        );
        assert_eq!(
            apply(
                &mut records,
                &HrEvent::Hired(person("n", "eng", Some("ghost")))
            ),
            Err(OrgError::UnknownPerson("ghost".into()))
        );
        assert_eq!(records, before);
        let affected = apply(
            &mut records,
            &HrEvent::Hired(person("n", "eng", Some("lead"))),
        )
        .expect("hire applies");
        assert_eq!(affected.people, BTreeSet::from(["n".to_owned()]));
        assert_eq!(
            records.person("n").and_then(|p| p.manager.as_deref()),
            Some("lead")
        );
    }

    #[test]
    fn transfer_keeps_unset_fields_and_refuses_loops() {
        let mut records = small();
        let event = HrEvent::Transferred {
            person: "dev1".into(),
            team: "root".into(),
            manager: None,
            role: Some("sre".into()),
        };
        apply(&mut records, &event).expect("transfer applies");
        let dev1 = records.person("dev1").expect("dev1 exists");
        assert_eq!((dev1.team.as_str(), dev1.role.as_str()), ("root", "sre"));
        assert_eq!(dev1.manager.as_deref(), Some("lead"));

        let before = records.clone();
        let looping = HrEvent::Transferred {
            person: "ceo".into(),
            team: "root".into(),
            manager: Some("dev1".into()),
            role: None,
        };
        assert_eq!(
            apply(&mut records, &looping),
            Err(OrgError::ManagerCycle {
                person: "ceo".into(),
                manager: "dev1".into()
            })
        );
        assert_eq!(records, before);
    }

    #[test]
    fn termination_hands_reports_to_the_skip_level() {
        let mut records = small();
        let affected = apply(
            &mut records,
            &HrEvent::Terminated {
                person: "lead".into(),
            },
        )
        .expect("termination applies");
        assert_eq!(
            affected.people,
            BTreeSet::from(["dev1".to_owned(), "dev2".to_owned(), "lead".to_owned()])
        );
        assert!(records.person("lead").is_none());
        for id in ["dev1", "dev2"] {
            assert_eq!(
                records.person(id).and_then(|p| p.manager.as_deref()),
                Some("ceo")
            );
        }
        apply(
            &mut records,
            &HrEvent::Terminated {
                person: "ceo".into(),
            },
        )
        .expect("top leaves");
        assert_eq!(records.person("dev1").and_then(|p| p.manager.clone()), None);
        assert_eq!(
            apply(
                &mut records,
                &HrEvent::Terminated {
                    person: "ceo".into()
                }
            ),
            Err(OrgError::UnknownPerson("ceo".into()))
        );
        records.validate().expect("still valid");
    }

    #[test]
    fn restructure_is_all_or_nothing() {
        let mut records = small();
        let before = records.clone();
        let refused = HrEvent::Restructure {
            teams: vec![team("ops", Some("root"))],
            moves: vec![Move {
                person: "dev2".into(),
                team: "ops".into(),
                manager: None,
                role: None,
            }],
            dissolve: vec!["eng".into()],
        };
        assert_eq!(
            apply(&mut records, &refused),
            Err(OrgError::TeamNotEmpty("eng".into()))
        );
        assert_eq!(records, before);

        let accepted = HrEvent::Restructure {
            teams: vec![team("platform", Some("root"))],
            moves: ["lead", "dev1", "dev2"]
                .into_iter()
                .map(|p| Move {
                    person: p.into(),
                    team: "platform".into(),
                    manager: None,
                    role: None,
                })
                .collect(),
            dissolve: vec!["eng".into()],
        };
        let affected = apply(&mut records, &accepted).expect("restructure applies");
        assert_eq!(
            affected.teams,
            BTreeSet::from(["eng".to_owned(), "platform".to_owned()])
        );
        assert!(records.team("eng").is_none());
        assert!(records.people().all(|p| p.team != "eng"));

        let cyclic = HrEvent::Restructure {
            teams: vec![team("root", Some("platform"))],
            moves: vec![],
            dissolve: vec![],
        };
        let before = records.clone();
        assert!(matches!(
            apply(&mut records, &cyclic),
            Err(OrgError::TeamCycle { .. })
        ));
        assert_eq!(records, before);
    }
}
