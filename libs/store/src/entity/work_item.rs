//! Rows of `work_item`.

super::table! {
    "work_item", Eq;
    key { tenant: String, id: String }
    #[sea_orm(column_type = "Text")]
    pub title: String,
    pub assignee: Option<String>,
    pub service: Option<String>,
    pub severity: String,
    pub scope: String,
    pub source: String,
    pub created_at: ChronoDateTimeUtc,
    #[sea_orm(column_type = "Text")]
    pub acl: String,
}
