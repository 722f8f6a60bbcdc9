//! Rows of `org_change`.

super::table! {
    "org_change", Eq;
    key { tenant: String, version: i64 }
    pub kind: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub at: ChronoDateTimeUtc,
}
