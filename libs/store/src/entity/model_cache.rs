//! Rows of `model_cache`.

super::table! {
    "model_cache", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub cache_key: String,
    pub model: String,
    pub prompt_version: String,
    #[sea_orm(column_type = "Text")]
    pub claims: String,
    pub created_at: ChronoDateTimeUtc,
}
