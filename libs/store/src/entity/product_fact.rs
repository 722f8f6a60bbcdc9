//! Rows of `product_fact`.

super::table! {
    "product_fact", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub file: String,
    pub position: i32,
    pub subject: String,
    pub predicate: String,
    #[sea_orm(column_type = "Text")]
    pub object: String,
}
