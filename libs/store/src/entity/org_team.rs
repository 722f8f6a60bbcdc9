//! Rows of `org_team`.

super::table! {
    "org_team", Eq;
    key { tenant: String, id: String }
    #[sea_orm(column_type = "Text")]
    pub name: String,
    pub parent: Option<String>,
}
