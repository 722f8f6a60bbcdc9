//! Rows of `tenant_state`.

super::table! {
    "tenant_state", Eq;
    key { tenant: String }
    #[sea_orm(column_type = "Text", nullable)]
    pub ontology: Option<String>,
    pub knowledge_version: i64,
    pub updated_at: ChronoDateTimeUtc,
}
