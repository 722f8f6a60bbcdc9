//! Rows of `review_decision`.

super::table! {
    "review_decision", Eq;
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub update_id: String,
    pub decision: String,
    pub reviewer: String,
    #[sea_orm(column_type = "Text")]
    pub new_value: String,
    #[sea_orm(column_type = "Text")]
    pub note: String,
    pub decided_at: ChronoDateTimeUtc,
}
