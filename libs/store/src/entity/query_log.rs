//! Rows of `query_log`.

super::table! {
    "query_log", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    #[sea_orm(column_type = "Text")]
    pub question: String,
    #[sea_orm(column_type = "Text")]
    pub scope: String,
    #[sea_orm(column_type = "Text")]
    pub caller: String,
    pub asked_at: ChronoDateTimeUtc,
}
