//! Rows of `maintenance_run`.

super::table! {
    "maintenance_run", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub seq: i64,
    pub mode: String,
    pub pages_read: i64,
    pub pages_total: i64,
    pub est_tokens: i64,
    pub graph_writes: i64,
    pub model_requests: i64,
    pub model_sentences: i64,
    pub model_cache_hits: i64,
    pub model_prompt_tokens: i64,
    pub model_completion_tokens: i64,
    pub model_tokens: i64,
    pub model_dropped: i64,
    pub model_errors: i64,
    pub at: ChronoDateTimeUtc,
}
