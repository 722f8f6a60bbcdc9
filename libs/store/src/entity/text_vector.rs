//! Rows of `text_vector`.

super::table! {
    "text_vector", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub vector_key: String,
    pub model: String,
    pub vector: Vec<u8>,
}
