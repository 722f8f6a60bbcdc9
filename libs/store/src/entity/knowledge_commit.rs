//! One row per committed knowledge version of a tenant: what its rows cannot say (whether it
//! replaced the ontology, which entities it removed), so a reader can catch up version by version.

super::table! {
    "knowledge_commit", Eq;
    key { tenant: String, version: i64 }
    pub ontology_changed: bool,
    /// Entity ids merged away, a JSON list.
    #[sea_orm(column_type = "Text")]
    pub removed_entities: String,
}
