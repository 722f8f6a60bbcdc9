//! Rows of `entity`.

super::table! {
    "entity", Eq;
    key { tenant: String, id: String }
    #[sea_orm(column_type = "Text")]
    pub name: String,
    pub entity_type: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub aliases: String,
    /// The knowledge version whose commit last wrote this row (0: before versions were kept).
    pub changed_in: i64,
}
