//! The errors of this crate: what callers must tell apart when records, events, items or settings
//! are refused.

/// Why an HR event, a record set, an item set, a caller or a setting was refused.
///
/// Every refusal leaves the input untouched: an event that fails to apply changes no record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrgError {
    /// A person id that is not in the records.
    #[error("unknown person {0:?}")]
    UnknownPerson(String),
    /// A team id that is not in the records.
    #[error("unknown team {0:?}")]
    UnknownTeam(String),
    /// A hire for a person id that already exists.
    #[error("person {0:?} already exists")]
    DuplicatePerson(String),
    /// Two teams (or two records of one team) with the same id in one record set.
    #[error("team {0:?} appears twice")]
    DuplicateTeam(String),
    /// Making `manager` the manager of `person` would close a reporting loop.
    #[error("{manager:?} cannot manage {person:?}: the reporting line would loop")]
    ManagerCycle {
        /// The person whose manager was being set.
        person: String,
        /// The proposed manager.
        manager: String,
    },
    /// Making `parent` the parent of `team` would close a loop of teams.
    #[error("team {parent:?} cannot contain {team:?}: the team tree would loop")]
    TeamCycle {
        /// The team whose parent was being set.
        team: String,
        /// The proposed parent.
        parent: String,
    },
    /// A team that cannot be dissolved because people or sub-teams still belong to it.
    #[error("team {0:?} still has members or sub-teams")]
    TeamNotEmpty(String),
    /// Two work items with the same id in one tenant.
    #[error("work item {id:?} appears twice in tenant {tenant:?}")]
    DuplicateItem {
        /// Tenant of both items.
        tenant: String,
        /// The repeated id.
        id: String,
    },
    /// A tenant with more items than one index partition can address (`u32::MAX`).
    #[error("tenant {0:?} has too many items to index")]
    TooManyItems(String),
    /// A required text field is blank.
    #[error("{0} must not be blank")]
    Blank(&'static str),
    /// A required field of an event or a caller is absent or blank; names the field path.
    #[error("{0} is required")]
    Missing(String),
    /// A field of an event or a caller with a value that cannot be accepted.
    #[error("{field}: {reason}")]
    InvalidField {
        /// Field path, for example `moves[0].manager`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting outside its allowed range.
    #[error("setting {name}: {reason}")]
    InvalidSetting {
        /// Setting name, as in [`crate::filters::PlateSettings`].
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}
