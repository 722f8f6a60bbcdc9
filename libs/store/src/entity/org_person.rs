//! Rows of `org_person`.

super::table! {
    "org_person", Eq;
    key { tenant: String, id: String }
    #[sea_orm(column_type = "Text")]
    pub name: String,
    pub team: String,
    pub role: String,
    pub manager: Option<String>,
}
